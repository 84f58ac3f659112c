//! `sandrail doctor --managed`: checks a managed set-up from the agent's side
//! (docs/managed.md). Claude Code's managed settings must be root's alone and
//! hand every event sandrail handles to the server, refusing when it does not
//! answer; the socket they name must answer; root's policy must be root's
//! alone, or the server judges by the embedded default.

use std::path::{Path, PathBuf};

use sandrail::harness::Harness;
use sandrail::managed::{self, ManagedHooks, System};

use super::Findings;

pub(super) fn check(settings: &Path, findings: &mut Findings) {
    let sockets = match ManagedHooks::read(settings) {
        Ok(Some(hooks)) => hooks_of(settings, &hooks, findings),
        Ok(None) => {
            findings.error(
                "managed",
                format!("{} does not exist: Claude Code runs no managed hook, and the agent's own settings decide what runs", settings.display()),
                "write it as docs/managed.md shows (as root)".into(),
            );
            Vec::new()
        }
        Err(why) => {
            findings.error(
                "managed",
                format!("{why}: Claude Code reads no managed hooks from it"),
                "fix it as root (docs/managed.md shows the file)".into(),
            );
            Vec::new()
        }
    };
    for socket in sockets {
        socket_answers(&socket, findings);
    }
    let system = System::from_environment();
    let policy = system.config();
    match sandrail::policy::managed_unfit(&policy) {
        None => findings.ok(
            "policy",
            format!(
                "{} is root's alone: the server judges by it",
                policy.display()
            ),
        ),
        Some(why) => findings.error(
            "policy",
            format!(
                "the managed policy {} {why}: the server judges by the embedded default",
                policy.display()
            ),
            "make every file of the policy root's alone (owned by root, writable by nobody else)"
                .into(),
        ),
    }
}

/// The managed settings' hooks: every event sandrail handles forwarded, each
/// refusing when the server does not answer. Returns the sockets they name.
fn hooks_of(settings: &Path, hooks: &ManagedHooks, findings: &mut Findings) -> Vec<PathBuf> {
    match managed::not_root_owned(settings) {
        None => findings.ok("managed", format!("{} is root's alone", settings.display())),
        Some(why) => findings.error(
            "managed",
            format!("{why}: whoever can write it can unregister sandrail"),
            format!(
                "as root: chown root:root {0} && chmod 644 {0}",
                settings.display()
            ),
        ),
    }
    if hooks.managed_hooks_only {
        findings.ok(
            "managed",
            "allowManagedHooksOnly: no user or project hook runs besides these".into(),
        );
    } else {
        findings.warn(
            "managed",
            "allowManagedHooksOnly is not set: hooks the agent's user or project settings add run too (they cannot unregister sandrail's)".into(),
            "set \"allowManagedHooksOnly\": true in the managed settings".into(),
        );
    }
    let events = Harness::Claude.settings().events;
    let missing: Vec<&str> = events
        .iter()
        .map(|(event, _)| *event)
        .filter(|event| !hooks.forwarding.contains_key(*event))
        .collect();
    if missing.is_empty() {
        findings.ok(
            "managed",
            format!(
                "every event sandrail handles ({}) is forwarded to the server",
                events.len()
            ),
        );
    } else {
        findings.error(
            "managed",
            format!(
                "the managed settings do not forward {}: those events are never judged",
                missing.join(", ")
            ),
            "register the forwarding hook for every event, as docs/managed.md shows".into(),
        );
    }
    let open: Vec<&str> = hooks
        .forwarding
        .iter()
        .filter(|(_, found)| found.iter().any(|(_, required)| !required))
        .map(|(event, _)| event.as_str())
        .collect();
    if !open.is_empty() {
        findings.error(
            "managed",
            format!(
                "the hooks of {} do not set SANDRAIL_SERVE_REQUIRED=1: while the server is down those events are judged by the agent's own user, or not at all",
                open.join(", ")
            ),
            "put SANDRAIL_SERVE_REQUIRED=1 before each forwarding hook".into(),
        );
    }
    let mut sockets: Vec<PathBuf> = hooks
        .forwarding
        .values()
        .flatten()
        .map(|(socket, _)| socket.clone())
        .collect();
    sockets.sort();
    sockets.dedup();
    sockets
}

/// The socket a forwarding hook names answers a hook payload.
fn socket_answers(socket: &Path, findings: &mut Findings) {
    // An event sandrail has no verdict for: the server answers it with nothing.
    let probe = br#"{"session_id":"sandrail-doctor","hook_event_name":"Notification","message":"sandrail doctor --managed"}"#;
    let origin = sandrail::hook::Origin::of_this_process();
    // The managed server is another user's: its socket's place vouches for it.
    let this = Path::new(sandrail::forward::THIS_BINARY);
    match sandrail::forward::forward(socket, probe, &origin, this) {
        Ok(_) => findings.ok(
            "socket",
            format!("{} answers hook payloads", socket.display()),
        ),
        Err(e) => findings.error(
            "socket",
            format!(
                "{}: {e}; the forwarding hooks refuse every event while it does not answer",
                socket.display()
            ),
            "start the server: systemctl start sandrail (contrib/sandrail.service)".into(),
        ),
    }
}
