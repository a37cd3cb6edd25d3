//! `apply --dry-run` output (seed 004 §8): a unified diff of what apply
//! would write, with `a/` and `b/` headers naming the target.

/// The unified diff from `old` to `new` with three lines of context.
pub fn unified(old: &str, new: &str, name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}
