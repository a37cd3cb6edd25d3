//! kb-index: see `kb-index --help`; the command line and the work live in
//! `kb::cli::index`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::index::SPEC, kb::cli::index::run)
}
