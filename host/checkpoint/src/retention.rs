//! How long checkpoints are kept: the last few of every session, and every
//! one younger than a set age; then every object no kept checkpoint reaches
//! is removed. Pruning holds the store alone, so no checkpoint being taken
//! meanwhile can lose an object it counted on.

use std::collections::HashSet;
use std::time::Duration;

use crate::objects::{Digest, Objects};
use crate::record::{Record, Records};
use crate::tree::Trees;

/// How many checkpoints to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// The newest this many of each session.
    pub keep_last: usize,
    /// And every one younger than this.
    pub keep_for: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_last: 50,
            keep_for: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// What a prune removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub checkpoints: usize,
    pub objects: usize,
    pub bytes: u64,
}

/// The records `retention` keeps out of `records` (oldest first), at `now`.
pub fn kept<'r>(records: &'r [Record], retention: &Retention, now: u64) -> Vec<&'r Record> {
    let mut per_session: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut keep = vec![false; records.len()];
    for (at, record) in records.iter().enumerate().rev() {
        let newer = per_session.entry(record.session.as_str()).or_default();
        let young = now.saturating_sub(record.unix) < retention.keep_for.as_secs();
        if *newer < retention.keep_last || young {
            keep[at] = true;
        }
        *newer += 1;
    }
    records
        .iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// Removes the records `retention` does not keep, and every object no kept
/// record reaches. `reachable` is handed the digests still in use, for the
/// stat cache to forget the rest.
pub fn prune(
    objects: &Objects,
    records: &Records,
    retention: &Retention,
    now: u64,
) -> std::io::Result<(Pruned, HashSet<Digest>)> {
    let (all, _unreadable) = records.all()?;
    let kept_ids: HashSet<&str> = kept(&all, retention, now)
        .into_iter()
        .map(|r| r.id.as_str())
        .collect();
    let mut pruned = Pruned::default();
    let trees = Trees::new(objects);
    let mut reachable = HashSet::new();
    for record in &all {
        if !kept_ids.contains(record.id.as_str()) {
            continue;
        }
        if let Some(root) = Digest::from_hex(&record.root) {
            reachable.insert(root);
            // A checkpoint whose trees cannot be read keeps what it can reach.
            let _ = trees.reach(&root, &mut reachable);
        }
    }
    for record in &all {
        if !kept_ids.contains(record.id.as_str()) && records.remove(&record.id).is_ok() {
            pruned.checkpoints += 1;
        }
    }
    for (digest, size) in objects.all()? {
        if !reachable.contains(&digest) && std::fs::remove_file(objects.path(&digest)).is_ok() {
            pruned.objects += 1;
            pruned.bytes += size;
        }
    }
    Ok((pruned, reachable))
}
