//! The optional `configure` export (contract 0.1.2): a guardrail that checks its
//! own config and declares which state-costing fact namespaces it reads.
//!
//! `sandrail check-config` reports the problems a guardrail finds in its config;
//! the evaluation asks [`Runtime::needs`](super::Runtime::needs) (or, without an
//! engine, [`cached_needs`](super::cached_needs)) which namespaces to keep. A
//! component that does not export `configure` declares nothing.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::RunError;
use sandrail_facts::Costly;
use sandrail_policy::config::{Config, Guardrail, Source};

/// Bindings for the `configurable-guardrail` world. Its imports are the
/// `guardrail` world's, shared with [`super::wit`]; only the `configure` export
/// is its own.
pub mod wit {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "configurable-guardrail",
        exports: { default: async },
        with: {
            "sandrail:guardrail/types": crate::wit::sandrail::guardrail::types,
            "sandrail:guardrail/state": crate::wit::sandrail::guardrail::state,
            "sandrail:guardrail/flags": crate::wit::sandrail::guardrail::flags,
            "sandrail:guardrail/data": crate::wit::sandrail::guardrail::data,
            "sandrail:guardrail/log": crate::wit::sandrail::guardrail::log,
        },
    });

    pub use self::exports::sandrail::guardrail::configure::{
        GuestIndices as ConfigureIndices, Needs, Problem,
    };
}

/// The export's name, any 0.1 version: what [`super::prepare`] looks for.
pub(super) const EXPORT_PREFIX: &str = "sandrail:guardrail/configure@0.1.";

/// The fact namespaces whose upkeep costs the host a state write per event. A
/// guardrail may declare only these; anything else it names is ignored.
pub const STATE_COSTING: [&str; 2] = ["session", "case"];

/// The most problems kept from one check, and the longest text of each, in
/// characters: a guardrail cannot flood `check-config`.
const MAX_PROBLEMS: usize = 100;
const MAX_PROBLEM_CHARS: usize = 2_000;
const MAX_ITEM_CHARS: usize = 128;

/// The most fact paths kept from one check, and the longest of each, in characters.
const MAX_PATHS: usize = 1_000;
const MAX_PATH_CHARS: usize = 256;

/// What a configured guardrail reads: which state-costing fact namespaces (so the
/// host keeps them), and which fact paths (so `check-config` can check each).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Names from [`STATE_COSTING`]: `"session"`, `"case"`.
    pub facts: BTreeSet<&'static str>,
    /// Dotted paths it declared (`tool.command`), in the order it gave them.
    pub paths: Vec<String>,
}

impl Needs {
    /// Reads none of them.
    pub fn none() -> Needs {
        Needs::default()
    }

    /// Reads all of them: what a guardrail whose check failed is taken to read,
    /// so a broken declaration never costs a rule its facts.
    pub fn all() -> Needs {
        Needs {
            facts: STATE_COSTING.into_iter().collect(),
            paths: Vec::new(),
        }
    }

    /// Whether the namespace (`"session"`, `"case"`) is read.
    pub fn reads(&self, namespace: &str) -> bool {
        self.facts.contains(namespace)
    }

    /// Each entry is a namespace (`"session"`) or a dotted path in one
    /// (`"session.files_written"`); a path reads its namespace.
    fn from_wit(needs: wit::Needs) -> Needs {
        let namespace = |entry: &str| {
            let name = entry.split('.').next().unwrap_or_default();
            STATE_COSTING.into_iter().find(|known| *known == name)
        };
        let mut paths: Vec<String> = Vec::new();
        for entry in needs.facts.iter().filter(|e| e.contains('.')) {
            if paths.len() == MAX_PATHS {
                break;
            }
            let path = one_line(entry, MAX_PATH_CHARS);
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        Needs {
            facts: needs.facts.iter().filter_map(|e| namespace(e)).collect(),
            paths,
        }
    }

    fn to_line(&self) -> String {
        self.facts.iter().copied().collect::<Vec<_>>().join(",")
    }

    fn from_line(line: &str) -> Needs {
        Needs {
            facts: line
                .trim()
                .split(',')
                .filter_map(|name| STATE_COSTING.into_iter().find(|known| *known == name))
                .collect(),
            paths: Vec::new(),
        }
    }
}

/// One problem a guardrail found in its config, its text made safe to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The config item at fault (for contracts: the rule's name), when there is one.
    pub item: Option<String>,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.item {
            Some(item) => write!(f, "rule {item}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Why a config check gave no [`Needs`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigureError {
    /// The guardrail found these problems in its config.
    #[error("{} problem(s) in its config", .0.len())]
    Problems(Vec<Problem>),
    /// The check itself failed: a trap, the deadline, the memory limit.
    #[error("its config check {0}")]
    Run(RunError),
}

/// The guardrail's answer, bounded and cleaned.
pub(super) fn from_wit(
    answer: Result<wit::Needs, Vec<wit::Problem>>,
) -> Result<Needs, ConfigureError> {
    match answer {
        Ok(needs) => Ok(Needs::from_wit(needs)),
        Err(problems) => {
            let total = problems.len();
            let mut kept: Vec<Problem> = problems
                .into_iter()
                .take(MAX_PROBLEMS)
                .map(|p| Problem {
                    item: p.item.map(|item| one_line(&item, MAX_ITEM_CHARS)),
                    message: one_line(&p.message, MAX_PROBLEM_CHARS),
                })
                .collect();
            if kept.is_empty() {
                kept.push(Problem {
                    item: None,
                    message: "the guardrail rejected its config without saying why".into(),
                });
            } else if total > MAX_PROBLEMS {
                kept.push(Problem {
                    item: None,
                    message: format!("and {} more problem(s)", total - MAX_PROBLEMS),
                });
            }
            Err(ConfigureError::Problems(kept))
        }
    }
}

/// Guest text as one clean line of at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let line = sandrail_event::text::lines(text).join(" ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// Remembered answers, so that only the first event of a (component, config)
/// pays for a check: one small file per pair in the component cache's directory,
/// named by the sha256 of the component's sha256 and the config, holding the
/// namespaces read, comma-separated. Written by atomic rename.
pub(super) struct NeedsCache {
    dir: Option<PathBuf>,
}

impl NeedsCache {
    pub(super) fn new(dir: Option<&Path>) -> NeedsCache {
        NeedsCache {
            dir: dir.map(Path::to_path_buf),
        }
    }

    fn path_for(&self, component_sha256: &str, config_json: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let key =
            sandrail_event::sha256_hex(format!("{component_sha256}\n{config_json}").as_bytes());
        Some(dir.join(format!("needs-{}.txt", &key[..40])))
    }

    pub(super) fn get(&self, component_sha256: &str, config_json: &str) -> Option<Needs> {
        let path = self.path_for(component_sha256, config_json)?;
        let text = sandrail_files::read_regular(&path, 1024).ok()?;
        Some(Needs::from_line(&String::from_utf8_lossy(&text)))
    }

    /// Stores an answer; a cache that cannot be written costs speed, never
    /// correctness.
    pub(super) fn put(&self, component_sha256: &str, config_json: &str, needs: &Needs) {
        let Some(path) = self.path_for(component_sha256, config_json) else {
            return;
        };
        let write = || -> std::io::Result<()> {
            let dir = path.parent().unwrap_or(Path::new("."));
            sandrail_policy::locations::create_private_dir(dir)?;
            let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
            tmp.write_all(needs.to_line().as_bytes())?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        };
        if let Err(e) = write() {
            eprintln!(
                "sandrail: cannot write the config-check cache {}: {e}",
                path.display()
            );
        }
    }
}

/// The state-costing fact namespaces the configuration in force reads: what its
/// guardrails declare (`facts = […]`) and what configurable components answer for
/// their config. Counters advance on every tool call while any guardrail reads
/// them, so this is asked on every event; the answer is remembered in the cache
/// directory under a key made of the config in force and each component file's
/// size and modification time, so an event pays only for a few `stat`s.
pub fn kept_facts(config: &Config, cache_dir: Option<&Path>) -> BTreeSet<Costly> {
    let enabled: Vec<&Guardrail> = config.guardrails.iter().filter(|g| g.enabled).collect();
    let mut declared: BTreeSet<Costly> = enabled
        .iter()
        .flat_map(|g| g.reads_facts.iter().copied())
        .collect();
    if declared.len() == STATE_COSTING.len() {
        return declared;
    }
    // Only builtins whose check answers needs, and files, can answer anything.
    let askable: Vec<&&Guardrail> = enabled
        .iter()
        .filter(|g| match &g.source {
            Source::Builtin(name) => sandrail_builtins::ANSWERS_NEEDS.contains(&name.as_str()),
            Source::File(_) => true,
        })
        .collect();
    if askable.is_empty() {
        return declared;
    }
    let summary_key = {
        let mut key = String::new();
        for g in &askable {
            key.push_str(&format!("{}\n{}\n{}\n", g.name, g.source, g.config));
            if let Source::File(path) = &g.source
                && let Ok(meta) = std::fs::metadata(path)
            {
                let modified = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                key.push_str(&format!("{} {modified}\n", meta.len()));
            }
        }
        sandrail_event::sha256_hex(key.as_bytes())
    };
    let cache = NeedsCache::new(cache_dir);
    let answered = match cache.get("config", &summary_key) {
        Some(needs) => needs,
        None => {
            let mut union = Needs::none();
            let mut runtime = None;
            for g in &askable {
                let Ok(prepared) = super::prepare_guardrail(g) else {
                    continue;
                };
                let config_json = g.config.to_string();
                let needs = match super::cached_needs(cache_dir, &prepared, &config_json) {
                    Some(needs) => needs,
                    None => {
                        if runtime.is_none() {
                            runtime = super::Runtime::new(cache_dir.map(Path::to_path_buf)).ok();
                        }
                        let Some(rt) = &runtime else { continue };
                        let Ok(loaded) = rt.load(&prepared) else {
                            continue;
                        };
                        rt.needs(&loaded, &g.name, &config_json, &g.data, g.limits)
                            .unwrap_or_default()
                    }
                };
                union.facts.extend(needs.facts);
            }
            cache.put("config", &summary_key, &union);
            union
        }
    };
    declared.extend(answered.facts.iter().filter_map(|n| Costly::from_name(n)));
    declared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_namespaces_are_kept() {
        let needs = Needs::from_wit(wit::Needs {
            facts: vec![
                "case".into(),
                "tool".into(),
                "session".into(),
                "case".into(),
            ],
        });
        assert_eq!(needs, Needs::all());
        assert!(needs.reads("session") && !needs.reads("tool"));
        assert_eq!(Needs::from_line(&needs.to_line()), needs);
        assert_eq!(Needs::from_line(""), Needs::none());
    }

    #[test]
    fn problems_are_bounded_and_cleaned() {
        let many: Vec<wit::Problem> = (0..150)
            .map(|i| wit::Problem {
                item: Some(format!("r{i}\n[sandrail] forged")),
                message: "x".repeat(5_000),
            })
            .collect();
        let Err(ConfigureError::Problems(kept)) = from_wit(Err(many)) else {
            panic!("not problems");
        };
        assert_eq!(kept.len(), MAX_PROBLEMS + 1);
        assert_eq!(kept[0].item.as_deref(), Some("r0 [sandrail] forged"));
        assert_eq!(kept[0].message.chars().count(), MAX_PROBLEM_CHARS + 1);
        assert_eq!(kept[100].to_string(), "and 50 more problem(s)");
        assert!(
            matches!(from_wit(Err(Vec::new())), Err(ConfigureError::Problems(p)) if p.len() == 1)
        );
    }

    fn limits() -> sandrail_policy::config::Limits {
        sandrail_policy::config::Limits {
            timeout: std::time::Duration::from_secs(10),
            memory_bytes: 64 << 20,
            state_bytes: 4 << 20,
            fuel: None,
            log_bytes: 64 << 10,
        }
    }

    fn loaded(runtime: &Runtime, builtin: &str) -> (super::super::Prepared, super::super::Loaded) {
        let source = sandrail_policy::config::Source::Builtin(builtin.into());
        let prepared = super::super::prepare(&source, None).expect("prepare");
        let loaded = runtime.load(&prepared).expect("load");
        (prepared, loaded)
    }

    use super::super::Runtime;

    /// `sandrail_builtins::CONFIGURABLE` names exactly the bundled components
    /// that export `configure`.
    #[test]
    fn the_configurable_list_matches_the_components() {
        for name in sandrail_builtins::names() {
            let prepared = super::super::prepare(
                &sandrail_policy::config::Source::Builtin(name.to_owned()),
                None,
            )
            .expect("a builtin prepares");
            assert_eq!(
                prepared.configurable,
                sandrail_builtins::CONFIGURABLE.contains(&name),
                "{name}"
            );
        }
    }

    #[test]
    fn a_configurable_component_checks_its_config_and_declares_its_needs() {
        let cache = tempfile::tempdir().expect("temp dir");
        let runtime = Runtime::new(Some(cache.path().to_owned())).expect("runtime");
        let (prepared, contracts) = loaded(&runtime, "contracts");
        assert!(prepared.configurable && contracts.configurable());
        let config = r#"{"rules":[{"name":"r","require":"session.files_written < 3"}]}"#;
        let needs = runtime
            .configure(&contracts, "contracts", config, &[], limits())
            .expect("a valid config");
        assert_eq!(
            needs,
            Some(Needs {
                facts: ["session"].into(),
                paths: vec!["session.files_written".into()],
            })
        );
        // The evaluation keeps only the namespaces; the paths are check-config's.
        let kept = |needs: Option<Needs>| needs.map(|n| n.facts);
        let facts = kept(needs.clone());

        // Not known without the engine until an event asked; remembered after.
        assert_eq!(
            super::super::cached_needs(Some(cache.path()), &prepared, config),
            None
        );
        assert_eq!(
            kept(runtime.needs(&contracts, "contracts", config, &[], limits())),
            facts
        );
        assert_eq!(
            kept(super::super::cached_needs(
                Some(cache.path()),
                &prepared,
                config
            )),
            facts
        );

        let broken = r#"{"rules":[{"name":"bad","require":"tool.name =="}]}"#;
        match runtime.configure(&contracts, "contracts", broken, &[], limits()) {
            Err(ConfigureError::Problems(problems)) => {
                assert_eq!(problems.len(), 1);
                assert_eq!(problems[0].item.as_deref(), Some("bad"));
                assert!(
                    problems[0]
                        .message
                        .starts_with("require: line 1, column 13: "),
                    "{}",
                    problems[0].message
                );
            }
            other => panic!("{other:?}"),
        }
        // A broken config is taken to read everything.
        assert_eq!(
            runtime.needs(&contracts, "contracts", broken, &[], limits()),
            Some(Needs::all())
        );
    }

    #[test]
    fn a_plain_component_declares_nothing() {
        let runtime = Runtime::new(None).expect("runtime");
        let (prepared, plain) = loaded(&runtime, "no-destructive-git");
        assert!(!prepared.configurable && !plain.configurable());
        assert_eq!(
            runtime.configure(&plain, "ndg", "{}", &[], limits()),
            Ok(None)
        );
        assert_eq!(runtime.needs(&plain, "ndg", "{}", &[], limits()), None);
        assert_eq!(
            super::super::cached_needs(None, &prepared, "{}"),
            Some(Needs::none())
        );
    }

    #[test]
    fn answers_are_remembered_per_component_and_config() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = NeedsCache::new(Some(dir.path()));
        assert_eq!(cache.get("abc", "{}"), None);
        cache.put("abc", "{}", &Needs::all());
        assert_eq!(cache.get("abc", "{}"), Some(Needs::all()));
        assert_eq!(cache.get("abc", "{\"a\":1}"), None);
        assert_eq!(cache.get("abd", "{}"), None);
        assert_eq!(NeedsCache::new(None).get("abc", "{}"), None);
    }
}
