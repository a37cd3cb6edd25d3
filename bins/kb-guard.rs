//! kb-guard: see `kb-guard --help`; the command line and the work live in
//! `kb::cli::guard`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::guard::SPEC, kb::cli::guard::run)
}
