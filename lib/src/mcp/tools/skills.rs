//! Seed 002's `skill_manage` and `skill_list`, with the seed's parameters
//! exactly, through the same SkillWriter `kb-append skill` uses.

use serde_json::{json, Map, Value};

use super::{run, Called, Ctx, Reply, Tool};
use crate::error::Error;
use crate::mcp::args::Args;
use crate::mcp::rpc::RpcError;
use crate::skills::permissions::{Permissions, ALLOWED_EDIT_SKILLS, ALLOW_CREATE_NEW};
use crate::skills::{self, action, list, Stage};

pub(super) fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: "skill_manage",
            title: "Create or change a skill",
            description: "Create, edit, patch or delete a skill, or write/remove one of its supporting files \
                (seed 002 skill_manage). Validated first, written atomically under the library lock, then the \
                guard judges the whole skill: dangerous rolls back to the exact previous bytes. Prefer patch \
                for small changes; call skill_list first to avoid duplicates. New skills start in \
                `candidates` (category may name candidates, drafts or active). allowedEditSkills and \
                allowCreateNew (seed 002) restrict the call further than the server's own rules.",
            schema: manage_schema,
            call: manage,
            read_only: false,
            records: &["skill_write", "finding", "verdict", "error", "text"],
        },
        Tool {
            name: "skill_list",
            title: "List skills",
            description: "Every skill with name and description (seed 002 skill_list), its stage, trust tier \
                and the guard's current verdict; category filters by stage (candidates, drafts, active).",
            schema: || {
                json!({"type": "object", "properties": {
                    "category": {"type": "string", "description": "only skills in this stage: candidates, drafts or active"}
                }, "additionalProperties": false})
            },
            call: list_skills,
            read_only: true,
            records: &["skill", "error"],
        },
    ]
}

fn manage_schema() -> Value {
    json!({"type": "object", "properties": {
        "action": {"type": "string", "enum": ["create", "edit", "patch", "delete", "write_file", "remove_file"]},
        "name": {"type": "string", "description": "skill name: lowercase letters, digits, '.', '_', '-' (at most 64)"},
        "content": {"type": "string", "description": "the whole SKILL.md (create and edit)"},
        "old_string": {"type": "string", "description": "patch: the text to replace"},
        "new_string": {"type": "string", "description": "patch: its replacement"},
        "replace_all": {"type": "boolean", "default": false, "description": "patch: replace every occurrence"},
        "category": {"type": "string", "description": "create: the stage the skill starts in (candidates, drafts, active)"},
        "file_path": {"type": "string", "description": "a supporting file under references/, templates/, scripts/ or assets/ (write_file, remove_file, patch)"},
        "file_content": {"type": "string", "description": "write_file: the file's content"},
        "allowedEditSkills": {"type": "array", "items": {"type": "string"}, "description": "edit and patch only these skills (empty: any); narrows the server's --allow-edit, never widens it"},
        "allowCreateNew": {"type": "boolean", "default": true, "description": "false refuses create; cannot lift the server's --no-create"}
    }, "required": ["action", "name"], "additionalProperties": false})
}

fn manage(cx: &Ctx, map: Map<String, Value>) -> Called {
    const KNOWN: &[&str] = &[
        "action",
        "name",
        "content",
        "old_string",
        "new_string",
        "replace_all",
        "category",
        "file_path",
        "file_content",
        ALLOWED_EDIT_SKILLS,
        ALLOW_CREATE_NEW,
    ];
    let a = Args::new("skill_manage", map, KNOWN)?;
    let (action, name) = (a.need("action")?, a.need("name")?);
    let need = |k: &str| a.need(k).map_err(|_| RpcError::invalid(format!("skill_manage: {action} needs '{k}'")));
    let verb = match action.as_str() {
        "create" | "edit" | "patch" | "delete" => action.as_str(),
        "write_file" => "write-file",
        "remove_file" => "remove-file",
        other => {
            return Err(RpcError::invalid(format!(
                "skill_manage: unknown action '{other}' (create, edit, patch, delete, write_file, remove_file)"
            )))
        }
    };
    let category = a.str("category")?.filter(|c| !c.trim().is_empty());
    if category.is_some() && verb != "create" {
        return Err(RpcError::invalid(format!("skill_manage: 'category' goes with create, not {action}")));
    }
    let mut flags = action::Flags { stage: category, replace_all: a.flag("replace_all")?, ..Default::default() };
    let content = match verb {
        "create" | "edit" => Some(need("content")?),
        "write-file" => Some(need("file_content")?),
        _ => None,
    };
    if verb == "patch" {
        flags.old_string = Some(need("old_string")?);
        flags.new_string = Some(need("new_string")?);
    }
    if matches!(verb, "write-file" | "remove-file") {
        need("file_path")?;
    }
    flags.file_path = a.str("file_path")?;
    let asked = Permissions::new(
        a.strings(ALLOWED_EDIT_SKILLS)?,
        a.value(ALLOW_CREATE_NEW).is_none() || a.flag(ALLOW_CREATE_NEW)?,
    );
    let opts =
        skills::Options { commit: true, lock: cx.lock_for("skill_manage"), permissions: cx.skills.narrow(&asked) };
    let words = [verb.to_string(), name];
    let recs =
        action::run(&cx.lib, &words, &flags, None, || Ok(content.clone().unwrap_or_default().into_bytes()), &opts);
    run(|| {
        let mut r = Reply::default();
        for rec in recs? {
            match rec {
                action::Rec::Record(v) => r.records.push(v),
                action::Rec::Error(m, extra) => r.error(&m, extra),
                action::Rec::Table(t) => r.push(json!({"record": "text", "text": t})),
                action::Rec::LineError(line, m) => r.error(&m, json!({"line": line})),
                // The exit status is the CLI's concern; the records say it all.
                action::Rec::Raise(_) => {}
            }
        }
        Ok(r)
    })
}

fn list_skills(cx: &Ctx, map: Map<String, Value>) -> Called {
    let a = Args::new("skill_list", map, &["category"])?;
    let stage = match a.str("category")?.filter(|c| !c.trim().is_empty()) {
        Some(c) => Some(Stage::parse(&c).map_err(|e: Error| RpcError::invalid(format!("skill_list: {e}")))?),
        None => None,
    };
    run(|| {
        let (engine, errors) = skills::engine(&cx.lib)?;
        let mut r = Reply::default();
        errors.iter().for_each(|e| r.error(e, json!({})));
        for s in list::list(&cx.lib, &engine)? {
            if stage.is_none_or(|st| st.as_str() == s.stage) {
                r.push(&s);
            }
        }
        Ok(r)
    })
}
