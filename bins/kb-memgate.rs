//! kb-memgate: see `kb-memgate --help`; the command line and the work live in
//! `kb::cli::memgate`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::memgate::SPEC, kb::cli::memgate::run)
}
