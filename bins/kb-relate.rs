//! kb-relate: see `kb-relate --help`; the command line and the work live in
//! `kb::cli::relate`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::relate::SPEC, kb::cli::relate::run)
}
