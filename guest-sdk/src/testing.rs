//! Native unit tests of guardrail code: an in-memory host behind `state`, `flags`,
//! `data`, `cycle`, `escalation` and `log`, so `cargo test` on the host target runs
//! a guardrail's stateful code without building a component.
//!
//! Each test starts with an empty host: it lives in a thread-local, and the test
//! harness runs every test on a thread of its own. [`reset`] empties it by hand.
//!
//! ```
//! use sandrail_guest::{Event, Guardrail, Verdict, flags, state, testing};
//!
//! struct ThreeStrikes;
//!
//! impl Guardrail for ThreeStrikes {
//!     fn evaluate(event: &Event) -> sandrail_guest::Result<Verdict> {
//!         if !event.command().is_some_and(|c| c.contains("curl")) {
//!             return Ok(Verdict::pass());
//!         }
//!         let seen: u32 = state::get("curls")?.unwrap_or(0) + 1;
//!         state::set("curls", &seen)?;
//!         if seen >= 3 {
//!             flags::set("curl-limit")?;
//!             return Ok(Verdict::violation("curl", "three curls are enough"));
//!         }
//!         Ok(Verdict::pass())
//!     }
//! }
//!
//! let curl = Event::pre_tool_use("Bash", serde_json::json!({"command": "curl x"}));
//! for _ in 0..2 {
//!     assert_eq!(testing::evaluate::<ThreeStrikes>(&curl).unwrap(), Verdict::pass());
//! }
//! assert_eq!(
//!     testing::evaluate::<ThreeStrikes>(&curl).unwrap(),
//!     Verdict::violation("curl", "three curls are enough")
//! );
//! assert_eq!(testing::state_value::<u32>("curls"), Some(3));
//! assert!(testing::flag_is_set("curl-limit"));
//! ```
//!
//! What this host does not judge: the limits (key and value sizes, the keyspace's
//! budget), the entry's grants beyond what [`grant_flags`] restricts, and the
//! transaction (a failed run's writes are kept here; the real host drops them).
//! `sandrail test` runs case files against the built component in the real
//! sandbox for those.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::bindings::sandrail::guardrail::{cycle as wit_cycle, escalation as wit_escalation};
use crate::{Context, Event, Guardrail, Transition, Verdict};

pub use crate::bindings::sandrail::guardrail::log::Level as LogLevel;

/// Which flags the entry grants, when a test restricts them.
#[derive(Debug, Clone, Default)]
struct FlagGrants {
    set: BTreeSet<String>,
    check: BTreeSet<String>,
    consume: BTreeSet<String>,
}

#[derive(Default)]
struct World {
    state: BTreeMap<String, String>,
    owners: BTreeMap<String, BTreeMap<String, String>>,
    flags: BTreeSet<String>,
    /// `None`: every flag is granted for every use.
    flag_grants: Option<FlagGrants>,
    data: BTreeMap<String, String>,
    span: Vec<wit_cycle::SpanEvent>,
    contexts: Vec<wit_cycle::ContextState>,
    rules: Vec<wit_escalation::RuleStanding>,
    logs: Vec<(LogLevel, String)>,
    unavailable: Option<String>,
}

thread_local! {
    static WORLD: RefCell<World> = RefCell::new(World::default());
}

fn with<T>(f: impl FnOnce(&mut World) -> T) -> T {
    WORLD.with(|w| f(&mut w.borrow_mut()))
}

/// Empties the in-memory host: state, flags, data, cycle, rules and logs.
pub fn reset() {
    with(|w| *w = World::default());
}

/// Runs a guardrail's `evaluate` on `event` as the host would (the turn helpers
/// see the event's turn); an `Err` is what the host would report as a failure.
pub fn evaluate<G: Guardrail>(event: &Event) -> crate::Result<Verdict> {
    crate::state::set_current_turn(event.turn().map(|t| t.id.clone()));
    G::evaluate(event)
}

/// Runs a context's `observe` on `event` with its current payload.
pub fn observe<C: Context>(
    event: &Event,
    payload: Option<&serde_json::Value>,
) -> crate::Result<Transition> {
    crate::state::set_current_turn(event.turn().map(|t| t.id.clone()));
    C::observe(event, payload)
}

/// Runs a context's `leave` at a Stop.
pub fn leave<C: Context>(
    event: &Event,
    payload: &serde_json::Value,
) -> crate::Result<Option<String>> {
    crate::state::set_current_turn(event.turn().map(|t| t.id.clone()));
    C::leave(event, payload)
}

/// Stores `value` (as JSON, like [`crate::state::set`]) in the guardrail's keyspace.
pub fn put_state<T: Serialize + ?Sized>(key: &str, value: &T) {
    let text = serde_json::to_string(value).unwrap_or_else(|e| panic!("{key}: {e}"));
    with(|w| w.state.insert(key.to_owned(), text));
}

/// The guardrail's keyspace: every key and its raw (JSON) text.
pub fn state_entries() -> BTreeMap<String, String> {
    with(|w| w.state.clone())
}

/// The value under `key`, parsed; `None` when absent (a value that does not parse
/// as `T` panics, naming the key).
pub fn state_value<T: DeserializeOwned>(key: &str) -> Option<T> {
    let text = with(|w| w.state.get(key).cloned())?;
    Some(serde_json::from_str(&text).unwrap_or_else(|e| panic!("state `{key}`: {e}: {text}")))
}

/// Gives guardrail `owner` an entry, and lists it as required, so
/// [`crate::state::list_owner`] may read it.
pub fn put_owner_state<T: Serialize + ?Sized>(owner: &str, key: &str, value: &T) {
    let text = serde_json::to_string(value).unwrap_or_else(|e| panic!("{key}: {e}"));
    with(|w| {
        w.owners
            .entry(owner.to_owned())
            .or_default()
            .insert(key.to_owned(), text)
    });
}

/// Lists `owners` as required (the entry's `requires`), with no entries yet.
pub fn require(owners: &[&str]) {
    with(|w| {
        for owner in owners {
            w.owners.entry((*owner).to_owned()).or_default();
        }
    });
}

/// Sets a flag, as another guardrail would have.
pub fn set_flag(name: &str) {
    with(|w| w.flags.insert(name.to_owned()));
}

/// Whether a flag is set.
pub fn flag_is_set(name: &str) -> bool {
    with(|w| w.flags.contains(name))
}

/// Restricts the flags the guardrail may touch to what its entry would grant
/// (`[guardrail.flags] set = [...], check = [...], consume = [...]`); without it,
/// every flag is granted.
pub fn grant_flags(set: &[&str], check: &[&str], consume: &[&str]) {
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
    with(|w| {
        w.flag_grants = Some(FlagGrants {
            set: names(set),
            check: names(check),
            consume: names(consume),
        })
    });
}

/// Grants the file `path` (as the entry's `data` names it) with this content.
pub fn put_data(path: &str, text: &str) {
    with(|w| w.data.insert(path.to_owned(), text.to_owned()));
}

/// Adds an event to the span: a tool call with these `tool` facts that changed
/// `files` (each left with some content).
pub fn push_span_event(tool_name: &str, facts: serde_json::Value, files: &[&str]) {
    with(|w| {
        let seq = w.span.len() as u64 + 1;
        w.span.push(wit_cycle::SpanEvent {
            seq,
            kind: crate::EventKind::PostToolUse,
            tool_name: Some(tool_name.to_owned()),
            turn: None,
            facts: facts.to_string(),
            files: files
                .iter()
                .map(|path| wit_cycle::FileChange {
                    path: (*path).to_owned(),
                    sha256: Some(format!("sha256-of-{path}-{seq}")),
                    before: None,
                })
                .collect(),
        })
    });
}

/// Adds a raw span event, for what [`push_span_event`] does not build.
pub fn push_raw_span_event(event: wit_cycle::SpanEvent) {
    with(|w| w.span.push(event));
}

/// Sets the state of a context this guardrail requires, replacing one of that name.
pub fn put_context(context: wit_cycle::ContextState) {
    with(|w| {
        w.contexts.retain(|c| c.name != context.name);
        w.contexts.push(context);
    });
}

/// Records how the host answered one of the guardrail's rules so far: `count`
/// violations, the highest level reached (`None`: the entry does not escalate).
pub fn put_rule(rule: &str, count: u64, level: Option<wit_escalation::Level>) {
    with(|w| {
        w.rules.retain(|r| r.rule != rule);
        w.rules.push(wit_escalation::RuleStanding {
            rule: rule.to_owned(),
            count,
            level,
            overrides: 0,
        });
        w.rules.sort_by(|a, b| a.rule.cmp(&b.rule));
    });
}

/// Makes every state, flag, cycle and escalation call fail as when the session's
/// state cannot be reached, to test that path.
pub fn make_unavailable(why: &str) {
    with(|w| w.unavailable = Some(why.to_owned()));
}

/// What the guardrail logged, in order.
pub fn logs() -> Vec<(LogLevel, String)> {
    with(|w| w.logs.clone())
}

/// The in-memory implementations of the imports, with the signatures the
/// generated bindings have.
pub(crate) mod host {
    pub mod state {
        pub use crate::bindings::sandrail::guardrail::state::{Entry, StateError};

        use super::super::with;

        fn reachable() -> Result<(), StateError> {
            match with(|w| w.unavailable.clone()) {
                Some(why) => Err(StateError::Unavailable(why)),
                None => Ok(()),
            }
        }

        pub fn get(key: &str) -> Result<Option<String>, StateError> {
            reachable()?;
            Ok(with(|w| w.state.get(key).cloned()))
        }

        pub fn set(key: &str, value: &str) -> Result<(), StateError> {
            reachable()?;
            with(|w| w.state.insert(key.to_owned(), value.to_owned()));
            Ok(())
        }

        pub fn delete(key: &str) -> Result<bool, StateError> {
            reachable()?;
            Ok(with(|w| w.state.remove(key).is_some()))
        }

        pub fn list(prefix: &str) -> Result<Vec<Entry>, StateError> {
            reachable()?;
            Ok(with(|w| entries(&w.state, prefix)))
        }

        pub fn list_owner(owner: &str, prefix: &str) -> Result<Vec<Entry>, StateError> {
            reachable()?;
            with(|w| match w.owners.get(owner) {
                Some(owned) => Ok(entries(owned, prefix)),
                None => Err(StateError::OwnerNotRequired(owner.to_owned())),
            })
        }

        fn entries(map: &std::collections::BTreeMap<String, String>, prefix: &str) -> Vec<Entry> {
            map.range(prefix.to_owned()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(key, value)| Entry {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect()
        }
    }

    pub mod flags {
        pub use crate::bindings::sandrail::guardrail::flags::FlagError;

        use super::super::{FlagGrants, with};

        fn allowed(
            name: &str,
            pick: fn(&FlagGrants) -> &std::collections::BTreeSet<String>,
            what: &str,
        ) -> Result<(), FlagError> {
            with(|w| {
                if let Some(why) = &w.unavailable {
                    return Err(FlagError::Unavailable(why.clone()));
                }
                match &w.flag_grants {
                    Some(grants) if !pick(grants).contains(name) => {
                        Err(FlagError::NotGranted(format!("{what} `{name}`")))
                    }
                    _ => Ok(()),
                }
            })
        }

        pub fn set(name: &str) -> Result<(), FlagError> {
            allowed(name, |g| &g.set, "set")?;
            with(|w| w.flags.insert(name.to_owned()));
            Ok(())
        }

        pub fn check(name: &str) -> Result<bool, FlagError> {
            allowed(name, |g| &g.check, "check")?;
            Ok(with(|w| w.flags.contains(name)))
        }

        pub fn consume(name: &str) -> Result<bool, FlagError> {
            allowed(name, |g| &g.consume, "consume")?;
            Ok(with(|w| w.flags.remove(name)))
        }
    }

    pub mod data {
        pub use crate::bindings::sandrail::guardrail::data::DataError;

        use super::super::with;

        pub fn read(path: &str) -> Result<String, DataError> {
            with(|w| w.data.get(path).cloned())
                .ok_or_else(|| DataError::NotGranted(path.to_owned()))
        }
    }

    pub mod cycle {
        pub use crate::bindings::sandrail::guardrail::cycle::{
            ContextState, FileChange, SpanEvent,
        };

        use super::super::with;

        pub fn span() -> Result<Vec<SpanEvent>, String> {
            with(|w| match &w.unavailable {
                Some(why) => Err(why.clone()),
                None => Ok(w.span.clone()),
            })
        }

        pub fn contexts() -> Result<Vec<ContextState>, String> {
            with(|w| match &w.unavailable {
                Some(why) => Err(why.clone()),
                None => Ok(w.contexts.clone()),
            })
        }
    }

    pub mod escalation {
        pub use crate::bindings::sandrail::guardrail::escalation::{Level, RuleStanding};

        use super::super::with;

        pub fn rules() -> Result<Vec<RuleStanding>, String> {
            with(|w| match &w.unavailable {
                Some(why) => Err(why.clone()),
                None => Ok(w.rules.clone()),
            })
        }
    }

    pub mod log {
        pub use crate::bindings::sandrail::guardrail::log::Level;

        use super::super::with;

        pub fn log(level: Level, message: &str) {
            with(|w| w.logs.push((level, message.to_owned())));
        }
    }
}
