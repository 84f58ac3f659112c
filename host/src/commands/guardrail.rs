//! `sandrail guardrail on|off NAME [--session S]`: switch a guardrail on or off,
//! in the config in force (keeping its comments and layout) or for one session.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};

use sandrail::config::{CONFIG_FILE, Config, EMBEDDED_DEFAULT, Origin};
use sandrail::locations;
use sandrail::store::lifecycle;

use super::{project_config, project_dir};

pub fn run(name: &str, on: bool, session: Option<&str>) -> anyhow::Result<ExitCode> {
    let config = project_config()?;
    if !config.guardrails.iter().any(|g| g.name == name) {
        bail!("no guardrail called '{name}' in {}", config.origin);
    }
    let word = if on { "on" } else { "off" };
    if let Some(session) = session {
        if !on
            && let Err(code) = super::person::confirm(
                "guardrail off --session",
                &format!("switches '{name}' off for a running session"),
            )
        {
            return Ok(code);
        }
        let state = locations::state_dir()
            .context("no state directory: set SANDRAIL_STATE_DIR (or HOME)")?;
        lifecycle::switch(&state, session, name, on)?;
        println!("{name} is {word} for session {session}");
        return Ok(ExitCode::SUCCESS);
    }
    let path = config_file(&config)?;
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let edited =
        set_enabled(&text, name, on).with_context(|| format!("cannot edit {}", path.display()))?;
    // The edit must still be a valid config before it replaces the old one.
    Config::parse(&edited, Origin::File(path.clone()), path.parent())
        .context("the edited config would not be valid")?;
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, edited.as_bytes())?;
    tmp.persist(&path)?;
    println!("{name} is {word} in {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The config file to edit: the one in force, or — when the embedded default is
/// in force — a new `sandrail.toml` in the project holding it, so the bundled
/// protections carry over.
pub fn config_file(config: &Config) -> anyhow::Result<PathBuf> {
    match &config.origin {
        Origin::File(path) => Ok(path.clone()),
        Origin::Embedded => {
            let project = project_dir().context("no project directory")?;
            let path = project.join(CONFIG_FILE);
            std::fs::write(&path, EMBEDDED_DEFAULT)
                .with_context(|| format!("cannot create {}", path.display()))?;
            eprintln!(
                "sandrail: created {} from the embedded default",
                path.display()
            );
            Ok(path)
        }
    }
}

/// `text` with the named guardrail's `enabled` set: `enabled = false` to switch it
/// off, no `enabled` key to switch it on. Everything else stays as written.
fn set_enabled(text: &str, name: &str, on: bool) -> anyhow::Result<String> {
    let mut doc: toml_edit::DocumentMut = text.parse()?;
    let entries = doc
        .get_mut("guardrail")
        .and_then(toml_edit::Item::as_array_of_tables_mut)
        .context("it has no [[guardrail]] entries")?;
    let entry = entries
        .iter_mut()
        .find(|t| t.get("name").and_then(toml_edit::Item::as_str) == Some(name))
        .with_context(|| format!("it has no [[guardrail]] named '{name}'"))?;
    if on {
        entry.remove("enabled");
    } else {
        entry.insert("enabled", toml_edit::value(false));
    }
    Ok(doc.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switching_keeps_comments_and_layout() {
        let text = "# my rules\n[[guardrail]]\nname = \"a\" # the first\nsource = \"x\"\n\n[[guardrail]]\nname = \"b\"\n";
        let off = set_enabled(text, "b", false).unwrap();
        assert_eq!(
            off,
            "# my rules\n[[guardrail]]\nname = \"a\" # the first\nsource = \"x\"\n\n[[guardrail]]\nname = \"b\"\nenabled = false\n"
        );
        assert_eq!(set_enabled(&off, "b", true).unwrap(), text);
        assert!(set_enabled(text, "c", false).is_err());
    }
}
