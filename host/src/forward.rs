//! The forwarding hook: `sandrail hook` with `SANDRAIL_SERVE_SOCKET` set hands the
//! payload to the `sandrail serve` listening on that Unix socket and relays its
//! answer, loading no engine of its own. When nothing answers there, the hook
//! judges the event itself, unless `SANDRAIL_SERVE_REQUIRED=1` says the server is
//! required, in which case the event is refused: failing open is the
//! configuration's choice, never the side effect of a server that is down.
//!
//! The exchange itself lives in the `sandrail-forward` crate, which the small
//! `sandrail-hook` binary shares.

use std::io::Read;
use std::time::Instant;

use crate::engine::Engine;
use crate::hook::{Origin, Outcome};

pub use sandrail_forward::{
    BLOCK_HEADER, CWD_ENCODED_HEADER, DEADLINE, ForwardError, Forwarding, PROJECT_ENCODED_HEADER,
    REQUIRED_VAR, Relayed, SOCKET_VAR, STARTED_VAR, THIS_BINARY, UNREADABLE_HEADER, forward,
    serves, started_at,
};

/// Judges the payload on `stdin` through the server, or here on `engine` (made
/// only then) when it cannot be reached and is not required, within the
/// deadline of a hook that `started` then. Every problem is said on stderr.
pub fn run(
    forwarding: &Forwarding,
    stdin: impl Read,
    origin: &Origin,
    engine: impl FnOnce() -> Engine,
    started: Instant,
) -> Outcome {
    let mut payload = Vec::new();
    let limit = crate::protocol::MAX_PAYLOAD_BYTES as u64 + 1;
    if let Err(e) = stdin.take(limit).read_to_end(&mut payload) {
        return crate::hook::unreadable(
            &format!("cannot read the hook payload: {e}"),
            origin,
            &crate::locations::Places::User,
        );
    }
    // A server of this user must be running this very binary.
    let this = std::path::Path::new(THIS_BINARY);
    match forward(&forwarding.socket, &payload, origin, this) {
        Ok(Relayed::Answer(answer)) => Outcome {
            answer,
            ..Outcome::default()
        },
        Ok(Relayed::Block(reason)) => {
            eprintln!("{reason}");
            Outcome {
                block: Some(reason),
                ..Outcome::default()
            }
        }
        Ok(Relayed::Unreadable(why)) => {
            eprintln!("{why}");
            Outcome {
                unreadable: Some(why),
                ..Outcome::default()
            }
        }
        Err(e) if forwarding.required => {
            let reason = format!(
                "sandrail: {e}; the event is refused, because the server is required ({REQUIRED_VAR}=1)"
            );
            eprintln!("{reason}");
            Outcome {
                block: Some(reason),
                ..Outcome::default()
            }
        }
        Err(e) => {
            eprintln!("sandrail: {e}; the event is judged here instead");
            crate::runtime::leave_teardown_to_exit();
            crate::hook::run(&payload[..], origin, &engine(), started)
        }
    }
}
