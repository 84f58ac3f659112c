//! An event's receipt: what was answered, by whom, under which policy.

use crate::config::Config;
use crate::engine::Engine;
use crate::evaluate::Dirs;
use crate::event::EventKind;
use crate::protocol::{self, HookInput};
use crate::receipts;

/// Records the event's receipt; what the person must hear of it goes into
/// `decision`'s alerts. One that cannot be written is a failure of sandrail's
/// own (said on stderr; why is returned), which `on_error` decides.
pub(super) fn write_receipt(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    policy: Option<String>,
    decision: &mut protocol::Decision,
    engine: &Engine,
) -> Result<(), String> {
    let state = dirs.state.as_deref();
    let why = match state {
        None => "no state directory (set SANDRAIL_STATE_DIR or HOME), so no receipt is written"
            .to_owned(),
        Some(state) => {
            let answered = answered(input.kind, decision);
            let observed = (decision.trace.observed_refusals > 0
                && answered == "allow"
                && protocol::can_refuse(input.kind))
            .then(|| refused(input.kind).to_owned());
            let mut receipt = receipts::Receipt {
                id: String::new(),
                seq: 0,
                time: crate::clock::rfc3339(crate::clock::now()),
                session: receipts::bounded(&input.session_id),
                event: input.kind.to_string(),
                tool: input.tool_name.as_deref().map(receipts::bounded),
                tool_use_id: input
                    .fields
                    .get("tool_use_id")
                    .and_then(|v| v.as_str())
                    .map(receipts::bounded),
                project: dirs
                    .project
                    .as_ref()
                    .map(|p| receipts::bounded(&p.display().to_string())),
                cwd: input.cwd.as_deref().map(receipts::bounded),
                input_sha256: input
                    .tool_input
                    .as_deref()
                    .map(|i| crate::sha256_hex(i.as_bytes())),
                guardrails: decision.trace.guardrails.clone(),
                decision: answered.to_owned(),
                observed,
                message: shown(decision),
                gate: config.gate,
                released: decision.trace.released,
                policy,
                checkpoint: decision.trace.checkpoint.clone(),
                checkpoint_failed: decision.trace.checkpoint_failed.clone(),
                alerts: decision.alerts.clone(),
                late: false,
                prev: String::new(),
            };
            receipt.id = receipts::new_id(&receipt);
            // The server's copy for the fleet's collector, sent once the receipt
            // is kept, queued without waiting.
            let copy = config
                .receipts_otlp
                .as_ref()
                .zip(engine.exporter())
                .map(|(endpoint, exporter)| (endpoint, exporter, receipt.clone()));
            let log = config.receipts_to_syslog.then_some(dirs.log.as_path());
            let appended = receipts::append(state, receipt, log);
            if appended.is_ok()
                && let Some((endpoint, exporter, receipt)) = copy
            {
                exporter.export(endpoint, &receipt);
            }
            match appended {
                Ok(receipts::Appended::Written { late, .. }) => {
                    if late > 0 {
                        decision.alerts.push(receipts::late_alert(late));
                    }
                    return Ok(());
                }
                Ok(receipts::Appended::Waiting { holder, kept }) => {
                    // Not lost: the next event chains it. The person hears why.
                    let alert = format!(
                        "sandrail: the receipts file is held by {holder}; this event's receipt waits in {} and the next event chains it",
                        kept.display()
                    );
                    eprintln!("{alert}");
                    decision.alerts.push(alert);
                    return Ok(());
                }
                Err(e) => e.to_string(),
            }
        }
    };
    eprintln!("sandrail: {why}");
    Err(why)
}

/// What the answer shows: the refusals when there are any, else the notes.
fn shown(decision: &protocol::Decision) -> Option<String> {
    let shown = if decision.refusals.is_empty() {
        &decision.notes
    } else {
        &decision.refusals
    };
    (!shown.is_empty()).then(|| shown.join("\n"))
}

/// What the harness is answered, in a receipt's words.
fn answered(kind: EventKind, decision: &protocol::Decision) -> &'static str {
    if decision.refusals.is_empty() || !protocol::can_refuse(kind) {
        "allow"
    } else if decision.ask {
        "ask"
    } else {
        refused(kind)
    }
}

/// A refusal of this event, in a receipt's words: a tool call is denied, anything
/// else blocked.
fn refused(kind: EventKind) -> &'static str {
    if kind == EventKind::PreToolUse {
        "deny"
    } else {
        "block"
    }
}
