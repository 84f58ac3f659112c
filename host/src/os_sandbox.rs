//! The harness's own OS sandbox, set to keep sandrail's paths out of the agent's
//! reach.
//!
//! Claude Code can run every Bash command under bubblewrap (Linux, WSL2) or
//! Seatbelt (macOS) with `sandbox.filesystem.denyWrite` paths, and its permission
//! rules (`Edit(…)` in `permissions.deny`) cover its file tools. That enforcement
//! does not care how a write is spelled — `cp -t`, `sed -i`, `tar -C`, a hard link
//! — which no reading of a command line can promise. `sandrail protect` merges
//! the entries that cover sandrail's config, lock, components, data, mandate,
//! state, cache, audit trail and binary into the project's Claude Code settings;
//! `sandrail status` says whether they are in force.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::config::{Config, Located, Origin, Source};

/// The settings file `sandrail protect` writes, relative to the project.
pub const CLAUDE_SETTINGS: &str = ".claude/settings.json";
/// The settings files whose entries count, relative to the project.
const CLAUDE_SETTINGS_FILES: &[&str] = &[".claude/settings.json", ".claude/settings.local.json"];

/// One path to keep from the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub path: PathBuf,
    /// A directory: everything under it too.
    pub dir: bool,
}

/// Where sandrail's own things are, for one project.
pub struct Places<'a> {
    pub project: &'a Path,
    pub home: Option<&'a Path>,
    pub state: Option<&'a Path>,
    pub cache: Option<&'a Path>,
    pub binary: Option<&'a Path>,
}

/// Every path of sandrail's the agent must not write, for the configs given (the
/// one on disk and the one accepted): each config and its lock (the project's
/// `sandrail.toml` when the embedded default is in force, so none can appear),
/// mandates, components, data, `[protect] paths`, Claude Code's settings, the
/// state, cache and audit directories and the binary.
pub fn kept_paths(configs: &[&Config], places: &Places) -> Vec<Kept> {
    let mut kept: Vec<Kept> = Vec::new();
    let mut add = |path: PathBuf, dir: bool| {
        if !kept.iter().any(|k| k.path == path) {
            kept.push(Kept { path, dir });
        }
    };
    for config in configs {
        let file = match &config.origin {
            Origin::File(path) => path.clone(),
            Origin::Embedded => places.project.join(crate::config::CONFIG_FILE),
        };
        add(crate::lock::beside(&file), false);
        add(file, false);
        if let Some(mandate) = &config.mandate {
            add(mandate.path.clone(), false);
        }
        for guardrail in &config.guardrails {
            if let Source::File(path) = &guardrail.source {
                add(path.clone(), false);
            }
            for grant in &guardrail.data {
                add(grant.path.clone(), false);
            }
        }
        for path in &config.protect.paths {
            add(path.clone(), path.is_dir());
        }
    }
    // The hook settings themselves (Claude Code also guards its own), where
    // their directory exists: a missing one the sandbox would make read-only.
    let settings = CLAUDE_SETTINGS_FILES
        .iter()
        .map(|f| places.project.join(f))
        .chain(places.home.map(|h| h.join(CLAUDE_SETTINGS)));
    for file in settings {
        if file.parent().is_some_and(Path::is_dir) {
            add(file, false);
        }
    }
    let audit = crate::audit::trail(places.project);
    if let Some(dir) = audit.parent() {
        add(dir.to_path_buf(), true);
    }
    for dir in [places.state, places.cache].into_iter().flatten() {
        add(dir.to_path_buf(), true);
    }
    if let Some(binary) = places.binary {
        add(binary.to_path_buf(), false);
    }
    kept
}

/// The configs whose paths count for a project: the one on disk and the one its
/// ratchet accepted.
pub fn configs_of(project: &Path, state: Option<&Path>) -> Vec<Config> {
    let mut configs = vec![crate::policy::from_disk(Some(project))];
    if let Some(accepted) = state.and_then(|s| crate::policy::accepted_config(s, project)) {
        configs.push(accepted);
    }
    // A project with a config of its own could still have one appear nearer.
    if let Ok(Located::Embedded) = Config::locate(Some(project))
        && let Ok(embedded) = Config::embedded()
    {
        configs.push(embedded);
    }
    configs
}

/// Claude Code's entries for the kept paths: `sandbox.filesystem.denyWrite`
/// paths, and `permissions.deny` rules for its file tools (`Edit` rules cover
/// every tool that writes files). Paths inside the project are written relative
/// to it and paths under the home directory with `~/`, so the project's settings
/// hold no one's absolute home.
pub fn claude_entries(kept: &[Kept], places: &Places) -> (Vec<String>, Vec<String>) {
    let mut deny_write = Vec::new();
    let mut edit_rules = Vec::new();
    for entry in kept {
        let (sandbox, rule) = if let Ok(rel) = entry.path.strip_prefix(places.project) {
            let rel = rel.display().to_string();
            (format!("./{rel}"), format!("/{rel}"))
        } else if let Some(rel) = places.home.and_then(|h| entry.path.strip_prefix(h).ok()) {
            let rel = rel.display().to_string();
            (format!("~/{rel}"), format!("~/{rel}"))
        } else {
            let abs = entry.path.display().to_string();
            (abs.clone(), format!("/{abs}"))
        };
        deny_write.push(sandbox);
        edit_rules.push(if entry.dir {
            format!("Edit({rule}/**)")
        } else {
            format!("Edit({rule})")
        });
    }
    (deny_write, edit_rules)
}

/// Merges the entries into Claude Code settings, keeping every other key and
/// entry as it is: the Bash sandbox on, no escape from it for a single command
/// (`allowUnsandboxedCommands: false`), the paths in `denyWrite`, the rules in
/// `permissions.deny`. Returns whether anything changed.
pub fn merge(settings: &mut Value, deny_write: &[String], edit_rules: &[String]) -> bool {
    let before = settings.clone();
    if !settings.is_object() {
        *settings = json!({});
    }
    let Some(root) = settings.as_object_mut() else {
        return false;
    };
    let sandbox = object_at(root, "sandbox");
    sandbox.insert("enabled".into(), json!(true));
    sandbox.insert("allowUnsandboxedCommands".into(), json!(false));
    let filesystem = object_at(sandbox, "filesystem");
    append_missing(filesystem, "denyWrite", deny_write);
    let permissions = object_at(root, "permissions");
    append_missing(permissions, "deny", edit_rules);
    *settings != before
}

fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let entry = map.entry(key).or_insert_with(|| json!({}));
    if !entry.is_object() {
        *entry = json!({});
    }
    match entry {
        Value::Object(inner) => inner,
        _ => unreachable!("made an object just above"),
    }
}

fn append_missing(map: &mut Map<String, Value>, key: &str, wanted: &[String]) {
    let list = map.entry(key).or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Value::Array(items) = list {
        for item in wanted {
            if !items.iter().any(|v| v.as_str() == Some(item)) {
                items.push(json!(item));
            }
        }
    }
}

/// How the project's Claude Code settings stand.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Standing {
    /// `sandbox.enabled` is true in one of the settings files.
    pub enabled: bool,
    /// Single commands cannot leave the sandbox.
    pub no_escape: bool,
    /// Entries sandrail needs that are in none of them.
    pub missing: Vec<String>,
}

impl Standing {
    pub fn in_force(&self) -> bool {
        self.enabled && self.no_escape && self.missing.is_empty()
    }
}

/// Whether the project's Claude Code settings hold the sandbox and the entries.
pub fn standing(project: &Path, deny_write: &[String], edit_rules: &[String]) -> Standing {
    let settings: Vec<Value> = CLAUDE_SETTINGS_FILES
        .iter()
        .filter_map(|f| read(&project.join(f)).ok().flatten())
        .collect();
    let holds = |pointer: &str, item: &str| {
        settings.iter().any(|s| {
            s.pointer(pointer)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(item)))
        })
    };
    let flag = |pointer: &str, value: bool| {
        settings
            .iter()
            .any(|s| s.pointer(pointer).and_then(Value::as_bool) == Some(value))
    };
    let missing = deny_write
        .iter()
        .filter(|p| !holds("/sandbox/filesystem/denyWrite", p))
        .chain(edit_rules.iter().filter(|r| !holds("/permissions/deny", r)))
        .cloned()
        .collect();
    Standing {
        enabled: flag("/sandbox/enabled", true),
        no_escape: flag("/sandbox/allowUnsandboxedCommands", false),
        missing,
    }
}

/// A settings file: `None` when there is none, an error when it is not a JSON
/// object (nothing is written over a file that cannot be read).
pub fn read(path: &Path) -> Result<Option<Value>, String> {
    let bytes = match crate::files::read_regular(path, 1 << 20) {
        Ok(bytes) => bytes,
        Err(crate::files::FileError::Missing { .. }) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(value) if value.is_object() => Ok(Some(value)),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(e) => Err(format!("{} is not valid JSON: {e}", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_other_keys_and_is_idempotent() {
        let mut settings = json!({
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "sandrail hook"}]}]},
            "permissions": {"deny": ["Read(./.env)"]},
            "sandbox": {"filesystem": {"denyWrite": ["./secrets"]}}
        });
        let deny = vec![
            "./sandrail.toml".to_owned(),
            "~/.local/state/sandrail".to_owned(),
        ];
        let rules = vec!["Edit(/sandrail.toml)".to_owned()];
        assert!(merge(&mut settings, &deny, &rules));
        assert_eq!(
            settings["hooks"]["Stop"][0]["hooks"][0]["command"],
            "sandrail hook"
        );
        assert_eq!(
            settings["sandbox"]["filesystem"]["denyWrite"],
            json!(["./secrets", "./sandrail.toml", "~/.local/state/sandrail"])
        );
        assert_eq!(
            settings["permissions"]["deny"],
            json!(["Read(./.env)", "Edit(/sandrail.toml)"])
        );
        assert_eq!(settings["sandbox"]["enabled"], true);
        assert_eq!(settings["sandbox"]["allowUnsandboxedCommands"], false);
        assert!(
            !merge(&mut settings, &deny, &rules),
            "a second merge changes nothing"
        );
    }

    #[test]
    fn paths_are_written_relative_to_the_project_and_home() {
        let places = Places {
            project: Path::new("/home/dev/shop"),
            home: Some(Path::new("/home/dev")),
            state: None,
            cache: None,
            binary: None,
        };
        let kept = [
            Kept {
                path: "/home/dev/shop/sandrail.toml".into(),
                dir: false,
            },
            Kept {
                path: "/home/dev/.cache/sandrail".into(),
                dir: true,
            },
            Kept {
                path: "/usr/local/bin/sandrail".into(),
                dir: false,
            },
        ];
        let (deny, rules) = claude_entries(&kept, &places);
        assert_eq!(
            deny,
            [
                "./sandrail.toml",
                "~/.cache/sandrail",
                "/usr/local/bin/sandrail"
            ]
        );
        assert_eq!(
            rules,
            [
                "Edit(/sandrail.toml)",
                "Edit(~/.cache/sandrail/**)",
                "Edit(//usr/local/bin/sandrail)"
            ]
        );
    }
}
