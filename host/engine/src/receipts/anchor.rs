//! Receipts anchored outside their file: each one also goes to the system log,
//! and `sandrail receipts --verify --against LOG` compares the file with what the
//! log kept.
//!
//! An agent running as the same user can rewrite the receipts file and chain it
//! again so that `--verify` finds nothing; it cannot take back what the system
//! log already holds (journald's files are not the user's to write). The message
//! is the receipt's line exactly as the file holds it, so comparing is comparing
//! bytes. A receipt still waiting for the file (its lock was held) is logged at
//! once with seq 0, and must turn up in the file later.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::Receipt;

/// `user.info`: the facility and severity of a receipt.
const PRIORITY: u8 = 14;
/// The tag receipts are logged under.
pub const TAG: &str = "sandrail";

/// The system log receipts of one state directory go to.
pub struct Log<'a> {
    /// The datagram socket (the project's bound one, see
    /// [`crate::locations::binding`]).
    pub socket: &'a Path,
    /// Where it is remembered that the log could not be reached, so that is
    /// said once rather than at every event.
    pub state_dir: &'a Path,
}

/// Beside the receipts: the socket that could not be reached, while it cannot.
const UNREACHABLE_MARK: &str = "system-log.unreachable";

impl Log<'_> {
    /// Logs one receipt line. A log that cannot be reached (a container without
    /// one, a macOS host whose log listens elsewhere) is one stderr line the
    /// first time, and `sandrail doctor` shows it after; never a refusal: the
    /// receipt is in its file either way.
    pub fn send(&self, line: &[u8], time: u64) {
        let mark = self.state_dir.join(UNREACHABLE_MARK);
        match send(self.socket, line, time) {
            Ok(()) => {
                // Reachable again: the next failure is news.
                let _ = std::fs::remove_file(&mark);
            }
            Err(e) => {
                let socket = self.socket.display().to_string();
                let said = std::fs::read_to_string(&mark)
                    .is_ok_and(|s| s.lines().next() == Some(socket.as_str()));
                if !said {
                    eprintln!(
                        "sandrail: the system log cannot be reached ({socket}: {e}); receipts are kept in their files only, without the log's copy to check them against (said once; `sandrail doctor` shows it)"
                    );
                    let _ = crate::files::write_atomically(
                        &mark,
                        format!("{socket}\n{e}\n").as_bytes(),
                    );
                }
            }
        }
    }
}

/// The last receipt of `state_dir`'s that did not reach the system log, while
/// none has since: the socket and why. A log that takes a connection can still
/// drop what it is sent (its queue full), so `doctor` reads this too.
pub fn last_failure(state_dir: &Path) -> Option<(String, String)> {
    let text = std::fs::read_to_string(state_dir.join(UNREACHABLE_MARK)).ok()?;
    let mut lines = text.lines();
    let socket = lines.next()?.to_owned();
    Some((socket, lines.next().unwrap_or("unknown").to_owned()))
}

/// Whether the system log at `socket` takes datagrams, without sending one.
pub fn reachable(socket: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::net::UnixDatagram::unbound()?.connect(socket)
    }
    #[cfg(not(unix))]
    {
        let _ = socket;
        Ok(())
    }
}

/// Sends one receipt line to the datagram socket `socket`.
fn send(socket: &Path, line: &[u8], time: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let mut message = format!(
            "<{PRIORITY}>{} {TAG}[{}]: ",
            timestamp(time),
            std::process::id()
        )
        .into_bytes();
        message.extend_from_slice(line);
        let s = std::os::unix::net::UnixDatagram::unbound()?;
        s.set_nonblocking(true)?;
        s.send_to(&message, socket).map(drop)
    }
    #[cfg(not(unix))]
    {
        let _ = (socket, line, time);
        Ok(())
    }
}

/// RFC 3164's `Mmm dd hh:mm:ss`, in UTC.
fn timestamp(time: u64) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let text = crate::clock::rfc3339(time);
    // 2026-12-01T09:14:02Z
    let month = text
        .get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| MONTHS.get(m.wrapping_sub(1)))
        .copied()
        .unwrap_or("Jan");
    let day: u32 = text.get(8..10).and_then(|d| d.parse().ok()).unwrap_or(1);
    let clock = text.get(11..19).unwrap_or("00:00:00");
    format!("{month} {day:>2} {clock}")
}

/// One receipt as a log holds it.
#[derive(Debug, Clone)]
struct Logged {
    line: String,
    receipt: Receipt,
}

/// The receipts a log holds: lines of journalctl's or syslog's output (`-o cat`,
/// the default short format, `-o json`, or raw datagrams), one message a line.
/// Lines that hold no receipt are skipped.
fn read_log(text: &str) -> Vec<Logged> {
    text.lines()
        .filter_map(|line| {
            let message = message_of(line)?;
            let receipt = serde_json::from_str::<Receipt>(&message).ok()?;
            Some(Logged {
                line: message,
                receipt,
            })
        })
        .collect()
}

/// The message of one log line: the JSON after `sandrail[PID]: `, or the line
/// itself, or journalctl's `-o json` MESSAGE.
fn message_of(line: &str) -> Option<String> {
    let line = line.trim_end_matches(['\r', '\n']);
    if let Ok(serde_json::Value::Object(fields)) = serde_json::from_str(line) {
        if let Some(message) = fields.get("MESSAGE").and_then(|m| m.as_str()) {
            return Some(message.to_owned());
        }
        return Some(line.to_owned());
    }
    let tagged = format!("{TAG}[");
    let at = line.find(&tagged)?;
    let rest = &line[at..];
    let start = rest.find("]: ")? + 3;
    Some(rest[start..].to_owned())
}

/// How the receipts file stands against a log.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Compared {
    /// Receipts the log holds.
    pub logged: usize,
    /// What disagrees, each in a sentence naming the receipt's seq.
    pub findings: Vec<String>,
    /// Receipts older than the log's first: not compared.
    pub older: usize,
}

/// Compares the receipts file's lines (`file`: the line, and the receipt it
/// holds) with the receipts in `log`: each one dropped, altered or added is
/// reported by its seq.
pub fn compare(file: &[(String, Receipt)], log: &str) -> Compared {
    let logged = read_log(log);
    let mut out = Compared {
        logged: logged.len(),
        ..Compared::default()
    };
    let mut by_seq: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
    let mut waiting = Vec::new();
    for entry in &logged {
        if entry.receipt.seq == 0 {
            waiting.push(entry);
        } else {
            by_seq
                .entry(entry.receipt.seq)
                .or_default()
                .insert(entry.line.clone());
        }
    }
    let in_file: BTreeMap<u64, &String> = file.iter().map(|(line, r)| (r.seq, line)).collect();
    let first_logged = by_seq.keys().next().copied();
    for (seq, lines) in &by_seq {
        if lines.len() > 1 {
            out.findings.push(format!(
                "seq {seq}: the log holds {} different receipts under it; one was written to the log by something other than sandrail",
                lines.len()
            ));
        }
        match in_file.get(seq) {
            None => out.findings.push(format!(
                "seq {seq}: in the log but not in the file: dropped"
            )),
            Some(line) if !lines.contains(*line) => out.findings.push(format!(
                "seq {seq}: the file's receipt differs from the one logged: altered"
            )),
            Some(_) => {}
        }
    }
    for seq in in_file.keys() {
        match first_logged {
            Some(first) if *seq < first => out.older += 1,
            None => out.older += 1,
            Some(_) if !by_seq.contains_key(seq) => out.findings.push(format!(
                "seq {seq}: in the file but not in the log: added (or written while the log could not be reached)"
            )),
            Some(_) => {}
        }
    }
    // A receipt chained late was logged while it waited: one the log never saw
    // waiting was put among the waiting ones by something other than sandrail.
    let waited: BTreeSet<&str> = waiting.iter().map(|e| e.receipt.id.as_str()).collect();
    for (_, receipt) in file {
        let checked = first_logged.is_some_and(|first| receipt.seq >= first);
        if receipt.late && checked && !waited.contains(receipt.id.as_str()) {
            out.findings.push(format!(
                "seq {}: chained late, but the log never saw it while it waited: added",
                receipt.seq
            ));
        }
    }
    let ids: BTreeSet<&str> = file.iter().map(|(_, r)| r.id.as_str()).collect();
    for entry in waiting {
        if !ids.contains(entry.receipt.id.as_str()) {
            out.findings.push(format!(
                "the receipt {} ({} {} of session {}) was logged while it waited for the file, and never reached it: dropped",
                entry.receipt.id, entry.receipt.time, entry.receipt.event, entry.receipt.session
            ));
        }
    }
    out
}

/// Reads a log capture for [`compare`].
pub fn read(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(seq: u64, decision: &str) -> (String, Receipt) {
        let receipt = Receipt {
            id: format!("id{seq}"),
            seq,
            time: "2026-12-01T00:00:00Z".into(),
            session: "s".into(),
            event: "PreToolUse".into(),
            tool: None,
            tool_use_id: None,
            project: None,
            cwd: None,
            input_sha256: None,
            guardrails: Vec::new(),
            decision: decision.into(),
            observed: None,
            message: None,
            gate: super::super::Gate::Enforce,
            released: false,
            policy: None,
            checkpoint: None,
            checkpoint_failed: None,
            alerts: Vec::new(),
            late: false,
            prev: String::new(),
        };
        (serde_json::to_string(&receipt).expect("json"), receipt)
    }

    #[test]
    fn every_form_of_log_line_is_read() {
        let (line, _) = receipt(1, "deny");
        for form in [
            format!("<14>Dec  1 09:14:02 sandrail[42]: {line}"),
            format!("Dec 01 09:14:02 host sandrail[42]: {line}"),
            format!("2026-12-01T09:14:02.1+00:00 host sandrail[42]: {line}"),
            line.clone(),
            serde_json::json!({"MESSAGE": line, "SYSLOG_IDENTIFIER": "sandrail"}).to_string(),
        ] {
            assert_eq!(read_log(&form).len(), 1, "{form}");
            assert_eq!(read_log(&form)[0].line, line);
        }
        assert!(read_log("Dec 01 09:14:02 host sshd[1]: Accepted").is_empty());
    }

    #[test]
    fn a_rechained_file_is_caught_by_seq() {
        let logged: Vec<_> = (1..=4)
            .map(|n| receipt(n, if n == 2 { "deny" } else { "allow" }))
            .collect();
        let log: String = logged
            .iter()
            .map(|(l, _)| format!("<14>Dec  1 09:14:02 sandrail[42]: {l}\n"))
            .collect();
        assert!(compare(&logged, &log).findings.is_empty());
        // The deny dropped, the rest renumbered.
        let rewritten: Vec<_> = [1, 3, 4]
            .iter()
            .enumerate()
            .map(|(i, _)| receipt(i as u64 + 1, "allow"))
            .collect();
        let found = compare(&rewritten, &log).findings;
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("seq 2:") && f.contains("altered")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|f| f.starts_with("seq 4:") && f.contains("dropped")),
            "{found:?}"
        );
    }

    #[test]
    fn the_timestamp_is_rfc_3164() {
        assert_eq!(timestamp(1_776_000_000), "Apr 12 13:20:00");
    }
}
