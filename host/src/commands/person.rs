//! The commands that loosen what a running session is held to — `trust`,
//! `guardrail off --session`, `state set`, `state delete`, `flag set`, `flag
//! clear` — are a person's: they run only with a terminal on stdin and stdout
//! and a confirmation typed there.
//!
//! An agent's tool calls run on pipes, so a copy of the binary run by the agent
//! is turned away here whatever it is called. The confirmation is a code shown
//! at the prompt, so input piped in ahead of it cannot answer it.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

/// The exit status of a command refused for want of a person.
pub const NOT_A_PERSON: u8 = 2;

/// Asks the person at the terminal to confirm `what` by typing the code shown.
/// `Err` carries the exit status to end with: 2 when there is no terminal, 1
/// when the code was not typed.
pub fn confirm(command: &str, what: &str) -> Result<(), ExitCode> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        eprintln!(
            "sandrail: `sandrail {command}` {what}, so it needs a person at a terminal: stdin and stdout must be a terminal and the confirmation is typed there. Run it yourself in a terminal, not through the agent. Nothing was changed."
        );
        return Err(ExitCode::from(NOT_A_PERSON));
    }
    let Some(code) = challenge() else {
        eprintln!(
            "sandrail: the system gave no random bytes for the confirmation code; nothing was changed"
        );
        return Err(ExitCode::FAILURE);
    };
    print!("This {what}. Type {code} to confirm: ");
    let _ = std::io::stdout().flush();
    let mut typed = String::new();
    let read = std::io::stdin().lock().read_line(&mut typed);
    if read.is_ok() && typed.trim() == code {
        return Ok(());
    }
    eprintln!("sandrail: not confirmed; nothing was changed");
    Err(ExitCode::FAILURE)
}

/// Six characters no one could have typed ahead of the prompt.
fn challenge() -> Option<String> {
    const ALPHABET: &[u8] = b"abcdefghjkmnpqrstuvwxyz23456789";
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).ok()?;
    Some(
        bytes
            .iter()
            .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
            .collect(),
    )
}

/// The error for a write a person's command could not make: what was not
/// kept, where, and what that leaves. Under the harness's OS sandbox sandrail's
/// state is read-only, so a run the agent drove (through a pseudo-terminal)
/// ends here, changing nothing.
pub fn not_saved(
    command: &str,
    place: &std::path::Path,
    what: &str,
    leaves: &str,
    error: impl std::fmt::Display,
) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} could not be saved in {} ({error}); {leaves}. Run `sandrail {command}` again where sandrail's state can be written (not through the agent: under the harness's OS sandbox it is read-only)",
        place.display()
    )
}
