//! One Markdown document as bytes: YAML, frontmatter, Markdown structure,
//! content digests. Knows nothing of where a document lives.

pub mod digest;
pub mod frontmatter;
pub mod markdown;
pub mod yaml;
