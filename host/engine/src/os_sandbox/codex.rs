//! Codex's workspace sandbox (Landlock or bubblewrap on Linux, Seatbelt on
//! macOS): a command writes only inside the project and the temporary
//! directory, with the project's `.codex` and `.git` read-only. It keeps
//! sandrail's state, cache, bindings and binary, the user's settings and the
//! project's `.codex/hooks.json` from the agent's commands; the project's own
//! `sandrail.toml` stays writable, which the policy snapshot and the ratchet
//! make harmless.
//!
//! `sandrail init --harness codex` sets `sandbox_mode = "workspace-write"` in
//! the project's `.codex/config.toml` where it is unset or
//! `danger-full-access`; a stricter `read-only`, and a permission profile
//! (`default_permissions`, which Codex does not combine with `sandbox_mode`),
//! are left as they are. The network setting is left to the person.

use std::path::{Path, PathBuf};

/// Codex's config, relative to the project and to the home directory.
pub const CONFIG: &str = ".codex/config.toml";
/// The mode `init` sets.
pub const MODE: &str = "workspace-write";
/// The mode with no sandbox at all.
const NO_SANDBOX: &str = "danger-full-access";

/// `text` (a `.codex/config.toml`, possibly empty) with the workspace sandbox
/// on, or `None` when it already is; comments and layout are kept.
pub fn turned_on(text: &str) -> Result<Option<String>, String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| format!("{CONFIG} is not valid TOML: {e}"))?;
    if let Some(profile) = doc.get("default_permissions").and_then(|v| v.as_str()) {
        return if profile == ":danger-full-access" {
            Err(format!(
                "{CONFIG} selects the permission profile :danger-full-access, which has no sandbox; choose a sandboxed profile (:workspace) yourself"
            ))
        } else {
            Ok(None)
        };
    }
    match doc.get("sandbox_mode").and_then(|v| v.as_str()) {
        Some(mode) if mode != NO_SANDBOX => Ok(None),
        _ => {
            doc.insert("sandbox_mode", toml_edit::value(MODE));
            Ok(Some(doc.to_string()))
        }
    }
}

/// How Codex's sandbox stands for a project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The mode (or permission profile) in force, and the file that sets it
    /// (none: Codex's own default, which is sandboxed).
    pub mode: String,
    pub from: Option<PathBuf>,
}

impl Standing {
    pub fn in_force(&self) -> bool {
        self.mode != NO_SANDBOX && self.mode != ":danger-full-access"
    }
}

/// The mode the project's config sets, else the user's, else Codex's default.
/// (A `--sandbox` given on Codex's command line is not seen here.)
pub fn standing(project: &Path, home: Option<&Path>) -> Standing {
    let files = std::iter::once(project.join(CONFIG)).chain(home.map(|h| h.join(CONFIG)));
    for file in files {
        let Ok(bytes) = crate::files::read_regular(&file, 1 << 20) else {
            continue;
        };
        let Ok(doc) = String::from_utf8_lossy(&bytes).parse::<toml_edit::DocumentMut>() else {
            continue;
        };
        let mode = doc
            .get("default_permissions")
            .or_else(|| doc.get("sandbox_mode"))
            .and_then(|v| v.as_str());
        if let Some(mode) = mode {
            return Standing {
                mode: mode.to_owned(),
                from: Some(file),
            };
        }
    }
    Standing {
        mode: "Codex's default".to_owned(),
        from: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workspace_sandbox_is_set_where_there_is_none() {
        let set = turned_on("# mine\nmodel = \"o3\"\n").unwrap().unwrap();
        assert!(set.starts_with("# mine\nmodel = \"o3\"\n"), "{set}");
        assert!(set.contains("sandbox_mode = \"workspace-write\""), "{set}");
        assert_eq!(turned_on(&set).unwrap(), None);
        let open = turned_on("sandbox_mode = \"danger-full-access\"\n")
            .unwrap()
            .unwrap();
        assert!(open.contains("workspace-write"), "{open}");
        assert_eq!(turned_on("sandbox_mode = \"read-only\"\n").unwrap(), None);
        assert_eq!(
            turned_on("default_permissions = \":workspace\"\n").unwrap(),
            None
        );
        assert!(turned_on("default_permissions = \":danger-full-access\"\n").is_err());
    }
}
