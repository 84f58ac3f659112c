//! A harness's hook settings: where they live in a project, how sandrail is
//! registered in them (`sandrail init`), and what they register (`sandrail
//! doctor`). Each harness's file names its own [`Settings`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::event::EventKind;

/// How the harness lays out its hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `{"hooks": {"Event": [{"matcher": …, "hooks": [HOOK, …]}]}}`: Claude
    /// Code, Codex, Gemini CLI.
    Grouped,
    /// `{"version": 1, "hooks": {"event": [HOOK, …]}}`: Cursor, Copilot.
    Flat,
}

/// One harness's project hook settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// The project's settings file, relative to the project: the one a team
    /// commits.
    pub file: &'static str,
    /// The file `init` registers sandrail in, relative to the project. The
    /// registration names this machine's binary by absolute path (a bare name
    /// would run whatever `sandrail` the agent puts first on PATH), so where the
    /// harness reads a file kept out of the repository, it goes there, and the
    /// committed file holds no one's path.
    pub registration: &'static str,
    /// Other files the harness reads hooks from, relative to the project, and
    /// to the home directory: `doctor` counts registrations there too.
    pub also: &'static [&'static str],
    pub in_home: &'static [&'static str],
    pub layout: Layout,
    /// Every event sandrail is registered for, with the group's matcher (grouped
    /// layouts) where the event filters on tools.
    pub events: &'static [(&'static str, Option<&'static str>)],
    /// The hook object's key holding the command line.
    pub command_key: &'static str,
    /// The hook object for `command` under `event`.
    pub hook: fn(command: &str, event: &str) -> Value,
    /// The hook object's key holding its timeout, and the milliseconds in one
    /// of its units.
    pub timeout_key: &'static str,
    pub timeout_unit_ms: u64,
    /// The harness's own timeout for a hook of this event that names none.
    pub default_timeout: fn(EventKind) -> Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{0} is not a JSON object")]
    NotObject(String),
    #[error("`{at}` in the settings is not {expected}")]
    Shape { at: String, expected: &'static str },
}

/// What registering sandrail changed, event by event.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Registered {
    /// Events sandrail was added to.
    pub added: Vec<String>,
    /// Events already running sandrail, with the command they run when it is not
    /// the one being registered (left as it is: changing which binary a hook runs
    /// is a person's edit, not a command's).
    pub kept: Vec<(String, Option<String>)>,
}

impl Registered {
    pub fn changed(&self) -> bool {
        !self.added.is_empty()
    }
}

impl Settings {
    /// Adds `hook` (an object from [`Settings::hook`]) to every event that does
    /// not run sandrail yet, in `doc` or in `beside` (the other file the harness
    /// reads, when the registration has its own); everything else in `doc` is
    /// left as it is.
    pub fn register(
        &self,
        doc: &mut Value,
        beside: Option<&Value>,
        hook_for: &dyn Fn(&str) -> Value,
    ) -> Result<Registered, SettingsError> {
        let elsewhere = beside.map(|b| self.registrations(b)).unwrap_or_default();
        let top = doc
            .as_object_mut()
            .ok_or_else(|| SettingsError::NotObject(self.file.to_owned()))?;
        if self.layout == Layout::Flat {
            top.entry("version").or_insert(json!(1));
        }
        let hooks = top
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or(SettingsError::Shape {
                at: "hooks".into(),
                expected: "an object",
            })?;
        let mut registered = Registered::default();
        for (event, matcher) in self.events {
            let entries = hooks
                .entry(event.to_string())
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .ok_or_else(|| SettingsError::Shape {
                    at: format!("hooks.{event}"),
                    expected: "an array",
                })?;
            let hook = hook_for(event);
            let mut ours = self.sandrail_hooks(entries);
            ours.extend(elsewhere.get(*event).into_iter().flatten().cloned());
            if let Some(found) = ours.first() {
                let same = self.command_of(&hook) == Some(found.as_str());
                registered
                    .kept
                    .push((event.to_string(), (!same).then(|| found.clone())));
                continue;
            }
            let entry = match self.layout {
                Layout::Flat => hook,
                Layout::Grouped => {
                    let mut group = Map::new();
                    if let Some(matcher) = matcher {
                        group.insert("matcher".into(), json!(matcher));
                    }
                    group.insert("hooks".into(), json!([hook]));
                    Value::Object(group)
                }
            };
            entries.push(entry);
            registered.added.push(event.to_string());
        }
        Ok(registered)
    }

    /// Removes the hooks that run exactly `command` from `doc`, and the groups
    /// and events left empty by it; returns the events it was removed from.
    /// For moving this machine's registration out of the file a team commits.
    pub fn unregister(&self, doc: &mut Value, command: &str) -> Vec<String> {
        let mut removed = Vec::new();
        let Some(hooks) = doc.get_mut("hooks").and_then(Value::as_object_mut) else {
            return removed;
        };
        let is_ours = |hook: &Value| self.command_of(hook) == Some(command);
        for (event, entries) in hooks.iter_mut() {
            let Some(entries) = entries.as_array_mut() else {
                continue;
            };
            let before = self.hooks_of(entries).len();
            match self.layout {
                Layout::Flat => entries.retain(|hook| !is_ours(hook)),
                Layout::Grouped => {
                    for group in entries.iter_mut() {
                        if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                            inner.retain(|hook| !is_ours(hook));
                        }
                    }
                    entries.retain(|group| {
                        group
                            .get("hooks")
                            .and_then(Value::as_array)
                            .is_none_or(|inner| !inner.is_empty())
                    });
                }
            }
            if self.hooks_of(entries).len() != before {
                removed.push(event.clone());
            }
        }
        hooks.retain(|event, entries| {
            !removed.contains(event) || entries.as_array().is_none_or(|e| !e.is_empty())
        });
        let emptied = !removed.is_empty() && hooks.is_empty();
        if emptied && let Some(top) = doc.as_object_mut() {
            top.remove("hooks");
        }
        removed
    }

    /// What each event runs of sandrail's: its command lines (or a server's URL).
    pub fn registrations(&self, doc: &Value) -> BTreeMap<String, Vec<String>> {
        let mut found = BTreeMap::new();
        let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
            return found;
        };
        for (event, entries) in hooks {
            let Some(entries) = entries.as_array() else {
                continue;
            };
            let ours = self.sandrail_hooks(entries);
            if !ours.is_empty() {
                found.insert(event.clone(), ours);
            }
        }
        found
    }

    /// How long the harness gives each of its sandrail hooks, by event: the
    /// timeout each names, `None` for one that names none (the harness's
    /// default holds for it).
    pub fn timeouts(&self, doc: &Value) -> BTreeMap<String, Vec<Option<Duration>>> {
        let mut found = BTreeMap::<String, Vec<Option<Duration>>>::new();
        let Some(hooks) = doc.get("hooks").and_then(Value::as_object) else {
            return found;
        };
        for (event, entries) in hooks {
            let Some(entries) = entries.as_array() else {
                continue;
            };
            for hook in self.hooks_of(entries) {
                let ours = match self.command_of(hook) {
                    Some(command) => runs_sandrail_hook(command),
                    None => sandrail_server_url(hook).is_some(),
                };
                if !ours {
                    continue;
                }
                let timeout = hook
                    .get(self.timeout_key)
                    .and_then(Value::as_f64)
                    .filter(|t| t.is_finite() && *t >= 0.0 && *t < 1e9)
                    .map(|t| Duration::from_secs_f64(t * self.timeout_unit_ms as f64 / 1000.0));
                found.entry(event.clone()).or_default().push(timeout);
            }
        }
        found
    }

    /// The matchers under which each tool event runs sandrail (grouped layouts;
    /// a flat layout's hooks see every tool). `*`, `.*`, empty or missing: all.
    pub fn matchers(&self, doc: &Value) -> BTreeMap<String, Vec<String>> {
        let mut found = BTreeMap::<String, Vec<String>>::new();
        if self.layout != Layout::Grouped {
            return found;
        }
        let tool_events = self.events.iter().filter(|(_, m)| m.is_some());
        for (event, _) in tool_events {
            let groups = doc
                .get("hooks")
                .and_then(|h| h.get(*event))
                .and_then(Value::as_array);
            for group in groups.into_iter().flatten() {
                if self.sandrail_hooks(std::slice::from_ref(group)).is_empty() {
                    continue;
                }
                let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
                found
                    .entry(event.to_string())
                    .or_default()
                    .push(matcher.to_owned());
            }
        }
        found
    }

    /// The hook objects of an event's entries.
    fn hooks_of<'a>(&self, entries: &'a [Value]) -> Vec<&'a Value> {
        match self.layout {
            Layout::Flat => entries.iter().collect(),
            Layout::Grouped => entries
                .iter()
                .filter_map(|group| group.get("hooks").and_then(Value::as_array))
                .flatten()
                .collect(),
        }
    }

    /// The command lines (or server URLs) of the entries' hooks that run sandrail.
    fn sandrail_hooks(&self, entries: &[Value]) -> Vec<String> {
        self.hooks_of(entries)
            .into_iter()
            .filter_map(|hook| {
                if let Some(command) = self.command_of(hook) {
                    return runs_sandrail_hook(command).then(|| command.to_owned());
                }
                sandrail_server_url(hook).map(str::to_owned)
            })
            .collect()
    }

    fn command_of<'a>(&self, hook: &'a Value) -> Option<&'a str> {
        hook.get(self.command_key).and_then(Value::as_str)
    }
}

/// Whether a tool matcher lets every tool through.
pub fn matches_every_tool(matcher: &str) -> bool {
    matches!(matcher.trim(), "" | "*" | ".*")
}

/// Whether a hook command runs `sandrail hook` (by any path to the binary).
pub fn runs_sandrail_hook(command: &str) -> bool {
    hook_program(command).is_some()
}

/// The program of the `sandrail hook` a hook command line runs, as the shell
/// reads it: after assignments and wrappers (`env X=1`, `bash -c`), never a
/// word that is only an argument (`echo sandrail hook` runs `echo`).
pub fn hook_program(command: &str) -> Option<String> {
    hook_argv(command)?.into_iter().next()
}

/// The harness whose dialect a hook command line asks for (`--harness`).
pub fn hook_dialect(command: &str) -> Option<String> {
    let argv = hook_argv(command)?;
    let mut args = argv.iter().skip(2);
    while let Some(arg) = args.next() {
        if arg == "--harness" {
            return args.next().cloned();
        }
        if let Some(name) = arg.strip_prefix("--harness=") {
            return Some(name.to_owned());
        }
    }
    Some("claude".to_owned())
}

/// The words of the `sandrail hook` a hook command line runs.
///
/// `sandrail-hook` (the forwarding hook, which judges locally while its server
/// is down) counts as `sandrail hook` reading Claude Code's payloads.
fn hook_argv(command: &str) -> Option<Vec<String>> {
    crate::shell::analyse(command)
        .commands
        .into_iter()
        .map(|command| command.argv)
        .find(|argv| {
            let program = argv.first().map(|p| crate::shell::program(p));
            program == Some(FORWARDING_HOOK)
                || (program == Some("sandrail") && argv.get(1).is_some_and(|a| a == "hook"))
        })
}

/// The forwarding hook's program name.
pub const FORWARDING_HOOK: &str = "sandrail-hook";

/// `path` as one shell word.
pub fn shell_word(path: &str) -> String {
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c));
    if plain {
        path.to_owned()
    } else {
        format!("'{}'", path.replace('\'', r"'\''"))
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

/// The URL of an http hook that reaches `sandrail serve`: one that names its
/// project in sandrail's header, as the README registers it.
pub fn sandrail_server_url(hook: &Value) -> Option<&str> {
    if hook.get("type").and_then(Value::as_str) != Some("http") {
        return None;
    }
    let names_project = hook
        .get("headers")
        .and_then(Value::as_object)
        .is_some_and(|headers| {
            headers
                .keys()
                .any(|name| name.eq_ignore_ascii_case(sandrail_forward::PROJECT_HEADER))
        });
    names_project
        .then(|| hook.get("url").and_then(Value::as_str))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_of_a_hook_command_is_found() {
        assert_eq!(hook_program("sandrail hook").as_deref(), Some("sandrail"));
        assert_eq!(
            hook_program("SANDRAIL_SERVE_SOCKET=/s/x.sock /opt/bin/sandrail-hook").as_deref(),
            Some("/opt/bin/sandrail-hook")
        );
        assert_eq!(
            hook_dialect("SANDRAIL_SERVE_SOCKET=/s/x.sock /opt/bin/sandrail-hook").as_deref(),
            Some("claude")
        );
        assert_eq!(hook_program("echo sandrail-hook"), None);
        assert_eq!(
            hook_program("/opt/bin/sandrail hook --harness codex").as_deref(),
            Some("/opt/bin/sandrail")
        );
        assert_eq!(
            hook_program("'/a b/sandrail' hook").as_deref(),
            Some("/a b/sandrail")
        );
        assert_eq!(
            hook_program("env X=1 sandrail hook").as_deref(),
            Some("sandrail")
        );
        assert_eq!(hook_program("echo sandrail hook"), None);
        assert_eq!(hook_dialect("sandrail hook").as_deref(), Some("claude"));
        assert_eq!(
            hook_dialect("sandrail hook --harness codex").as_deref(),
            Some("codex")
        );
        assert_eq!(hook_program("other hook"), None);
    }

    #[test]
    fn shell_words_quote_what_needs_it() {
        assert_eq!(shell_word("/usr/bin/sandrail"), "/usr/bin/sandrail");
        assert_eq!(shell_word("/a b/it's"), r"'/a b/it'\''s'");
    }
}
