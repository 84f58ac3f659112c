//! Self-protection: the agent cannot switch its guardrails off.
//!
//! Before any guardrail runs, a tool call that would write, move, delete, truncate
//! or change the mode of what sandrail depends on is refused: its config, lock and
//! mandate files, its plugins and their data, its state and cache directories, the
//! override trail, its own binary and the forwarding hook beside it, the user
//! service `init --serve` installs, and the harnesses' hook settings. The changed
//! paths come from the facts layer's one shell analysis, so every spelling the
//! facts see through (wrappers, redirections, `sed -i`, `git checkout --`, …)
//! counts, and paths are compared after `.`, `..`, repeated slashes and symlinks
//! are resolved, on both sides. Running sandrail's own state- and config-changing
//! commands through the shell is refused the same way. Reading is allowed.
//!
//! Claude Code's ConfigChange event is judged here too: a settings change that
//! sets `disableAllHooks` or drops a `sandrail hook` registration is refused.
//!
//! A person makes such changes outside the agent, or sets `[protect] enabled =
//! false`; `[protect] paths` adds paths.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{Config, Origin, Source};
use crate::facts::Changes;
use crate::harness::settings::{runs_sandrail_hook, sandrail_server_url};
use crate::protocol::HookInput;

/// Files only a person edits, wherever they are: a sandrail config found closer to
/// the working directory would replace the one in force.
const PROTECTED_NAMES: &[&str] = &["sandrail.toml", "sandrail.lock"];

/// The harnesses' hook settings, relative to the project and to the home
/// directory alike.
const HOOK_SETTINGS: &[&str] = &[
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".codex/hooks.json",
    ".codex/config.toml",
    ".cursor/hooks.json",
    ".gemini/settings.json",
];
/// Copilot's, which differ between the project and home.
const PROJECT_ONLY_HOOK_SETTINGS: &[&str] = &[
    ".github/hooks",
    ".github/copilot/settings.json",
    ".github/copilot/settings.local.json",
];
const HOME_ONLY_HOOK_SETTINGS: &[&str] = &[".copilot/hooks", ".copilot/settings.json"];
const SYSTEM_HOOK_SETTINGS: &[&str] = &[
    "/etc/claude-code/managed-settings.json",
    "/etc/cursor/hooks.json",
    "/etc/gemini-cli/settings.json",
];

/// The Claude Code settings files whose sandrail registrations are remembered, so
/// that a ConfigChange that drops one is recognised.
const CLAUDE_SETTINGS: &[&str] = &[".claude/settings.json", ".claude/settings.local.json"];

/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// Where the registrations are remembered, under the state directory.
/// Versioned: a registration is remembered whole since version 2, so records
/// of the event and matcher alone are not compared with it.
const REGISTRATIONS_DIR: &str = "protect-v2";
/// Where version 1 kept them: still read until a version-2 record exists.
const LEGACY_REGISTRATIONS_DIR: &str = "protect";

/// Environment a settings file may give hooks that changes which policy and
/// state sandrail reads, or whether it may fail open: the agent may not add,
/// change or drop any of it. `HOME` and the XDG directories decide where
/// sandrail looks for its state and compiled code when no `SANDRAIL_*` names
/// them, and `PATH` which programs a hook finds.
fn is_guarded_env(name: &str) -> bool {
    name.starts_with("SANDRAIL_")
        || name.starts_with("XDG_")
        || matches!(name, "CLAUDE_PROJECT_DIR" | "HOME" | "PATH")
}

/// What this process must not let the agent change.
pub struct Protected {
    entries: Vec<Entry>,
}

struct Entry {
    /// Absolute, with `.` and `..` resolved.
    path: PathBuf,
    /// What it is, for the refusal.
    what: String,
}

/// The places a call runs against.
pub struct Places<'a> {
    pub cwd: Option<&'a Path>,
    pub project: Option<&'a Path>,
    pub state: Option<&'a Path>,
    pub cache: Option<&'a Path>,
}

impl Protected {
    /// Everything the config in force depends on, plus the harnesses' settings.
    pub fn new(config: &Config, places: &Places) -> Protected {
        let mut entries = Vec::new();
        let mut add = |path: PathBuf, what: String| entries.push(Entry { path, what });
        if let Origin::File(path) = &config.origin {
            add(path.clone(), "sandrail's config".into());
        }
        if let Some(mandate) = &config.mandate {
            add(mandate.path.clone(), "sandrail's mandate file".into());
        }
        for guardrail in &config.guardrails {
            if let Source::File(path) = &guardrail.source {
                add(
                    path.clone(),
                    format!("the component of guardrail '{}'", guardrail.name),
                );
            }
            for grant in &guardrail.data {
                add(
                    grant.path.clone(),
                    format!("a data file of guardrail '{}'", guardrail.name),
                );
            }
        }
        if let Some(state) = places.state {
            add(state.to_path_buf(), "sandrail's state directory".into());
        }
        if let Some(cache) = places.cache {
            add(cache.to_path_buf(), "sandrail's compiled-code cache".into());
        }
        if let Ok(binary) = std::env::current_exe() {
            add(
                binary.with_file_name(crate::harness::settings::FORWARDING_HOOK),
                "sandrail's forwarding hook".into(),
            );
            add(binary, "the sandrail binary".into());
        }
        // Whoever changes the user service chooses what answers the forwarding
        // hook.
        for place in crate::locations::user_service_places() {
            add(place, "what runs sandrail's user service".into());
        }
        let project = places.project.or(places.cwd);
        if let Some(project) = project {
            let trail = crate::audit::trail(project);
            add(
                trail.parent().map_or(trail.clone(), Path::to_path_buf),
                "sandrail's audit trail".into(),
            );
            // Every directory above the project too: a harness that names no
            // project has it found from where the session stands, and a decoy
            // settings file must not move the guard off the real one.
            for dir in project.ancestors() {
                for file in HOOK_SETTINGS.iter().chain(PROJECT_ONLY_HOOK_SETTINGS) {
                    add(dir.join(file), "the harness's hook settings".into());
                }
            }
        }
        // `HOME` as the harness reads it, and the account's own home, which
        // a `HOME` set for the hook cannot move the guard off.
        for home in crate::locations::homes() {
            for file in HOOK_SETTINGS.iter().chain(HOME_ONLY_HOOK_SETTINGS) {
                add(home.join(file), "the harness's hook settings".into());
            }
        }
        if let Some(anchors) = crate::locations::binding::anchors_root() {
            add(
                anchors,
                "the bindings of sandrail's state directories".into(),
            );
        }
        for file in SYSTEM_HOOK_SETTINGS {
            add(PathBuf::from(file), "the harness's hook settings".into());
        }
        for path in &config.protect.paths {
            add(path.clone(), "a path sandrail's config protects".into());
        }
        for entry in &mut entries {
            entry.path = crate::facts::absolute(&entry.path.to_string_lossy(), places.cwd);
        }
        Protected { entries }
    }

    /// Why the call must not run, if it changes something protected.
    pub fn refusal(&self, changes: &Changes, cwd: Option<&Path>) -> Option<String> {
        if let Some(command) = &changes.sandrail_command {
            return Some(format!(
                "sandrail refused `{command}`: changing sandrail's state or config is for the user, not the agent. Ask the user to run it themselves."
            ));
        }
        if changes.paths.is_empty() {
            return None;
        }
        // Symlinks in the protected paths are resolved only for a call that
        // changes something: most calls change nothing.
        let mut resolver = Resolver::default();
        let resolved: Vec<Option<PathBuf>> = self
            .entries
            .iter()
            .map(|e| resolver.resolve(&e.path))
            .collect();
        // A file sharing an inode with a protected one (a hard link) is that file.
        let protected_files: Vec<(u64, u64, String)> = self
            .entries
            .iter()
            .map(|e| (e.path.clone(), e.what.clone()))
            .chain(cwd.into_iter().flat_map(|cwd| {
                PROTECTED_NAMES.iter().map(move |name| {
                    (
                        cwd.join(name),
                        format!("every sandrail config and lock file (here {name})"),
                    )
                })
            }))
            .filter_map(|(path, what)| {
                let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
                Some((meta.dev(), meta.ino(), what))
            })
            .collect();
        for change in &changes.paths {
            // PowerShell separates with `\` on every system.
            let path = change.path.replace('\\', "/");
            let spelled = crate::facts::absolute(&path, cwd);
            let joined = match cwd {
                Some(cwd) => cwd.join(&path),
                None => PathBuf::from(&path),
            };
            // A glob (`find . -name X -delete`, `> sandrail.t*`): whatever it can
            // match.
            if path.contains(['*', '?', '['])
                && let Some(what) = self.glob_reaches(&spelled, &resolved, change.removes)
            {
                return Some(refused(&change.path, &what));
            }
            let mut forms = vec![spelled.clone()];
            forms.extend(resolver.resolve(&joined));
            forms.extend(resolver.resolve(&spelled));
            for form in &forms {
                if let Ok(meta) = std::fs::metadata(form)
                    && meta.is_file()
                    && meta.nlink() > 1
                    && let Some((_, _, what)) = protected_files
                        .iter()
                        .find(|(dev, ino, _)| (*dev, *ino) == (meta.dev(), meta.ino()))
                {
                    return Some(refused(
                        &change.path,
                        &format!("{what}, through a hard link"),
                    ));
                }
                if let Some(name) = form.file_name().and_then(|n| n.to_str())
                    && PROTECTED_NAMES.iter().any(|p| same_name(p, name))
                {
                    return Some(refused(
                        &change.path,
                        &format!("every sandrail config and lock file (here {name})"),
                    ));
                }
                for (entry, entry_resolved) in self.entries.iter().zip(&resolved) {
                    let targets = std::iter::once(&entry.path).chain(entry_resolved);
                    for target in targets {
                        let (form, target) = (fold(form), fold(target));
                        let hit = form.starts_with(&target)
                            || (change.removes && target.starts_with(&form));
                        if hit {
                            return Some(refused(
                                &change.path,
                                &format!("{} ({})", entry.what, entry.path.display()),
                            ));
                        }
                    }
                }
            }
        }
        None
    }
}

impl Protected {
    /// What protected a glob of changed paths could match: a protected name in
    /// its last part, or a protected path. A deletion (`rm -rf dist/*`) reaches
    /// a config only where one is: a directory spelt out is looked in, one that is
    /// itself a pattern could hold any. (A write through a glob that matches
    /// nothing creates a file of that literal name; still refused.)
    fn glob_reaches(
        &self,
        glob: &Path,
        resolved: &[Option<PathBuf>],
        removes: bool,
    ) -> Option<String> {
        let text = glob.to_string_lossy();
        let build = |pattern: &str| {
            globset::GlobBuilder::new(pattern)
                .literal_separator(true)
                .case_insensitive(CASE_INSENSITIVE)
                .build()
                .ok()
                .map(|g| g.compile_matcher())
        };
        let matcher = build(&text)?;
        let (dir, last) = text.rsplit_once('/').unwrap_or(("", &text));
        let could_hold = |name: &str| {
            !removes
                || dir.contains(['*', '?', '['])
                || Path::new(dir).join(name).symlink_metadata().is_ok()
        };
        if let Some(name_matcher) = build(last)
            && let Some(name) = PROTECTED_NAMES
                .iter()
                .find(|n| name_matcher.is_match(n) && could_hold(n))
        {
            return Some(format!("every sandrail config and lock file (here {name})"));
        }
        self.entries
            .iter()
            .zip(resolved)
            .find(|(entry, entry_resolved)| {
                std::iter::once(&entry.path)
                    .chain(entry_resolved.iter())
                    .any(|target| target.ancestors().any(|a| matcher.is_match(a)))
            })
            .map(|(entry, _)| format!("{} ({})", entry.what, entry.path.display()))
    }
}

/// Whether the filesystems of this system compare names ignoring case (macOS's
/// and Windows' defaults): `SANDRAIL.TOML` is then `sandrail.toml`.
const CASE_INSENSITIVE: bool = cfg!(any(target_os = "macos", target_os = "windows"));

fn same_name(protected: &str, name: &str) -> bool {
    names_match(protected, name, CASE_INSENSITIVE)
}

fn names_match(protected: &str, name: &str, case_insensitive: bool) -> bool {
    if case_insensitive {
        protected.eq_ignore_ascii_case(name)
    } else {
        protected == name
    }
}

/// A path as this system's filesystems compare it.
fn fold(path: &Path) -> std::borrow::Cow<'_, Path> {
    if CASE_INSENSITIVE {
        std::borrow::Cow::Owned(PathBuf::from(path.to_string_lossy().to_lowercase()))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

fn refused(spelled: &str, what: &str) -> String {
    format!(
        "sandrail protects {what}: the agent may not change `{spelled}`. If the change is needed, ask the user to make it themselves."
    )
}

/// Paths with every symlink resolved: a path's longest existing ancestor made
/// canonical, the rest appended (with `..` taken lexically). It remembers every
/// ancestor it resolved: the protected paths share most of theirs (a settings
/// file in each directory above the project), and a `readlink` per component
/// for each would cost a write hundreds of calls.
///
/// It remembers paths by their exact bytes: `PathBuf` equality takes `f/` and
/// `f/.` for `f`, where the kernel does not (`f/` of a symlink to a file does
/// not resolve), so one spelling must not answer for another.
#[derive(Default)]
struct Resolver(std::collections::HashMap<std::ffi::OsString, Option<PathBuf>>);

impl Resolver {
    fn resolve(&mut self, path: &Path) -> Option<PathBuf> {
        if let Some(known) = self.0.get(path.as_os_str()) {
            return known.clone();
        }
        // One `stat` tells whether it exists; only then is it made canonical.
        let resolved = match std::fs::metadata(path).and_then(|_| std::fs::canonicalize(path)) {
            Ok(canonical) => Some(canonical),
            Err(_) => path.parent().and_then(|parent| {
                let mut resolved = self.resolve(parent)?;
                match path.file_name() {
                    Some(name) => resolved.push(name),
                    // A path ending in `..`.
                    None => {
                        resolved.pop();
                    }
                }
                Some(resolved)
            }),
        };
        self.0.insert(path.as_os_str().to_owned(), resolved.clone());
        resolved
    }
}

/// ConfigChange: why the settings change must be refused, if it sets
/// `disableAllHooks` or drops a `sandrail hook` registration the file had.
///
/// What the file had is what sandrail remembered of it — read from the file
/// itself at each session's start and at each change it accepted — plus whatever
/// the payload's `previous_config` adds: a payload can raise that, never lower
/// it, so a forged ConfigChange cannot make a later real one that drops sandrail
/// look harmless. Only a person lowers it, with `sandrail trust`.
pub fn config_change_refusal(
    input: &HookInput,
    state: Option<&Path>,
    project: Option<&Path>,
) -> Option<String> {
    let file = input
        .fields
        .get("file_path")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let top = serde_json::from_str::<serde_json::Map<String, Value>>(&input.raw).ok();
    let from_payload = |key: &str| top.as_ref()?.get(key).filter(|v| v.is_object()).cloned();
    let new = from_payload("new_config").or_else(|| file.as_deref().and_then(read_settings));
    let Some(new) = new else {
        eprintln!(
            "sandrail: ConfigChange names no settings sandrail can read; the change is not judged"
        );
        return None;
    };
    if new.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        return Some(
            "sandrail refused this settings change: `disableAllHooks` would switch off sandrail's guardrails. Only the user may change that, outside the agent.".into(),
        );
    }
    let record = state
        .zip(file.as_deref())
        .and_then(|(state, file)| remembered(state, file));
    // No version-2 record yet (a session started before it): what version 1
    // remembered still counts, by event and matcher.
    let legacy = match (&record, state.zip(file.as_deref())) {
        (None, Some((state, file))) => remembered_before_v2(state, file),
        _ => BTreeSet::new(),
    };
    let mut previous = record.unwrap_or_default();
    if let Some(claimed) = from_payload("previous_config") {
        previous.extend(registrations(&claimed));
    }
    let now = registrations(&new);
    // A registration the project's other settings file holds still runs: moved
    // from the committed file to settings.local.json (as `sandrail init` does), it
    // is not dropped — if that file holds it as sandrail last accepted it (a
    // copy planted there by a change that was itself refused does not count) and
    // does not switch the hooks off.
    let beside: BTreeSet<String> = match (state, project, file.as_deref()) {
        (Some(state), Some(project), Some(file)) => project_sibling(project, file)
            .and_then(|sibling| {
                let settings = read_settings(&sibling)?;
                let off = settings.get("disableAllHooks").and_then(Value::as_bool) == Some(true);
                let accepted = remembered(state, &sibling)?;
                (!off).then(|| {
                    registrations(&settings)
                        .into_iter()
                        .filter(|r| !r.starts_with("env|") && accepted.contains(r))
                        .collect()
                })
            })
            .unwrap_or_default(),
        _ => BTreeSet::new(),
    };
    let mut dropped: Vec<&str> = previous
        .iter()
        .filter(|r| !now.contains(*r) && !beside.contains(*r))
        .map(String::as_str)
        .collect();
    dropped.extend(legacy.iter().map(String::as_str).filter(|old| {
        !now.iter()
            .any(|n| n.starts_with(&format!("{old}|")) || n.starts_with(&format!("{old} ")))
    }));
    let added_env: Vec<&str> = now
        .difference(&previous)
        .map(String::as_str)
        .filter(|r| r.starts_with("env|"))
        .collect();
    let trust = "Only the user may change that, outside the agent; a person who made this change accepts it with `sandrail trust` in a terminal.";
    if !dropped.is_empty() {
        return Some(format!(
            "sandrail refused this settings change: it removes, narrows or alters sandrail's hook registration or environment ({}). {trust}",
            dropped.join(", ")
        ));
    }
    if !added_env.is_empty() {
        return Some(format!(
            "sandrail refused this settings change: it sets environment sandrail reads ({}). {trust}",
            added_env.join(", ")
        ));
    }
    if let (Some(state), Some(file)) = (state, file.as_deref()) {
        // What the file now holds, as read from the file, added to what it had.
        if let Some(settings) = read_settings(file) {
            previous.extend(registrations(&settings));
        }
        remember(state, file, &previous);
    }
    None
}

/// At a session's start: adds the sandrail registrations the project's and the
/// user's Claude Code settings hold now to what is remembered of them, so that a
/// later ConfigChange can be compared. Nothing remembered is forgotten here.
pub fn remember_registrations(state: &Path, project: Option<&Path>) {
    for file in claude_settings(project) {
        if let Some(settings) = read_settings(&file) {
            let mut known = remembered(state, &file).unwrap_or_default();
            known.extend(registrations(&settings));
            remember(state, &file, &known);
        }
    }
}

/// A person accepted what is on disk (`sandrail trust`): what is remembered of
/// each settings file becomes exactly what it holds now.
/// Fails with the first file whose registrations could not be written: a
/// person's acceptance must not be reported when it was not kept.
pub fn reset_registrations(state: &Path, project: Option<&Path>) -> std::io::Result<()> {
    for file in claude_settings(project) {
        let now = read_settings(&file)
            .map(|settings| registrations(&settings))
            .unwrap_or_default();
        write_remembered(state, &file, &now).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "cannot remember the hook registrations of {}: {e}",
                    file.display()
                ),
            )
        })?;
    }
    Ok(())
}

/// The sandrail registrations remembered for the project's and the user's Claude
/// Code settings that the files no longer hold: what `sandrail trust` would let
/// go of.
pub fn dropped_registrations(state: &Path, project: Option<&Path>) -> Vec<String> {
    let mut dropped = Vec::new();
    for file in claude_settings(project) {
        let Some(known) = remembered(state, &file) else {
            continue;
        };
        let now = read_settings(&file)
            .map(|settings| registrations(&settings))
            .unwrap_or_default();
        for registration in known.difference(&now) {
            dropped.push(format!("{} ({registration})", file.display()));
        }
    }
    dropped
}

/// The Claude Code settings files whose registrations are remembered.
fn claude_settings(project: Option<&Path>) -> Vec<PathBuf> {
    CLAUDE_SETTINGS
        .iter()
        .flat_map(|f| project.map(|p| p.join(f)))
        .chain(
            crate::locations::homes()
                .into_iter()
                .map(|h| h.join(".claude/settings.json")),
        )
        .collect()
}

/// The project's other Claude Code settings file, when `file` is one of the
/// project's two (`.claude/settings.json`, `.claude/settings.local.json`); the
/// user's own settings have no such sibling that Claude Code reads.
fn project_sibling(project: &Path, file: &Path) -> Option<PathBuf> {
    let settings = crate::harness::Harness::Claude.settings();
    let (shared, local) = (
        project.join(settings.file),
        project.join(settings.registration),
    );
    if file == shared {
        Some(local)
    } else if file == local {
        Some(shared)
    } else {
        None
    }
}

fn read_settings(path: &Path) -> Option<Value> {
    let bytes = crate::files::read_regular(path, MAX_SETTINGS_BYTES).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Every registration of sandrail the settings hold: `event|matcher|command`
/// (or the server's URL) and the rest of the hook entry, so that any edit to
/// one — a command made harmless (`|| true`, `>/dev/null`, another
/// `--harness`), a tiny timeout, `async` — reads as dropping it; and
/// `env|NAME=VALUE` for the environment it gives hooks that steers sandrail.
fn registrations(settings: &Value) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    // The environment the settings give hooks, where it steers sandrail.
    for (name, value) in settings
        .get("env")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if is_guarded_env(name) {
            found.insert(format!("env|{name}={value}"));
        }
    }
    let Some(hooks) = settings.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, groups) in hooks {
        for group in groups.as_array().into_iter().flatten() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("*");
            for hook in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let command = hook
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|c| runs_sandrail_hook(c));
                // `sandrail serve` as an http hook, by its URL: moving it elsewhere
                // drops the registration as surely as deleting it.
                let Some(what) = command.or_else(|| sandrail_server_url(hook)) else {
                    continue;
                };
                let mut rest = hook.as_object().cloned().unwrap_or_default();
                rest.remove("command");
                rest.remove("url");
                found.insert(format!("{event}|{matcher}|{what} {}", Value::Object(rest)));
            }
        }
    }
    found
}

fn record_path(state: &Path, settings: &Path) -> PathBuf {
    let key = crate::sha256_hex(settings.to_string_lossy().as_bytes());
    state.join(REGISTRATIONS_DIR).join(&key[..32])
}

fn remembered(state: &Path, settings: &Path) -> Option<BTreeSet<String>> {
    let text = std::fs::read_to_string(record_path(state, settings)).ok()?;
    Some(text.lines().map(str::to_owned).collect())
}

/// What a version-1 record remembered of the file (`event|matcher`, or
/// `event|matcher|url` for a server), for a file no version-2 record covers yet.
fn remembered_before_v2(state: &Path, settings: &Path) -> BTreeSet<String> {
    let key = crate::sha256_hex(settings.to_string_lossy().as_bytes());
    std::fs::read_to_string(state.join(LEGACY_REGISTRATIONS_DIR).join(&key[..32]))
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn remember(state: &Path, settings: &Path, registrations: &BTreeSet<String>) {
    if let Err(e) = write_remembered(state, settings, registrations) {
        eprintln!(
            "sandrail: cannot remember the hook registrations of {}: {e}",
            settings.display()
        );
    }
}

/// Writes what is remembered of `settings`, unless it is already that.
fn write_remembered(
    state: &Path,
    settings: &Path,
    registrations: &BTreeSet<String>,
) -> std::io::Result<()> {
    if remembered(state, settings).as_ref() == Some(registrations) {
        return Ok(());
    }
    let path = record_path(state, settings);
    let text: String = registrations.iter().map(|r| format!("{r}\n")).collect();
    let dir = state.join(REGISTRATIONS_DIR);
    crate::locations::create_private_dir(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(&path).map(drop).map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_compare_ignoring_case_where_the_filesystem_does() {
        assert!(names_match("sandrail.toml", "SANDRAIL.TOML", true));
        assert!(!names_match("sandrail.toml", "SANDRAIL.TOML", false));
        assert!(names_match("sandrail.toml", "sandrail.toml", false));
    }

    #[test]
    fn sandrail_hook_commands_are_recognised() {
        assert!(runs_sandrail_hook("sandrail hook"));
        assert!(runs_sandrail_hook("/home/me/.cargo/bin/sandrail hook"));
        assert!(runs_sandrail_hook("\"$HOME/bin/sandrail\" hook"));
        assert!(!runs_sandrail_hook("sandrail list"));
        assert!(!runs_sandrail_hook("echo sandrail"));
    }

    #[test]
    fn registrations_are_the_whole_hook_entry() {
        let settings = serde_json::json!({"hooks": {
            "PreToolUse": [
                {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "sandrail hook"}]},
                {"matcher": "Read", "hooks": [{"type": "command", "command": "other"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "sandrail hook"}]}]
        }});
        let found: Vec<String> = registrations(&settings).into_iter().collect();
        assert_eq!(
            found,
            [
                r#"PreToolUse|Bash|Write|sandrail hook {"type":"command"}"#,
                r#"Stop|*|sandrail hook {"type":"command"}"#
            ]
        );
        // Made harmless, each is another registration: the first is dropped.
        for harmless in [
            json!({"type": "command", "command": "sandrail hook || true"}),
            json!({"type": "command", "command": "sandrail hook --harness gemini"}),
            json!({"type": "command", "command": "sandrail hook", "timeout": 0.001}),
            json!({"type": "command", "command": "sandrail hook", "async": true}),
        ] {
            let edited = json!({"hooks": {"Stop": [{"hooks": [harmless]}]}});
            assert!(
                !registrations(&edited).contains(r#"Stop|*|sandrail hook {"type":"command"}"#),
                "{edited}"
            );
        }
    }

    #[test]
    fn a_served_registration_is_event_matcher_and_url() {
        let served = |url: &str, header: &str| {
            serde_json::json!({"hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": url,
                    "headers": {header: "$CLAUDE_PROJECT_DIR"}, "allowedEnvVars": ["CLAUDE_PROJECT_DIR"]}]}],
                "Stop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:8787/other"}]}]
            }})
        };
        let found: Vec<String> =
            registrations(&served("http://127.0.0.1:8787/", "X-Sandrail-Project-Dir"))
                .into_iter()
                .collect();
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("PreToolUse|*|http://127.0.0.1:8787/ "));
        // Moved to another port, it is another registration: the first is dropped.
        assert!(
            !registrations(&served("http://127.0.0.1:9/", "x-sandrail-project-dir"))
                .iter()
                .any(|r| r.starts_with("PreToolUse|*|http://127.0.0.1:8787/"))
        );
    }

    #[test]
    fn resolving_keeps_the_missing_tail() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = std::fs::canonicalize(dir.path()).expect("canonical");
        let resolved = Resolver::default()
            .resolve(&dir.path().join("a/b/../c"))
            .expect("resolves");
        assert_eq!(resolved, real.join("a/c"));
    }

    /// `link/` and `link/.` do not resolve where `link` is a symlink to a
    /// file; that must not stop `link` itself from resolving to its target.
    #[cfg(unix)]
    #[test]
    fn a_trailing_slash_does_not_answer_for_the_path_without_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::write(real.join("settings.json"), "{}").expect("file");
        std::os::unix::fs::symlink(real.join("settings.json"), real.join("f")).expect("symlink");
        let mut resolver = Resolver::default();
        let f = dir.path().join("f");
        for spelling in ["f/", "f/."] {
            resolver.resolve(Path::new(&format!("{}/{spelling}", dir.path().display())));
        }
        assert_eq!(resolver.resolve(&f), Some(real.join("settings.json")));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_ancestor_resolves_for_every_path_below_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let real = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir(real.join("target")).expect("dir");
        std::os::unix::fs::symlink(real.join("target"), real.join("link")).expect("symlink");
        let mut resolver = Resolver::default();
        for tail in ["x/settings.json", "x/other.json", "y/.."] {
            let expected = match tail {
                "y/.." => real.join("target"),
                tail => real.join("target").join(tail),
            };
            assert_eq!(
                resolver.resolve(&dir.path().join("link").join(tail)),
                Some(expected),
                "{tail}"
            );
        }
    }
}
