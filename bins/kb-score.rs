//! kb-score: see `kb-score --help`; the command line and the work live in
//! `kb::cli::score`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::score::SPEC, kb::cli::score::run)
}
