//! A payload in another harness's dialect: read into the host's model (Claude
//! Code's), judged, and answered in the harness's own words. Claude Code's own
//! payload goes on as it came.

use std::io::Read;

use super::{Origin, Outcome};
use crate::harness::{Harness, Translated};
use crate::protocol::{MAX_PAYLOAD_BYTES, PayloadError};

/// Judges the payload on `stdin`, written in `harness`'s dialect: read into the
/// host's model, judged by `judge` (here or by a server), answered in the dialect.
pub fn judge(
    harness: Harness,
    stdin: impl Read,
    origin: &Origin,
    judge: impl FnOnce(&[u8], &Origin) -> Outcome,
) -> Outcome {
    let mut bytes = Vec::new();
    let read = stdin
        .take(MAX_PAYLOAD_BYTES as u64 + 1)
        .read_to_end(&mut bytes);
    let origin = Origin {
        project: origin.project.clone().or_else(|| harness.project_dir()),
        cwd: origin.cwd.clone(),
    };
    let places = crate::locations::Places::User;
    if let Err(e) = read {
        let why = PayloadError::Read(e).to_string();
        return super::unreadable(&why, &origin, &places);
    }
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return super::unreadable(&PayloadError::TooLarge.to_string(), &origin, &places);
    }
    let raw = String::from_utf8_lossy(&bytes);
    let event = match harness.read(&raw) {
        Ok(Translated::Event(event)) => event,
        // Claude Code's payload goes on as it came, so the host reports what it
        // had to repair in it.
        Ok(Translated::AsIs) => return judge(&bytes, &origin),
        Ok(Translated::Unjudged(name)) => {
            if crate::debug_logging() {
                eprintln!(
                    "sandrail: {} sends '{name}', which sandrail has no verdict for; nothing to do",
                    harness.title()
                );
            }
            return Outcome::default();
        }
        Err(e) => {
            let why = format!("{} payload: {e}", harness.title());
            return super::unreadable(&why, &origin, &places);
        }
    };
    // A harness that names no project directory: the project its hooks were
    // registered in, not whichever subdirectory the session stands in.
    let origin = match (&origin.project, &event.cwd) {
        (None, Some(cwd)) => Origin {
            project: Some(harness.project_of(std::path::Path::new(cwd))),
            cwd: origin.cwd.clone(),
        },
        _ => origin,
    };
    let mut outcome = judge(event.payload.as_bytes(), &origin);
    outcome.answer = outcome
        .answer
        .and_then(|claude| harness.answer(&event, &claude));
    outcome
}
