//! Seed 002's `SkillManageToolOpts`: `allowedEditSkills` (edit and patch
//! only those skills; empty allows any) and `allowCreateNew` (false
//! refuses create). The seed's review agent runs with them so a background
//! reviewer can improve the skills its agent is linked to, and create new
//! ones only when allowed, without touching anything else. Checked before
//! anything is read or locked; a refusal names the rule it broke.
//!
//! The rules come from the user's own configuration (flags, the
//! environment a `skill review` sets for its reviewer, kb-mcp's command
//! line) and from a tool call's own parameters. Several sources only ever
//! narrow: the allowed lists intersect, create needs every source's yes.

use serde::Serialize;

/// The seed's parameter names, used in records, schemas and messages.
pub const ALLOWED_EDIT_SKILLS: &str = "allowedEditSkills";
/// See [`ALLOWED_EDIT_SKILLS`].
pub const ALLOW_CREATE_NEW: &str = "allowCreateNew";

/// Environment variable: comma-separated skill names a reviewer may edit
/// and patch (set by `kb-append skill review`).
pub const ENV_ALLOW_EDIT: &str = "KB_SKILL_ALLOW_EDIT";
/// Environment variable: `0` or `false` refuses create (set by `kb-append
/// skill review --no-create`).
pub const ENV_ALLOW_CREATE: &str = "KB_SKILL_ALLOW_CREATE";

/// What a caller may do to skills.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Permissions {
    /// Skills that edit and patch may change; `None` allows any (the
    /// seed's empty list). `Some(vec![])` after narrowing two disjoint
    /// lists allows none.
    #[serde(rename = "allowedEditSkills")]
    pub allowed_edit: Option<Vec<String>>,
    /// Whether create is allowed.
    #[serde(rename = "allowCreateNew")]
    pub allow_create: bool,
}

impl Default for Permissions {
    /// The seed's defaults: `allowedEditSkills = []`, `allowCreateNew = true`.
    fn default() -> Permissions {
        Permissions { allowed_edit: None, allow_create: true }
    }
}

/// A refused operation: the rule and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `allowedEditSkills` or `allowCreateNew`.
    pub rule: &'static str,
    /// What was refused and why.
    pub message: String,
}

impl Permissions {
    /// From the seed's two parameters (an empty list allows any skill).
    pub fn new(allowed_edit: Vec<String>, allow_create: bool) -> Permissions {
        let mut names: Vec<String> =
            allowed_edit.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        names.sort();
        names.dedup();
        Permissions { allowed_edit: (!names.is_empty()).then_some(names), allow_create }
    }

    /// The rules a `skill review` left in the environment for its reviewer.
    pub fn from_env() -> Permissions {
        let edit = std::env::var(ENV_ALLOW_EDIT).unwrap_or_default();
        let create = std::env::var(ENV_ALLOW_CREATE).map(|v| !matches!(v.trim(), "0" | "false" | "no"));
        Permissions::new(edit.split(',').map(str::to_string).collect(), create.unwrap_or(true))
    }

    /// Both sets of rules at once: the allowed lists intersect (`None`
    /// allows any), create needs both.
    pub fn narrow(&self, other: &Permissions) -> Permissions {
        let allowed_edit = match (&self.allowed_edit, &other.allowed_edit) {
            (None, x) | (x, None) => x.clone(),
            (Some(a), Some(b)) => Some(a.iter().filter(|n| b.contains(n)).cloned().collect()),
        };
        Permissions { allowed_edit, allow_create: self.allow_create && other.allow_create }
    }

    /// Whether `action` (`create`, `edit`, `patch`, ...) on skill `name`
    /// is allowed. The seed restricts edit and patch, and create; the
    /// other actions are not the reviewer's business in the seed and pass.
    pub fn check(&self, action: &str, name: &str) -> Result<(), Refusal> {
        match action {
            "edit" | "patch" => match &self.allowed_edit {
                Some(list) if !list.iter().any(|n| n == name) => Err(Refusal {
                    rule: ALLOWED_EDIT_SKILLS,
                    message: format!(
                        "refused by {ALLOWED_EDIT_SKILLS}: skill '{name}' may not be {}; allowed: {}",
                        if action == "edit" { "edited" } else { "patched" },
                        if list.is_empty() { "none".to_string() } else { list.join(", ") }
                    ),
                }),
                _ => Ok(()),
            },
            "create" if !self.allow_create => Err(Refusal {
                rule: ALLOW_CREATE_NEW,
                message: format!("refused by {ALLOW_CREATE_NEW}=false: creating skill '{name}' is not allowed"),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_list_allows_any_and_narrowing_intersects() {
        let any = Permissions::default();
        assert!(any.check("edit", "x").is_ok());
        let a = Permissions::new(vec!["a".into(), "b".into()], true);
        let b = Permissions::new(vec!["b".into(), "c".into()], false);
        let both = a.narrow(&b);
        assert_eq!(both.allowed_edit, Some(vec!["b".to_string()]));
        assert!(!both.allow_create);
        assert_eq!(both.check("patch", "a").unwrap_err().rule, ALLOWED_EDIT_SKILLS);
        assert_eq!(both.check("create", "z").unwrap_err().rule, ALLOW_CREATE_NEW);
        assert!(both.check("delete", "a").is_ok());
        let none = Permissions::new(vec!["a".into()], true).narrow(&Permissions::new(vec!["b".into()], true));
        assert!(none.check("edit", "a").unwrap_err().message.ends_with("allowed: none"));
    }
}
