//! Every derived file (indexes, `.ioc.md`, marks, relations) rebuilt from
//! documents and logs alone, in full or incrementally, and the check that
//! the derived files agree with the documents.

pub mod consistency;
pub mod index;
pub mod ioc;
pub mod marks;
pub mod rebuild_all;
pub mod rebuild_index;
