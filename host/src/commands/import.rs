//! `sandrail import dotforge DIR`: an entry for every behavior dotforge lists in
//! `DIR/behaviors/index.yaml`, run by the bundled `builtin:dotforge` guardrail.
//!
//! Each entry grants the behavior file as data (the guardrail reads its triggers
//! from it on every event), grants the flags its triggers use, and carries the
//! file's enforcement and rendering as the entry's `enforcement`: escalation is the
//! host's. Entries keep index.yaml's order and enabled state (a behavior imported
//! before keeps the config's on/off switch, which a person may have set). Importing again
//! rewrites the same entries in place, so a second import changes nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde::Deserialize;
use toml_edit::{Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, value};

use sandrail::config::{Config, Origin};

use super::guardrail::config_file;
use super::project_config;

#[derive(Deserialize)]
struct Index {
    behaviors: Vec<IndexEntry>,
}

#[derive(Deserialize)]
struct IndexEntry {
    id: String,
    #[serde(default = "yes")]
    enabled: bool,
}

fn yes() -> bool {
    true
}

/// The parts of a behavior file an entry is made from.
#[derive(Deserialize)]
struct Behavior {
    id: String,
    name: Option<String>,
    policy: Policy,
    #[serde(default)]
    rendering: Rendering,
}

#[derive(Deserialize)]
struct Policy {
    triggers: Vec<Trigger>,
    #[serde(default)]
    enforcement: Enforcement,
}

#[derive(Deserialize)]
struct Trigger {
    event: String,
    matcher: Option<String>,
    #[serde(default)]
    action: Option<String>,
    flag: Option<String>,
    on_present: Option<String>,
}

#[derive(Deserialize, Default)]
struct Enforcement {
    default_level: Option<String>,
    #[serde(default)]
    escalation: Vec<Step>,
}

#[derive(Deserialize)]
struct Step {
    after: u64,
    level: String,
}

#[derive(Deserialize, Default)]
struct Rendering {
    nudge_template: Option<String>,
    warning_template: Option<String>,
    block_reason: Option<String>,
}

pub fn dotforge(dir: &Path) -> anyhow::Result<ExitCode> {
    let behaviors_dir = if dir.join("behaviors/index.yaml").is_file() {
        dir.join("behaviors")
    } else if dir.join("index.yaml").is_file() {
        dir.to_path_buf()
    } else {
        bail!(
            "{} holds no behaviors/index.yaml: give the directory that holds dotforge's behaviors/",
            dir.display()
        );
    };
    let index: Index = read_yaml(&behaviors_dir.join("index.yaml"))?;
    let config = project_config()?;
    let path = config_file(&config)?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let mut doc: DocumentMut = text
        .parse()
        .with_context(|| format!("cannot read {} as TOML", path.display()))?;
    let mut imported = Vec::new();
    for entry in &index.behaviors {
        let file = behaviors_dir.join(&entry.id).join("behavior.yaml");
        let behavior: Behavior = read_yaml(&file)?;
        if behavior.id != entry.id {
            bail!(
                "{}: its id is '{}', but index.yaml lists it as '{}'",
                file.display(),
                behavior.id,
                entry.id
            );
        }
        let data_path = relative_to(&base, &file);
        let entries = guardrails(&mut doc)?;
        let name = entry_name(entries, &behavior.id, &data_path);
        if name != behavior.id {
            eprintln!(
                "sandrail: the config already has a guardrail named '{}' that is not this behavior; dotforge's is imported as '{name}'",
                behavior.id
            );
        }
        let existing = entries
            .iter()
            .position(|t| t.get("name").and_then(Item::as_str) == Some(name.as_str()));
        match existing.and_then(|i| entries.get_mut(i)) {
            // Imported before: the on/off switch is the person's now
            // (`sandrail guardrail on|off`), and is kept.
            Some(existing) => {
                let enabled = existing
                    .get("enabled")
                    .and_then(Item::as_bool)
                    .unwrap_or(true);
                *existing = entry_table(&name, &behavior, enabled, &data_path);
                imported.push((name, enabled, Switch::Kept));
            }
            None => {
                entries.push(entry_table(&name, &behavior, entry.enabled, &data_path));
                imported.push((name, entry.enabled, Switch::FromIndex));
            }
        }
    }
    let edited = doc.to_string();
    Config::parse(&edited, Origin::File(path.clone()), Some(&base))
        .context("the imported config would not be valid")?;
    if edited != text {
        let mut tmp = tempfile::NamedTempFile::new_in(&base)?;
        std::io::Write::write_all(&mut tmp, edited.as_bytes())?;
        tmp.persist(&path)?;
    }
    for (name, enabled, switch) in &imported {
        let state = match (enabled, switch) {
            (true, Switch::FromIndex) => "on",
            (false, Switch::FromIndex) => "off (as index.yaml has it)",
            (true, Switch::Kept) => "on (as the config had it)",
            (false, Switch::Kept) => "off (as the config had it)",
        };
        println!("imported {name}: {state}");
    }
    if edited == text {
        println!(
            "{} already held every entry: nothing changed",
            path.display()
        );
    } else {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let bytes = sandrail::files::read_regular(path, 1 << 20)?;
    serde_yaml_ng::from_slice(&bytes)
        .with_context(|| format!("{} is not a valid dotforge file", path.display()))
}

fn guardrails(doc: &mut DocumentMut) -> anyhow::Result<&mut ArrayOfTables> {
    if !doc.contains_key("guardrail") {
        doc.insert("guardrail", Item::ArrayOfTables(ArrayOfTables::new()));
    }
    doc.get_mut("guardrail")
        .and_then(Item::as_array_of_tables_mut)
        .context("`guardrail` in the config is not a list of [[guardrail]] tables")
}

/// The behavior's id, unless an entry that is not this behavior's already has it:
/// then `dotforge-<id>`.
fn entry_name(entries: &ArrayOfTables, id: &str, data_path: &str) -> String {
    let ours = |t: &Table| {
        t.get("source").and_then(Item::as_str) == Some("builtin:dotforge")
            && t.get("config")
                .and_then(|c| c.get("behavior"))
                .and_then(Item::as_str)
                == Some(data_path)
    };
    let taken = entries
        .iter()
        .any(|t| t.get("name").and_then(Item::as_str) == Some(id) && !ours(t));
    if taken {
        format!("dotforge-{id}")
    } else {
        id.to_owned()
    }
}

/// `file` relative to `base` when it lies below it, else absolute.
fn relative_to(base: &Path, file: &Path) -> String {
    let file = file.canonicalize().unwrap_or_else(|_| file.to_path_buf());
    let base = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    file.strip_prefix(&base)
        .map(Path::to_path_buf)
        .unwrap_or(file)
        .display()
        .to_string()
}

fn strings<'a>(items: impl IntoIterator<Item = &'a str>) -> Array {
    items.into_iter().collect()
}

/// A dotforge template with its behavior-specific variables filled in; the others
/// are the host's.
fn template(text: &str, behavior: &Behavior) -> String {
    text.trim_end()
        .replace("{behavior_id}", &behavior.id)
        .replace(
            "{behavior_name}",
            behavior.name.as_deref().unwrap_or(&behavior.id),
        )
}

/// Where an imported entry's on/off switch came from.
enum Switch {
    /// A new entry: index.yaml's `enabled`.
    FromIndex,
    /// An entry imported before: the config's, as a person may have switched it.
    Kept,
}

fn entry_table(name: &str, behavior: &Behavior, enabled: bool, data_path: &str) -> Table {
    let triggers = &behavior.policy.triggers;
    let mut events: Vec<&str> = Vec::new();
    for t in triggers {
        if !events.contains(&t.event.as_str()) {
            events.push(&t.event);
        }
    }
    // One matcher covering every trigger's; the guardrail checks each trigger's own.
    let mut tools: Vec<&str> = Vec::new();
    let mut any_tool = false;
    for t in triggers {
        match t.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") => any_tool = true,
            Some(m)
                if m.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') =>
            {
                tools.extend(m.split('|').filter(|s| !s.is_empty()));
            }
            Some(_) => any_tool = true,
        }
    }
    tools.dedup();
    let mut table = Table::new();
    table.insert("name", value(name));
    table.insert("source", value("builtin:dotforge"));
    table.insert("events", value(strings(events)));
    let matcher = if any_tool || tools.is_empty() {
        "*".to_owned()
    } else {
        let mut seen = Vec::new();
        for tool in tools {
            if !seen.contains(&tool) {
                seen.push(tool);
            }
        }
        seen.join("|")
    };
    table.insert("matcher", value(matcher));
    table.insert("data", value(strings([data_path])));
    if !enabled {
        table.insert("enabled", value(false));
    }

    let mut grants: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for t in triggers {
        let Some(flag) = t.flag.as_deref() else {
            continue;
        };
        let grant = match (t.action.as_deref(), t.on_present.as_deref()) {
            (Some("set_flag"), _) => "set",
            (Some("check_flag"), Some("keep")) => "check",
            (Some("check_flag"), _) => "consume",
            _ => continue,
        };
        let list = grants.entry(grant).or_default();
        if !list.contains(&flag) {
            list.push(flag);
        }
    }
    if !grants.is_empty() {
        let mut flags = Table::new();
        for (grant, names) in grants {
            flags.insert(grant, value(strings(names)));
        }
        table.insert("flags", Item::Table(flags));
    }

    let mut enforcement = Table::new();
    let enf = &behavior.policy.enforcement;
    enforcement.insert(
        "default_level",
        value(enf.default_level.as_deref().unwrap_or("silent")),
    );
    if !enf.escalation.is_empty() {
        let steps: Array = enf
            .escalation
            .iter()
            .map(|s| {
                let mut step = InlineTable::new();
                step.insert("after", (s.after as i64).into());
                step.insert("level", s.level.as_str().into());
                step
            })
            .collect();
        enforcement.insert("escalation", value(steps));
    }
    let r = &behavior.rendering;
    for (key, text) in [
        ("nudge", &r.nudge_template),
        ("warning", &r.warning_template),
        ("block", &r.block_reason),
    ] {
        if let Some(text) = text {
            enforcement.insert(key, value(template(text, behavior)));
        }
    }
    table.insert("enforcement", Item::Table(enforcement));

    let mut config = Table::new();
    config.insert("behavior", value(data_path));
    table.insert("config", Item::Table(config));
    table
}
