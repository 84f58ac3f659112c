//! A session's life outside its database: when it was last used, when it is
//! forgotten, which session a project had last, and which guardrails a person
//! switched off for it.
//!
//! Each session's lock file carries its last access as its modification time, so
//! marking a session used is one small write whether or not the event opens the
//! database. Idle sessions are purged at most once per [`PURGE_INTERVAL`] by the
//! hook that finds it due, so a state directory with thousands of idle sessions
//! costs an ordinary hook one `stat`.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use super::{SESSIONS_DIR, SessionFiles};

/// How often idle sessions are looked for.
pub const PURGE_INTERVAL: u64 = 3600;
/// The file whose modification time is the last purge.
const PURGE_MARKER: &str = ".purged";
/// Where each project's most recent session is noted.
const PROJECTS_DIR: &str = "projects";

fn at(seconds: u64) -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_secs(seconds)
}

fn seconds_of(time: std::time::SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Marks `session` as used at `now`.
pub fn touch(state_dir: &Path, session: &str, now: u64) -> std::io::Result<()> {
    let files = SessionFiles::new(state_dir, session);
    sandrail_files::create_private_dir(&files.dir)?;
    sandrail_files::open_private_file(&files.lock)?.set_modified(at(now))
}

/// When `session` was last used, if it exists.
pub fn last_access(state_dir: &Path, session: &str) -> Option<u64> {
    let files = SessionFiles::new(state_dir, session);
    let modified = std::fs::metadata(files.lock).ok()?.modified().ok()?;
    Some(seconds_of(modified))
}

/// Forgets `session` itself when it was last used more than `ttl` seconds before
/// `now`, so a session resumed after its TTL starts clean (dotforge purges on
/// every state access, before judging). Returns how long it had been idle when it
/// was forgotten; None when it is new, recent, or in use.
pub fn expire_if_idle(state_dir: &Path, session: &str, ttl: u64, now: u64) -> Option<u64> {
    let last = last_access(state_dir, session)?;
    let idle = now.checked_sub(last)?;
    let cutoff = now.saturating_sub(ttl);
    (idle > ttl && forget(&SessionFiles::new(state_dir, session).lock, cutoff)).then_some(idle)
}

/// What a purge did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub sessions: usize,
}

/// Forgets the sessions idle for longer than `ttl` seconds, if the last purge was
/// [`PURGE_INTERVAL`] or more ago. A session in use (its lock held) is left alone.
pub fn purge_if_due(state_dir: &Path, ttl: u64, now: u64) -> std::io::Result<Option<Purged>> {
    let dir = state_dir.join(SESSIONS_DIR);
    let marker = dir.join(PURGE_MARKER);
    let last = std::fs::metadata(&marker)
        .and_then(|m| m.modified())
        .map(seconds_of)
        .ok();
    if last.is_some_and(|last| now.saturating_sub(last) < PURGE_INTERVAL && last <= now) {
        return Ok(None);
    }
    sandrail_files::create_private_dir(&dir)?;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&marker)?
        .set_modified(at(now))?;
    purge(state_dir, ttl, now).map(Some)
}

/// Forgets the sessions idle for longer than `ttl` seconds, now.
pub fn purge(state_dir: &Path, ttl: u64, now: u64) -> std::io::Result<Purged> {
    let dir = state_dir.join(SESSIONS_DIR);
    let cutoff = now.saturating_sub(ttl);
    let mut purged = Purged::default();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(purged),
        Err(e) => return Err(e),
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "lock") {
            continue;
        }
        let idle = entry
            .metadata()
            .and_then(|m| m.modified())
            .map(|m| seconds_of(m) < cutoff)
            .unwrap_or(false);
        if idle && forget(&path, cutoff) {
            purged.sessions += 1;
        }
    }
    Ok(purged)
}

/// Deletes one idle session's files, holding its lock so that no hook is using
/// it; false when it is in use or was used since it was found idle.
fn forget(lock_path: &Path, cutoff: u64) -> bool {
    let Ok(file) = OpenOptions::new().write(true).open(lock_path) else {
        return false;
    };
    if file.try_lock().is_err() {
        return false;
    }
    let still_idle = file
        .metadata()
        .and_then(|m| m.modified())
        .is_ok_and(|m| seconds_of(m) < cutoff);
    if !still_idle {
        return false;
    }
    for extension in ["redb", "off", super::UNHELD, crate::POLICY_RECORD] {
        let _ = std::fs::remove_file(lock_path.with_extension(extension));
    }
    // Last, while still held: a hook that opened this file meanwhile sees it gone
    // once it gets the lock, and starts again on a new one.
    std::fs::remove_file(lock_path).is_ok()
}

/// The file noting a project's most recent session.
fn project_note(state_dir: &Path, project: &Path) -> PathBuf {
    let key = &sandrail_event::sha256_hex(project.display().to_string().as_bytes())[..32];
    state_dir.join(PROJECTS_DIR).join(key)
}

/// The most recent session seen in `project`.
pub fn last_session(state_dir: &Path, project: &Path) -> Option<String> {
    let text = std::fs::read_to_string(project_note(state_dir, project)).ok()?;
    let session = text.trim();
    (!session.is_empty()).then(|| session.to_owned())
}

/// Notes `session` as the most recent in `project`, writing only on a change.
pub fn note_session(state_dir: &Path, project: &Path, session: &str) -> std::io::Result<()> {
    if last_session(state_dir, project).as_deref() == Some(session) {
        return Ok(());
    }
    let path = project_note(state_dir, project);
    let dir = state_dir.join(PROJECTS_DIR);
    sandrail_files::create_private_dir(&dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    std::io::Write::write_all(&mut tmp, session.as_bytes())?;
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// The guardrails switched off for `session`.
pub fn switched_off(state_dir: &Path, session: &str) -> BTreeSet<String> {
    let files = SessionFiles::new(state_dir, session);
    std::fs::read_to_string(files.lock.with_extension("off"))
        .map(|text| text.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Switches `guardrail` off (or back on) for `session`.
pub fn switch(state_dir: &Path, session: &str, guardrail: &str, on: bool) -> std::io::Result<()> {
    let files = SessionFiles::new(state_dir, session);
    let mut off = switched_off(state_dir, session);
    if on {
        off.remove(guardrail);
    } else {
        off.insert(guardrail.to_owned());
    }
    sandrail_files::create_private_dir(&files.dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&files.dir)?;
    let text: String = off.iter().map(|g| format!("{g}\n")).collect();
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    tmp.persist(files.lock.with_extension("off"))
        .map(drop)
        .map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_sessions_are_purged_and_used_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let day = 86_400;
        touch(dir.path(), "old", 1_000_000).unwrap();
        touch(dir.path(), "new", 1_000_000 + day).unwrap();
        let purged = purge_if_due(dir.path(), day, 1_000_000 + day + 10).unwrap();
        assert_eq!(purged, Some(Purged { sessions: 1 }));
        assert_eq!(last_access(dir.path(), "old"), None);
        assert_eq!(last_access(dir.path(), "new"), Some(1_000_000 + day));
        // Not due again within the interval.
        assert_eq!(
            purge_if_due(dir.path(), day, 1_000_000 + day + 20).unwrap(),
            None
        );
    }

    #[test]
    fn a_session_in_use_is_not_purged() {
        let dir = tempfile::tempdir().unwrap();
        touch(dir.path(), "busy", 1_000).unwrap();
        let held = crate::SessionLock::acquire(
            &SessionFiles::new(dir.path(), "busy").lock,
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(purge(dir.path(), 10, 1_000_000).unwrap().sessions, 0);
        drop(held);
        assert_eq!(purge(dir.path(), 10, 1_000_000).unwrap().sessions, 1);
    }

    #[test]
    fn projects_remember_their_last_session_and_toggles_persist() {
        let dir = tempfile::tempdir().unwrap();
        let project = Path::new("/home/dev/p");
        assert_eq!(last_session(dir.path(), project), None);
        note_session(dir.path(), project, "s1").unwrap();
        note_session(dir.path(), project, "s2").unwrap();
        assert_eq!(last_session(dir.path(), project).as_deref(), Some("s2"));
        switch(dir.path(), "s2", "g", false).unwrap();
        assert!(switched_off(dir.path(), "s2").contains("g"));
        switch(dir.path(), "s2", "g", true).unwrap();
        assert!(switched_off(dir.path(), "s2").is_empty());
    }
}
