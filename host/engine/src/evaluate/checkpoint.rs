//! Stage: checkpoint. Before a call that can change the project, and at a
//! session's start, the project is kept in its checkpoint store
//! (`sandrail_checkpoint`), so whatever the call destroys inside the project,
//! however it was spelled, `sandrail undo` brings back. For a large project it
//! runs on a thread of its own beside the guardrails, for a small one after
//! them, and either way is finished before the event is answered; it needs no
//! session lock (the store has its own).
//!
//! A call that provably changes nothing (a tool that only reads, a command
//! line whose every program only reads) is not checkpointed. A checkpoint
//! that cannot be taken (the store full, unreadable, held past its time) is
//! said on stderr, to the person and in the receipt, and the call is judged as
//! it would have been.

use std::time::Instant;

use sandrail_checkpoint::{Call, CheckpointError, Occasion, Record, Store};

use super::*;

/// The harness's tools that change no file: reading, searching, the web,
/// subagents (whose own calls are checkpointed), the harness's own lists and
/// plans. Every other tool (an MCP server's included) is taken to write.
const CHANGE_NO_FILE: &[&str] = &[
    "TodoWrite",
    "write_todos",
    "ExitPlanMode",
    "AskUserQuestion",
    "BashOutput",
    "KillShell",
    "KillBash",
    "ListMcpResourcesTool",
    "ReadMcpResourceTool",
];

/// A checkpoint to take, with all it needs on its thread.
pub(super) struct Due {
    store: Store,
    session: String,
    occasion: Occasion,
    harness: Option<String>,
    tool: Option<String>,
    call: Option<String>,
    tool_use_id: Option<String>,
    rules: sandrail_checkpoint::Rules,
    retention: sandrail_checkpoint::Retention,
    deadline: Instant,
}

/// Whether this event could call for a checkpoint, before its facts are
/// known: a PreToolUse or a SessionStart, checkpoints on, a project and a
/// state directory of the person's own (a managed server keeps no project's
/// files: it cannot write them back as their owner).
pub(super) fn may_be_due(input: &HookInput, config: &Config, dirs: &Dirs, engine: &Engine) -> bool {
    config.checkpoints.enabled
        && matches!(input.kind, EventKind::PreToolUse | EventKind::SessionStart)
        && dirs.state.is_some()
        && dirs.project.is_some()
        && matches!(engine.places, crate::locations::Places::User)
}

/// The checkpoint this event calls for, if any, now that its facts say what
/// the call can change. None where the project is the home directory or the
/// root: a checkpoint there would copy every cache, key and checkout of the
/// account on every call; said to the person at the session's start.
pub(super) fn due(
    input: &HookInput,
    config: &Config,
    dirs: &Dirs,
    facts: &crate::facts::Facts,
    deadline: Deadline,
    decision: &mut Decision,
) -> Option<Due> {
    let (state, project) = (dirs.state.as_ref()?, dirs.project.as_ref()?);
    let everything = project.parent().is_none()
        || crate::locations::homes()
            .iter()
            .any(|home| crate::locations::canonical(home) == *project);
    if everything {
        if input.kind == EventKind::SessionStart {
            let said = format!(
                "sandrail: {} is the home directory or the root, so no checkpoint is taken there: start the agent in a project's own directory for `sandrail undo` to be able to bring its work back",
                project.display()
            );
            eprintln!("{said}");
            decision.alerts.push(said);
        }
        return None;
    }
    let occasion = match input.kind {
        EventKind::SessionStart => Occasion::SessionStart,
        EventKind::PreToolUse if can_change_files(input, facts) => Occasion::Call,
        _ => return None,
    };
    let tool = facts.tool();
    let text = |key: &str| {
        tool.and_then(|t| t.get(key))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let call = match tool.and_then(|t| t.get("family")).and_then(|v| v.as_str()) {
        Some("command") => text("command"),
        _ => text("path"),
    };
    // At a session's start it has the whole event's time: that is where the
    // first checkpoint of a large project, which hashes every file, belongs.
    let deadline = match occasion {
        Occasion::Call => deadline
            .cut
            .min(Instant::now() + config.checkpoints.timeout),
        _ => deadline.cut,
    };
    Some(Due {
        store: Store::of(state, project),
        session: input.session_id.clone(),
        occasion,
        harness: input
            .fields
            .get("harness")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .or_else(|| Some("claude".to_owned())),
        tool: input.tool_name.clone(),
        call,
        tool_use_id: input
            .fields
            .get("tool_use_id")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
        rules: config.checkpoints.rules.clone(),
        retention: config.checkpoints.retention,
        deadline,
    })
}

/// Whether the call can change a file: any tool but those that only read,
/// and a command line unless every program it runs only reads.
fn can_change_files(input: &HookInput, facts: &crate::facts::Facts) -> bool {
    let Some(name) = input.tool_name.as_deref() else {
        return false;
    };
    if CHANGE_NO_FILE.contains(&name) {
        return false;
    }
    let family = facts
        .tool()
        .and_then(|t| t.get("family"))
        .and_then(|v| v.as_str());
    match family {
        Some("read" | "search" | "agent" | "egress") => false,
        Some("command") => !facts.changes.read_only,
        _ => true,
    }
}

/// A checkpoint under way: on a thread of its own beside the guardrails for a
/// large project, or taken once they are done for a small one (where
/// starting threads costs more than the walk).
pub(super) enum Taking {
    Later(Box<Due>),
    Beside(std::thread::JoinHandle<Result<Record, CheckpointError>>),
}

impl Taking {
    pub(super) fn start(due: Due) -> Taking {
        if due.store.is_small() {
            Taking::Later(Box::new(due))
        } else {
            Taking::Beside(std::thread::spawn(move || due.take()))
        }
    }

    /// The checkpoint, once taken; none where it was still to take and the
    /// call is refused outright (it will not run; one the user is asked
    /// about may).
    pub(super) fn finish(
        self,
        kind: EventKind,
        decision: &Decision,
    ) -> Option<Result<Record, CheckpointError>> {
        let refused =
            kind == EventKind::PreToolUse && !decision.refusals.is_empty() && !decision.ask;
        match self {
            Taking::Later(_) if refused => None,
            Taking::Later(due) => Some(due.take()),
            Taking::Beside(thread) => Some(thread.join().unwrap_or_else(|_| Err(faulted()))),
        }
    }
}

impl Due {
    /// Takes it (on the checkpoint's own thread); at a session's start, also
    /// prunes the store when that is due.
    pub(super) fn take(self) -> Result<Record, CheckpointError> {
        let taken = self.take_it();
        if let Err(e) = &taken {
            self.store.note_failure(&e.to_string());
        }
        taken
    }

    fn take_it(&self) -> Result<Record, CheckpointError> {
        let call = Call {
            session: &self.session,
            occasion: self.occasion,
            harness: self.harness.as_deref(),
            tool: self.tool.as_deref(),
            call: self.call.as_deref(),
            tool_use_id: self.tool_use_id.as_deref(),
        };
        let taken = self.store.take(&call, &self.rules, self.deadline);
        if self.occasion == Occasion::SessionStart
            && let Some(Err(e)) = self.store.prune_if_due(&self.retention)
        {
            eprintln!("sandrail: the checkpoint store could not be pruned: {e}");
        }
        taken
    }
}

/// Whether the agent is told of the checkpoint: the call removes something
/// that is there, inside the project (judged against the disk, not the
/// words), or puts a repository's files back as a commit has them. Worked out
/// before the facts go to the guardrails.
#[derive(Debug, Clone, Copy)]
pub(super) struct Stakes {
    loses_something_here: bool,
}

impl Stakes {
    pub(super) fn of(input: &HookInput, facts: &crate::facts::Facts, dirs: &Dirs) -> Stakes {
        let Some(project) = dirs.project.as_deref() else {
            return Stakes {
                loses_something_here: false,
            };
        };
        let cwd = input.cwd.as_deref().map(std::path::Path::new);
        let removes_here = facts.changes.paths.iter().any(|change| {
            if !change.removes {
                return false;
            }
            let path = crate::facts::absolute(&change.path, cwd);
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            path.starts_with(project) && path != project && path.symlink_metadata().is_ok()
        });
        let discards = project.join(".git").exists() && runs_git_discarding(facts);
        Stakes {
            loses_something_here: removes_here || discards,
        }
    }
}

/// A checkpoint whose thread ended without an answer (a fault of sandrail's,
/// its message above).
fn faulted() -> CheckpointError {
    CheckpointError::store(
        std::path::Path::new("(checkpoint)"),
        std::io::Error::other("the checkpoint failed inside sandrail (its error is above)"),
    )
}

/// What the checkpoint's outcome tells the receipt, the person and the agent:
/// the receipt names it; the agent hears of it where the call it lets through
/// loses something here. One that could not be taken is said on stderr and
/// in the receipt, and at a session's start to the person too (once, not on
/// every call).
pub(super) fn report(
    taken: Result<Record, CheckpointError>,
    decision: &mut Decision,
    stakes: Stakes,
    kind: EventKind,
) {
    match taken {
        Ok(record) => {
            for warning in &record.warnings {
                let said = format!("sandrail: checkpoint {}: {warning}", record.id);
                eprintln!("{said}");
                if kind == EventKind::SessionStart {
                    decision.alerts.push(said);
                }
            }
            if !record.left_out.is_empty() && record.occasion == Occasion::SessionStart {
                let listed: Vec<String> = record
                    .left_out
                    .iter()
                    .take(5)
                    .map(ToString::to_string)
                    .collect();
                eprintln!(
                    "sandrail: checkpoints of this project leave out {} file(s): {}{}",
                    record.left_out.len(),
                    listed.join(", "),
                    if record.left_out.len() > 5 {
                        ", …"
                    } else {
                        ""
                    }
                );
            }
            if decision.refusals.is_empty() && stakes.loses_something_here {
                decision.notes.push(guest_text::attributed(
                    HOST_AUTHOR,
                    &format!(
                        "checkpoint {} holds the project as it was before this call: the person can bring it back with `sandrail undo {}`.",
                        record.id, record.id
                    ),
                ));
            }
            decision.trace.checkpoint = Some(record.id);
        }
        Err(e) => {
            let said = format!(
                "sandrail: no checkpoint was taken ({e}); calls are judged as they would have been, but what they change cannot be undone with `sandrail undo` (`sandrail doctor` says more)"
            );
            eprintln!("{said}");
            if kind == EventKind::SessionStart {
                decision.alerts.push(said);
            }
            decision.trace.checkpoint_failed = Some(e.to_string());
        }
    }
}

/// A git command that puts working-tree files back as a commit or the index
/// has them, discarding what was not committed.
fn runs_git_discarding(facts: &crate::facts::Facts) -> bool {
    facts
        .tool()
        .and_then(|t| t.get("commands"))
        .and_then(|v| v.as_array())
        .is_some_and(|commands| {
            commands.iter().any(|argv| {
                let words: Vec<&str> = argv
                    .as_array()
                    .map(|a| a.iter().filter_map(|w| w.as_str()).collect())
                    .unwrap_or_default();
                words
                    .first()
                    .is_some_and(|p| crate::shell::program(p) == "git")
                    && words.iter().skip(1).any(|w| {
                        matches!(
                            *w,
                            "checkout" | "restore" | "reset" | "clean" | "rm" | "stash" | "switch"
                        )
                    })
            })
        })
}
