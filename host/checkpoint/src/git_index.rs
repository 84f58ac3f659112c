//! The paths git tracks, read from its index (`.git/index`), so that a tracked
//! file a `.gitignore` pattern matches (a committed `.env.example` beside an
//! ignored `.env*`) is still kept: git ignores only untracked files.
//!
//! The format is git's own (Documentation/gitformat-index.txt): versions 2, 3
//! and 4 (whose paths are prefix-compressed), SHA-1 or SHA-256 object names,
//! and a split index, whose shared part holds the rest of the entries. Only
//! the paths are read. More paths than are tracked costs nothing (a path not
//! on disk is skipped), so a split index's deletions are not applied.

use std::path::Path;

/// The largest index read (git's own is a few MB for 100,000 files).
const MAX_INDEX_BYTES: u64 = 512 << 20;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot read {0}: {1}")]
    Read(String, sandrail_files::FileError),
    #[error("{0} is not a git index git wrote ({1})")]
    Malformed(String, &'static str),
}

/// The paths in the index of the repository whose git directory is
/// `git_dir`, relative to its work tree; none when it has no index.
pub fn tracked(git_dir: &Path) -> Result<Vec<Vec<u8>>, IndexError> {
    let index = git_dir.join("index");
    if !index.exists() {
        return Ok(Vec::new());
    }
    let hash_len = hash_len(git_dir);
    let bytes = read(&index)?;
    let shown = index.display().to_string();
    let parsed =
        parse(&bytes, hash_len).map_err(|why| IndexError::Malformed(shown.clone(), why))?;
    let mut paths = parsed.paths;
    if let Some(shared) = parsed.shared {
        let shared = git_dir.join(format!("sharedindex.{shared}"));
        let bytes = read(&shared)?;
        let more = parse(&bytes, hash_len)
            .map_err(|why| IndexError::Malformed(shared.display().to_string(), why))?;
        paths.extend(more.paths);
    }
    Ok(paths)
}

fn read(path: &Path) -> Result<Vec<u8>, IndexError> {
    sandrail_files::read_regular(path, MAX_INDEX_BYTES)
        .map_err(|e| IndexError::Read(path.display().to_string(), e))
}

/// 32 for a repository of SHA-256 object names (`extensions.objectFormat`),
/// else 20.
fn hash_len(git_dir: &Path) -> usize {
    let config = sandrail_files::read_regular(&git_dir.join("config"), 1 << 20).unwrap_or_default();
    let text = String::from_utf8_lossy(&config).to_ascii_lowercase();
    let sha256 = text.lines().any(|line| {
        let line: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        line.starts_with("objectformat=sha256")
    });
    if sha256 { 32 } else { 20 }
}

struct Parsed {
    paths: Vec<Vec<u8>>,
    /// The shared index a split index names (its hex object name).
    shared: Option<String>,
}

fn parse(bytes: &[u8], hash_len: usize) -> Result<Parsed, &'static str> {
    let u32_at = |at: usize| -> Result<u32, &'static str> {
        let piece = bytes.get(at..at + 4).ok_or("cut short")?;
        Ok(u32::from_be_bytes(
            piece.try_into().map_err(|_| "cut short")?,
        ))
    };
    if bytes.get(..4) != Some(b"DIRC".as_slice()) {
        return Err("no DIRC signature");
    }
    let version = u32_at(4)?;
    if !(2..=4).contains(&version) {
        return Err("an index version other than 2, 3 or 4");
    }
    let count = u32_at(8)? as usize;
    let mut at = 12;
    let mut paths = Vec::with_capacity(count.min(1 << 20));
    let mut previous: Vec<u8> = Vec::new();
    // ctime, mtime (8 each), dev, ino, mode, uid, gid, size (4 each).
    const STAT: usize = 40;
    for _ in 0..count {
        let start = at;
        let mode = u32_at(at + 24)?;
        at += STAT + hash_len;
        let flags = u16::from_be_bytes(
            bytes
                .get(at..at + 2)
                .ok_or("cut short")?
                .try_into()
                .map_err(|_| "cut short")?,
        );
        at += 2;
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let path = if version == 4 {
            let (strip, used) = varint(bytes.get(at..).ok_or("cut short")?)?;
            at += used;
            let end = at + memchr_nul(bytes.get(at..).ok_or("cut short")?)?;
            let keep = previous
                .len()
                .checked_sub(strip as usize)
                .ok_or("a path strips more than the one before it")?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&bytes[at..end]);
            at = end + 1;
            path
        } else {
            let end = at + memchr_nul(bytes.get(at..).ok_or("cut short")?)?;
            let path = bytes[at..end].to_vec();
            // NUL-padded to a multiple of eight from the entry's start.
            let len = end + 1 - start;
            at = start + len.div_ceil(8) * 8;
            path
        };
        // A sparse index's directory entries are not files on disk; a split
        // index's replacements name no path (theirs is the shared entry's).
        if mode & 0o170000 != 0o040000 && !path.is_empty() {
            paths.push(path.clone());
        }
        previous = path;
    }
    // The extensions, up to the trailing checksum: a split index names its
    // shared part in `link`.
    let mut shared = None;
    while at + 8 <= bytes.len().saturating_sub(hash_len) {
        let signature = &bytes[at..at + 4];
        let size = u32_at(at + 4)? as usize;
        if signature == b"link" {
            let name = bytes.get(at + 8..at + 8 + hash_len).ok_or("cut short")?;
            if name.iter().any(|b| *b != 0) {
                shared = Some(sandrail_event::hex(name));
            }
        }
        at = at + 8 + size;
    }
    Ok(Parsed { paths, shared })
}

fn memchr_nul(bytes: &[u8]) -> Result<usize, &'static str> {
    bytes
        .iter()
        .position(|b| *b == 0)
        .ok_or("a path without its NUL")
}

/// git's offset varint (index version 4's path prefix).
fn varint(bytes: &[u8]) -> Result<(u64, usize), &'static str> {
    let mut at = 0;
    let mut byte = *bytes.first().ok_or("cut short")?;
    let mut value = u64::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        at += 1;
        byte = *bytes.get(at).ok_or("cut short")?;
        value = value
            .checked_add(1)
            .and_then(|v| v.checked_mul(128))
            .ok_or("a varint too large")?
            | u64::from(byte & 0x7f);
    }
    Ok((value, at + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }

    /// Each index version git writes, read back as the paths git lists.
    #[test]
    fn reads_the_paths_of_every_index_version() {
        if Command::new("git").arg("--version").output().is_err() {
            eprintln!("git is not installed: skipped");
            return;
        }
        for version in ["2", "3", "4"] {
            let dir = tempfile::tempdir().expect("dir");
            git(dir.path(), &["init", "-q"]);
            let mut expected = Vec::new();
            for name in [
                "a.txt",
                "src/lib.rs",
                "src/longer-name-that-shares-a-prefix.rs",
                "src/longer-name-that-shares.rs",
                "z/y/x",
            ] {
                let path = dir.path().join(name);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
                std::fs::write(&path, name).expect("write");
                expected.push(name.as_bytes().to_vec());
            }
            git(dir.path(), &["add", "-A"]);
            // Intent-to-add sets the extended flags (version 3).
            std::fs::write(dir.path().join("later.txt"), "later").expect("write");
            git(dir.path(), &["add", "-N", "later.txt"]);
            expected.push(b"later.txt".to_vec());
            git(dir.path(), &["update-index", "--index-version", version]);
            let mut paths = tracked(&dir.path().join(".git")).expect("read");
            paths.sort();
            expected.sort();
            assert_eq!(paths, expected, "index version {version}");
        }
    }

    #[test]
    fn a_split_index_lists_its_shared_entries_too() {
        if Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        git(dir.path(), &["init", "-q"]);
        for name in ["one", "two", "three"] {
            std::fs::write(dir.path().join(name), name).expect("write");
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["update-index", "--split-index"]);
        std::fs::write(dir.path().join("four"), "four").expect("write");
        git(dir.path(), &["add", "four"]);
        let mut paths = tracked(&dir.path().join(".git")).expect("read");
        paths.sort();
        paths.dedup();
        assert_eq!(
            paths,
            vec![
                b"four".to_vec(),
                b"one".to_vec(),
                b"three".to_vec(),
                b"two".to_vec()
            ]
        );
    }

    #[test]
    fn a_damaged_index_is_an_error_not_a_panic() {
        for bytes in [
            b"DIRC\0\0\0\x02\0\0\0\x05".to_vec(),
            b"NOPE".to_vec(),
            b"DIRC\0\0\0\x09\0\0\0\x00".to_vec(),
        ] {
            assert!(parse(&bytes, 20).is_err());
        }
    }
}
