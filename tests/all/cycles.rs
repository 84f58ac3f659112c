//! Cycles: contexts that record, Stop gates that judge the span since the read
//! mark, content-keyed file changes and the Stop-refusal cap — through the bundled
//! pair (tag-declared, verify-artifact-produced) and the test context.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::*;

const CONTEXT_PROBE: &str = env!("SANDRAIL_TEST_GUARDRAIL_CONTEXT_PROBE");
const CYCLE_PROBE: &str = env!("SANDRAIL_TEST_GUARDRAIL_CYCLE_PROBE");

/// The config for the bundled pair, as docs/cycles.md shows it.
const PAIR: &str = r#"
[[guardrail]]
name = "tag-declared"
source = "builtin:tag-declared"
kind = "context"
events = ["PostToolUse"]
matcher = "Write|Edit|MultiEdit"
[guardrail.config]
tag = "research"

[[guardrail]]
name = "verify-artifact-produced"
source = "builtin:verify-artifact-produced"
events = ["Stop"]
requires = ["tag-declared"]
[guardrail.config]
artifact_glob = "reports/*.md"
"#;

/// An agent working in a project: a transcript that grows turn by turn, files
/// written on disk and reported as Claude Code reports them.
struct Agent<'a> {
    project: &'a Project,
    session: String,
    transcript: PathBuf,
    turns: u32,
}

impl<'a> Agent<'a> {
    fn new(project: &'a Project, session: &str) -> Self {
        let transcript = project.dir().join(format!("{session}.jsonl"));
        std::fs::write(&transcript, "").expect("transcript");
        Agent {
            project,
            session: session.to_owned(),
            transcript,
            turns: 0,
        }
    }

    /// A real user message, then the assistant's answer and a tool result: the
    /// next turn.
    fn user(&mut self, text: &str) {
        self.turns += 1;
        let n = self.turns;
        let lines = [
            json!({"type": "user", "uuid": format!("u-{n}"), "sessionId": self.session, "message": {"role": "user", "content": text}}),
            json!({"type": "assistant", "uuid": format!("a-{n}"), "message": {"id": format!("m-{n}"), "content": [{"type": "tool_use", "id": format!("toolu_{n}"), "name": "Write", "input": {}}]}}),
            json!({"type": "user", "uuid": format!("r-{n}"), "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{n}"), "content": "ok"}]}}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut existing = std::fs::read_to_string(&self.transcript).expect("read");
        existing.push_str(&text);
        std::fs::write(&self.transcript, existing).expect("append");
    }

    fn base(&self, event: &str, extra: Value) -> Vec<u8> {
        let mut fields = json!({
            "transcript_path": self.transcript,
            "cwd": self.project.dir(),
        });
        if let (Some(fields), Some(extra)) = (fields.as_object_mut(), extra.as_object()) {
            fields.extend(extra.clone());
        }
        payload(event, &self.session, fields)
    }

    /// The Write tool ran: the file is on disk, and PostToolUse reports it.
    fn wrote(&self, relative: &str, content: &str) -> Run {
        let path = self.project.dir().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(&path, content).expect("write");
        self.project.hook(&self.base(
            "PostToolUse",
            json!({
                "tool_name": "Write",
                "tool_input": {"file_path": path, "content": content},
                "tool_response": {"filePath": path, "success": true},
                "tool_use_id": "toolu_w",
            }),
        ))
    }

    /// A Bash call that ran (PostToolUse); `effect` does on disk what it did.
    fn ran(&self, command: &str, effect: impl FnOnce(&std::path::Path)) -> Run {
        effect(&self.project.dir());
        self.project.hook(&self.base(
            "PostToolUse",
            json!({
                "tool_name": "Bash",
                "tool_input": {"command": command, "description": "Run a command"},
                "tool_response": {"stdout": "", "stderr": "", "interrupted": false},
                "tool_use_id": "toolu_b",
            }),
        ))
    }

    /// A Bash call about to run (PreToolUse).
    fn bash(&self, command: &str) -> Run {
        let mut payload: Value =
            serde_json::from_slice(&bash_in_turn(&self.session, command, &self.transcript))
                .expect("json");
        payload["cwd"] = json!(self.project.dir());
        self.project
            .hook(&serde_json::to_vec(&payload).expect("json"))
    }

    /// The agent finishes its answer (a line in the transcript, as the harness
    /// writes it) and the harness sends a Stop.
    fn stop(&self, stop_hook_active: bool) -> Run {
        let mut existing = std::fs::read_to_string(&self.transcript).unwrap_or_default();
        let n = existing.len();
        let line = json!({"type": "assistant", "uuid": format!("s-{n}"), "message": {"id": format!("ms-{n}"), "content": [{"type": "text", "text": "Done."}]}});
        existing.push_str(&format!("{line}\n"));
        std::fs::write(&self.transcript, existing).expect("append");
        self.forged_stop(stop_hook_active)
    }

    /// A Stop sent without the agent having said anything since: what `sandrail
    /// hook` run by the agent itself, from within one tool call, looks like.
    fn forged_stop(&self, stop_hook_active: bool) -> Run {
        self.project
            .hook(&self.base("Stop", json!({"stop_hook_active": stop_hook_active})))
    }

    /// `sandrail cycle --json` for this session.
    fn cycle(&self) -> Value {
        let run = self
            .project
            .run(&["cycle", "--session", &self.session, "--json"]);
        assert!(run.ok(), "{}", run.stderr());
        serde_json::from_str(&run.stdout()).expect("json")
    }
}

/// The reason a Stop was refused with, if it was.
fn refused(run: &Run) -> Option<String> {
    assert_eq!(run.code(), Some(0), "stderr: {}", run.stderr());
    if run.stdout().trim().is_empty() {
        return None;
    }
    let answer = run.answer();
    (answer["decision"] == "block").then(|| answer["reason"].as_str().unwrap_or("").to_owned())
}

/// What the probe gate reported the cycle showed it.
fn seen(run: &Run) -> Value {
    let context = run.context();
    let json = context
        .strip_prefix("[watcher] ")
        .unwrap_or_else(|| panic!("the watcher's note: {context}"));
    serde_json::from_str(json).expect("json")
}

/// The last receipt's verdict for `guardrail`.
fn last_verdict(project: &Project, guardrail: &str) -> String {
    let text =
        std::fs::read_to_string(project.state_dir().join("receipts.jsonl")).expect("receipts");
    let last: Value = serde_json::from_str(text.lines().last().expect("a receipt")).expect("json");
    last["guardrails"]
        .as_array()
        .and_then(|runs| runs.iter().find(|r| r["name"] == guardrail))
        .map(|r| r["verdict"].as_str().unwrap_or("").to_owned())
        .unwrap_or_else(|| "absent".to_owned())
}

const TAGGED: &str = "# Plan\n\n<!-- sandrail:tag research -->\nRead the papers.\n";

#[test]
fn refuse_then_fix_then_accept_and_a_quiet_stop_runs_no_check() {
    let project = Project::new();
    project.config(PAIR);
    let mut agent = Agent::new(&project, "cycle-fix");
    agent.user("research the cache design");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();

    // The claim with no artifact: refused, and the mark stays.
    let reason = refused(&agent.stop(false)).expect("refused");
    assert!(
        reason.contains("[verify-artifact-produced/artifact-missing]"),
        "{reason}"
    );
    assert!(
        reason.contains("reports/*.md") && reason.contains("'research'"),
        "{reason}"
    );
    let cycle = agent.cycle();
    assert_eq!(cycle["mark"], 0, "{cycle}");
    assert_eq!(cycle["span"].as_array().map(Vec::len), Some(1), "{cycle}");
    assert_eq!(cycle["refused"]["count"], 1, "{cycle}");
    let shown = project.run(&["cycle", "--session", "cycle-fix"]).stdout();
    for line in [
        "read mark 0 of 2 recorded; 1 event(s) in the span",
        "1 Stop(s) refused in a row (turn 1:u-1)",
        "context tag-declared: active, entered this cycle (turn 1:u-1), payload {\"tag\":\"research\"",
        "PostToolUse Write  turn 1:u-1",
        "changed notes/plan.md (",
    ] {
        assert!(shown.contains(line), "missing {line:?} in {shown}");
    }

    // Stopping again without a fix re-judges the same span: refused again.
    assert!(refused(&agent.stop(true)).is_some());

    // An artifact elsewhere is no artifact.
    agent.wrote("drafts/r.md", "# Draft\n").assert_silent();
    assert!(refused(&agent.stop(true)).is_some());

    // The fix: the whole span is judged again, and accepted; the mark moves past it.
    agent
        .wrote("reports/cache.md", "# Findings\n")
        .assert_silent();
    assert_eq!(refused(&agent.stop(true)), None);
    let cycle = agent.cycle();
    assert_eq!(cycle["mark"], cycle["seq"], "{cycle}");
    assert_eq!(cycle["span"], json!([]), "{cycle}");
    assert_eq!(cycle["refused"]["count"], 0, "{cycle}");
    assert_eq!(
        cycle["contexts"][0][1]["active"], false,
        "the context left: {cycle}"
    );
    assert_eq!(last_verdict(&project, "tag-declared"), "leave");

    // A Stop with nothing new runs no check.
    agent.stop(false).assert_silent();
    assert_eq!(last_verdict(&project, "verify-artifact-produced"), "held");

    // Later work is judged alone: an unrelated write in the next turn is no claim.
    agent.user("fix the typo");
    agent.wrote("src/lib.rs", "// typo fixed\n").assert_silent();
    agent.stop(false).assert_silent();
    assert_eq!(last_verdict(&project, "verify-artifact-produced"), "held");
}

#[test]
fn evidence_from_turn_3_does_not_satisfy_a_claim_in_turn_9() {
    let project = Project::new();
    project.config(PAIR);

    // Turn 3 wrote a report and its Stop was accepted; turn 9 claims again.
    let mut agent = Agent::new(&project, "cycle-stale");
    for turn in 1..=3 {
        agent.user(&format!("step {turn}"));
    }
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    agent.wrote("reports/run.md", "# Run 3\n").assert_silent();
    assert_eq!(
        refused(&agent.stop(false)),
        None,
        "turn 3 produced its artifact"
    );
    for turn in 4..=9 {
        agent.user(&format!("step {turn}"));
    }
    agent.wrote("notes/plan-9.md", TAGGED).assert_silent();
    let reason = refused(&agent.stop(false)).expect("turn 3's report does not count in turn 9");
    assert!(reason.contains("artifact-missing"), "{reason}");

    // The same when no Stop came between (the user interrupted turn 3): the report
    // is still in the span, but from a turn before the claim.
    let mut agent = Agent::new(&project, "cycle-interrupted");
    for turn in 1..=3 {
        agent.user(&format!("step {turn}"));
    }
    agent.wrote("reports/early.md", "# Early\n").assert_silent();
    for turn in 4..=9 {
        agent.user(&format!("step {turn}"));
    }
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    let cycle = agent.cycle();
    let turns: Vec<&str> = cycle["span"]
        .as_array()
        .expect("span")
        .iter()
        .filter_map(|e| e["turn"].as_str())
        .collect();
    assert_eq!(turns, ["3:u-3", "9:u-9"], "{cycle}");
    assert!(
        refused(&agent.stop(false)).is_some(),
        "evidence from turn 3"
    );

    // Evidence in the claim's turn satisfies it — here written by a shell command
    // the facts layer recognises.
    agent
        .ran("cat notes/plan.md > reports/late.md", |dir| {
            std::fs::write(dir.join("reports/late.md"), TAGGED).expect("write")
        })
        .assert_silent();
    let cycle = agent.cycle();
    let last = cycle["span"]
        .as_array()
        .and_then(|s| s.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["tool"], "Bash", "{cycle}");
    assert_eq!(last["files"][0]["path"], "reports/late.md", "{cycle}");
    assert_eq!(
        last["facts"]["name"], "Bash",
        "the call's tool facts: {cycle}"
    );
    assert_eq!(refused(&agent.stop(true)), None);
}

#[test]
fn an_identical_rewrite_fires_no_file_change() {
    let project = Project::new();
    project.config(PAIR);
    let mut agent = Agent::new(&project, "cycle-rewrite");
    agent.user("first run");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    agent.wrote("reports/run.md", "# Run\n").assert_silent();
    assert_eq!(refused(&agent.stop(false)), None);

    // The next turn claims again and rewrites the report byte for byte.
    agent.user("second run");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    agent.wrote("reports/run.md", "# Run\n").assert_silent();
    let cycle = agent.cycle();
    let span = cycle["span"].as_array().expect("span");
    assert_eq!(span.len(), 2, "{cycle}");
    assert_eq!(
        span[0]["files"],
        json!([]),
        "the tag file is unchanged too: {cycle}"
    );
    assert_eq!(span[1]["tool"], "Write", "{cycle}");
    assert_eq!(
        span[1]["files"],
        json!([]),
        "an identical rewrite is no change: {cycle}"
    );
    assert!(
        refused(&agent.stop(false)).is_some(),
        "a rewrite that changes nothing proves nothing"
    );

    // A real change is.
    agent
        .wrote("reports/run.md", "# Run, again\n")
        .assert_silent();
    let cycle = agent.cycle();
    let files = &cycle["span"][2]["files"];
    assert_eq!(files[0]["path"], "reports/run.md", "{cycle}");
    assert!(
        files[0]["before"].is_string() && files[0]["sha256"].is_string(),
        "{cycle}"
    );
    assert_eq!(refused(&agent.stop(true)), None);

    // A call with facts past 16 KiB is kept by its tool's name.
    let long = format!("echo {}", "x".repeat(100_000));
    agent.ran(&long, |_| {}).assert_silent();
    let cycle = agent.cycle();
    let facts = &cycle["span"][0]["facts"];
    assert_eq!(facts["name"], "Bash", "{facts}");
    assert!(
        facts["omitted"]
            .as_str()
            .is_some_and(|o| o.contains("16 KiB")),
        "{facts}"
    );
}

#[test]
fn a_context_subscribed_to_stop_is_rejected() {
    let project = Project::new();
    project.config(&PAIR.replace(
        "events = [\"PostToolUse\"]",
        "events = [\"PostToolUse\", \"Stop\"]",
    ));
    let run = project.run(&["check-config"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    let said = format!("{}{}", run.stdout(), run.stderr());
    assert!(
        said.contains("tag-declared") && said.contains("a context cannot subscribe to Stop"),
        "{said}"
    );

    // A context's component configured as a gate is not run, and check-config
    // says which kind to give it.
    project.config(&PAIR.replace("kind = \"context\"\n", ""));
    let run = project.run(&["check-config"]);
    assert_eq!(run.code(), Some(1), "{}", run.stdout());
    let said = format!("{}{}", run.stdout(), run.stderr());
    assert!(said.contains("give the entry kind = \"context\""), "{said}");
    let mut agent = Agent::new(&project, "cycle-kind");
    agent.user("go");
    let run = agent.wrote("notes/plan.md", TAGGED);
    assert!(
        run.stderr().contains("context 'tag-declared' not run")
            || run.stderr().contains("guardrail 'tag-declared' not run"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr().contains("give the entry kind = \"context\""),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_missing_transcript_fails_open_with_a_stderr_line() {
    let project = Project::new();
    project.config(PAIR);
    let mut agent = Agent::new(&project, "cycle-no-transcript");
    agent.user("go");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    // The transcript is gone by the Stop: the turn is unknown, so the claim cannot
    // be tied to its evidence, and the Stop is not refused for it.
    std::fs::remove_file(&agent.transcript).expect("remove");
    let run = agent.forged_stop(false);
    assert_eq!(refused(&run), None, "stderr: {}", run.stderr());
    let stderr = run.stderr();
    assert!(stderr.contains("turn unknown: transcript: "), "{stderr}");
    assert!(
        stderr.contains("[verify-artifact-produced]") && stderr.contains("the turn is unknown"),
        "{stderr}"
    );
}

/// The cap on Stops refused in a row cannot be used up by Stops the harness did
/// not send: one counts only if the transcript grew since the last refused Stop,
/// and one naming another transcript than its session's counts not at all.
#[test]
fn forged_stops_do_not_use_up_the_cap() {
    let project = Project::new();
    project.config(PAIR);
    let mut agent = Agent::new(&project, "cycle-forged");
    agent.user("research");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    assert!(refused(&agent.stop(false)).is_some());
    for n in 0..20 {
        let run = agent.forged_stop(true);
        assert!(
            refused(&run).is_some(),
            "forged Stop {n} is refused, not let through"
        );
        assert!(
            run.stderr()
                .contains("does not count toward settings.max_refused_stops"),
            "{}",
            run.stderr()
        );
    }
    assert_eq!(agent.cycle()["refused"]["count"], 1, "{}", agent.cycle());
    // A forged payload pointing at a transcript of its own, grown at will.
    let fake = project.dir().join("fake.jsonl");
    for n in 0..10 {
        std::fs::write(&fake, "x".repeat(100 * (n + 1))).expect("fake transcript");
        let mut payload: Value =
            serde_json::from_slice(&agent.base("Stop", json!({"stop_hook_active": true})))
                .expect("json");
        payload["transcript_path"] = json!(fake);
        let run = project.hook(&serde_json::to_vec(&payload).expect("json"));
        assert!(refused(&run).is_some(), "fake transcript {n}");
    }
    assert_eq!(agent.cycle()["refused"]["count"], 1, "{}", agent.cycle());
    // One per tool call, the transcript having grown by that call: the call is
    // still open in it, so the Stop came from within it.
    for n in 0..10 {
        let mut text = std::fs::read_to_string(&agent.transcript).expect("transcript");
        text.push_str(&format!(
            "{}\n",
            json!({"type": "assistant", "uuid": format!("c-{n}"), "message": {"id": format!("mc-{n}"), "content": [{"type": "tool_use", "id": format!("toolu_c{n}"), "name": "Bash", "input": {"command": "/tmp/sr hook < stop.json"}}]}})
        ));
        std::fs::write(&agent.transcript, text).expect("append");
        let run = agent.forged_stop(true);
        assert!(refused(&run).is_some(), "forged Stop {n} from a tool call");
        assert!(
            run.stderr().contains("a tool call still running"),
            "{}",
            run.stderr()
        );
        let mut text = std::fs::read_to_string(&agent.transcript).expect("transcript");
        text.push_str(&format!(
            "{}\n",
            json!({"type": "user", "uuid": format!("cr-{n}"), "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_c{n}"), "content": "ok"}]}})
        ));
        std::fs::write(&agent.transcript, text).expect("append");
    }
    assert_eq!(agent.cycle()["refused"]["count"], 1, "{}", agent.cycle());
    // The harness's own Stops, after the agent answered each refusal, still count.
    for n in 2..=8 {
        assert!(refused(&agent.stop(true)).is_some(), "refusal {n}");
    }
    assert_eq!(refused(&agent.stop(true)), None, "the ninth is let through");
}

#[test]
fn stops_refused_in_a_row_are_capped_at_eight() {
    let project = Project::new();
    project.config(PAIR);
    let mut agent = Agent::new(&project, "cycle-cap");
    agent.user("research");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    for n in 1..=8 {
        assert!(refused(&agent.stop(n > 1)).is_some(), "refusal {n}");
    }
    let run = agent.stop(true);
    assert_eq!(refused(&run), None, "the ninth is let through");
    let message = run.answer()["systemMessage"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        message.contains("[sandrail]")
            && message.contains("9 Stops in a row")
            && message.contains("artifact-missing"),
        "{message}"
    );
    assert!(
        run.stderr().contains("max_refused_stops = 8"),
        "{}",
        run.stderr()
    );
    let receipts =
        std::fs::read_to_string(project.state_dir().join("receipts.jsonl")).expect("receipts");
    let last: Value = serde_json::from_str(receipts.lines().last().expect("line")).expect("json");
    assert_eq!(last["released"], true, "{last}");
    assert_eq!(last["decision"], "allow", "{last}");
    // Let through is not accepted: the mark stays, and the next turn is judged again.
    assert_eq!(agent.cycle()["mark"], 0);
    agent.user("and now?");
    assert!(
        refused(&agent.stop(false)).is_some(),
        "a new turn refuses again"
    );

    // The cap is configurable.
    project.reconfigure(&format!("[settings]\nmax_refused_stops = 2\n{PAIR}"));
    let mut agent = Agent::new(&project, "cycle-cap-2");
    agent.user("research");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    assert!(refused(&agent.stop(false)).is_some());
    assert!(refused(&agent.stop(true)).is_some());
    assert_eq!(refused(&agent.stop(true)), None);
}

/// A context probe entering on `deploy`, and a probe gate that reports what the
/// cycle shows it, both on Bash calls and Stop.
fn context_and_gate(hold: Option<&str>) -> String {
    let hold = hold
        .map(|h| format!("hold = \"{h}\"\n"))
        .unwrap_or_default();
    format!(
        r#"
[[guardrail]]
name = "deploying"
source = "{CONTEXT_PROBE}"
kind = "context"
events = ["PreToolUse"]
matcher = "Bash"
[guardrail.config]
enter_on = "deploy"
exit_on = "rollback"
{hold}
[[guardrail]]
name = "watcher"
source = "{CYCLE_PROBE}"
events = ["PreToolUse", "Stop"]
requires = ["deploying"]
"#
    )
}

#[test]
fn a_gate_sees_the_contexts_it_requires_and_a_holding_context_keeps_the_stop() {
    let project = Project::new();
    project.config(&context_and_gate(Some("the deploy is not verified")));
    let mut agent = Agent::new(&project, "cycle-context");
    agent.user("deploy it");

    // Before it enters: the gate runs on the Bash call and sees it inactive.
    let view = seen(&agent.bash("ls"));
    assert_eq!(view["contexts"][0]["active"], false, "{view}");

    // The context runs before the gate that requires it, in the same event.
    let view = seen(&agent.bash("./deploy.sh prod"));
    let context = &view["contexts"][0];
    assert_eq!(context["name"], "deploying", "{view}");
    assert_eq!(context["active"], true, "{view}");
    assert_eq!(context["entered_this_turn"], true, "{view}");
    assert_eq!(context["entered_this_cycle"], true, "{view}");
    assert_eq!(context["entered_turn"], "1:u-1", "{view}");
    let payload: Value =
        serde_json::from_str(context["payload"].as_str().expect("payload")).expect("json");
    assert_eq!(payload["command"], "./deploy.sh prod", "{view}");

    // At Stop the gate runs (its context entered this cycle), then the context's
    // leave holds the Stop, and the context stays active.
    let reason = refused(&agent.stop(false)).expect("held");
    assert!(
        reason.contains("[deploying] the deploy is not verified"),
        "{reason}"
    );
    let cycle = agent.cycle();
    assert_eq!(cycle["contexts"][0][1]["active"], true, "{cycle}");
    assert_eq!(cycle["mark"], 0, "{cycle}");

    // In the next turn it is still active, but not entered this turn.
    agent.user("status?");
    let view = seen(&agent.bash("ls"));
    assert_eq!(view["contexts"][0]["active"], true, "{view}");
    assert_eq!(view["contexts"][0]["entered_this_turn"], false, "{view}");
    assert_eq!(view["contexts"][0]["entered_this_cycle"], true, "{view}");

    // Once its leave lets go, the Stop is accepted and the context is left.
    project.reconfigure(&context_and_gate(None));
    assert_eq!(refused(&agent.stop(true)), None);
    let cycle = agent.cycle();
    assert_eq!(cycle["contexts"][0][1]["active"], false, "{cycle}");
    assert_eq!(cycle["mark"], cycle["seq"], "{cycle}");

    // Exit by transition, and a payload that is not JSON is not recorded.
    agent.bash("./deploy.sh staging");
    agent.bash("./rollback.sh");
    assert_eq!(agent.cycle()["contexts"][0][1]["active"], false);
    project.reconfigure(&context_and_gate(None).replace("exit_on", "bad_payload = true\nexit_on"));
    let run = agent.bash("./deploy.sh again");
    assert!(
        run.stderr().contains("its enter payload is not JSON"),
        "{}",
        run.stderr()
    );
    assert_eq!(agent.cycle()["contexts"][0][1]["active"], false);
}

#[test]
fn a_gate_reads_a_contexts_stamp_through_list_owner() {
    let project = Project::new();
    project.reconfigure(&format!(
        r#"{PAIR}
[[guardrail]]
name = "watcher"
source = "{CYCLE_PROBE}"
events = ["PostToolUse"]
requires = ["tag-declared"]
[guardrail.config]
owner = "tag-declared"
key = "tag:research"
"#
    ));
    let stamped = |run: &Run| seen(run)["stamped"].as_str().unwrap_or("").to_owned();
    let mut agent = Agent::new(&project, "cycle-stamp");
    agent.user("research");
    assert_eq!(stamped(&agent.wrote("notes/a.md", "no tag")), "Never");
    let run = agent.wrote("notes/plan.md", TAGGED);
    assert_eq!(stamped(&run), "ThisTurn");
    // The span the gate reads holds both calls, in order, with their turn.
    let view = seen(&run);
    assert_eq!(view["span"][1]["files"], json!(["notes/plan.md"]), "{view}");
    assert_eq!(view["span"][1]["turn"], "1:u-1", "{view}");
    // The context's entries, read as typed values: the stamp holds the turn.
    assert_eq!(
        view["owner_entries"],
        json!(["tag:research@1:u-1"]),
        "{view}"
    );
    agent.user("next");
    assert_eq!(stamped(&agent.wrote("notes/b.md", "later")), "EarlierTurn");
    std::fs::remove_file(&agent.transcript).expect("remove");
    assert_eq!(stamped(&agent.wrote("notes/c.md", "no turn")), "Unknown");
}

/// A change recorded while the turn could not be read (the session's transcript
/// missing for that event) is evidence for any claim in the same cycle: the agent
/// is not refused for correct work the host could not place.
#[test]
fn evidence_written_while_the_transcript_is_missing_counts() {
    let project = Project::new();
    project.config(PAIR);
    let mut agent = Agent::new(&project, "cycle-unknown-turn");
    agent.user("step 1");
    agent.user("step 2");
    agent.wrote("notes/plan.md", TAGGED).assert_silent();
    // The transcript is gone while the report is written: that change's turn is
    // unknown.
    let aside = agent.transcript.with_extension("aside");
    std::fs::rename(&agent.transcript, &aside).expect("move the transcript away");
    let wrote = agent.wrote("reports/r.md", "# Report\n");
    assert!(
        wrote.stderr().contains("turn unknown"),
        "{}",
        wrote.stderr()
    );
    std::fs::rename(&aside, &agent.transcript).expect("bring it back");
    let span = agent.cycle()["span"].clone();
    let report = span
        .as_array()
        .and_then(|s| s.iter().find(|e| e["files"][0]["path"] == "reports/r.md"))
        .cloned()
        .unwrap_or_default();
    assert!(report["turn"].is_null(), "{span}");
    assert_eq!(refused(&agent.stop(false)), None);
}

/// "The judge then refuses a claim it cannot corroborate": a context that fails
/// on an event (here it runs out of fuel) lost what it should have recorded, so
/// the gate requiring it refuses the cycle's Stop, naming the context, instead of
/// being held; once a Stop is accepted the next cycle starts clean.
#[test]
fn a_context_that_fails_makes_its_gate_refuse_the_stop() {
    let project = Project::new();
    let starved = context_and_gate(None).replace(
        "exit_on = \"rollback\"\n",
        "exit_on = \"rollback\"\n[guardrail.limits]\nfuel = 1000\n",
    );
    project.config(&starved);
    let mut agent = Agent::new(&project, "cycle-starved");
    agent.user("deploy it");
    let run = agent.bash("./deploy.sh prod");
    assert!(
        run.stderr().contains("context 'deploying' failed"),
        "{}",
        run.stderr()
    );
    let reason = refused(&agent.stop(false)).expect("the gate refuses");
    assert!(
        reason.contains("[watcher] the context 'deploying' failed during this cycle"),
        "{reason}"
    );
    assert_eq!(last_verdict(&project, "watcher"), "deny");
    // The failure refused that Stop; the next is judged by the gate again.
    project.reconfigure(&context_and_gate(None));
    let again = agent.stop(true);
    assert!(
        refused(&again).is_none_or(|r| !r.contains("failed during this cycle")),
        "{}",
        again.stdout()
    );
    assert_ne!(last_verdict(&project, "watcher"), "deny");
}

/// The bundled gate pairs with the context its `requires` names, whatever the
/// entries are called: two pairs for two tags each judge their own claim.
#[test]
fn the_bundled_gate_pairs_with_the_context_it_requires_by_any_name() {
    let project = Project::new();
    let pair = |tag: &str, glob: &str| {
        format!(
            "[[guardrail]]\nname = \"{tag}-declared\"\nsource = \"builtin:tag-declared\"\nkind = \"context\"\nevents = [\"PostToolUse\"]\nmatcher = \"Write\"\n[guardrail.config]\ntag = \"{tag}\"\n\n\
             [[guardrail]]\nname = \"{tag}-artifact\"\nsource = \"builtin:verify-artifact-produced\"\nevents = [\"Stop\"]\nrequires = [\"{tag}-declared\"]\n[guardrail.config]\nartifact_glob = \"{glob}\"\n\n"
        )
    };
    project.config(&format!(
        "{}{}",
        pair("research", "reports/*.md"),
        pair("audit", "audits/*.md")
    ));
    assert!(project.run(&["check-config"]).ok());
    let mut agent = Agent::new(&project, "cycle-pairs");
    agent.user("research and audit");
    agent
        .wrote("notes/plan.md", "<!-- sandrail:tag research -->\n")
        .assert_silent();
    let stop = agent.stop(false);
    let reason = refused(&stop).unwrap_or_else(|| panic!("refused: {}", stop.stderr()));
    assert!(
        reason.contains("[research-artifact/artifact-missing]") && !reason.contains("audit"),
        "{reason}"
    );
    assert!(!stop.stderr().contains("failed"), "{}", stop.stderr());
    agent.wrote("reports/r.md", "# R\n").assert_silent();
    assert_eq!(refused(&agent.stop(true)), None);
}

/// `check-config` checks the bundled gate's pairing, which its own check cannot
/// see: no context in `requires`, several without `context`, or a `context` that
/// is not among them is an error before any Stop.
#[test]
fn check_config_reports_a_bundled_gate_that_pairs_with_no_context() {
    let project = Project::new();
    let context = |name: &str| {
        format!(
            "[[guardrail]]\nname = \"{name}\"\nsource = \"builtin:tag-declared\"\nkind = \"context\"\nevents = [\"PostToolUse\"]\n[guardrail.config]\ntag = \"{name}\"\n\n"
        )
    };
    let gate = |requires: &str, extra: &str| {
        format!(
            "[[guardrail]]\nname = \"gate\"\nsource = \"builtin:verify-artifact-produced\"\nevents = [\"Stop\"]\nrequires = [{requires}]\n[guardrail.config]\nartifact_glob = \"reports/*.md\"\n{extra}"
        )
    };
    for (config, said) in [
        (gate("", ""), "names no context"),
        (
            format!(
                "{}{}{}",
                context("a"),
                context("b"),
                gate("\"a\", \"b\"", "")
            ),
            "names several contexts (a, b)",
        ),
        (
            format!("{}{}", context("a"), gate("\"a\"", "context = \"b\"\n")),
            "its context 'b' is not a context in its requires (a)",
        ),
    ] {
        project.config(&config);
        let run = project.run(&["check-config"]);
        assert_eq!(run.code(), Some(1), "{}", run.stdout());
        assert!(
            run.stdout().contains("error  gate:") && run.stdout().contains(said),
            "{}",
            run.stdout()
        );
    }
    project.config(&format!(
        "{}{}{}",
        context("a"),
        context("b"),
        gate("\"a\", \"b\"", "context = \"b\"\n")
    ));
    let run = project.run(&["check-config"]);
    assert!(run.ok(), "{}", run.stdout());
}
