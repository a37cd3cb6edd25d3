//! kb-lastword: see `kb-lastword --help`; the command line and the work live in
//! `kb::cli::lastword`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::lastword::SPEC, kb::cli::lastword::run)
}
