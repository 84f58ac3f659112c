//! The `case` namespace: live workflow state read off disk for the case folder a
//! call touches. Cases live in folders under the mandate's `case_root`; a call
//! whose path lies in one resolves it (`touched_by_this_call`). A call without one
//! — an egress call carries no path — falls back to the case most recently
//! touched, with `touched_by_this_call` false, so that the fallback never makes an
//! unrelated read look like someone opened the case (`session.case_files_read`
//! counts only calls that touched it themselves).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::mandate::Mandate;

/// At most this many entries of a case folder are looked at for its markers.
const MAX_ENTRIES: usize = 10_000;

/// The case a path lies in: the first folder under the case root.
pub fn resolve(path_abs: &Path, case_root: &Path) -> Option<String> {
    let relative = path_abs.strip_prefix(case_root).ok()?;
    let id = relative.components().next()?.as_os_str().to_str()?;
    // A file directly under the root is not in a case.
    (relative.components().count() > 1 || path_abs.is_dir()).then(|| id.to_owned())
}

/// The `case` namespace for a case (by id), or `present: false` without one.
pub fn namespace(
    mandate: Option<&Mandate>,
    case: Option<&str>,
    touched_by_this_call: bool,
) -> Value {
    let (Some(mandate), Some(id)) = (mandate, case) else {
        return json!({ "present": false });
    };
    let Some(case_root) = &mandate.case_root else {
        return json!({ "present": false });
    };
    let root = case_root.join(id);
    if !root.is_dir() {
        return json!({ "present": false });
    }
    let mut case = Map::new();
    case.insert("present".into(), json!(true));
    case.insert("id".into(), json!(id));
    case.insert("root".into(), json!(root.to_string_lossy()));
    case.insert("case_root".into(), json!(case_root.to_string_lossy()));
    case.insert("touched_by_this_call".into(), json!(touched_by_this_call));
    let files = files_under(&root);
    for (name, matcher) in &mandate.markers {
        let matching: Vec<u64> = files
            .iter()
            .filter(|(relative, _)| matcher.is_match(relative))
            .map(|(_, size)| *size)
            .collect();
        case.insert(name.clone(), json!(!matching.is_empty()));
        case.insert(format!("{name}_count"), json!(matching.len()));
        case.insert(
            format!("{name}_size"),
            json!(matching.iter().copied().max().unwrap_or(0)),
        );
    }
    Value::Object(case)
}

/// The regular files under a folder, relative to it, with their sizes.
fn files_under(root: &Path) -> Vec<(PathBuf, u64)> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return files;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && let (Ok(relative), Ok(meta)) = (path.strip_prefix(root), entry.metadata())
            {
                files.push((relative.to_path_buf(), meta.len()));
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_resolves_the_folder_under_the_root() {
        let root = Path::new("/work/cases");
        assert_eq!(
            resolve(Path::new("/work/cases/c-17/notes/a.md"), root),
            Some("c-17".into())
        );
        assert_eq!(resolve(Path::new("/work/other/a.md"), root), None);
        assert_eq!(resolve(Path::new("/work/cases/readme.md"), root), None);
    }
}
