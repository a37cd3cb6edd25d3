//! kb-memgate: seed 003 (lingxi memory) as a deterministic filter.
//! input → candidates → governance against the nearest notes → gate →
//! write → audit → one sentence for the main conversation. The calling
//! agent supplies the structured input and the user's answers to the
//! gate's questions; everything else is decided here.

pub mod apply;
pub mod audit;
pub mod candidate;
pub mod cue;
pub mod decide;
pub mod dense;
pub mod gate;
pub mod govern;
pub mod index_digest;
pub mod index_md;
pub mod input;
pub mod journal;
pub mod lemma;
pub mod note;
pub mod refuse;
pub mod reindex;
pub mod search;
pub mod similarity;
pub mod slot;
pub mod stance;
pub mod store;

pub use store::Paths;
