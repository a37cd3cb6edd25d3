//! kb-mcp: see `kb-mcp --help`; the command line lives in `kb::cli::mcp`
//! and the server in `kb::mcp`, so this file only hands over.

fn main() -> std::process::ExitCode {
    kb::cli::main(&kb::cli::mcp::SPEC, kb::cli::mcp::run)
}
