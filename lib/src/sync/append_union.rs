//! Append-only documents merge as unions. Clones that each
//! append lines to one document (`kb-append write --append`, `mode:
//! append`) all add at its end, so git's text merge sees overlapping edits
//! and the conflict rule keeps one side in place and the other under
//! `.conflicts/`: 4 clones appending 10 lines each kept 10 of 40. When both
//! sides only extend the common ancestor's bytes (exactly what appending
//! does), nothing conflicts: the merge is the ancestor followed by both
//! appended parts, in byte order of the parts so the result does not
//! depend on which side is "ours", and a part both sides appended appears
//! once. Anything else (an edit inside the ancestor's bytes, no common
//! ancestor) is a real conflict and goes the usual way.

/// The union of two appends to `base`, or `None` when either side changed
/// more than the end.
pub fn merge(base: &[u8], ours: &[u8], theirs: &[u8]) -> Option<Vec<u8>> {
    if base.is_empty() {
        return None;
    }
    let a = ours.strip_prefix(base)?;
    let b = theirs.strip_prefix(base)?;
    let mut parts = vec![a, b];
    parts.sort();
    parts.dedup();
    let mut out = base.to_vec();
    for p in parts.into_iter().filter(|p| !p.is_empty()) {
        if !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.extend_from_slice(p);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::merge;

    #[test]
    fn unions_appends_whichever_side_is_ours() {
        let base = b"# log\n- a\n";
        let ours = b"# log\n- a\n- b1\n- b2\n";
        let theirs = b"# log\n- a\n- c1\n";
        let m = merge(base, ours, theirs).unwrap();
        assert_eq!(m, b"# log\n- a\n- b1\n- b2\n- c1\n");
        assert_eq!(merge(base, theirs, ours).unwrap(), m);
        assert_eq!(merge(base, ours, ours).unwrap(), ours.to_vec());
        assert!(merge(base, b"# log\n- A\n- b\n", theirs).is_none());
        assert!(merge(b"", ours, theirs).is_none());
    }
}
