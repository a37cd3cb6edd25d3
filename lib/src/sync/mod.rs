//! One library, many machines: git remotes as the distributed
//! engine. Documents merge with git's text merge (overlapping edits keep
//! both sides), logs with a union driver, derived files are rebuilt, so
//! every clone converges to the same bytes and no write is lost. A fleet
//! shares one hub without a race: each machine pushes its own
//! ref and offers the shared branch a compare-and-swap (`fleet`), under an
//! identity kept in the clone's git config (`identity`); many new refs are
//! folded into one tree at once (`fold`).

pub mod admit;
pub mod append_union;
pub mod attributes;
pub mod conflicts;
pub mod drivers;
pub mod fleet;
pub mod fold;
pub mod gitcmd;
pub mod hold;
pub mod identity;
pub mod inspect;
pub mod merge_log;
pub mod refresh;
pub mod resolve;
pub mod run;

pub use run::{relay, sync, Options, Report};

use crate::error::Result;
use crate::library::{Init, Library};

/// `kb-append init`: seed 000's layout (`Library::create_layout`), then the
/// `.gitattributes`, `.gitignore` and git merge drivers that sync relies on
///. It lives here, not in `library`, because the library layer
/// sits below sync and must not reach up into it.
pub fn init(lib: &Library) -> Result<Init> {
    let mut init = lib.create_layout()?;
    init.created.extend(drivers::install(lib)?);
    Ok(init)
}
