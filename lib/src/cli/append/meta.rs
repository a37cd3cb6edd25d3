//! `kb-append --justfile`, `man` and `completions`: facts about the tools
//! themselves rather than the library.

use crate::cli::args::{self, Args};
use crate::cli::SPECS;
use crate::error::{Error, Exit};
use crate::out::jsonl::Out;

/// `--justfile`: the justfile of the checkout this binary was built from,
/// for a project's `import` or `mod` line.
pub fn justfile() -> Result<Exit, Error> {
    // This crate sits in `lib/` of the checkout; the justfile at its root.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../justfile");
    let path = path.canonicalize().unwrap_or(path);
    if !path.is_file() {
        return Err(Error::msg(format!(
            "{} is gone (the kb-tools checkout moved?); reinstall with `just install` from the checkout",
            path.display()
        )));
    }
    let mut out = Out::stdout("kb-append");
    out.text(&format!("{}\n", path.display()))?;
    out.finish()
}

/// `man BIN`: one binary's man page (roff).
pub fn man(a: &Args, out: &mut Out) -> Result<(), Error> {
    let spec = SPECS
        .iter()
        .find(|s| s.bin == a.positional[0])
        .ok_or_else(|| Error::usage(format!("man: no binary '{}' (kb-append, kb-index, ...)", a.positional[0])))?;
    out.text(&args::man_page(spec))
}

/// `completions bash`: completions for the nine binaries.
pub fn completions(a: &Args, out: &mut Out) -> Result<(), Error> {
    if a.positional[0] != "bash" {
        return Err(Error::usage(format!("completions: only bash is generated, not '{}'", a.positional[0])));
    }
    out.text(&args::bash_completion(&SPECS))
}
