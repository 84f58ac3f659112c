//! Receipts: one JSON line per judged event, in the state directory, each chained to
//! the one before it by hash, so that an edited or deleted line is detectable.
//!
//! A receipt says what was decided and by whom — each guardrail's verdict, level,
//! time taken and component hash, the gate mode, the final decision — and never
//! what the agent sent: the tool input is recorded as its sha256. Lines are JSON so
//! that a log shipper can carry them off the machine; a copy kept elsewhere is
//! also what shows lines removed from the end, which no chain can show by itself.
//!
//! Appends from concurrent hooks are serialised by an exclusive lock on the file;
//! each reads only the file's last line to chain to it, so a receipt costs the
//! same however long the file has grown.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub mod anchor;
pub mod otlp;

/// The receipts file's name in the state directory.
pub const FILE: &str = "receipts.jsonl";
/// The `prev` of the first receipt.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// How long an append waits for another process's.
const LOCK_WAIT: Duration = Duration::from_secs(2);
/// How much of the file's end is read at first to find its last line.
const TAIL_CHUNK: u64 = 8 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ReceiptError {
    #[error("cannot write the receipt to {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

pub use sandrail_policy::receipts::Gate;

/// One guardrail's part in an event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardrailRun {
    pub name: String,
    /// The sha256 of the component that ran (absent when none could be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// `pass`, `note`, `deny`, `violation`, `failed` (it could not judge) or
    /// `not-run` (missing, unloadable, not matching its pin).
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The escalation level a violation came to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Whether its answer refuses the event (or would, in observe mode).
    pub refuses: bool,
    /// The mode that governed its answer (older receipts say `gate`).
    #[serde(rename = "gate_mode", alias = "gate")]
    pub gate: Gate,
    /// Microseconds from instantiation to verdict.
    pub us: u64,
    /// The limits it reached, by config name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceeded: Vec<String>,
    /// Why it did not run or could not judge (`not-run`, `failed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What the evaluation leaves for the receipt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    pub guardrails: Vec<GuardrailRun>,
    /// Refused by the host itself (self-protection, a failure under `on_error`).
    pub host_refused: bool,
    /// Refusals that observe mode let through.
    pub observed_refusals: usize,
    /// A Stop the guardrails refused, let through past `max_refused_stops`.
    pub released: bool,
    /// The checkpoint taken before the call (`sandrail checkpoints`).
    pub checkpoint: Option<String>,
    /// Why no checkpoint could be taken before a call that called for one.
    pub checkpoint_failed: Option<String>,
}

/// One line of the receipts file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// Unique across files and machines, fixed before the receipt is chained.
    pub id: String,
    /// Its position in this file's chain, from 1.
    pub seq: u64,
    pub time: String,
    pub session: String,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The harness's id of the tool call, to find it in the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// The project the event came from, and its working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The sha256 of the tool input as sent; the input itself is never recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_sha256: Option<String>,
    pub guardrails: Vec<GuardrailRun>,
    /// What the harness was answered: `allow`, `deny`, `ask` or `block`.
    pub decision: String,
    /// What enforcing every guardrail would have answered, when observe mode
    /// answered otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    /// What the agent (or, where it cannot be refused, the user) was shown: the
    /// refusal, or the notes, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The config's gate mode, the mode that governed the call (older receipts say `gate`).
    #[serde(rename = "gate_mode", alias = "gate")]
    pub gate: Gate,
    /// A Stop the guardrails refused, let through because too many were refused
    /// in a row (`settings.max_refused_stops`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
    /// The id of the policy in force for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// The checkpoint taken of the project before the call: what `sandrail
    /// undo ID` restores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// Why no checkpoint could be taken before a call that called for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_failed: Option<String>,
    /// What the person was told beyond the decision: the policy files changed, a
    /// record was tampered with, a receipt was late.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<String>,
    /// Chained after it waited for the file (its lock was held): it was logged
    /// while it waited, and the log must show it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub late: bool,
    /// The sha256 of the previous line (its bytes without the newline).
    pub prev: String,
}

/// The receipts file of a state directory.
pub fn path(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// What became of a receipt.
#[derive(Debug)]
pub enum Appended {
    /// Chained into the file at `seq`, after `late` receipts that had waited.
    Written { seq: u64, late: usize },
    /// Kept to be chained by the next event that can write the file, because
    /// another process held it: the holder, and where the receipt waits.
    Waiting { holder: String, kept: PathBuf },
}

/// Where the receipts that waited are kept until an event chains them.
const WAITING_DIR: &str = "receipts.waiting";

/// Appends `receipt` (its `seq` and `prev` are filled in here, and its `id` when
/// empty) to the state directory's receipts, under an exclusive lock; with a
/// `log` socket, the line goes to the system log too (see [`anchor`]).
///
/// The lock cannot keep an event from its receipt: held by something that is
/// not sandrail at work, or past the wait, the receipt is kept aside (and
/// logged at once) and the next event that gets the lock chains it, saying so.
pub fn append(
    state_dir: &Path,
    mut receipt: Receipt,
    log: Option<&Path>,
) -> Result<Appended, ReceiptError> {
    let path = path(state_dir);
    let io = |source| ReceiptError::Io {
        path: path.clone(),
        source,
    };
    crate::locations::create_private_dir(state_dir).map_err(io)?;
    let log = log.map(|socket| anchor::Log { socket, state_dir });
    let log = log.as_ref();
    if receipt.id.is_empty() {
        receipt.id = new_id(&receipt);
    }
    let mut file = open_for_append(&path).map_err(io)?;
    let started = Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                let holder = crate::holders::of(&path);
                let hopeless = holder.as_ref().is_some_and(|h| h.never_lets_go());
                if hopeless || started.elapsed() >= LOCK_WAIT {
                    let holder = holder.map_or_else(
                        || "a process the system does not name".to_owned(),
                        |h| h.to_string(),
                    );
                    return keep_waiting(state_dir, receipt, holder, log);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
    }
    let mut chain = Chain::of(&mut file).map_err(io)?;
    let late = chain_waiting(state_dir, &mut chain, &mut file, log).map_err(io)?;
    if late > 0 {
        receipt.alerts.push(late_alert(late));
    }
    chain.add(&mut file, &mut receipt, log).map_err(io)?;
    Ok(Appended::Written {
        seq: receipt.seq,
        late,
    })
}

/// The most bytes a receipt keeps of a field the payload chose (the session,
/// tool, project, working directory): a path is at most this long, and a payload
/// of 16 MiB in one field must not become a receipt of 16 MiB, nor fill the disk
/// every event's receipt needs.
pub const MAX_FIELD_BYTES: usize = 4096;

/// `text`, cut to [`MAX_FIELD_BYTES`] (at a character boundary, marked `…`).
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_FIELD_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_FIELD_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A receipt's id: unique across files and machines, fixed before it is
/// chained (a receipt that waits keeps it).
pub fn new_id(receipt: &Receipt) -> String {
    crate::sha256_hex(
        format!(
            "{}:{}:{}:{}:{}",
            receipt.time,
            receipt.session,
            receipt.event,
            std::process::id(),
            now_nanos()
        )
        .as_bytes(),
    )[..24]
        .to_owned()
}

/// The clock in nanoseconds, to tell apart what one process makes in one second.
fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// What the person is told when an event chains receipts that had waited.
pub fn late_alert(late: usize) -> String {
    format!(
        "sandrail: {late} receipt(s) of earlier events were chained late: the receipts file had been held"
    )
}

/// Keeps a receipt aside until an event can chain it, and logs it at once.
fn keep_waiting(
    state_dir: &Path,
    mut receipt: Receipt,
    holder: String,
    log: Option<&anchor::Log<'_>>,
) -> Result<Appended, ReceiptError> {
    let dir = state_dir.join(WAITING_DIR);
    let io = |source| ReceiptError::Io {
        path: dir.clone(),
        source,
    };
    receipt.seq = 0;
    receipt.prev = String::new();
    let line = serde_json::to_vec(&receipt).map_err(|e| io(e.into()))?;
    let kept = dir.join(format!("{:032}-{}.json", now_nanos(), std::process::id()));
    crate::files::write_atomically(&kept, &line).map_err(io)?;
    if let Some(log) = log {
        log.send(&line, crate::clock::now());
    }
    Ok(Appended::Waiting { holder, kept })
}

/// Chains the receipts that waited, oldest first; returns how many.
fn chain_waiting(
    state_dir: &Path,
    chain: &mut Chain,
    file: &mut std::fs::File,
    log: Option<&anchor::Log<'_>>,
) -> std::io::Result<usize> {
    let dir = state_dir.join(WAITING_DIR);
    let mut waiting: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    waiting.sort();
    let mut chained = 0;
    for kept in waiting {
        let Ok(bytes) = crate::files::read_regular(&kept, 1 << 20) else {
            continue;
        };
        if let Ok(mut receipt) = serde_json::from_slice::<Receipt>(&bytes) {
            receipt.late = true;
            chain.add(file, &mut receipt, log)?;
            chained += 1;
        }
        std::fs::remove_file(&kept)?;
    }
    Ok(chained)
}

/// Where the file's chain ends, while this process holds its lock.
struct Chain {
    /// The hash of the last line (the genesis hash for an empty file).
    prev: String,
    seq: u64,
    /// The last write was cut short, so the next line starts with a newline.
    torn: bool,
}

impl Chain {
    fn of(file: &mut std::fs::File) -> std::io::Result<Chain> {
        let (last, ends_with_newline) = last_line(file)?;
        Ok(match &last {
            Some(line) => Chain {
                prev: crate::sha256_hex(line),
                seq: serde_json::from_slice::<Receipt>(line).map_or(0, |r| r.seq),
                torn: !ends_with_newline,
            },
            None => Chain {
                prev: GENESIS.to_owned(),
                seq: 0,
                torn: false,
            },
        })
    }

    /// Chains `receipt` and writes its line (and logs it).
    fn add(
        &mut self,
        file: &mut std::fs::File,
        receipt: &mut Receipt,
        log: Option<&anchor::Log<'_>>,
    ) -> std::io::Result<()> {
        receipt.prev = self.prev.clone();
        receipt.seq = self.seq.saturating_add(1).max(1);
        let body = serde_json::to_vec(&*receipt)?;
        let mut line = Vec::with_capacity(body.len() + 2);
        if self.torn {
            // The last write was cut short: end it, and chain to what it left.
            line.push(b'\n');
        }
        line.extend_from_slice(&body);
        line.push(b'\n');
        // One write of the whole line: an O_APPEND write is not interleaved.
        file.write_all(&line)?;
        if let Some(log) = log {
            log.send(&body, crate::clock::now());
        }
        self.prev = crate::sha256_hex(&body);
        self.seq = receipt.seq;
        self.torn = false;
        Ok(())
    }
}

fn open_for_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).append(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The file's last line (without its newline) and whether the file ends with a
/// newline, reading back from the end only as far as that line starts.
fn last_line(file: &mut std::fs::File) -> std::io::Result<(Option<Vec<u8>>, bool)> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok((None, true));
    }
    let mut chunk = TAIL_CHUNK.min(len);
    loop {
        let start = len - chunk;
        file.seek(SeekFrom::Start(start))?;
        let mut tail = Vec::with_capacity(chunk as usize);
        Read::take(&*file, chunk).read_to_end(&mut tail)?;
        let ends_with_newline = tail.last() == Some(&b'\n');
        let body = if ends_with_newline {
            &tail[..tail.len() - 1]
        } else {
            &tail[..]
        };
        match body.iter().rposition(|&b| b == b'\n') {
            Some(at) => return Ok((Some(body[at + 1..].to_vec()), ends_with_newline)),
            None if start == 0 => return Ok((Some(body.to_vec()), ends_with_newline)),
            None => chunk = (chunk * 4).min(len),
        }
    }
}

/// A receipts line by its number: the receipt, or why it is not one.
pub type Line = (usize, Result<Receipt, String>);

/// The receipts file's bytes; none when there is no file yet.
fn file_bytes(state_dir: &Path) -> Result<Vec<u8>, ReceiptError> {
    let path = path(state_dir);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(ReceiptError::Read { path, source }),
    }
}

/// Reads every receipt; lines that are not receipts are reported by number.
pub fn read_all(state_dir: &Path) -> Result<Vec<Line>, ReceiptError> {
    let bytes = file_bytes(state_dir)?;
    Ok(lines(&bytes)
        .enumerate()
        .map(|(i, line)| {
            (
                i + 1,
                serde_json::from_slice::<Receipt>(line).map_err(|e| e.to_string()),
            )
        })
        .collect())
}

/// Every line that holds a receipt, as written, with the receipt.
pub fn chained(state_dir: &Path) -> Result<Vec<(String, Receipt)>, ReceiptError> {
    let bytes = file_bytes(state_dir)?;
    Ok(lines(&bytes)
        .filter_map(|line| {
            let receipt = serde_json::from_slice::<Receipt>(line).ok()?;
            Some((String::from_utf8_lossy(line).into_owned(), receipt))
        })
        .collect())
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes
        .strip_suffix(b"\n")
        .unwrap_or(bytes)
        .split(|&b| b == b'\n')
        .filter(|_| !bytes.is_empty())
}

/// A rule's violations as a session's receipts recorded them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counted {
    pub guardrail: String,
    pub rule: String,
    /// Violations counted: those that came to an escalation level.
    pub counter: u64,
    /// The highest level they came to.
    pub level: crate::escalation::Level,
}

/// What a session's receipts say its rules' counters were: each violation that
/// came to a level counted once, the level the highest reached. What a rule
/// counted while no receipt could be written is not in it.
pub fn counted_violations(state_dir: &Path, session: &str) -> Result<Vec<Counted>, ReceiptError> {
    let mut counted: BTreeMap<(String, String), Counted> = BTreeMap::new();
    for (_, receipt) in read_all(state_dir)? {
        let Ok(receipt) = receipt else { continue };
        if receipt.session != session {
            continue;
        }
        for run in receipt.guardrails {
            let (Some(rule), Some(level)) = (run.rule, run.level) else {
                continue;
            };
            let Some(level) = crate::escalation::Level::from_name(&level) else {
                continue;
            };
            let entry = counted
                .entry((run.name.clone(), rule.clone()))
                .or_insert(Counted {
                    guardrail: run.name,
                    rule,
                    counter: 0,
                    level,
                });
            entry.counter += 1;
            entry.level = entry.level.max(level);
        }
    }
    Ok(counted.into_values().collect())
}

/// How the chain stands.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Verified {
    pub receipts: usize,
    /// The last receipt's seq and the hash of its line: what a copy shipped
    /// elsewhere must end with.
    pub last: Option<(u64, String)>,
    /// Each place the chain breaks, by line number.
    pub breaks: Vec<String>,
}

/// Walks the chain: each line must parse, carry the hash of the line before it
/// and the next seq.
pub fn verify(state_dir: &Path) -> Result<Verified, ReceiptError> {
    let bytes = file_bytes(state_dir)?;
    let mut verified = Verified::default();
    let mut prev_hash = GENESIS.to_owned();
    let mut prev_seq = 0;
    for (i, line) in lines(&bytes).enumerate() {
        let n = i + 1;
        let hash = crate::sha256_hex(line);
        match serde_json::from_slice::<Receipt>(line) {
            Ok(receipt) => {
                verified.receipts += 1;
                if receipt.prev != prev_hash {
                    // The line before chained in soundly and this one follows it
                    // by seq: that line's text is what changed.
                    verified.breaks.push(if n > 1 && receipt.seq == prev_seq + 1 {
                        format!(
                            "line {} (seq {prev_seq}) was edited: line {n} (seq {}) chains to {}, but it hashes to {prev_hash}",
                            n - 1,
                            receipt.seq,
                            receipt.prev
                        )
                    } else {
                        format!(
                            "line {n} (seq {}): it chains to {}, but the line before it hashes to {prev_hash}: lines were removed or inserted before it",
                            receipt.seq, receipt.prev
                        )
                    });
                } else if receipt.seq != prev_seq + 1 {
                    verified.breaks.push(format!(
                        "line {n}: seq {} follows seq {prev_seq}",
                        receipt.seq
                    ));
                }
                prev_seq = receipt.seq;
                verified.last = Some((receipt.seq, hash.clone()));
            }
            Err(e) => verified
                .breaks
                .push(format!("line {n} is not a receipt: {e}")),
        }
        prev_hash = hash;
    }
    Ok(verified)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_the_payload_chose_is_kept_to_a_bound() {
        assert_eq!(bounded("/home/dev/project"), "/home/dev/project");
        let long = "é".repeat(MAX_FIELD_BYTES);
        let kept = bounded(&long);
        assert!(kept.len() <= MAX_FIELD_BYTES + '…'.len_utf8());
        assert!(kept.ends_with('…'));
    }

    fn receipt(session: &str) -> Receipt {
        Receipt {
            id: String::new(),
            seq: 0,
            time: "2026-12-01T00:00:00Z".into(),
            session: session.into(),
            event: "PreToolUse".into(),
            tool: Some("Bash".into()),
            tool_use_id: None,
            project: None,
            cwd: None,
            input_sha256: None,
            guardrails: Vec::new(),
            decision: "allow".into(),
            observed: None,
            message: None,
            gate: Gate::Enforce,
            released: false,
            policy: None,
            checkpoint: None,
            checkpoint_failed: None,
            alerts: Vec::new(),
            late: false,
            prev: String::new(),
        }
    }

    /// The receipt as written, read back from the file.
    fn written(dir: &Path, appended: Result<Appended, ReceiptError>) -> Receipt {
        let seq = match appended.expect("append") {
            Appended::Written { seq, .. } => seq,
            Appended::Waiting { holder, .. } => panic!("waited for {holder}"),
        };
        read_all(dir)
            .expect("read")
            .into_iter()
            .rev()
            .filter_map(|(_, r)| r.ok())
            .find(|r| r.seq == seq)
            .expect("the receipt written")
    }

    #[test]
    fn a_held_file_keeps_the_receipt_for_the_next_event() {
        let dir = tempfile::tempdir().expect("tempdir");
        written(dir.path(), append(dir.path(), receipt("a"), None));
        // A lock held elsewhere in this process: sandrail at work, waited for,
        // then the receipt is kept aside.
        let held = std::fs::File::open(path(dir.path())).expect("open");
        held.lock().expect("lock");
        let started = Instant::now();
        let kept = append(dir.path(), receipt("b"), None).expect("kept");
        assert!(matches!(kept, Appended::Waiting { .. }), "{kept:?}");
        assert!(started.elapsed() >= LOCK_WAIT);
        drop(held);
        let next = written(dir.path(), append(dir.path(), receipt("c"), None));
        assert_eq!(next.seq, 3);
        assert!(next.alerts[0].contains("1 receipt(s) of earlier events were chained late"));
        let all = read_all(dir.path()).expect("read");
        let sessions: Vec<String> = all
            .into_iter()
            .map(|(_, r)| r.expect("receipt").session)
            .collect();
        assert_eq!(sessions, ["a", "b", "c"]);
        assert!(verify(dir.path()).expect("verify").breaks.is_empty());
    }

    #[test]
    fn appends_chain_and_verify_finds_an_edit() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..5 {
            let written = written(
                dir.path(),
                append(dir.path(), receipt(&format!("s{i}")), None),
            );
            assert_eq!(written.seq, i + 1);
        }
        let verified = verify(dir.path()).expect("verify");
        assert_eq!(verified.receipts, 5);
        assert!(verified.breaks.is_empty(), "{:?}", verified.breaks);

        let file = path(dir.path());
        let text = std::fs::read_to_string(&file).expect("read");
        std::fs::write(&file, text.replacen("\"s2\"", "\"s9\"", 1)).expect("edit");
        let verified = verify(dir.path()).expect("verify");
        assert_eq!(verified.breaks.len(), 1, "{:?}", verified.breaks);
        assert!(
            verified.breaks[0].starts_with("line 3 (seq 3) was edited"),
            "{:?}",
            verified.breaks
        );
    }

    #[test]
    fn a_long_last_line_is_found_and_a_torn_one_is_ended() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut long = receipt("s");
        long.session = "x".repeat(40_000);
        written(dir.path(), append(dir.path(), long, None));
        assert_eq!(
            written(dir.path(), append(dir.path(), receipt("t"), None)).seq,
            2
        );
        let file = path(dir.path());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .expect("open");
        f.write_all(b"{\"torn").expect("tear");
        let after = written(dir.path(), append(dir.path(), receipt("u"), None));
        assert_eq!(after.prev, crate::sha256_hex(b"{\"torn"));
        let verified = verify(dir.path()).expect("verify");
        assert_eq!(verified.receipts, 3);
        assert_eq!(verified.breaks.len(), 2, "{:?}", verified.breaks);
        assert!(verified.breaks[0].starts_with("line 3 is not a receipt"));
    }
}
