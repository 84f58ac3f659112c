//! The mandate: the task's limits and case layout, in a TOML or YAML file that
//! `[settings] mandate = "…"` names (relative to the config). Its `limits` are the
//! `mandate` facts; `id` and `mode` are `env.mandate_id` and `env.mode`; `case_root`
//! and `markers` say where cases live and what the `case` facts count.
//!
//! ```yaml
//! id: refund-review
//! mode: supervised
//! case_root: cases            # relative to the mandate file
//! markers:
//!   evidence: "evidence/**"   # globs relative to a case's folder
//!   decision: "decision.md"
//! limits:
//!   max_files_written: 40
//!   max_payment_usd: 50
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

/// The largest mandate file read.
const MAX_MANDATE_BYTES: u64 = 1 << 20;

#[derive(Debug, thiserror::Error)]
pub enum MandateError {
    #[error("cannot read the mandate: {0}")]
    Read(#[from] sandrail_files::FileError),
    #[error("the mandate {path} is not valid {format}: {message}")]
    Parse {
        path: String,
        format: &'static str,
        message: String,
    },
    #[error("the mandate {path}: {message}")]
    Invalid { path: String, message: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMandate {
    id: Option<String>,
    mode: Option<String>,
    case_root: Option<String>,
    #[serde(default)]
    markers: BTreeMap<String, String>,
    #[serde(default)]
    limits: Map<String, Value>,
}

/// A loaded mandate.
#[derive(Debug, Clone)]
pub struct Mandate {
    pub path: PathBuf,
    pub id: Option<String>,
    pub mode: Option<String>,
    /// The folder every case lives under, absolute.
    pub case_root: Option<PathBuf>,
    /// Marker name → glob relative to a case's folder.
    pub markers: BTreeMap<String, globset::GlobMatcher>,
    pub marker_globs: BTreeMap<String, String>,
    pub limits: Map<String, Value>,
}

/// The bytes of the mandate file at `path`, within the size a mandate may have.
pub fn read(path: &Path) -> Result<Vec<u8>, MandateError> {
    Ok(sandrail_files::read_regular(path, MAX_MANDATE_BYTES)?)
}

impl Mandate {
    /// Reads a mandate; YAML for `.yaml`/`.yml`, TOML otherwise.
    pub fn load(path: &Path) -> Result<Mandate, MandateError> {
        Mandate::from_bytes(path, read(path)?)
    }

    /// A mandate from the bytes of the file at `path` (read from disk, or from a
    /// session's snapshot of it).
    pub fn from_bytes(path: &Path, bytes: Vec<u8>) -> Result<Mandate, MandateError> {
        let shown = path.display().to_string();
        let text = String::from_utf8(bytes).map_err(|e| MandateError::Parse {
            path: shown.clone(),
            format: "UTF-8",
            message: format!("invalid byte at offset {}", e.utf8_error().valid_up_to()),
        })?;
        let yaml = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
        let raw: RawMandate = if yaml {
            serde_yaml_ng::from_str(&text).map_err(|e| MandateError::Parse {
                path: shown.clone(),
                format: "YAML",
                message: e.to_string(),
            })?
        } else {
            toml::from_str(&text).map_err(|e| MandateError::Parse {
                path: shown.clone(),
                format: "TOML",
                message: e.to_string().trim_end().to_owned(),
            })?
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let mut markers = BTreeMap::new();
        for (name, glob) in &raw.markers {
            let valid_name =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid_name || matches!(name.as_str(), "present" | "id" | "root" | "case_root") {
                return Err(MandateError::Invalid {
                    path: shown,
                    message: format!(
                        "marker '{name}': a marker name is letters, digits and '_', and not present, id, root or case_root"
                    ),
                });
            }
            let matcher = globset::Glob::new(glob)
                .map_err(|e| MandateError::Invalid {
                    path: shown.clone(),
                    message: format!("marker '{name}': '{glob}' is not a glob: {e}"),
                })?
                .compile_matcher();
            markers.insert(name.clone(), matcher);
        }
        Ok(Mandate {
            path: path.to_path_buf(),
            id: raw.id,
            mode: raw.mode,
            case_root: raw.case_root.map(|root| base.join(root)),
            markers,
            marker_globs: raw.markers,
            limits: raw.limits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_yaml_and_toml_alike() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = dir.path().join("m.yaml");
        std::fs::write(
            &yaml,
            "id: m1\nmode: supervised\ncase_root: cases\nmarkers:\n  notes: \"notes/*.md\"\nlimits:\n  max_files_written: 3\n",
        )
        .unwrap();
        let m = Mandate::load(&yaml).unwrap();
        assert_eq!(m.id.as_deref(), Some("m1"));
        assert_eq!(m.limits["max_files_written"], 3);
        assert_eq!(m.case_root, Some(dir.path().join("cases")));
        let toml = dir.path().join("m.toml");
        std::fs::write(&toml, "[limits]\nmax_files_written = 3\n").unwrap();
        assert_eq!(Mandate::load(&toml).unwrap().limits["max_files_written"], 3);
        std::fs::write(&toml, "[limit]\nmax = 3\n").unwrap();
        let err = Mandate::load(&toml).unwrap_err().to_string();
        assert!(err.contains("unknown field `limit`"), "{err}");
    }
}
