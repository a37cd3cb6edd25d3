//! One integration test binary (links once on 2-core CI), one module per
//! binary or area; every test runs the real binaries on real files.

mod guard;
mod memgate;
mod score;
#[allow(dead_code)]
mod util;

mod append;
mod lastword;
mod lock;
mod recipes;
