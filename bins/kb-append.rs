//! kb-append: see `kb-append --help`; the command line and the work live in
//! `kb::cli::append`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::append::SPEC, kb::cli::append::run)
}
