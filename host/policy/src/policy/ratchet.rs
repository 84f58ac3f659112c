//! The ratchet: which changes to a project's policy a new session takes by
//! itself, and which wait for a person.
//!
//! A policy that only adds guardrail entries after the existing ones, every
//! existing entry unchanged, sharing no flag with them and adding at most a few
//! seconds to an event, cannot judge less than the one before it, so it is
//! taken. Anything else — an
//! entry removed, disabled, made observe-only, its component, data, pin, config,
//! matcher, events or failure policy changed, `[settings]`, `[protect]`,
//! `[facts]`, `[receipts]`, `[checkpoints]` or the mandate changed, a lock or component that no
//! longer loads, no guardrails at all — could, and is held until a person
//! accepts it with `sandrail trust`.

use std::collections::BTreeMap;

use crate::config::{Config, Guardrail, Source};
use crate::timeouts::HookTimeouts;

use super::manifest::{Content, Manifest};

/// One side of a comparison: a policy's manifest, its config text and the config
/// it stands for.
pub struct Side<'a> {
    pub manifest: &'a Manifest,
    pub text: &'a str,
    pub config: &'a Config,
}

/// How a policy on disk stands against the one accepted.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Guardrail entries it adds.
    pub added: Vec<String>,
    /// What else it changes, each in a sentence; empty when it only adds (or only
    /// rewrites comments and layout).
    pub changes: Vec<String>,
}

impl Comparison {
    /// Whether a new session may take it without a person.
    pub fn loosens_nothing(&self) -> bool {
        self.changes.is_empty()
    }
}

/// The most time guardrails added without a person may add to an event: well
/// within any harness's hook timeout, past which the call would go through.
const MAX_ADDED_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// The sections of a config besides its entries; a change to any is held.
const SECTIONS: &[&str] = &["settings", "protect", "facts", "receipts", "checkpoints"];

/// Compares the policy on disk (`candidate`) with the one accepted, under the
/// harness's hook `timeouts` (what one event may cost).
pub fn compare(
    accepted: &Side,
    candidate: &Side,
    loads: &dyn Loads,
    timeouts: &HookTimeouts,
) -> Comparison {
    let mut out = Comparison::default();
    let (Some(old), Some(new)) = (raw(accepted.text), raw(candidate.text)) else {
        out.changes.push("its config is not valid TOML".to_owned());
        return out;
    };
    for section in SECTIONS {
        if old.get(*section) != new.get(*section) {
            out.changes.push(format!("[{section}] changed"));
        }
    }
    let old_mandate = accepted.manifest.mandate.as_ref().map(|m| &m.content);
    let new_mandate = candidate.manifest.mandate.as_ref().map(|m| &m.content);
    if old_mandate != new_mandate {
        out.changes.push("the mandate file changed".to_owned());
    }
    if let Some(lock) = &candidate.manifest.lock
        && let Content::Unreadable(why) = &lock.content
    {
        out.changes
            .push(format!("sandrail.lock cannot be read ({why})"));
    }
    if candidate.config.guardrails.is_empty() {
        out.changes
            .push("it configures no guardrails: nothing would be judged".to_owned());
    }
    let old_entries = entries(&old);
    let new_entries = entries(&new);
    // Whether a changed component still loads, asked once per file and pin.
    let mut asked = std::collections::HashMap::new();
    for guardrail in &accepted.config.guardrails {
        let name = &guardrail.name;
        let Some(now) = candidate.config.guardrails.iter().find(|g| &g.name == name) else {
            out.changes.push(format!("guardrail '{name}' is removed"));
            continue;
        };
        let mut what = Vec::new();
        if let (Some(before), Some(after)) = (old_entries.get(name), new_entries.get(name)) {
            what.extend(changed_keys(before, after));
        }
        let component_changed =
            component(accepted.manifest, guardrail) != component(candidate.manifest, now);
        if component_changed {
            what.push("its component's bytes".to_owned());
        }
        if data(accepted.manifest, guardrail) != data(candidate.manifest, now) {
            what.push("its data files' contents".to_owned());
        }
        let pin_changed = guardrail.locked != now.locked;
        if pin_changed {
            what.push("its pin in sandrail.lock".to_owned());
        }
        if !what.is_empty() {
            out.changes
                .push(format!("guardrail '{name}' changed: {}", what.join(", ")));
        }
        if component_changed || pin_changed {
            let key = (now.source.to_string(), format!("{:?}", now.locked));
            let why = asked
                .entry(key)
                .or_insert_with(|| unreadable(candidate.manifest, now, loads))
                .clone();
            if let Some(why) = why {
                out.changes
                    .push(format!("guardrail '{name}' no longer loads ({why})"));
            }
        }
    }
    let existing = |name: &str| accepted.config.guardrails.iter().any(|g| g.name == name);
    let last_existing = candidate
        .config
        .guardrails
        .iter()
        .rposition(|g| existing(&g.name));
    let mut added_time = std::time::Duration::ZERO;
    for (at, guardrail) in candidate.config.guardrails.iter().enumerate() {
        let name = &guardrail.name;
        if existing(name) {
            continue;
        }
        out.added.push(name.clone());
        added_time += guardrail.limits.timeout;
        // Run first, it could use up the harness's hook timeout before the
        // existing guardrails answer, and a hook that times out lets the call
        // through.
        if last_existing.is_some_and(|last| at < last) {
            out.changes.push(format!(
                "the new guardrail '{name}' runs before existing ones (a new guardrail is taken by itself only after them)"
            ));
        }
        // A flag is shared state between guardrails: one that sets, consumes or
        // reads another's flag can change what that one decides.
        for flag in guardrail.flags.names() {
            if let Some(other) = accepted
                .config
                .guardrails
                .iter()
                .find(|g| g.flags.names().contains(&flag))
            {
                out.changes.push(format!(
                    "the new guardrail '{name}' shares the flag '{flag}' with '{}'",
                    other.name
                ));
            }
        }
    }
    if added_time > MAX_ADDED_TIME {
        out.changes.push(format!(
            "the new guardrails could add {} ms to every event (their timeout_ms together; more than {} ms is a person's call)",
            added_time.as_millis(),
            MAX_ADDED_TIME.as_millis()
        ));
    }
    // Counted over the whole policy: additions each within the limit above
    // must not add up, session by session, to the harness's timeout.
    out.changes.extend(crate::timeouts::over_budget(
        candidate.config,
        Some(accepted.config),
        timeouts,
    ));
    out
}

/// Why a policy cannot be the first one a project accepts without a person, if
/// it cannot: it judges nothing, or it switches self-protection off.
pub fn unfit_to_start(config: &Config) -> Option<String> {
    if config.guardrails.is_empty() {
        Some("it configures no guardrails".to_owned())
    } else if !config.protect.enabled {
        Some("it switches self-protection off".to_owned())
    } else {
        None
    }
}

fn raw(text: &str) -> Option<toml::Table> {
    toml::from_str(text).ok()
}

/// The config's `[[guardrail]]` tables by name.
fn entries(table: &toml::Table) -> BTreeMap<String, toml::Table> {
    table
        .get("guardrail")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_table)
        .filter_map(|t| {
            let name = t.get("name")?.as_str()?.to_owned();
            Some((name, t.clone()))
        })
        .collect()
}

/// The keys whose values differ between two entries, as the config writes them.
fn changed_keys(before: &toml::Table, after: &toml::Table) -> Vec<String> {
    let mut keys: Vec<&String> = before.keys().chain(after.keys()).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .filter(|k| before.get(*k) != after.get(*k))
        .map(|k| format!("`{k}`"))
        .collect()
}

/// What a guardrail's component file held (`None` for a bundled one).
fn component<'a>(manifest: &'a Manifest, guardrail: &Guardrail) -> Option<&'a Content> {
    match &guardrail.source {
        Source::File(path) => manifest.content_of(path),
        Source::Builtin(_) => None,
    }
}

/// What each of a guardrail's data files held, by the path the config writes.
fn data<'a>(
    manifest: &'a Manifest,
    guardrail: &Guardrail,
) -> BTreeMap<String, Option<&'a Content>> {
    guardrail
        .data
        .iter()
        .map(|g| (g.written.clone(), manifest.content_of(&g.path)))
        .collect()
}

/// Why a guardrail's component cannot be loaded, if it cannot: unreadable, not
/// a component, of the other kind, or not matching its pin.
fn unreadable(manifest: &Manifest, guardrail: &Guardrail, loads: &dyn Loads) -> Option<String> {
    if let Some(Content::Unreadable(why)) = component(manifest, guardrail) {
        return Some(why.clone());
    }
    loads.cannot_load(guardrail)
}

/// Whether a configured guardrail's component loads, which only the runtime
/// can tell (this crate has no wasmtime): the ratchet holds a change after
/// which one no longer does. `sandrail`'s runtime implements it.
pub trait Loads {
    /// Why `guardrail`'s component cannot be loaded, if it cannot.
    fn cannot_load(&self, guardrail: &Guardrail) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Origin;

    fn side_of(text: &str) -> (Manifest, Config) {
        let config = Config::parse(text, Origin::Embedded, None).expect("config");
        let manifest = Manifest {
            config: super::super::manifest::ConfigRef::Embedded {
                sha256: sandrail_event::sha256_hex(text.as_bytes()),
            },
            lock: None,
            mandate: None,
            components: Vec::new(),
            data: Vec::new(),
        };
        (manifest, config)
    }

    fn compared(old: &str, new: &str) -> Comparison {
        let (old_manifest, old_config) = side_of(old);
        let (new_manifest, new_config) = side_of(new);
        compare(
            &Side {
                manifest: &old_manifest,
                text: old,
                config: &old_config,
            },
            &Side {
                manifest: &new_manifest,
                text: new,
                config: &new_config,
            },
            &AllLoad,
            &HookTimeouts::default(),
        )
    }

    /// Every component loads: these tests compare configs of bundled
    /// guardrails, which the runtime's own tests load.
    struct AllLoad;

    impl Loads for AllLoad {
        fn cannot_load(&self, _: &Guardrail) -> Option<String> {
            None
        }
    }

    const GIT: &str = "[[guardrail]]\nname = \"git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n";
    const BUDGET: &str = "[[guardrail]]\nname = \"budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\n[guardrail.config]\nlimit = 3\n";

    #[test]
    fn an_addition_is_taken_and_comments_do_not_count() {
        let got = compared(GIT, &format!("# reviewed\n{GIT}{BUDGET}"));
        assert_eq!(got.added, ["budget"]);
        assert!(got.loosens_nothing(), "{:?}", got.changes);
    }

    #[test]
    fn removing_changing_or_emptying_is_held() {
        let both = format!("{GIT}{BUDGET}");
        let got = compared(&both, GIT);
        assert_eq!(got.changes, ["guardrail 'budget' is removed"]);
        let got = compared(&both, &both.replace("limit = 3", "limit = 300000"));
        assert_eq!(got.changes, ["guardrail 'budget' changed: `config`"]);
        let got = compared(
            &both,
            &both.replace("[guardrail.config]", "enabled = false\n[guardrail.config]"),
        );
        assert_eq!(got.changes, ["guardrail 'budget' changed: `enabled`"]);
        let got = compared(&both, "");
        assert!(
            got.changes.iter().any(|c| c.contains("no guardrails")),
            "{:?}",
            got.changes
        );
        let got = compared(&both, &format!("[settings]\ngate = \"observe\"\n{both}"));
        assert_eq!(got.changes, ["[settings] changed"]);
    }

    #[test]
    fn a_new_guardrail_before_the_others_or_with_a_long_deadline_is_held() {
        let got = compared(BUDGET, &format!("{GIT}{BUDGET}"));
        assert_eq!(got.added, ["git"]);
        assert!(
            got.changes[0].contains("runs before existing ones"),
            "{:?}",
            got.changes
        );
        let slow = format!("{GIT}[guardrail.limits]\ntimeout_ms = 6000\n");
        let got = compared(BUDGET, &format!("{BUDGET}{slow}"));
        assert!(
            got.changes[0].contains("could add 6000 ms"),
            "{:?}",
            got.changes
        );
    }

    #[test]
    fn a_new_guardrail_that_sets_a_checked_flag_is_held() {
        let checker = "[[guardrail]]\nname = \"c\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n[guardrail.flags]\ncheck = [\"tests_passed\"]\n";
        let setter = "[[guardrail]]\nname = \"s\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\n[guardrail.flags]\nset = [\"tests_passed\"]\n";
        let got = compared(checker, &format!("{checker}{setter}"));
        assert_eq!(got.added, ["s"]);
        assert!(!got.loosens_nothing());
        assert!(
            got.changes[0].contains("'tests_passed'"),
            "{:?}",
            got.changes
        );
    }
}
