//! Claude Code's Bash sandbox (bubblewrap on Linux and WSL2, Seatbelt on
//! macOS), set up in the project's `.claude/settings.json`:
//!
//! - on, with no single command let out of it (`allowUnsandboxedCommands:
//!   false`), and Claude Code refusing to start where it cannot run
//!   (`failIfUnavailable`) rather than running commands unsandboxed;
//! - sandrail's paths in `sandbox.filesystem.denyWrite`, and an `Edit(…)` rule
//!   for each in `permissions.deny` for the file tools, which the sandbox does
//!   not cover;
//! - everyday work kept working: the package managers' caches writable
//!   ([`EVERYDAY_WRITES`]) and their registries and the git hosts reachable
//!   ([`EVERYDAY_DOMAINS`]); commands are still asked for as before
//!   (`autoAllowBashIfSandboxed: false`, unless the settings say otherwise).
//!
//! Every other key and entry of the settings is kept; a second merge changes
//! nothing.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Kept, Places};

/// The settings file `init` and `protect` write, relative to the project.
pub const SETTINGS: &str = ".claude/settings.json";
/// The project's settings files whose entries count.
pub const SETTINGS_FILES: &[&str] = &[".claude/settings.json", ".claude/settings.local.json"];
/// Claude Code's managed settings on Linux, above every other scope.
const MANAGED: &str = "/etc/claude-code/managed-settings.json";

/// Where package managers and build tools keep what they download, which a
/// sandboxed build, install or test must be able to write. Caches only: none
/// of these holds programs on the `PATH` or a tool's own configuration
/// (`~/.cargo/bin`, `~/.cargo/config.toml`, `~/go/bin`, `~/.local/bin` stay
/// read-only), so a sandboxed command cannot plant what the person's next
/// command outside the sandbox would run.
///
/// Each with the program whose cache it is (none: every tool's): the sandbox
/// skips a writable path that does not exist, so the caches of the tools
/// installed here are made when the sandbox is set up.
pub const EVERYDAY_WRITES: &[(&str, Option<&str>)] = &[
    ("~/.cache", None),
    ("~/.npm", Some("npm")),
    ("~/.cargo/registry", Some("cargo")),
    ("~/.cargo/git", Some("cargo")),
    ("~/go/pkg", Some("go")),
    ("~/.m2/repository", Some("mvn")),
    ("~/.gradle/caches", Some("gradle")),
    ("~/.gradle/wrapper", Some("gradle")),
    ("~/.bun/install/cache", Some("bun")),
    ("~/.local/share/pnpm/store", Some("pnpm")),
];

/// Makes the caches of the tools found on `PATH` under `home`, so that the
/// sandbox lets those tools write them.
pub fn prepare_caches(home: &Path) -> std::io::Result<()> {
    for (cache, owner) in EVERYDAY_WRITES {
        if owner.is_some_and(|program| super::prerequisites::on_path(program).is_none()) {
            continue;
        }
        if let Some(rel) = cache.strip_prefix("~/") {
            std::fs::create_dir_all(home.join(rel))?;
        }
    }
    Ok(())
}

/// The package registries and git hosts everyday work reaches. Others are
/// asked for (Claude Code prompts for a new domain).
pub const EVERYDAY_DOMAINS: &[&str] = &[
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "static.rust-lang.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "pypi.org",
    "files.pythonhosted.org",
    "proxy.golang.org",
    "sum.golang.org",
    "repo.maven.apache.org",
    "repo1.maven.org",
    "services.gradle.org",
    "plugins.gradle.org",
    "rubygems.org",
    "index.rubygems.org",
    "github.com",
    "codeload.github.com",
    "objects.githubusercontent.com",
    "gitlab.com",
    "bitbucket.org",
];

/// Claude Code's entries for the kept paths.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    /// `sandbox.filesystem.denyWrite` paths.
    pub deny_write: Vec<String>,
    /// `permissions.deny` rules for the file tools.
    pub edit_rules: Vec<String>,
}

/// Claude Code's entries for the kept paths: `denyWrite` paths, and `Edit`
/// rules (which cover every tool that writes files). Paths inside the project
/// are written relative to it and paths under the home directory with `~/`,
/// so the project's settings hold no one's absolute home; any other path is
/// written with `//`, which Claude Code reads as absolute in every version
/// (a single `/` may be read against the settings file's directory).
pub fn entries(kept: &[Kept], places: &Places) -> Entries {
    let mut out = Entries::default();
    for entry in kept {
        let (sandbox, rule) = if let Ok(rel) = entry.path.strip_prefix(&places.project) {
            let rel = rel.display().to_string();
            (format!("./{rel}"), format!("/{rel}"))
        } else if let Some(rel) = places
            .home
            .as_ref()
            .and_then(|h| entry.path.strip_prefix(h).ok())
        {
            let rel = rel.display().to_string();
            (format!("~/{rel}"), format!("~/{rel}"))
        } else {
            let abs = entry.path.display().to_string();
            (format!("/{abs}"), format!("/{abs}"))
        };
        out.deny_write.push(sandbox);
        out.edit_rules.push(if entry.dir {
            format!("Edit({rule}/**)")
        } else {
            format!("Edit({rule})")
        });
    }
    out
}

/// Merges the sandbox and the entries into Claude Code settings, keeping every
/// other key and entry as it is. Returns whether anything changed.
pub fn merge(settings: &mut Value, entries: &Entries) -> bool {
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
    sandbox.insert("failIfUnavailable".into(), json!(true));
    // Being sandboxed must not approve commands the person was asked about.
    sandbox
        .entry("autoAllowBashIfSandboxed")
        .or_insert(json!(false));
    let filesystem = object_at(sandbox, "filesystem");
    append_missing(filesystem, "denyWrite", &entries.deny_write);
    let caches: Vec<&str> = EVERYDAY_WRITES.iter().map(|(path, _)| *path).collect();
    append_missing(filesystem, "allowWrite", &strings(&caches));
    let network = object_at(sandbox, "network");
    append_missing(network, "allowedDomains", &strings(EVERYDAY_DOMAINS));
    let permissions = object_at(root, "permissions");
    append_missing(permissions, "deny", &entries.edit_rules);
    *settings != before
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
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

/// How Claude Code's settings stand for a project.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Standing {
    /// The Bash sandbox is on, as the settings' precedence resolves it.
    pub enabled: bool,
    /// Single commands cannot leave it.
    pub no_escape: bool,
    /// Claude Code refuses to start rather than run commands unsandboxed.
    pub fails_closed: bool,
    /// Entries sandrail needs that are in none of the settings.
    pub missing: Vec<String>,
}

impl Standing {
    pub fn in_force(&self) -> bool {
        self.enabled && self.no_escape && self.missing.is_empty()
    }

    /// What is wrong, in words, when it is not in force.
    pub fn why_not(&self) -> Option<String> {
        if !self.enabled {
            Some("the Bash sandbox is off".into())
        } else if !self.no_escape {
            Some(
                "commands may leave the sandbox (sandbox.allowUnsandboxedCommands is not false)"
                    .into(),
            )
        } else if !self.missing.is_empty() {
            Some(format!(
                "{} of sandrail's paths are not denied to it ({})",
                self.missing.len(),
                self.missing.join(", ")
            ))
        } else {
            None
        }
    }
}

/// Whether the settings hold the sandbox and the entries. A setting is read as
/// Claude Code resolves it: managed settings, then the project's local, then
/// the project's, then the user's; lists count from any of them.
pub fn standing(project: &Path, home: Option<&Path>, entries: &Entries) -> Standing {
    let files: Vec<PathBuf> = std::iter::once(PathBuf::from(MANAGED))
        .chain(SETTINGS_FILES.iter().rev().map(|f| project.join(f)))
        .chain(home.map(|h| h.join(SETTINGS)))
        .collect();
    let settings: Vec<Value> = files
        .iter()
        .filter_map(|f| super::read(f).ok().flatten())
        .collect();
    let holds = |pointer: &str, item: &str| {
        settings.iter().any(|s| {
            s.pointer(pointer)
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(item)))
        })
    };
    // The first file, in precedence order, that sets it.
    let flag = |pointer: &str| {
        settings
            .iter()
            .find_map(|s| s.pointer(pointer).and_then(Value::as_bool))
    };
    let missing = entries
        .deny_write
        .iter()
        .filter(|p| !holds("/sandbox/filesystem/denyWrite", p))
        .chain(
            entries
                .edit_rules
                .iter()
                .filter(|r| !holds("/permissions/deny", r)),
        )
        .cloned()
        .collect();
    Standing {
        enabled: flag("/sandbox/enabled") == Some(true),
        no_escape: flag("/sandbox/allowUnsandboxedCommands") == Some(false),
        fails_closed: flag("/sandbox/failIfUnavailable") == Some(true),
        missing,
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
            "sandbox": {"filesystem": {"denyWrite": ["./secrets"]}, "autoAllowBashIfSandboxed": true}
        });
        let entries = Entries {
            deny_write: vec![
                "./sandrail.toml".to_owned(),
                "~/.local/state/sandrail".to_owned(),
            ],
            edit_rules: vec!["Edit(/sandrail.toml)".to_owned()],
        };
        assert!(merge(&mut settings, &entries));
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
        assert_eq!(settings["sandbox"]["failIfUnavailable"], true);
        assert_eq!(
            settings["sandbox"]["autoAllowBashIfSandboxed"], true,
            "the person's own choice stays"
        );
        assert!(
            settings["sandbox"]["network"]["allowedDomains"]
                .as_array()
                .is_some_and(|d| d.contains(&json!("crates.io")))
        );
        assert!(
            !merge(&mut settings, &entries),
            "a second merge changes nothing"
        );
    }

    #[test]
    fn paths_are_written_relative_to_the_project_and_home_else_absolute() {
        let places = Places {
            project: "/home/dev/shop".into(),
            home: Some("/home/dev".into()),
            state: None,
            cache: None,
            binaries: Vec::new(),
            anchors: None,
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
        let entries = entries(&kept, &places);
        assert_eq!(
            entries.deny_write,
            [
                "./sandrail.toml",
                "~/.cache/sandrail",
                "//usr/local/bin/sandrail",
            ]
        );
        assert_eq!(
            entries.edit_rules,
            [
                "Edit(/sandrail.toml)",
                "Edit(~/.cache/sandrail/**)",
                "Edit(//usr/local/bin/sandrail)"
            ]
        );
    }
}
