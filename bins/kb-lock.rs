//! kb-lock: see `kb-lock --help`; the command line and the work live in
//! `kb::cli::lock`, which passes the locked command's exit status through.

fn main() -> std::process::ExitCode {
    kb::cli::lock::main()
}
