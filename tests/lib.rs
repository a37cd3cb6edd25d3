//! One integration test binary (links once on 2-core CI), one module per
//! binary or area; every test runs the real binaries on real files.

#[allow(dead_code)]
mod util;

mod append;
mod changes;
mod cli;
mod crash;
mod everyday;
mod evolve;
mod evolve_crash;
mod fleet;
mod guard;
mod guard_evasions;
mod guard_intent;
mod hostile;
mod index;
mod index_crash;
mod lastword;
mod lastword_crash;
mod lastword_paths;
mod lastword_sections;
mod layers;
mod lock;
mod mcp;
mod memgate;
mod memgate_crash;
mod memgate_meaning;
mod memgate_model;
mod memgate_quality;
mod memgate_sequences;
mod names;
mod out_of_scope;
mod peer;
mod peer_gates;
mod peer_local;
mod promote;
mod query_syntax;
mod readme;
mod recipes;
mod relate;
mod rule_costs;
mod score;
mod score_model;
mod setup;
mod skills;
mod skills_crash;
mod sync;
