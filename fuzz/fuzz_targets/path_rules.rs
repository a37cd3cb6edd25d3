//! Any string a request may carry as a path: when the writer's name rules
//! and normalisation both accept it, the result is a relative path with no
//! `..`, no control or invisible character, no name git gives a meaning
//! to in any disguise, and within the length limits; the file-kind table
//! calls it refused only when it is a writer's temporary file.
#![no_main]

use kb::library::{kind, names, normalise};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = std::str::from_utf8(data) else { return };
    if names::refusal(raw).is_some() {
        return;
    }
    let Ok(norm) = normalise(raw) else { return };
    assert!(!norm.starts_with('/') && !norm.ends_with('/'), "{norm:?}");
    assert!(norm.len() <= names::MAX_PATH, "{norm:?}");
    for part in norm.split('/') {
        assert!(!part.is_empty() && part != "." && part != "..", "{norm:?}");
        assert!(part.len() <= names::MAX_NAME, "{norm:?}");
        let f = names::fold(part);
        assert!(![".git", "git~1", ".gitattributes", ".gitmodules", ".gitignore"].contains(&f.as_str()), "{norm:?}");
    }
    assert!(!norm.chars().any(|c| c.is_control() || names::invisible(c)), "{norm:?}");
    // The table refuses only what names refuses, plus writers' temp files.
    let temp = norm.rsplit('/').next().is_some_and(kind::is_temp);
    assert!(temp || kind::kind(&norm) != kind::Kind::Refused, "{norm:?}");
});
