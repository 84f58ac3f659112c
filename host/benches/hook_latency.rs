//! Whole-process latency of `sandrail hook`: what every tool call an agent makes
//! waits for. Reports figures; it does not pass or fail.
//!
//! Runs, interleaved so that machine noise hits all of them alike:
//! - `/bin/true` fed the same payload: the floor of starting any process;
//! - `sandrail hook`, embedded default, PreToolUse Bash, warm cache;
//! - the same with a cold cache (a fresh cache directory each run);
//! - `sandrail hook` on a PreToolUse Write, which the default's stateful
//!   session-budget counts: the cost of a state transaction and its commit;
//! - the same two payloads POSTed to a running `sandrail serve` on a fresh
//!   connection each, the client's time included; and `sandrail hook` forwarding
//!   the Bash payload to it over its Unix socket (`SANDRAIL_SERVE_SOCKET`).
//!
//! - a force push refused by no-destructive-git with an escalation ladder: the
//!   cost of counting a violation in the session's state;
//! - a Write in a state directory holding 10,000 idle sessions, and the one hook an
//!   hour that looks through them for sessions to forget;
//! - a force push padded to 2 MiB (`true | true | … git push --force`): the cost
//!   of the host's shell analysis on the largest commands an agent could send.
//!
//! Then the parallel cases, each started all at once, as Claude Code starts the
//! hooks of parallel tool calls:
//! - 200 Writes on one session whose session-budget allows 60: wall time, how
//!   many were allowed and refused, and how long each waited for the session;
//! - 200 Writes spread over 20 sessions, which never wait for one another.
//!
//! `cargo bench -p sandrail --bench hook-latency`; `SANDRAIL_BENCH_RUNS` sets the
//! number of warm runs (default 300; cold runs are a tenth of that).
//! `SANDRAIL_BENCH_COMPONENTS=rust=a.wasm,python=b.wasm` adds what each of those
//! components costs by its size: first event, warm hook, served.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SANDRAIL: &str = env!("CARGO_BIN_EXE_sandrail");
/// The forwarding hook alone.
const SANDRAIL_HOOK: &str = env!("CARGO_BIN_EXE_sandrail-hook");

fn main() {
    let runs: usize = std::env::var("SANDRAIL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
        .max(10);
    let cold_runs = (runs / 10).max(5);
    let scratch = tempfile::tempdir().expect("temp dir");
    // As the hook resolves a project's path, so that its bindings are found.
    let dir = &std::fs::canonicalize(scratch.path()).expect("temp dir");
    let _bindings = Bindings(dir);
    // Receipts go to a system log, as on a machine with journald: a socket that
    // is read, so each hook pays for its datagram as it would there.
    let _syslog = listen_as_syslog(&dir.join("syslog.sock"));
    let transcript = dir.join("session.jsonl");
    write_transcript(&transcript);
    let pre_tool_use = |tool_name: &str, tool_input: serde_json::Value| {
        serde_json::json!({
            "session_id": "bench-session",
            "transcript_path": transcript,
            "cwd": dir.join("project"),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool_name,
            "tool_input": tool_input,
            "tool_use_id": "toolu_01ABC",
        })
        .to_string()
    };
    let payload = pre_tool_use(
        "Bash",
        serde_json::json!({"command": "npm test -- --watch=false", "description": "Run the tests", "timeout": 120000}),
    );
    let write_payload = pre_tool_use(
        "Write",
        serde_json::json!({"file_path": dir.join("project/src/lib.rs"), "content": "pub fn answer() -> u32 { 42 }\n"}),
    );
    std::fs::create_dir_all(dir.join("project")).expect("project dir");

    let warm_cache = dir.join("cache");
    // One run to fill the cache, and to check the binary answers at all.
    let first = spawn(SANDRAIL, &payload, dir, &warm_cache);
    assert!(first.1, "sandrail hook failed on the benchmark payload");

    // The resident engine, on its own state so its sessions do not wait on the
    // hooks'; a request is a fresh connection, as Claude Code's http hook makes.
    let server = Server::start(dir, &warm_cache, &dir.join("serve-state"));
    server.post(&payload);
    // A forwarding hook (`program`) handing `payload` to the server.
    let forward = |program: &str, payload: &str| {
        spawn_sub(
            program,
            "hook",
            payload,
            dir,
            &warm_cache,
            &dir.join("state"),
            &dir.join("project"),
            Some(&dir.join("serve.sock")),
        )
        .0
    };
    let mut floor = Vec::with_capacity(runs);
    let mut warm = Vec::with_capacity(runs);
    let mut served = Vec::with_capacity(runs);
    let mut forwarded = Vec::with_capacity(runs);
    let mut forwarded_small = Vec::with_capacity(runs);
    let mut cold = Vec::with_capacity(cold_runs);
    let mut stateful = Vec::with_capacity(runs);
    let mut served_write = Vec::with_capacity(runs);
    let mut forwarded_write = Vec::with_capacity(runs);
    // The forwarding hook's own cost: a server that answers at once.
    let stub_socket = dir.join("stub.sock");
    answer_at_once(&stub_socket);
    let stub_forwarder = stub_forwarder();
    let stub_forwarder_path = stub_forwarder.to_string_lossy().into_owned();
    let mut client_alone = Vec::with_capacity(runs);
    // The floor and the warm hook interleaved, with nothing else between them: a
    // durable commit's writeback would otherwise land on whichever runs next.
    for _ in 0..runs {
        floor.push(spawn("/bin/true", &payload, dir, &warm_cache).0);
        warm.push(spawn(SANDRAIL, &payload, dir, &warm_cache).0);
        served.push(server.post(&payload));
        forwarded.push(forward(SANDRAIL, &payload));
        forwarded_small.push(forward(SANDRAIL_HOOK, &payload));
        client_alone.push(
            spawn_sub(
                &stub_forwarder_path,
                "hook",
                &payload,
                dir,
                &warm_cache,
                &dir.join("state"),
                &dir.join("project"),
                Some(&stub_socket),
            )
            .0,
        );
    }
    for i in 0..runs {
        stateful.push(spawn(SANDRAIL, &write_payload, dir, &warm_cache).0);
        served_write.push(server.post(&write_payload));
        forwarded_write.push(forward(SANDRAIL_HOOK, &write_payload));
        if i % (runs / cold_runs) == 0 && cold.len() < cold_runs {
            let fresh = dir.join(format!("cold-cache-{i}"));
            cold.push(spawn(SANDRAIL, &payload, dir, &fresh).0);
            let _ = std::fs::remove_dir_all(&fresh);
        }
    }

    if let Some(stub_dir) = stub_forwarder.parent() {
        let _ = std::fs::remove_dir_all(stub_dir);
    }
    let floor = Stats::of(floor);
    let warm = Stats::of(warm);
    let cold = Stats::of(cold);
    let stateful = Stats::of(stateful);
    let served = Stats::of(served);
    let forwarded = Stats::of(forwarded);
    let forwarded_small = Stats::of(forwarded_small);
    let served_write = Stats::of(served_write);
    let forwarded_write = Stats::of(forwarded_write);
    let client_alone = Stats::of(client_alone);
    drop(server);
    println!("sandrail hook latency, whole process, PreToolUse Bash, embedded default");
    println!(
        "({} warm runs, {} cold; {} cores)",
        runs,
        cold_runs,
        cores()
    );
    println!();
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>12}",
        "case", "median", "p99", "min", "median/floor"
    );
    for (name, s) in [
        ("/bin/true (floor)", &floor),
        ("sandrail hook, warm cache", &warm),
        ("sandrail hook, cold cache", &cold),
        ("Write, state committed", &stateful),
        ("serve: POST Bash, client in", &served),
        ("hook forwarding to serve", &forwarded),
        ("sandrail-hook forwarding", &forwarded_small),
        ("serve: POST Write, committed", &served_write),
        ("sandrail-hook Write, served", &forwarded_write),
        ("sandrail-hook, client alone", &client_alone),
    ] {
        row(name, s, &floor);
    }
    // Escalation state: each force push is counted before it is refused.
    let escalating_state = dir.join("escalating-state");
    let escalating = project_with(
        dir,
        &escalating_state,
        "escalating",
        "[[guardrail]]\nname = \"no-destructive-git\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\nmatcher = \"Bash\"\n[guardrail.enforcement]\ndefault_level = \"nudge\"\nescalation = [{ after = 3, level = \"hard_block\" }]\n",
    );
    let force_push = pre_tool_use("Bash", serde_json::json!({"command": "git push --force"}));
    let escalated = Stats::of(
        (0..runs)
            .map(|_| {
                spawn_in(
                    SANDRAIL,
                    &force_push,
                    dir,
                    &warm_cache,
                    &escalating_state,
                    &escalating,
                )
                .0
            })
            .collect(),
    );
    // 10,000 idle sessions beside the one in use, in a project of their own: a
    // project keeps the state directory it was first seen with.
    let idle_state = dir.join("idle-state");
    let project = dir.join("idle-project");
    std::fs::create_dir_all(&project).expect("idle project");
    spawn_in(
        SANDRAIL,
        &write_payload,
        dir,
        &warm_cache,
        &idle_state,
        &project,
    );
    let sessions = idle_state.join("sessions");
    let stem = &sandrail::sha256_hex(b"bench-session")[..32];
    let template_db = sessions.join(format!("{stem}.redb"));
    for i in 0..10_000 {
        let idle = &sandrail::sha256_hex(format!("idle-{i}").as_bytes())[..32];
        std::fs::copy(&template_db, sessions.join(format!("{idle}.redb"))).expect("idle db");
        std::fs::write(sessions.join(format!("{idle}.lock")), b"").expect("idle lock");
    }
    let among_idle = Stats::of(
        (0..runs)
            .map(|_| {
                spawn_in(
                    SANDRAIL,
                    &write_payload,
                    dir,
                    &warm_cache,
                    &idle_state,
                    &project,
                )
                .0
            })
            .collect(),
    );
    let marker = sessions.join(".purged");
    let purge_scan = Stats::of(
        (0..5)
            .map(|_| {
                // Make the hourly look through the sessions due again.
                std::fs::File::options()
                    .write(true)
                    .open(&marker)
                    .and_then(|f| f.set_modified(std::time::UNIX_EPOCH))
                    .expect("age the purge marker");
                spawn_in(SANDRAIL, &payload, dir, &warm_cache, &idle_state, &project).0
            })
            .collect(),
    );
    for (name, s) in [
        ("violation counted", &escalated),
        ("Write, 10,000 idle sessions", &among_idle),
        ("hourly purge scan, 10,000", &purge_scan),
    ] {
        row(name, s, &floor);
    }

    // What fact derivation costs: a long, realistic command line, judged by the
    // hook and derived alone by `sandrail facts`; and a contracts guardrail.
    let long_line = format!(
        "git add -A && git commit -m \"$(cat <<'EOF'\nFix the parser (see #12)\n\nDon't rm -rf anything.\nEOF\n)\" && {} && curl -fsS https://example.com/health | jq .status > status.json",
        (0..36)
            .map(|i| format!("FOO={i} timeout 5 bash -c 'grep -r pattern{i} src/ | head -n 5'"))
            .collect::<Vec<_>>()
            .join(" && ")
    );
    let long_payload = pre_tool_use("Bash", serde_json::json!({ "command": long_line }));
    let state = dir.join("state");
    let project = dir.join("project");
    let long_hook = Stats::of(
        (0..runs)
            .map(|_| spawn(SANDRAIL, &long_payload, dir, &warm_cache).0)
            .collect(),
    );
    let facts_only = Stats::of(
        (0..runs)
            .map(|_| {
                spawn_sub(
                    SANDRAIL,
                    "facts",
                    &payload,
                    dir,
                    &warm_cache,
                    &state,
                    &project,
                    None,
                )
                .0
            })
            .collect(),
    );
    let long_facts_only = Stats::of(
        (0..runs)
            .map(|_| {
                spawn_sub(
                    SANDRAIL,
                    "facts",
                    &long_payload,
                    dir,
                    &warm_cache,
                    &state,
                    &project,
                    None,
                )
                .0
            })
            .collect(),
    );
    let contracts = project_with(
        dir,
        &state,
        "contracts",
        "[[guardrail]]\nname = \"contracts\"\nsource = \"builtin:contracts\"\nevents = [\"PreToolUse\"]\n[[guardrail.config.rules]]\nname = \"no-secrets-out\"\nwhen = \"tool.is_egress\"\nrequire = \"!tool.touches_secret\"\n[[guardrail.config.rules]]\nname = \"no-destructive\"\nrequire = \"!tool.is_destructive\"\n",
    );
    let contracts_run = Stats::of(
        (0..runs)
            .map(|_| spawn_in(SANDRAIL, &payload, dir, &warm_cache, &state, &contracts).0)
            .collect(),
    );
    for (name, s) in [
        ("sandrail facts (no guardrail)", &facts_only),
        ("40-command line, hook", &long_hook),
        ("40-command line, facts", &long_facts_only),
        ("contracts, 2 CEL rules", &contracts_run),
    ] {
        row(name, s, &floor);
    }

    // A Stop late in a long session: the transcript is read on from the session's
    // bookmark, so once it has been read its size should cost next to nothing.
    let stop_state = dir.join("stop-state");
    let stop_project = project_with(
        dir,
        &stop_state,
        "stop",
        "[[guardrail]]\nname = \"destructive-commands\"\nsource = \"builtin:destructive-commands\"\nevents = [\"Stop\"]\n",
    );
    let mut stops = Vec::new();
    for mib in [1u64, 100] {
        let long = dir.join(format!("long-{mib}.jsonl"));
        write_long_transcript(&long, mib << 20);
        let stop = serde_json::json!({
            "session_id": format!("stop-{mib}"),
            "transcript_path": long,
            "cwd": dir.join("project"),
            "permission_mode": "default",
            "hook_event_name": "Stop",
            "stop_hook_active": false,
        })
        .to_string();
        let stop_run = || {
            spawn_in(
                SANDRAIL,
                &stop,
                dir,
                &warm_cache,
                &stop_state,
                &stop_project,
            )
            .0
        };
        // The first reads: at most 64 MiB per event.
        for _ in 0..3 {
            stop_run();
        }
        stops.push(Stats::of((0..runs).map(|_| stop_run()).collect()));
    }
    row("Stop, 1 MiB transcript", &stops[0], &floor);
    row("Stop, 100 MiB transcript", &stops[1], &floor);

    // A cycle kept: each finished Write is hashed and goes into the span, and a
    // context observes it (the bundled pair, as the README configures it).
    let cycle_state = dir.join("cycle-state");
    let cycle_project = project_with(
        dir,
        &cycle_state,
        "cycle",
        "[[guardrail]]\nname = \"tag-declared\"\nsource = \"builtin:tag-declared\"\nkind = \"context\"\nevents = [\"PostToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\ntag = \"research\"\n[[guardrail]]\nname = \"verify-artifact-produced\"\nsource = \"builtin:verify-artifact-produced\"\nevents = [\"Stop\"]\nrequires = [\"tag-declared\"]\n[guardrail.config]\nartifact_glob = \"reports/*.md\"\n",
    );
    let written = cycle_project.join("notes.md");
    std::fs::write(&written, "# Notes\n").expect("write notes");
    let post_write = serde_json::json!({
        "session_id": "cycle",
        "transcript_path": dir.join("long-1.jsonl"),
        "cwd": cycle_project,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": written, "content": "# Notes\n"},
        "tool_response": {"success": true},
    })
    .to_string();
    let cycle_run = Stats::of(
        (0..runs)
            .map(|_| {
                spawn_in(
                    SANDRAIL,
                    &post_write,
                    dir,
                    &warm_cache,
                    &cycle_state,
                    &cycle_project,
                )
                .0
            })
            .collect(),
    );
    row("PostToolUse Write, context", &cycle_run, &floor);

    let padded_command = format!("{}git push --force", "true | ".repeat((2 << 20) / 7));
    let padded_payload = pre_tool_use("Bash", serde_json::json!({ "command": padded_command }));
    let padded = Stats::of(
        (0..5)
            .map(|_| spawn(SANDRAIL, &padded_payload, dir, &warm_cache).0)
            .collect(),
    );
    row("2 MiB padded force push", &padded, &floor);
    println!();
    println!(
        "targets: warm median <= 3 ms (is {}), warm <= 5x the floor (is {:.2}x)",
        ms(warm.median),
        warm.median.as_secs_f64() / floor.median.as_secs_f64()
    );
    println!(
        "         a Stop with a 100 MiB transcript within 1 ms of 1 MiB, once read (is {:+.2} ms)",
        (stops[1].median.as_secs_f64() - stops[0].median.as_secs_f64()) * 1000.0
    );

    gate(
        &[
            ("sandrail hook, warm cache", &warm, 8.0),
            ("serve: POST Bash, client in", &served, 4.0),
            ("hook forwarding to serve", &forwarded, 10.0),
            ("sandrail-hook forwarding", &forwarded_small, 10.0),
            ("serve: POST Write, committed", &served_write, 10.0),
            ("sandrail-hook Write, served", &forwarded_write, 16.0),
            ("sandrail-hook, client alone", &client_alone, 3.0),
        ],
        &floor,
    );

    guardrail_counts(dir, &warm_cache, &payload, &floor, runs);
    reference_hook(dir, &warm_cache, &payload, &floor, runs);
    component_costs(dir, &write_payload, &floor, runs);
    let (eight_clients, one_client) = serve_clients(dir, &warm_cache, &payload, runs);

    println!();
    println!("parallel hooks, all started at once (PreToolUse Write, session-budget limit 60)");
    println!();
    println!(
        "{:<30} {:>9} {:>8} {:>8} {:>9} {:>11} {:>11} {:>9}",
        "case", "wall", "allowed", "refused", "timeouts", "wait p50", "wait max", "stored"
    );
    let budget = "[[guardrail]]\nname = \"session-budget\"\nsource = \"builtin:session-budget\"\nevents = [\"PreToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\nlimit = 60\n";
    for (name, sessions) in [("200 on one session", 1), ("200 over 20 sessions", 20)] {
        for round in 0..3 {
            // A project per round: each starts from no state.
            let state = dir.join(format!("parallel-state-{sessions}-{round}"));
            let project =
                project_with(dir, &state, &format!("parallel-{sessions}-{round}"), budget);
            let payloads: Vec<String> = (0..200)
                .map(|i| {
                    let mut p: serde_json::Value =
                        serde_json::from_str(&write_payload).expect("payload");
                    p["session_id"] = format!("parallel-{}", i % sessions).into();
                    p.to_string()
                })
                .collect();
            let result = parallel(&payloads, &project, &state, &warm_cache);
            println!(
                "{:<30} {:>9} {:>8} {:>8} {:>9} {:>11} {:>11} {:>9}",
                format!("{name} (round {})", round + 1),
                ms(result.wall),
                result.allowed,
                result.refused,
                result.timeouts,
                ms(result.waits.median),
                ms(result.waits.max),
                result.stored.join(",")
            );
        }
    }
    let state = dir.join("served-parallel-state");
    let project = project_with(dir, &state, "served-parallel", budget);
    let served_allowed = served_parallel(dir, &warm_cache, &project, &state, &write_payload);

    let ratio = |s: &Stats| s.median.as_secs_f64() / floor.median.as_secs_f64();
    let served_ms = served.median.as_secs_f64() * 1000.0;
    println!();
    println!("the fast path: each figure of this run beside its target");
    println!();
    println!("{:<40} {:>14} {:>14}  ", "figure", "target", "this run");
    let back_to_back_ms = one_client.as_secs_f64() * 1000.0;
    let targets: [(&str, String, String, bool); 7] = [
        (
            "served event, median, client in",
            "<= 0.50 ms".into(),
            format!("{served_ms:.2} ms"),
            served_ms <= 0.5,
        ),
        (
            "the same, back to back (1 client)",
            "<= 0.50 ms".into(),
            format!("{back_to_back_ms:.2} ms"),
            back_to_back_ms <= 0.5,
        ),
        (
            "sandrail-hook, client alone / floor",
            "<= 1.30x".into(),
            format!("{:.2}x", ratio(&client_alone)),
            ratio(&client_alone) <= 1.3,
        ),
        (
            "sandrail-hook forwarding Bash / floor",
            "<= 2.00x".into(),
            format!("{:.2}x", ratio(&forwarded_small)),
            ratio(&forwarded_small) <= 2.0,
        ),
        (
            "sandrail-hook Write + commit / floor",
            "<= 3.00x".into(),
            format!("{:.2}x", ratio(&forwarded_write)),
            ratio(&forwarded_write) <= 3.0,
        ),
        (
            "8 clients, events/s",
            ">= 2000".into(),
            format!("{eight_clients:.0}"),
            eight_clients >= 2000.0,
        ),
        (
            "200 POSTs on one session, limit 60",
            "60 allowed".into(),
            format!("{served_allowed} allowed"),
            served_allowed == 60,
        ),
    ];
    for (figure, target, is, met) in &targets {
        println!(
            "{figure:<40} {target:>14} {is:>14}  {}",
            if *met { "met" } else { "not yet" }
        );
    }
    if std::env::var_os("SANDRAIL_BENCH_GATE").is_some_and(|v| v == "1") && served_allowed != 60 {
        eprintln!(
            "regression: 200 requests at once on one session allowed {served_allowed}, not 60"
        );
        std::process::exit(1);
    }
}

/// A forwarding hook that takes this benchmark for its server: a copy of
/// `sandrail-hook` in `dir` beside a hard link to this very executable named
/// `sandrail`, which is what a server of this user must run.
fn stub_forwarder() -> PathBuf {
    let this = std::fs::read_link("/proc/self/exe").expect("this benchmark's executable");
    // A hard link needs the same file system: beside the build's own files.
    let stub_dir = this
        .parent()
        .expect("the benchmark's directory")
        .join(format!("stub-forwarder-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&stub_dir);
    std::fs::create_dir_all(&stub_dir).expect("the stub's directory");
    std::fs::hard_link(&this, stub_dir.join("sandrail")).expect("link this executable");
    let forwarder = stub_dir.join("sandrail-hook");
    std::fs::copy(SANDRAIL_HOOK, &forwarder).expect("copy sandrail-hook");
    forwarder
}

/// Listens on `path` and answers every request at once with an empty 200, as
/// a server with nothing to judge would: what a forwarding hook costs alone.
fn answer_at_once(path: &Path) {
    use std::io::Read;
    let listener = std::os::unix::net::UnixListener::bind(path).expect("bind the stub socket");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = Vec::new();
            let mut buf = [0u8; 8192];
            // The head, then as many bytes as it says the body has.
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
}

/// Fails the run when a ratio to the floor is past its bound: a large
/// regression, not noise (the bounds are several times today's figures).
fn gate(bounds: &[(&str, &Stats, f64)], floor: &Stats) {
    if std::env::var_os("SANDRAIL_BENCH_GATE").is_none_or(|v| v != "1") {
        return;
    }
    let mut failed = false;
    for (name, stats, bound) in bounds {
        let ratio = stats.median.as_secs_f64() / floor.median.as_secs_f64();
        if ratio > *bound {
            eprintln!("regression: {name} is {ratio:.2}x the floor, past the bound of {bound}x");
            failed = true;
        }
    }
    if failed {
        std::process::exit(1);
    }
    println!("regression gate: every ratio within its bound");
}

/// A config of `matching` guardrails that judge Bash and `idle` that judge
/// only Write: the cost should follow the first number, not the second.
fn many_guardrails(matching: usize, idle: usize) -> String {
    let entry = |i: usize, matcher: &str| {
        format!(
            "[[guardrail]]\nname = \"git-{i}\"\nsource = \"builtin:no-destructive-git\"\nevents = [\"PreToolUse\"]\nmatcher = \"{matcher}\"\n"
        )
    };
    (0..matching)
        .map(|i| entry(i, "Bash"))
        .chain((matching..matching + idle).map(|i| entry(i, "Write")))
        .collect()
}

/// The hook and the server with 1, 8 and 32 guardrails that match the call,
/// and with 1 of 32 that does.
fn guardrail_counts(dir: &Path, cache: &Path, payload: &str, floor: &Stats, runs: usize) {
    println!();
    println!("guardrails per event (PreToolUse Bash, no-destructive-git each)");
    println!();
    let state = dir.join("counts-state");
    let server = Server::start(dir, cache, &dir.join("counts-serve-state"));
    for (name, matching, idle) in [
        ("1 guardrail", 1, 0),
        ("8 guardrails", 8, 0),
        ("32 guardrails", 32, 0),
        ("1 of 32 matching", 1, 31),
    ] {
        let project = project_with(
            dir,
            &state,
            &format!("counts-{matching}-{idle}"),
            &many_guardrails(matching, idle),
        );
        // A session of its own: a session keeps the policy it started with.
        let mut mine: serde_json::Value = serde_json::from_str(payload).expect("payload");
        mine["session_id"] = format!("counts-{matching}-{idle}").into();
        let payload = &mine.to_string();
        // Compiled once, before anything is timed.
        spawn_in(SANDRAIL, payload, dir, cache, &state, &project);
        server.post_in(&project, payload);
        let mut hook = Vec::with_capacity(runs);
        let mut served = Vec::with_capacity(runs);
        for _ in 0..runs {
            hook.push(spawn_in(SANDRAIL, payload, dir, cache, &state, &project).0);
            served.push(server.post_in(&project, payload));
        }
        row(&format!("hook, {name}"), &Stats::of(hook), floor);
        row(&format!("serve, {name}"), &Stats::of(served), floor);
    }
}

/// What a component's size costs: for each `name=path` in
/// `SANDRAIL_BENCH_COMPONENTS` (a guardrail built from examples/, say), its size,
/// its first event (compiling it into a fresh cache) and a warm event through
/// the hook and through the server, on a Write it lets pass.
fn component_costs(dir: &Path, payload: &str, floor: &Stats, runs: usize) {
    let Ok(list) = std::env::var("SANDRAIL_BENCH_COMPONENTS") else {
        return;
    };
    println!();
    println!("components by size (PreToolUse Write, one guardrail; SANDRAIL_BENCH_COMPONENTS)");
    println!();
    let runs = runs.min(60);
    let cache = dir.join("components-cache");
    let state = dir.join("components-state");
    let server = Server::start(dir, &cache, &dir.join("components-serve-state"));
    for item in list.split(',').filter(|i| !i.is_empty()) {
        let (name, path) = item
            .split_once('=')
            .expect("SANDRAIL_BENCH_COMPONENTS: name=path,…");
        let path = std::fs::canonicalize(path).expect("component path");
        let size = std::fs::metadata(&path).expect("component").len();
        let project = project_with(
            dir,
            &state,
            &format!("component-{name}"),
            &format!(
                "[[guardrail]]\nname = \"{name}\"\nsource = {:?}\nevents = [\"PreToolUse\"]\n",
                path.display().to_string()
            ),
        );
        let mut mine: serde_json::Value = serde_json::from_str(payload).expect("payload");
        mine["session_id"] = format!("component-{name}").into();
        let payload = &mine.to_string();
        let mut cold = Vec::new();
        for i in 0..3 {
            let fresh = dir.join(format!("components-cold-{name}-{i}"));
            let (took, ok) = spawn_in(SANDRAIL, payload, dir, &fresh, &state, &project);
            assert!(ok, "{name}: the hook failed");
            cold.push(took);
            let _ = std::fs::remove_dir_all(&fresh);
        }
        spawn_in(SANDRAIL, payload, dir, &cache, &state, &project);
        server.post_in(&project, payload);
        let mut hook = Vec::with_capacity(runs);
        let mut served = Vec::with_capacity(runs);
        for _ in 0..runs {
            hook.push(spawn_in(SANDRAIL, payload, dir, &cache, &state, &project).0);
            served.push(server.post_in(&project, payload));
        }
        println!("{name}: {:.1} MB", size as f64 / 1e6);
        row(&format!("{name}, first event"), &Stats::of(cold), floor);
        row(&format!("{name}, hook warm"), &Stats::of(hook), floor);
        row(&format!("{name}, served"), &Stats::of(served), floor);
    }
}

/// The same rule as a bash + jq hook, in dotforge's style
/// (benches/reference/no-force-push.sh): what a script hook costs.
fn reference_hook(dir: &Path, cache: &Path, payload: &str, floor: &Stats, runs: usize) {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/reference/no-force-push.sh"
    );
    let jq = Command::new("jq").arg("--version").output();
    if !jq.is_ok_and(|o| o.status.success()) {
        println!("bash + jq reference hook: skipped (jq is not installed)");
        return;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (took, ok) = spawn(script, payload, dir, cache);
        assert!(ok, "the reference hook failed");
        times.push(took);
    }
    row("bash + jq hook, same rule", &Stats::of(times), floor);
}

/// Requests per second through one server with 1 and 8 clients, each on a
/// session of its own, a fresh connection per request; the rate with 8.
/// The requests per second of 8 clients, and one client's median request.
fn serve_clients(dir: &Path, cache: &Path, payload: &str, runs: usize) -> (f64, Duration) {
    println!();
    println!("serve under load (PreToolUse Bash, embedded default, a connection per request)");
    println!();
    println!(
        "{:<28} {:>12} {:>10} {:>10}",
        "clients", "requests/s", "median", "p99"
    );
    let server = Server::start(dir, cache, &dir.join("clients-serve-state"));
    server.post(payload);
    let mut rate = 0.0;
    let mut alone = Duration::ZERO;
    for clients in [1usize, 8] {
        let per_client = (runs * 2 / clients).max(20);
        let started = Instant::now();
        let times: Vec<Duration> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..clients)
                .map(|c| {
                    let server = &server;
                    let mut mine: serde_json::Value =
                        serde_json::from_str(payload).expect("payload");
                    mine["session_id"] = format!("client-{c}").into();
                    let mine = mine.to_string();
                    scope.spawn(move || {
                        (0..per_client)
                            .map(|_| server.post(&mine))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("client"))
                .collect()
        });
        let wall = started.elapsed();
        let count = times.len();
        let stats = Stats::of(times);
        rate = count as f64 / wall.as_secs_f64();
        if clients == 1 {
            alone = stats.median;
        }
        println!(
            "{:<28} {:>12.0} {:>10} {:>10}",
            clients,
            rate,
            ms(stats.median),
            ms(stats.p99)
        );
    }
    (rate, alone)
}

/// 200 requests at once to one server, all on one session: the same limit
/// must hold as for 200 hook processes.
fn served_parallel(
    dir: &Path,
    cache: &Path,
    project: &Path,
    state: &Path,
    write_payload: &str,
) -> usize {
    let mut server = Server::start(dir, cache, state);
    server.project = project.to_path_buf();
    let mut p: serde_json::Value = serde_json::from_str(write_payload).expect("payload");
    p["session_id"] = "served-parallel".into();
    let payload = p.to_string();
    let started = Instant::now();
    let answers: Vec<(Duration, Vec<u8>)> = std::thread::scope(|scope| {
        let requests: Vec<_> = (0..200)
            .map(|_| scope.spawn(|| server.exchange(&server.project, &payload)))
            .collect();
        requests
            .into_iter()
            .map(|r| r.join().expect("request"))
            .collect()
    });
    let wall = started.elapsed();
    let refused = answers
        .iter()
        .filter(|(_, a)| String::from_utf8_lossy(a).contains("\"deny\""))
        .count();
    let stats = Stats::of(answers.into_iter().map(|(t, _)| t).collect());
    println!(
        "{:<30} {:>9} {:>8} {:>8} {:>9} {:>11} {:>11}",
        "200 POSTs on one session, serve",
        ms(wall),
        200 - refused,
        refused,
        "-",
        ms(stats.median),
        ms(stats.p99),
    );
    200 - refused
}

/// What a batch of parallel hooks did.
struct Parallel {
    wall: Duration,
    allowed: usize,
    refused: usize,
    timeouts: usize,
    waits: Waits,
    /// The edit count each session stored, distinct values.
    stored: Vec<String>,
}

struct Waits {
    median: Duration,
    max: Duration,
}

/// Where the benchmark's hooks log receipts.
static SYSLOG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// Binds a datagram socket at `path` and reads it on a thread of its own.
fn listen_as_syslog(path: &Path) -> std::os::unix::net::UnixDatagram {
    let socket = std::os::unix::net::UnixDatagram::bind(path).expect("bind the syslog socket");
    let reader = socket.try_clone().expect("clone the syslog socket");
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 20];
        while reader.recv(&mut buf).is_ok() {}
    });
    let _ = SYSLOG.set(path.to_path_buf());
    socket
}

/// The syslog socket for a hook's environment.
fn syslog() -> &'static Path {
    SYSLOG.get().map_or(Path::new("/dev/log"), |p| p.as_path())
}

/// Starts one hook per payload, all at once, in `project` with state in `state`.
fn parallel(payloads: &[String], project: &Path, state: &Path, cache: &Path) -> Parallel {
    let started = Instant::now();
    let children: Vec<_> = payloads
        .iter()
        .map(|_| {
            Command::new(SANDRAIL)
                .arg("hook")
                .current_dir(project)
                .env("SANDRAIL_STATE_DIR", state)
                .env("SANDRAIL_CACHE_DIR", cache)
                .env("CLAUDE_PROJECT_DIR", project)
                .env("SANDRAIL_LOG", "debug")
                .env("SANDRAIL_SYSLOG_SOCKET", syslog())
                .env_remove("SANDRAIL_CONFIG")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .zip(payloads)
        .map(|(mut child, payload)| {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(payload.as_bytes());
            }
            child.wait_with_output().expect("wait")
        })
        .collect();
    let wall = started.elapsed();
    let mut waits = Vec::new();
    let (mut allowed, mut refused, mut timeouts) = (0, 0, 0);
    for output in &outputs {
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("lock timeout") {
            timeouts += 1;
        }
        for line in stderr.lines() {
            if let Some(rest) = line.strip_prefix("sandrail: waited ")
                && let Some(value) = rest.split(' ').next().and_then(|v| v.parse::<f64>().ok())
            {
                waits.push(Duration::from_secs_f64(value / 1000.0));
            }
        }
        if output.stdout.is_empty() {
            allowed += 1;
        } else {
            refused += 1;
        }
    }
    waits.sort_unstable();
    let waits = Waits {
        median: waits.get(waits.len() / 2).copied().unwrap_or_default(),
        max: waits.last().copied().unwrap_or_default(),
    };
    let mut sessions: Vec<String> = payloads
        .iter()
        .filter_map(|p| {
            let p: serde_json::Value = serde_json::from_str(p).ok()?;
            Some(p["session_id"].as_str()?.to_owned())
        })
        .collect();
    sessions.sort();
    sessions.dedup();
    let mut stored: Vec<String> = sessions
        .iter()
        .map(|session| {
            let out = Command::new(SANDRAIL)
                .args([
                    "state",
                    "get",
                    "edits",
                    "--session",
                    session,
                    "--guardrail",
                    "session-budget",
                ])
                .current_dir(project)
                .env("SANDRAIL_STATE_DIR", state)
                .env("CLAUDE_PROJECT_DIR", project)
                .output()
                .expect("state get");
            String::from_utf8_lossy(&out.stdout).trim().to_owned()
        })
        .collect();
    stored.sort();
    stored.dedup();
    Parallel {
        wall,
        allowed,
        refused,
        timeouts,
        waits,
        stored,
    }
}

/// A project directory `name` in `dir` holding `config` as its sandrail.toml,
/// accepted as a person accepts it (`sandrail trust` at a terminal) with `state`
/// as its state directory: a config that loosens the embedded default is
/// otherwise held, and the default judged in its place.
fn project_with(dir: &Path, state: &Path, name: &str, config: &str) -> std::path::PathBuf {
    let project = dir.join(name);
    std::fs::create_dir_all(&project).expect("project dir");
    std::fs::write(project.join("sandrail.toml"), config).expect("project config");
    trust_at_terminal(&project, state);
    project
}

/// `sandrail trust` on a pseudo-terminal (util-linux's `script` makes one),
/// typing the code its prompt shows.
fn trust_at_terminal(project: &Path, state: &Path) {
    use std::io::Read;
    let mut child = Command::new("script")
        .args([
            "-q",
            "-e",
            "-c",
            &format!("'{SANDRAIL}' trust"),
            "/dev/null",
        ])
        .current_dir(project)
        .env("SANDRAIL_STATE_DIR", state)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("SANDRAIL_SYSLOG_SOCKET", syslog())
        .env_remove("SANDRAIL_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn script (util-linux)");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut printed = Vec::new();
    let mut byte = [0u8; 1];
    while !String::from_utf8_lossy(&printed).contains(" to confirm: ") {
        match stdout.read(&mut byte) {
            Ok(1) => printed.push(byte[0]),
            _ => panic!(
                "sandrail trust showed no prompt: {}",
                String::from_utf8_lossy(&printed)
            ),
        }
    }
    let text = String::from_utf8_lossy(&printed).into_owned();
    let before = &text[..text.rfind(" to confirm: ").expect("prompt")];
    let code = before.rsplit(' ').next().unwrap_or_default();
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(format!("{code}\n").as_bytes())
        .expect("type the code");
    let mut rest = String::new();
    let _ = stdout.read_to_string(&mut rest);
    let status = child.wait().expect("wait for trust");
    assert!(
        status.success(),
        "sandrail trust failed in {}: {text}{rest}",
        project.display()
    );
}

/// Removes, when dropped, the bindings of the projects in `dir` to their state
/// directories: they live under the account's home, where no variable moves
/// them, and the benchmark leaves none behind.
struct Bindings<'a>(&'a Path);

impl Drop for Bindings<'_> {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.0) else {
            return;
        };
        for entry in entries.flatten() {
            if let Some(record) = sandrail::locations::binding::record_of(&entry.path()) {
                let _ = std::fs::remove_file(record);
            }
        }
    }
}

/// One line of the latency table.
fn row(name: &str, s: &Stats, floor: &Stats) {
    println!(
        "{:<28} {:>10} {:>10} {:>10} {:>11.2}x",
        name,
        ms(s.median),
        ms(s.p99),
        ms(s.min),
        s.median.as_secs_f64() / floor.median.as_secs_f64()
    );
}

/// Runs one process with the payload on stdin; the wall time and whether it succeeded.
fn spawn(program: &str, payload: &str, dir: &Path, cache: &Path) -> (Duration, bool) {
    spawn_in(
        program,
        payload,
        dir,
        cache,
        &dir.join("state"),
        &dir.join("project"),
    )
}

/// `sandrail serve` on a loopback port, stopped when dropped.
struct Server {
    child: std::process::Child,
    addr: String,
    project: std::path::PathBuf,
}

impl Server {
    fn start(dir: &Path, cache: &Path, state: &Path) -> Server {
        let mut child = Command::new(SANDRAIL)
            .args(["serve", "--listen", "127.0.0.1:0", "--socket"])
            .arg(dir.join("serve.sock"))
            .current_dir(dir)
            .env("SANDRAIL_STATE_DIR", state)
            .env("SANDRAIL_CACHE_DIR", cache)
            .env("SANDRAIL_SYSLOG_SOCKET", syslog())
            .env_remove("SANDRAIL_CONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start sandrail serve");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
            &mut line,
        )
        .expect("the serving line");
        let addr = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .expect("an address")
            .to_owned();
        Server {
            child,
            addr,
            project: dir.join("project"),
        }
    }

    /// One request on a fresh connection, timed from connecting to the answer's end.
    fn post(&self, payload: &str) -> Duration {
        self.post_in(&self.project, payload)
    }

    /// [`Server::post`], for `project`.
    fn post_in(&self, project: &Path, payload: &str) -> Duration {
        self.exchange(project, payload).0
    }

    /// The time and the whole answer.
    fn exchange(&self, project: &Path, payload: &str) -> (Duration, Vec<u8>) {
        use std::io::Read;
        let started = Instant::now();
        let mut stream = std::net::TcpStream::connect(&self.addr).expect("connect");
        let head = format!(
            "POST / HTTP/1.1\r\nHost: sandrail\r\nContent-Type: application/json\r\nContent-Length: {}\r\nX-Sandrail-Project-Dir: {}\r\nConnection: close\r\n\r\n",
            payload.len(),
            project.display()
        );
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(payload.as_bytes()))
            .expect("send");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("answer");
        let took = started.elapsed();
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "sandrail serve did not answer 200"
        );
        (took, answer)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

/// Runs one process with its own state directory and project.
fn spawn_in(
    program: &str,
    payload: &str,
    dir: &Path,
    cache: &Path,
    state: &Path,
    project: &Path,
) -> (Duration, bool) {
    spawn_sub(program, "hook", payload, dir, cache, state, project, None)
}

/// Runs `program SUBCOMMAND` (the subcommand only for sandrail), forwarding to
/// the server on `socket` when given.
#[allow(clippy::too_many_arguments)]
fn spawn_sub(
    program: &str,
    subcommand: &str,
    payload: &str,
    dir: &Path,
    cache: &Path,
    state: &Path,
    project: &Path,
    socket: Option<&Path>,
) -> (Duration, bool) {
    let started = Instant::now();
    let mut child = Command::new(program);
    if program == SANDRAIL {
        child.arg(subcommand);
    }
    match socket {
        Some(socket) => child.env("SANDRAIL_SERVE_SOCKET", socket),
        None => child.env_remove("SANDRAIL_SERVE_SOCKET"),
    };
    let mut child = child
        .current_dir(dir)
        .env("SANDRAIL_STATE_DIR", state)
        .env("SANDRAIL_CACHE_DIR", cache)
        .env("CLAUDE_PROJECT_DIR", project)
        .env("SANDRAIL_SYSLOG_SOCKET", syslog())
        .env_remove("SANDRAIL_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        // /bin/true may exit before reading; that is part of its floor.
        let _ = stdin.write_all(payload.as_bytes());
    }
    let ok = child.wait().map(|s| s.success()).unwrap_or(false);
    (started.elapsed(), ok)
}

/// A short but real-shaped transcript: a few turns with tool calls and results.
fn write_transcript(path: &Path) {
    let lines: String = (0..5).map(transcript_turn).collect();
    std::fs::write(path, lines).expect("write transcript");
}

/// A transcript of about `bytes`: the same turns, repeated.
fn write_long_transcript(path: &Path, bytes: u64) {
    let mut text = String::with_capacity(bytes as usize + 4096);
    let mut turn = 0;
    while (text.len() as u64) < bytes {
        text.push_str(&transcript_turn(turn));
        turn += 1;
    }
    std::fs::write(path, text).expect("write transcript");
}

/// One turn's lines: a user message, then four tool calls with their results.
fn transcript_turn(turn: usize) -> String {
    let mut lines = format!(
        "{{\"type\":\"user\",\"uuid\":\"u-{turn}\",\"sessionId\":\"bench-session\",\"message\":{{\"role\":\"user\",\"content\":\"step {turn}\"}}}}\n"
    );
    for call in 0..4 {
        lines.push_str(&format!(
            "{{\"type\":\"assistant\",\"uuid\":\"a-{turn}-{call}\",\"message\":{{\"id\":\"m-{turn}\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"t-{turn}-{call}\",\"name\":\"Bash\",\"input\":{{\"command\":\"cargo check\"}}}}]}}}}\n\
             {{\"type\":\"user\",\"uuid\":\"r-{turn}-{call}\",\"message\":{{\"role\":\"user\",\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t-{turn}-{call}\",\"content\":\"ok\"}}]}}}}\n"
        ));
    }
    lines
}

struct Stats {
    median: Duration,
    p99: Duration,
    min: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        samples.sort_unstable();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Stats {
            median: at(0.5),
            p99: at(0.99),
            min: samples[0],
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
