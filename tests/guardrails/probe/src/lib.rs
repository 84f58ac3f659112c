//! A guardrail for the integration tests: its `config.action` says what to do, so one
//! component exercises every path of the host — state, isolation, limits, failures.

use sandrail_guest::{Event, Guardrail, Result, Verdict, escalation, flags, log, state};
use serde::Deserialize;

#[derive(Deserialize)]
struct Config {
    action: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    value: String,
    #[serde(default)]
    owner: String,
    #[serde(default)]
    count: usize,
    #[serde(default)]
    size: usize,
}

struct Probe;

impl Guardrail for Probe {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let config: Config = event.config_as()?;
        Ok(match config.action.as_str() {
            // Stores `value` under `key` and reports what the keyspace holds afterwards.
            "write" => {
                state::set_raw(&config.key, &config.value)?;
                let entries = state::list("")?;
                let listed: Vec<String> = entries
                    .iter()
                    .map(|e| format!("{}={}", e.key, e.value))
                    .collect();
                Verdict::note(format!("keyspace: {}", listed.join(",")))
            }
            // Reports the value under `key`.
            "read" => Verdict::note(format!("{}={:?}", config.key, state::get_raw(&config.key)?)),
            // Increments a counter: the lost-update check.
            "count" => {
                let n: u64 = state::get("n")?.unwrap_or(0);
                state::set("n", &(n + 1))?;
                Verdict::note(format!("n={}", n + 1))
            }
            // Reads another guardrail's keyspace and reports the answer, error included.
            "list-owner" => match state::list_owner(&config.owner, "") {
                Ok(entries) => Verdict::note(format!("owner entries: {}", entries.len())),
                Err(e) => Verdict::note(format!("list-owner error: {}", e.message())),
            },
            // Tries each state limit and reports what the host answered.
            "limits" => {
                let long_key = "k".repeat(1025);
                let big_value = "v".repeat(64 * 1024 + 1);
                let key = state::set_raw(&long_key, "x").err().map(|e| e.message());
                let value = state::set_raw("big", &big_value).err().map(|e| e.message());
                let mut full = None;
                for i in 0..config.count {
                    if let Err(e) = state::set_raw(&format!("key-{i}"), "1") {
                        full = Some(format!("at {i}: {}", e.message()));
                        break;
                    }
                }
                Verdict::note(format!("key: {key:?}; value: {value:?}; keys: {full:?}"))
            }
            // Stores `count` values of `size` bytes until the host refuses one, then
            // lists the keyspace.
            "fill" => {
                let value = "v".repeat(config.size);
                let mut refused = None;
                for i in 0..config.count {
                    if let Err(e) = state::set_raw(&format!("fill-{i:05}"), &value) {
                        refused = Some(format!("at {i}: {}", e.message()));
                        break;
                    }
                }
                let listed = match state::list("") {
                    Ok(entries) => entries.len().to_string(),
                    Err(e) => e.message(),
                };
                Verdict::note(format!("refused: {refused:?}; listed: {listed}"))
            }
            // Lists another guardrail's keyspace, reporting the size of the answer.
            "list-owner-size" => match state::list_owner(&config.owner, "") {
                Ok(entries) => Verdict::note(format!(
                    "entries: {}, bytes: {}",
                    entries.len(),
                    entries
                        .iter()
                        .map(|e| e.key.len() + e.value.len())
                        .sum::<usize>()
                )),
                Err(e) => Verdict::note(format!("list-owner error: {}", e.message())),
            },
            // Flags: set, check or consume `key`, reporting what the host answered.
            "flag-set" => match flags::set(&config.key) {
                Ok(()) => Verdict::note(format!("set {}", config.key)),
                Err(e) => Verdict::note(format!("flag error: {}", e.message())),
            },
            "flag-check" => match flags::check(&config.key) {
                Ok(set) => Verdict::note(format!("{} is set: {set}", config.key)),
                Err(e) => Verdict::note(format!("flag error: {}", e.message())),
            },
            "flag-consume" => match flags::consume(&config.key) {
                Ok(set) => Verdict::note(format!("{} consumed: {set}", config.key)),
                Err(e) => Verdict::note(format!("flag error: {}", e.message())),
            },
            "log-empty" => {
                for _ in 0..config.count {
                    log::warn("");
                }
                Verdict::pass()
            }
            "stamp" => {
                let stamped = state::stamp(&config.key)?;
                Verdict::note(format!(
                    "stamped={stamped} now={:?}",
                    state::stamped_this_turn(&config.key)?
                ))
            }
            "check-stamp" => {
                Verdict::note(format!("now={:?}", state::stamped_this_turn(&config.key)?))
            }
            "spin" => {
                let mut i: u64 = 0;
                loop {
                    i = std::hint::black_box(i.wrapping_add(1));
                }
            }
            "hog" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            // Blocks in a host call (a WASI sleep) rather than computing.
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_millis(config.count as u64));
                Verdict::pass()
            }
            "flood" => {
                let line = "z".repeat(1023);
                for _ in 0..config.count {
                    println!("{line}");
                }
                Verdict::note("flooded")
            }
            "panic" => panic!("probe asked to panic"),
            "write-then-panic" => {
                state::set_raw(&config.key, &config.value)?;
                panic!("probe failed after writing")
            }
            "log" => {
                for i in 0..config.count.max(1) {
                    log::warn(&format!("log line {i}: {}", config.value));
                }
                println!("to stdout");
                eprintln!("to stderr");
                Verdict::pass()
            }
            // A violation of rule `key` on a command holding "bad"; otherwise a
            // note of how the host answered this guardrail's rules so far.
            "standing" => {
                if event.command().is_some_and(|c| c.contains("bad")) {
                    Verdict::violation(config.key, config.value)
                } else {
                    let shown: Vec<String> = escalation::rules()?
                        .iter()
                        .map(|r| {
                            let level = r.level.map_or("none", |l| l.name());
                            format!("{}={}/{level}/refuses:{}", r.rule, r.count, r.refuses())
                        })
                        .collect();
                    Verdict::note(format!("standing: {}", shown.join(",")))
                }
            }
            "note" => Verdict::note(config.value),
            "deny" => Verdict::deny(config.value),
            "violation" => Verdict::violation(config.key, config.value),
            "echo" => Verdict::note(format!(
                "kind={:?} tool={:?} turn={:?} facts={}",
                event.kind(),
                event.tool_name(),
                event.turn().map(|t| t.id.clone()),
                event.facts()
            )),
            "huge" => Verdict::deny("x".repeat(config.count)),
            // Recurses without bound: with `key = "frames"` each call also keeps a
            // 4 KiB array on the shadow stack in linear memory; otherwise only the
            // wasm call stack grows.
            "recurse" => {
                let depth = if config.key == "frames" {
                    recurse_with_frames(0)
                } else {
                    recurse(0)
                };
                Verdict::note(format!("returned from depth {depth}"))
            }
            // Writes `count` bytes to `key` ("stdout", "stderr" or "log") in writes
            // (log messages) of `size` bytes, lines of 1,023 bytes each.
            "blast" => {
                use std::io::Write as _;
                let size = config.size.max(1);
                let chunk: String = (0..size)
                    .map(|i| if i % 1024 == 1023 { '\n' } else { 'b' })
                    .collect();
                let mut left = config.count;
                while left > 0 {
                    let n = left.min(size);
                    let piece = &chunk[..n];
                    let written = match config.key.as_str() {
                        "stdout" => std::io::stdout().write_all(piece.as_bytes()),
                        "stderr" => std::io::stderr().write_all(piece.as_bytes()),
                        _ => {
                            log::warn(piece);
                            Ok(())
                        }
                    };
                    written.map_err(|e| sandrail_guest::Error::msg(format!("write: {e}")))?;
                    left -= n;
                }
                Verdict::note("blasted")
            }
            // Tries to read the file at `value`: a sandbox with no preopened
            // directories must refuse.
            "read-file" => match std::fs::read(&config.value) {
                Ok(bytes) => Verdict::note(format!("read {} bytes", bytes.len())),
                Err(e) => Verdict::note(format!("read error: {e}")),
            },
            // Tries to open a TCP connection to `value` (host:port).
            "connect" => match std::net::TcpStream::connect(config.value.as_str()) {
                Ok(_) => Verdict::note("connected"),
                Err(e) => Verdict::note(format!("connect error: {e}")),
            },
            // Tries to send a UDP datagram to `value` (host:port).
            "udp-send" => {
                let sent = std::net::UdpSocket::bind("0.0.0.0:0")
                    .and_then(|socket| socket.send_to(b"exfil", config.value.as_str()));
                match sent {
                    Ok(n) => Verdict::note(format!("sent {n} bytes")),
                    Err(e) => Verdict::note(format!("udp error: {e}")),
                }
            }
            other => {
                return Err(sandrail_guest::Error::msg(format!(
                    "unknown action {other}"
                )));
            }
        })
    }
}

/// Recursion the optimiser cannot turn into a loop: the result of each call is
/// used after it returns.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if std::hint::black_box(depth) == u64::MAX {
        return depth;
    }
    std::hint::black_box(recurse(std::hint::black_box(depth + 1))).wrapping_add(1)
}

/// The same, with 4 KiB of locals in each frame.
#[inline(never)]
fn recurse_with_frames(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth as u8; 4096]);
    if std::hint::black_box(depth) == u64::MAX {
        return depth;
    }
    let below = std::hint::black_box(recurse_with_frames(std::hint::black_box(depth + 1)));
    below.wrapping_add(u64::from(
        std::hint::black_box(&frame)[(depth % 4096) as usize],
    ))
}

sandrail_guest::export!(Probe);
