//! What a patch or an archive would write, read from the file before the command
//! runs: a change carried inside one (`git apply fix.diff` rewriting
//! `sandrail.toml`, `tar -xf a.tgz` holding `.claude/settings.json`) is listed by
//! its path, as any other write is.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The largest patch read; a larger one is not looked into.
const MAX_PATCH_BYTES: u64 = 4 << 20;
/// At most this many paths are taken from one patch or archive.
const MAX_ENTRIES: usize = 1 << 16;
/// How long listing the archives of one line may take in all before the rest
/// are given up (each then lists only the directory it writes into).
pub const LISTING_BUDGET: Duration = Duration::from_secs(2);

/// The files a patch file changes, with `strip` leading components removed from
/// each (`-p1`); with `strip` unknown (`patch` without `-p`), both the path as
/// written and its last component. None when the file cannot be read.
pub fn patch_targets(file: &Path, strip: Option<usize>) -> Option<Vec<String>> {
    // Without blocking, and only a regular file: a FIFO cannot wedge the hook.
    let (file, size) = sandrail_files::open_regular(file, MAX_PATCH_BYTES).ok()?;
    let mut bytes = Vec::new();
    file.take(size).read_to_end(&mut bytes).ok()?;
    Some(targets_in(&String::from_utf8_lossy(&bytes), strip))
}

/// The files a patch's text changes (see [`patch_targets`]).
fn targets_in(text: &str, strip: Option<usize>) -> Vec<String> {
    let mut targets = Vec::new();
    let mut add = |path: &str, strip: Option<usize>| {
        let path = path.split('\t').next().unwrap_or(path).trim();
        let path = path.trim_matches('"');
        if path.is_empty() || path == "/dev/null" || targets.len() >= MAX_ENTRIES {
            return;
        }
        let forms: Vec<String> = match strip {
            Some(n) => vec![stripped(path, n)],
            None => vec![
                path.to_owned(),
                path.rsplit('/').next().unwrap_or(path).to_owned(),
            ],
        };
        for form in forms {
            if !form.is_empty() && !targets.contains(&form) {
                targets.push(form);
            }
        }
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            for path in rest.split(' ') {
                add(path, Some(strip.unwrap_or(1)));
            }
        } else if let Some(path) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
            .or_else(|| line.strip_prefix("*** "))
        {
            // A hunk's `--- 1,3 ----` in a context diff is not a file.
            if !path.ends_with("----") && !path.ends_with("****") {
                add(path, strip);
            }
        } else if let Some(path) = ["rename to ", "rename from ", "copy to "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        {
            // git's extended headers name paths without the `a/`/`b/` prefix.
            add(path, Some(0));
        }
    }
    targets
}

fn stripped(path: &str, components: usize) -> String {
    let mut rest = path;
    for _ in 0..components {
        match rest.split_once('/') {
            Some((_, after)) => rest = after.trim_start_matches('/'),
            None => return rest.to_owned(),
        }
    }
    rest.to_owned()
}

/// The entries of a tar or zip archive, listed by the system's `tar -tf` or
/// `unzip -Z1` (which read every compression they know) within a deadline.
/// None when it cannot be listed.
pub fn archive_entries(file: &Path, zip: bool, deadline: Duration) -> Option<Vec<String>> {
    if !std::fs::metadata(file).ok()?.is_file() {
        return None;
    }
    let mut command = if zip {
        let mut command = crate::system_programs::command("unzip")?;
        command.arg("-Z1").arg(file);
        command
    } else {
        let mut command = crate::system_programs::command("tar")?;
        command.arg("-tf").arg(file);
        command
    };
    let ran = crate::system_programs::run_within(&mut command, deadline)?;
    let listing = (ran.code == Some(0)).then_some(ran.stdout)?;
    Some(
        listing
            .lines()
            .filter(|entry| !entry.is_empty())
            .take(MAX_ENTRIES)
            .map(|entry| entry.trim_start_matches("./").to_owned())
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIT_PATCH: &str = "diff --git a/sandrail.toml b/sandrail.toml\n\
        index 1..2 100644\n--- a/sandrail.toml\n+++ b/sandrail.toml\n@@ -1 +1 @@\n-a\n+b\n\
        diff --git a/old.rs b/src/new.rs\nrename from old.rs\nrename to src/new.rs\n";

    #[test]
    fn a_git_patch_names_its_files_stripped_of_their_prefix() {
        assert_eq!(
            targets_in(GIT_PATCH, Some(1)),
            ["sandrail.toml", "old.rs", "src/new.rs"]
        );
    }

    #[test]
    fn without_a_strip_both_the_path_and_its_name_are_taken() {
        let text = "--- conf/sandrail.toml.orig\t2024-01-01\n+++ conf/sandrail.toml\t2024-01-01\n";
        assert_eq!(
            targets_in(text, None),
            [
                "conf/sandrail.toml.orig",
                "sandrail.toml.orig",
                "conf/sandrail.toml",
                "sandrail.toml"
            ]
        );
    }
}
