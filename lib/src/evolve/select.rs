//! Which proposals a step works on: those named on the command line, those
//! named by `proposal` records on stdin (`-`; any other record passes
//! through untouched), or by default every proposal waiting for the step.

use serde::Serialize;
use serde_json::Value;

use super::proposal::{self, Loaded, Status};
use super::Rec;
use crate::library::Library;

/// Where the step's proposals come from.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every proposal in one of the step's input statuses.
    Pending,
    /// These ids.
    Ids(Vec<String>),
    /// Parsed stdin lines (line number, object or the parse error).
    Records(super::Lines),
}

impl Selection {
    /// From the step's words: none → pending, `-` → stdin records, else ids.
    pub fn from_words(words: &[&str], stdin: impl FnOnce() -> Selection) -> Selection {
        match words {
            [] => Selection::Pending,
            ["-"] => stdin(),
            ids => Selection::Ids(ids.iter().map(|s| s.to_string()).collect()),
        }
    }
}

/// What an `error` record about a proposal carries after its message.
#[derive(Debug, Serialize)]
pub struct About<'a> {
    /// The proposal id.
    pub proposal: &'a str,
}

/// One item of a step's input, in input order.
#[derive(Debug)]
pub enum Item {
    /// Printed as it is (other records, errors, proposals not in the step's statuses).
    Pass(Rec),
    /// A proposal for the step to work on.
    Work(Box<Loaded>),
}

/// Resolves a selection against the statuses the step consumes.
pub fn resolve(lib: &Library, sel: Selection, wanted: &[Status]) -> Vec<Item> {
    let pick = |l: Loaded| {
        if wanted.contains(&l.proposal.status) {
            Item::Work(Box::new(l))
        } else {
            Item::Pass(Rec::Record(l.record()))
        }
    };
    match sel {
        Selection::Pending => proposal::all(lib)
            .into_iter()
            .filter_map(|(id, r)| match r {
                Ok(l) if wanted.contains(&l.proposal.status) => Some(Item::Work(Box::new(l))),
                Ok(_) => None,
                Err(e) => Some(Item::Pass(Rec::error_about(e.to_string(), &About { proposal: &id }))),
            })
            .collect(),
        Selection::Ids(ids) => ids
            .into_iter()
            .map(|id| match proposal::load(lib, &id) {
                Ok(l) => pick(l),
                Err(e) => Item::Pass(Rec::error_about(e.to_string(), &About { proposal: &id })),
            })
            .collect(),
        Selection::Records(lines) => lines
            .into_iter()
            .map(|(line, obj)| match obj {
                Err(e) => Item::Pass(Rec::LineError(line, e)),
                Ok(o) if o.get("record").and_then(Value::as_str) == Some("proposal") => {
                    match o.get("id").and_then(Value::as_str) {
                        Some(id) => match proposal::load(lib, id) {
                            Ok(l) => pick(l),
                            Err(e) => Item::Pass(Rec::LineError(line, e.to_string())),
                        },
                        None => Item::Pass(Rec::LineError(line, "proposal record without an id".into())),
                    }
                }
                Ok(o) => Item::Pass(Rec::Record(Value::Object(o))),
            })
            .collect(),
    }
}
