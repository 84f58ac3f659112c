//! `sandrail-hook`: the forwarding hook as a binary of its own. It hands the
//! payload on stdin to the `sandrail serve` on `SANDRAIL_SERVE_SOCKET` and
//! relays the answer exactly as `sandrail hook` would (the JSON on stdout, exit
//! 2 with the reason on stderr for a refusal without one), linking nothing of
//! the engine, so it starts about as fast as a process can.
//!
//! When no server is named, or none answers and `SANDRAIL_SERVE_REQUIRED=1` is
//! not set, it runs `sandrail hook` (beside it, else on `PATH`) on the same
//! payload; with it set, the event is refused. A local hook that cannot be
//! started refuses the event too: failing open is the configuration's choice.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use sandrail_forward::{
    Forwarding, MAX_PAYLOAD_BYTES, Origin, REQUIRED_VAR, Relayed, SOCKET_VAR, STARTED_VAR, forward,
    start_stamp,
};

fn main() -> ExitCode {
    let started = std::time::SystemTime::now();
    let mut payload = Vec::new();
    // What cannot be read is handed on as far as it was read: `sandrail hook`
    // then finds it unreadable, and the config's `on_error` decides.
    let read = std::io::stdin()
        .lock()
        .take(MAX_PAYLOAD_BYTES as u64 + 1)
        .read_to_end(&mut payload);
    // The sandrail that judges here, which a server of this user must be running.
    let local = local_sandrail();
    let Some(forwarding) = Forwarding::from_env() else {
        return judge_locally(&local, &payload, started);
    };
    if let Err(e) = read {
        eprintln!("sandrail: cannot read the hook payload: {e}");
        return judge_locally(&local, &payload, started);
    }
    match forward(
        &forwarding.socket,
        &payload,
        &Origin::of_this_process(),
        &local,
    ) {
        Ok(Relayed::Answer(answer)) => {
            if let Some(answer) = answer {
                let mut stdout = std::io::stdout().lock();
                let _ = writeln!(stdout, "{answer}").and_then(|()| stdout.flush());
            }
            ExitCode::SUCCESS
        }
        Ok(Relayed::Block(reason)) => {
            eprintln!("{reason}");
            ExitCode::from(2)
        }
        Ok(Relayed::Unreadable(why)) => {
            eprintln!("{why}");
            ExitCode::SUCCESS
        }
        Err(e) if forwarding.required => {
            eprintln!(
                "sandrail: {e}; the event is refused, because the server is required ({REQUIRED_VAR}=1)"
            );
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("sandrail: {e}; the event is judged by sandrail hook instead");
            judge_locally(&local, &payload, started)
        }
    }
}

/// The sandrail this hook judges with: the one beside it, else the first on
/// `PATH`.
fn local_sandrail() -> PathBuf {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("sandrail")))
        .filter(|path| path.is_file());
    beside
        .or_else(|| {
            let path = std::env::var_os("PATH")?;
            std::env::split_paths(&path)
                .map(|dir| dir.join("sandrail"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("sandrail"))
}

/// `program hook` on `payload`, its answer and exit code relayed. Its
/// deadline counts from when this hook `started`, not from its own start.
fn judge_locally(program: &Path, payload: &[u8], started: std::time::SystemTime) -> ExitCode {
    let child = Command::new(program)
        .arg("hook")
        // It judges here: it must not forward again.
        .env_remove(SOCKET_VAR)
        .env(STARTED_VAR, start_stamp(started))
        .stdin(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            eprintln!(
                "sandrail: cannot start {} hook ({e}), so the event is refused; install sandrail beside sandrail-hook or on PATH",
                program.display()
            );
            return ExitCode::from(2);
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that stops reading early has what it needs.
        let _ = stdin.write_all(payload);
    }
    match child.wait() {
        Ok(status) => match status.code() {
            Some(0) => ExitCode::SUCCESS,
            Some(2) => ExitCode::from(2),
            // `sandrail hook` answers with 0 or 2 only; anything else is a
            // crash, which a harness would take as a pass.
            Some(code) => {
                eprintln!(
                    "sandrail: sandrail hook ended with exit code {code}, not an answer, so the event is refused"
                );
                ExitCode::from(2)
            }
            None => {
                eprintln!("sandrail: sandrail hook was ended by a signal, so the event is refused");
                ExitCode::from(2)
            }
        },
        Err(e) => {
            eprintln!("sandrail: cannot wait for sandrail hook ({e}), so the event is refused");
            ExitCode::from(2)
        }
    }
}
