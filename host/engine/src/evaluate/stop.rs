//! What a Stop does beyond its gates: each active context's `leave` runs, and the
//! cycle is settled — the read mark advanced on an accepted Stop, a refused one
//! counted and, past `max_refused_stops` in a row, let through.

use super::*;

/// At an unrefused Stop, each active context's `leave` runs: one that lets go
/// becomes inactive; one that holds refuses the Stop and stays active; one that
/// cannot run stays active, and its `on_error` decides whether the Stop waits.
pub(super) fn leave_contexts(
    runtime: &Runtime,
    txn: &mut Option<StateTxn>,
    decision: &mut Decision,
    config: &Config,
    base_event: &wit::Event,
    leaving: Vec<(&Guardrail, Result<Prepared, String>)>,
) {
    for (guardrail, prepared) in leaving {
        let gate = config.gate_of(guardrail);
        let name = &guardrail.name;
        let loaded = prepared.and_then(|p| runtime.load(&p).map_err(|e| e.to_string()));
        let component = match loaded {
            Ok(component) => component,
            Err(why) => {
                not_run(decision, config, guardrail, None, &why);
                continue;
            }
        };
        let Some(t) = txn.take() else {
            break;
        };
        let mut record = t.context(name).unwrap_or_default();
        let keyspace = Keyspace::new(
            name,
            guardrail.requires.clone(),
            guardrail.limits.state_bytes,
        )
        .with_flags(guardrail.flags.clone(), crate::clock::now())
        .with_cycle(
            config.required_contexts(guardrail),
            base_event.turn.as_ref().map(|t| t.id.clone()),
        )
        .with_txn(t);
        let mut event = base_event.clone();
        event.config = guardrail.config.to_string();
        let payload = record.payload.clone().unwrap_or_else(|| "null".to_owned());
        let started = std::time::Instant::now();
        let outcome = runtime.run_context(
            &component,
            name,
            runtime::ContextCall::Leave {
                event: &event,
                payload: &payload,
            },
            keyspace,
            &guardrail.data,
            guardrail.limits,
        );
        let mut run = GuardrailRun {
            name: name.clone(),
            sha256: Some(component.sha256.clone()),
            gate,
            us: u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            exceeded: outcome.exceeded.iter().map(|l| (*l).to_owned()).collect(),
            ..GuardrailRun::default()
        };
        let answer = outcome.result.map_err(Failure::Run).and_then(|a| match a {
            runtime::ContextAnswer::Holds(Some(reason)) => {
                match check_verdict(wit::Verdict::Deny(reason.clone())) {
                    Ok(_) => Ok(runtime::ContextAnswer::Holds(Some(reason))),
                    Err(e) => Err(Failure::Malformed(e)),
                }
            }
            other => Ok(other),
        });
        let finished = outcome.keyspace.finish(answer.is_ok());
        take_back(
            finished,
            txn,
            decision,
            config,
            &format!("context '{name}'"),
        );
        match answer {
            Ok(runtime::ContextAnswer::Holds(None)) => {
                run.verdict = "leave".to_owned();
                record.active = false;
                record.payload = None;
                if let Some(t) = txn.as_mut()
                    && let Err(e) = t.set_context(name, &record)
                {
                    eprintln!("sandrail: context '{name}' could not be left: {e}");
                }
            }
            Ok(runtime::ContextAnswer::Holds(Some(reason))) => {
                run.verdict = "hold".to_owned();
                run.refuses = gated(decision, name, gate, |d| {
                    record_verdict(
                        d,
                        name,
                        Judged::Refuse {
                            author: String::new(),
                            text: reason,
                        },
                    )
                });
            }
            Ok(runtime::ContextAnswer::Transition(_)) => run.verdict = "failed".to_owned(),
            Err(failure) => {
                run.verdict = "failed".to_owned();
                run.refuses = gated(decision, name, gate, |d| {
                    could_not_judge(
                        d,
                        guardrail,
                        Stage::Failed,
                        &failure.to_string(),
                        &failure.brief(),
                    )
                });
            }
        }
        decision.trace.guardrails.push(run);
    }
}

/// Settles the cycle once a Stop is judged: accepted, the read mark advances;
/// refused, it stays, and past `max_refused_stops` refusals in a row the host lets
/// the Stop through, saying so.
pub(super) fn settle(
    txn: &mut Option<StateTxn>,
    decision: &mut Decision,
    input: &HookInput,
    turn: Option<&transcript::Turn>,
    config: &Config,
) {
    let Some(t) = txn.as_mut() else {
        if !decision.refusals.is_empty() {
            eprintln!("sandrail: the cycle cannot be reached, so this refused Stop is not counted");
        }
        return;
    };
    let stop_hook_active = input
        .fields
        .get("stop_hook_active")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let refused = !decision.refusals.is_empty();
    let transcript = input.transcript_path.as_deref().map(Path::new);
    let seen = crate::cycle::StopSeen {
        turn,
        chained: stop_hook_active,
        transcript_len: refused.then(|| transcript_len(input)).flatten(),
        in_a_tool_call: refused && transcript.and_then(transcript::in_a_tool_call) == Some(true),
    };
    let settled = crate::cycle::settle_stop(t, refused, seen, config.max_refused_stops);
    match settled {
        Ok(crate::cycle::StopOutcome::Accepted | crate::cycle::StopOutcome::Refused { .. }) => {}
        Ok(crate::cycle::StopOutcome::NotCounted { count }) => eprintln!(
            "sandrail: this refused Stop does not count toward settings.max_refused_stops ({count} so far): {}",
            if seen.in_a_tool_call {
                "the session's transcript shows a tool call still running, so it came from within that call, not from the harness"
            } else {
                "the session's transcript has not grown since the last refused Stop, so the harness did not send it after the agent answered"
            }
        ),
        Ok(crate::cycle::StopOutcome::Released { count }) => {
            let max = config.max_refused_stops;
            eprintln!(
                "sandrail: {count} Stops in a row were refused in this turn, more than settings.max_refused_stops = {max}; this one is let through, and the read mark stays where it is"
            );
            let reasons = std::mem::take(&mut decision.refusals).join(" ");
            decision.ask = false;
            decision.notes.push(guest_text::attributed(
                HOST_AUTHOR,
                &format!(
                    "This Stop was let through although the guardrails refuse it: {count} Stops in a row were refused in this turn (settings.max_refused_stops = {max}). What they said: {reasons}"
                ),
            ));
            decision.trace.released = true;
        }
        Err(e) => eprintln!("sandrail: the cycle could not be settled after this Stop: {e}"),
    }
}

/// The size of the session's transcript (the hook reads a Stop against the
/// session's own, whatever the payload names).
fn transcript_len(input: &HookInput) -> Option<u64> {
    let path = input.transcript_path.as_deref()?;
    std::fs::metadata(path).ok().map(|m| m.len())
}
