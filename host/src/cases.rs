//! Case files for `sandrail test`: a config (the guardrails under test, written as
//! in sandrail.toml) and cases, each a sequence of events with what must follow
//! each. This module reads them and judges what a run produced; running the events
//! through the hook is the command's (`commands/test.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::receipts::Receipt;

/// A case file that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
pub enum CaseFileError {
    #[error("{path}: cannot be read: {source}")]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// What `decision` may be: what the harness was answered.
pub const DECISIONS: [&str; 4] = ["allow", "deny", "ask", "block"];
/// What a gate under test may say (as its receipts say): the first four are
/// its own verdicts, the rest the host's word for one that could not judge or
/// was held.
pub const GATE_VERDICTS: [&str; 7] = [
    "pass",
    "note",
    "violation",
    "deny",
    "failed",
    "not-run",
    "held",
];
/// What `verdict` may be: a gate's, or a context's `enter`, `stay` and `exit`.
pub const VERDICTS: [&str; 10] = [
    GATE_VERDICTS[0],
    GATE_VERDICTS[1],
    GATE_VERDICTS[2],
    GATE_VERDICTS[3],
    GATE_VERDICTS[4],
    GATE_VERDICTS[5],
    GATE_VERDICTS[6],
    "enter",
    "stay",
    "exit",
];

/// One case file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    settings: Option<toml::Table>,
    #[serde(default)]
    guardrail: Vec<toml::Table>,
    #[serde(default, rename = "case")]
    cases: Vec<Case>,
}

/// A case file, read: the config the cases run under, and the cases.
#[derive(Debug)]
pub struct CaseFile {
    pub path: PathBuf,
    /// The sandrail.toml the cases run under, component sources made absolute.
    pub config: String,
    /// The same, parsed: which events it wakes a guardrail for.
    pub parsed: crate::config::Config,
    /// The files its config names relative to itself — data grants, the
    /// mandate — relative to the case file: copied beside the config so each is
    /// read by the name the config gives.
    pub copies: Vec<String>,
    /// The first entry's name: whose state `expect.state` reads and whose
    /// verdicts are counted.
    pub under_test: String,
    pub cases: Vec<Case>,
}

/// One case: events run in order in a fresh session and state.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub name: String,
    #[serde(default, rename = "event")]
    pub events: Vec<Step>,
}

/// One event of a case and what must follow it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The hook event (`PreToolUse` when a tool is given and this is not).
    pub event: Option<String>,
    /// The short form of a tool call: its name and input.
    pub tool: Option<String>,
    pub input: Option<Value>,
    /// For a PostToolUse: what the tool answered.
    pub response: Option<Value>,
    /// For a UserPromptSubmit: the prompt.
    pub prompt: Option<String>,
    /// A whole hook payload instead of the short form; the session, transcript
    /// and working directory are filled in when absent.
    pub payload: Option<Value>,
    /// Lines appended to the session's transcript before the event.
    #[serde(default)]
    pub transcript: Vec<Value>,
    /// A real user message appended to the transcript before the event: a new
    /// turn begins.
    pub user: Option<String>,
    /// Files written into the case's project before the event (path relative to
    /// the project → content): what the tool call did, for the host to find.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub expect: Expect,
}

/// What must hold after an event. Each field left out is not checked.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// What the harness was answered: allow, deny, ask or block.
    pub decision: Option<String>,
    /// What the guardrail under test said: pass, note, violation, deny, failed,
    /// not-run or held; for a context, enter, stay or exit.
    pub verdict: Option<String>,
    /// The rule of the violation a guardrail reported.
    pub rule: Option<String>,
    /// The escalation level that violation came to.
    pub level: Option<String>,
    /// Text the answer's message (the refusal, or the notes) contains.
    pub message: Option<String>,
    /// Entries of the guardrail under test's state: key → value (as JSON).
    pub state: Option<BTreeMap<String, Value>>,
    /// Keys the guardrail under test's state must not hold.
    pub absent: Option<Vec<String>>,
    /// Every flag set in the session, in any order.
    pub flags: Option<Vec<String>>,
}

impl Expect {
    fn is_empty(&self) -> bool {
        self.decision.is_none()
            && self.verdict.is_none()
            && self.rule.is_none()
            && self.level.is_none()
            && self.message.is_none()
            && self.state.is_none()
            && self.absent.is_none()
            && self.flags.is_none()
    }
}

impl CaseFile {
    /// Reads and checks a case file.
    pub fn read(path: &Path) -> Result<CaseFile, CaseFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| CaseFileError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        let invalid = |message: String| CaseFileError::Invalid {
            path: path.to_owned(),
            message,
        };
        let raw: RawFile = toml::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        // Sources are relative to the case file; the config runs elsewhere.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let base = std::path::absolute(parent.unwrap_or(Path::new(".")))
            .map_err(|e| invalid(format!("cannot tell where it is: {e}")))?;
        let Some(first) = raw.guardrail.first() else {
            return Err(invalid(
                "no [[guardrail]] entry: give the guardrail under test as in sandrail.toml, \
                 its `source` relative to this file"
                    .into(),
            ));
        };
        let under_test = first
            .get("name")
            .and_then(toml::Value::as_str)
            .ok_or_else(|| invalid("the first [[guardrail]] has no `name`".into()))?
            .to_owned();
        let mut copies = Vec::new();
        let mut entries = Vec::new();
        for entry in &raw.guardrail {
            let mut entry = entry.clone();
            if let Some(toml::Value::String(source)) = entry.get("source")
                && !source.starts_with("builtin:")
                && Path::new(source).is_relative()
            {
                let absolute = base.join(source).display().to_string();
                entry.insert("source".into(), toml::Value::String(absolute));
            }
            if let Some(toml::Value::Array(grants)) = entry.get("data") {
                for grant in grants.iter().filter_map(toml::Value::as_str) {
                    let path = Path::new(grant);
                    if path.is_absolute() {
                        continue;
                    }
                    copies.push(copied(grant, "data grant").map_err(invalid)?);
                }
            }
            entries.push(toml::Value::Table(entry));
        }
        let mut config = toml::Table::new();
        if let Some(settings) = raw.settings {
            if let Some(toml::Value::String(mandate)) = settings.get("mandate")
                && Path::new(mandate).is_relative()
            {
                copies.push(copied(mandate, "settings.mandate").map_err(invalid)?);
            }
            config.insert("settings".into(), toml::Value::Table(settings));
        }
        config.insert("guardrail".into(), toml::Value::Array(entries));
        // Cases are not sessions of the user's: their receipts stay in the case's
        // state directory, out of the system log.
        let mut receipts = toml::Table::new();
        receipts.insert("syslog".into(), toml::Value::Boolean(false));
        config.insert("receipts".into(), toml::Value::Table(receipts));
        let config = toml::to_string(&config).map_err(|e| invalid(e.to_string()))?;
        // A config the hook could not use would run the embedded default instead,
        // and every case expecting "allow" would pass: refuse it here.
        let parsed = crate::config::Config::parse(
            &config,
            crate::config::Origin::File(path.to_owned()),
            Some(&base),
        )
        .map_err(|e| invalid(format!("its config cannot be used: {e}")))?;
        let reserved: Vec<&str> = [CONFIG_FILE, LOCK_FILE]
            .into_iter()
            .chain(copies.iter().map(String::as_str))
            .collect();
        for (i, case) in raw.cases.iter().enumerate() {
            check_case(case, &reserved)
                .map_err(|why| invalid(format!("case {} ({}): {why}", i + 1, case.name)))?;
        }
        Ok(CaseFile {
            path: path.to_owned(),
            config,
            parsed,
            copies,
            under_test,
            cases: raw.cases,
        })
    }
}

/// The name the case's config is written under, in its scratch project.
pub const CONFIG_FILE: &str = "sandrail.toml";
/// The lock beside it, which a case may not write either.
const LOCK_FILE: &str = "sandrail.lock";

/// A file the config names relative to itself, which is copied beside the
/// case's config under the same name: it must stay below the case file.
fn copied(path: &str, what: &str) -> Result<String, String> {
    if stays_below(path) {
        Ok(path.to_owned())
    } else {
        Err(format!(
            "{what} {path:?}: in a case file a relative path must lie beside the file or below it (no `..`); move the file there or give an absolute path"
        ))
    }
}

fn check_case(case: &Case, reserved: &[&str]) -> Result<(), String> {
    if case.events.is_empty() {
        return Err("no [[case.event]]".into());
    }
    if case.events.iter().all(|s| s.expect.is_empty()) {
        return Err("expects nothing: give at least one event an `expect`".into());
    }
    for (i, step) in case.events.iter().enumerate() {
        let at = |why: String| format!("event {}: {why}", i + 1);
        if step.payload.is_none() && step.tool.is_none() && step.event.is_none() {
            return Err(at(
                "give `tool` and `input`, an `event`, or a whole `payload`".into(),
            ));
        }
        // A whole payload is sent as it is: the short form's fields beside it
        // would be dropped, and the case would judge another event than it says.
        let short_form = step.short_form_fields();
        if step.payload.is_some() && !short_form.is_empty() {
            return Err(at(format!(
                "both `payload` and {fields} are given, but a whole payload is sent as it is and {fields} would be ignored: use one or the other — the short form (`event`, `tool`, `input`, `response`, `prompt`), or a whole `payload` naming its event in `hook_event_name`",
                fields = short_form.join(", "),
            )));
        }
        // Without a tool the short form sends no tool input or response.
        let toolless = [("input", &step.input), ("response", &step.response)]
            .into_iter()
            .find_map(|(field, given)| given.as_ref().map(|_| field));
        if step.tool.is_none()
            && step.payload.is_none()
            && let Some(field) = toolless
        {
            return Err(at(format!(
                "`{field}` is given without `tool`, so it would be ignored: name the tool it belongs to"
            )));
        }
        // Written into the case's scratch project: never outside it, and never
        // over the config the case runs under or a file it copied.
        if let Some(path) = step.files.keys().find(|p| !stays_below(p)) {
            return Err(at(format!(
                "files: {path:?} must be relative to the case's project and stay in it (no `..`, not absolute)"
            )));
        }
        if let Some(path) = step.files.keys().find(|p| {
            reserved
                .iter()
                .any(|r| Path::new(p.as_str()) == Path::new(r))
        }) {
            return Err(at(format!(
                "files: {path:?} is the case's own config (or a file it copies); change the [[guardrail]] entries instead"
            )));
        }
        if let Some(payload) = &step.payload
            && !payload.is_object()
        {
            return Err(at(
                "payload: a hook payload is a JSON object (a table)".into()
            ));
        }
        if let Some(event) = &step.event
            && crate::event::EventKind::from_name(event).is_none()
        {
            return Err(at(format!(
                "event `{event}` is no hook event sandrail judges (PreToolUse, PostToolUse, UserPromptSubmit, Stop, …)"
            )));
        }
        if let Some(d) = &step.expect.decision
            && !DECISIONS.contains(&d.as_str())
        {
            return Err(at(format!(
                "decision `{d}` is none of {}",
                DECISIONS.join(", ")
            )));
        }
        if let Some(v) = &step.expect.verdict
            && !VERDICTS.contains(&v.as_str())
        {
            return Err(at(format!(
                "verdict `{v}` is none of {}",
                VERDICTS.join(", ")
            )));
        }
        if let Some(l) = &step.expect.level
            && crate::escalation::Level::from_name(l).is_none()
        {
            return Err(at(format!(
                "level `{l}` is none of silent, nudge, warning, soft_block, hard_block"
            )));
        }
    }
    Ok(())
}

/// Whether `path` is relative and names something below where it is joined:
/// only plain names, no `..`, no root.
fn stays_below(path: &str) -> bool {
    let path = Path::new(path);
    !path.as_os_str().is_empty()
        && path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

impl CaseFile {
    /// Whether `payload` is an event some guardrail of the config judges: the
    /// hook then writes a receipt for it (and none for an event nothing wakes).
    pub fn wakes(&self, payload: &Value) -> bool {
        let kind = payload
            .get("hook_event_name")
            .and_then(Value::as_str)
            .and_then(crate::event::EventKind::from_name);
        let tool = payload.get("tool_name").and_then(Value::as_str);
        kind.is_none_or(|kind| !self.parsed.matching(kind, tool).is_empty())
    }
}

impl Step {
    /// The short form's fields given, as the case file names them: a whole
    /// `payload` leaves them no part to play.
    fn short_form_fields(&self) -> Vec<String> {
        [
            ("event", self.event.is_some()),
            ("tool", self.tool.is_some()),
            ("input", self.input.is_some()),
            ("response", self.response.is_some()),
            ("prompt", self.prompt.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(field, _)| format!("`{field}`"))
        .collect()
    }

    /// The hook payload this step sends.
    pub fn payload(&self, session: &str, transcript: &Path, cwd: &Path, seq: usize) -> Value {
        let mut payload = match &self.payload {
            Some(Value::Object(p)) => Value::Object(p.clone()),
            Some(other) => other.clone(),
            None => {
                let event = self.event.clone().unwrap_or_else(|| "PreToolUse".into());
                let mut p = json!({ "hook_event_name": event, "permission_mode": "default" });
                if let Some(tool) = &self.tool {
                    p["tool_name"] = json!(tool);
                    p["tool_input"] = self.input.clone().unwrap_or_else(|| json!({}));
                    p["tool_use_id"] = json!(format!("toolu_case_{seq}"));
                }
                if event == "PostToolUse" {
                    p["tool_response"] = self.response.clone().unwrap_or_else(|| json!({}));
                }
                if let Some(prompt) = &self.prompt {
                    p["prompt"] = json!(prompt);
                }
                if event == "Stop" || event == "SubagentStop" {
                    p["stop_hook_active"] = json!(false);
                }
                p
            }
        };
        if let Value::Object(p) = &mut payload {
            p.entry("session_id").or_insert_with(|| json!(session));
            p.entry("transcript_path")
                .or_insert_with(|| json!(transcript.display().to_string()));
            p.entry("cwd")
                .or_insert_with(|| json!(cwd.display().to_string()));
        }
        payload
    }

    /// The transcript lines to append before the event: its own, then the user
    /// message it gives (`n` tells the message's uuid apart).
    pub fn transcript_lines(&self, n: usize) -> Vec<Value> {
        let mut lines = self.transcript.clone();
        if let Some(text) = &self.user {
            lines.push(json!({
                "type": "user",
                "uuid": format!("case-user-{n}"),
                "message": { "role": "user", "content": text },
            }));
        }
        lines
    }

    /// How the step reads in a report: `PreToolUse Bash`.
    pub fn label(&self) -> String {
        let event = self
            .event
            .clone()
            .or_else(|| {
                let p = self.payload.as_ref()?;
                p.get("hook_event_name")?.as_str().map(str::to_owned)
            })
            .unwrap_or_else(|| "PreToolUse".into());
        let tool = self.tool.clone().or_else(|| {
            let p = self.payload.as_ref()?;
            p.get("tool_name")?.as_str().map(str::to_owned)
        });
        match tool {
            Some(tool) => format!("{event} {tool}"),
            None => event,
        }
    }
}

/// What one event produced, as the checks read it.
#[derive(Debug, Default)]
pub struct Observed {
    /// The receipt of the event; none when the hook judged nothing.
    pub receipt: Option<Receipt>,
    /// The guardrail under test's state after the event.
    pub state: BTreeMap<String, String>,
    pub flags: Vec<String>,
}

impl Observed {
    pub fn decision(&self) -> &str {
        self.receipt
            .as_ref()
            .map_or("allow", |r| r.decision.as_str())
    }

    /// What the guardrail under test said, if it ran.
    pub fn verdict(&self, under_test: &str) -> Option<&str> {
        self.run(under_test).map(|r| r.verdict.as_str())
    }

    /// The verdict as a report shows it: with why, when it could not judge.
    fn verdict_shown(&self, under_test: &str) -> String {
        match self.run(under_test) {
            None => format!("(`{under_test}` did not run)"),
            Some(run) => match &run.reason {
                Some(why) => format!("{} ({why})", run.verdict),
                None => run.verdict.clone(),
            },
        }
    }

    fn run(&self, name: &str) -> Option<&crate::receipts::GuardrailRun> {
        self.receipt
            .as_ref()?
            .guardrails
            .iter()
            .find(|g| g.name == name)
    }

    /// The rule and level of the violation that decided, else of any reported.
    fn violation(&self) -> (Option<&str>, Option<&str>) {
        let Some(receipt) = &self.receipt else {
            return (None, None);
        };
        let runs = || receipt.guardrails.iter().filter(|g| g.rule.is_some());
        let run = runs().find(|g| g.refuses).or_else(|| runs().next());
        (
            run.and_then(|g| g.rule.as_deref()),
            run.and_then(|g| g.level.as_deref()),
        )
    }
}

/// One expectation that did not hold.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mismatch {
    pub field: String,
    pub expected: String,
    pub got: String,
}

/// Every expectation of `expect` that `observed` does not meet.
pub fn check(expect: &Expect, observed: &Observed, under_test: &str) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut differ = |field: &str, expected: String, got: String| {
        out.push(Mismatch {
            field: field.to_owned(),
            expected,
            got,
        })
    };
    let shown = |v: Option<&str>| v.map_or("(none)".to_owned(), str::to_owned);
    if let Some(want) = &expect.decision
        && observed.decision() != want
    {
        differ("decision", want.clone(), observed.decision().to_owned());
    }
    if let Some(want) = &expect.verdict
        && observed.verdict(under_test) != Some(want.as_str())
    {
        differ("verdict", want.clone(), observed.verdict_shown(under_test));
    }
    // A guardrail under test that could not judge fails the case, whatever else
    // it expects: a missing component must not pass as "allow".
    let unjudged = matches!(observed.verdict(under_test), Some("not-run" | "failed"));
    let expects_unjudged = matches!(expect.verdict.as_deref(), Some("not-run" | "failed"));
    if unjudged && !expects_unjudged && expect.verdict.is_none() {
        differ(
            "verdict",
            format!("a judgement from `{under_test}`"),
            observed.verdict_shown(under_test),
        );
    }
    let (rule, level) = observed.violation();
    if let Some(want) = &expect.rule
        && rule != Some(want.as_str())
    {
        differ("rule", want.clone(), shown(rule));
    }
    if let Some(want) = &expect.level
        && level != Some(want.as_str())
    {
        differ("level", want.clone(), shown(level));
    }
    if let Some(want) = &expect.message {
        let got = observed.receipt.as_ref().and_then(|r| r.message.as_deref());
        if !got.is_some_and(|m| m.contains(want.as_str())) {
            differ("message", format!("containing {want:?}"), shown(got));
        }
    }
    if let Some(want) = &expect.state {
        for (key, value) in want {
            let got = observed.state.get(key);
            let parsed = got.map(|text| serde_json::from_str::<Value>(text).unwrap_or(json!(text)));
            if parsed.as_ref() != Some(value) {
                differ(
                    &format!("state.{key}"),
                    value.to_string(),
                    got.map_or("(absent)".into(), Clone::clone),
                );
            }
        }
    }
    for key in expect.absent.iter().flatten() {
        if let Some(got) = observed.state.get(key) {
            differ(&format!("state.{key}"), "(absent)".into(), got.clone());
        }
    }
    if let Some(want) = &expect.flags {
        let mut want = want.clone();
        want.sort();
        let mut got = observed.flags.clone();
        got.sort();
        if want != got {
            differ("flags", format!("{want:?}"), format!("{got:?}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(decision: &str, verdict: &str, rule: Option<&str>) -> Observed {
        let receipt: Receipt = serde_json::from_value(json!({
            "id": "r", "seq": 1, "time": "t", "session": "s", "event": "PreToolUse",
            "guardrails": [{"name": "g", "verdict": verdict, "rule": rule, "level": null,
                            "refuses": decision == "deny", "gate": "enforce", "us": 1}],
            "decision": decision, "message": "no force pushes here", "gate": "enforce",
            "prev": ""
        }))
        .unwrap();
        Observed {
            receipt: Some(receipt),
            state: BTreeMap::from([("count".to_owned(), "2".to_owned())]),
            flags: vec!["b".into(), "a".into()],
        }
    }

    #[test]
    fn every_field_that_differs_is_named_with_what_was_expected_and_got() {
        let expect = Expect {
            decision: Some("allow".into()),
            verdict: Some("pass".into()),
            rule: Some("other".into()),
            message: Some("force".into()),
            state: Some(BTreeMap::from([("count".into(), json!(3))])),
            absent: Some(vec!["count".into()]),
            flags: Some(vec!["a".into(), "b".into()]),
            ..Expect::default()
        };
        let found = check(
            &expect,
            &observed("deny", "violation", Some("force-push")),
            "g",
        );
        let fields: Vec<&str> = found.iter().map(|m| m.field.as_str()).collect();
        assert_eq!(
            fields,
            ["decision", "verdict", "rule", "state.count", "state.count"]
        );
        assert_eq!(found[3].expected, "3");
        assert_eq!(found[3].got, "2");
    }

    #[test]
    fn a_guardrail_that_could_not_judge_fails_the_case_unless_expected() {
        let mut not_run = observed("allow", "not-run", None);
        if let Some(receipt) = &mut not_run.receipt {
            receipt.guardrails[0].reason = Some("g.wasm does not exist".into());
        }
        let allow = Expect {
            decision: Some("allow".into()),
            ..Expect::default()
        };
        let found = check(&allow, &not_run, "g");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].got.contains("does not exist"), "{found:?}");
        let expected = Expect {
            verdict: Some("not-run".into()),
            ..Expect::default()
        };
        assert!(check(&expected, &not_run, "g").is_empty());
    }

    #[test]
    fn files_a_case_writes_stay_in_its_project() {
        for path in ["../escape", "/etc/passwd", "a/../../b", ""] {
            let case: Case = toml::from_str(&format!(
                "name = 'x'\n[[event]]\ntool = 'Bash'\nfiles = {{ {path:?} = 'x' }}\nexpect = {{ decision = 'allow' }}\n"
            ))
            .unwrap();
            assert!(
                check_case(&case, &[]).unwrap_err().contains("stay in it"),
                "{path}"
            );
        }
        let fine: Case = toml::from_str(
            "name = 'x'\n[[event]]\ntool = 'Bash'\nfiles = { 'reports/a.md' = 'x' }\nexpect = { decision = 'allow' }\n",
        )
        .unwrap();
        assert!(check_case(&fine, &[]).is_ok());
        let over_config: Case = toml::from_str(
            "name = 'x'\n[[event]]\ntool = 'Bash'\nfiles = { 'sandrail.toml' = '' }\nexpect = { decision = 'allow' }\n",
        )
        .unwrap();
        let refused = check_case(&over_config, &["sandrail.toml"]).unwrap_err();
        assert!(refused.contains("own config"), "{refused}");
    }

    #[test]
    fn a_case_that_expects_nothing_is_refused() {
        let case: Case = toml::from_str("name = 'x'\n[[event]]\ntool = 'Bash'\n").unwrap();
        assert!(
            check_case(&case, &[])
                .unwrap_err()
                .contains("expects nothing")
        );
    }
}
