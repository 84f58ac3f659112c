//! {{name}}: refuses a file write that holds an AWS access key id, and once the
//! session has tried `curl_after` of them, refuses `curl` too (keys were about,
//! so nothing leaves by curl). It sets the session flag `aws-key-written` for
//! other guardrails to check (its entry grants it: `[guardrail.flags] set`).
//!
//! Build: `cargo build --release --target wasm32-wasip2`
//! Test:  `cargo test` (native, the SDK's in-memory host) and `sandrail test`
//!        (cases.toml, the built component in the real sandbox).

use sandrail_guest::{Event, Guardrail, Result, Verdict, flags, state};
use serde::Deserialize;

/// The entry's `[guardrail.config]`.
#[derive(Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Config {
    /// After this many keys written (or tried), refuse curl as well.
    curl_after: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { curl_after: 3 }
    }
}

/// The state key counting the keys seen in this session.
const KEYS_SEEN: &str = "keys-seen";
/// The session flag it sets when it sees a key.
const KEY_FLAG: &str = "aws-key-written";

struct Guard;

impl Guardrail for Guard {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let config: Config = event.config_as()?;
        let written = ["content", "new_string"]
            .into_iter()
            .filter_map(|field| event.tool_field(field));
        if written.into_iter().any(holds_aws_key) {
            let seen: u32 = state::get(KEYS_SEEN)?.unwrap_or(0) + 1;
            state::set(KEYS_SEEN, &seen)?;
            flags::set(KEY_FLAG)?;
            return Ok(Verdict::violation(
                "aws-key",
                "This write holds an AWS access key id; read the key from the environment instead.",
            ));
        }
        let curl = event.command().is_some_and(|c| c.split_whitespace().any(|w| w == "curl"));
        if curl && state::get::<u32>(KEYS_SEEN)?.unwrap_or(0) >= config.curl_after {
            return Ok(Verdict::violation(
                "curl-after-keys",
                "AWS keys were written in this session, so curl is refused; ask the user to run it.",
            ));
        }
        Ok(Verdict::pass())
    }
}

/// Whether `text` holds `AKIA` followed by 16 upper-case letters or digits.
fn holds_aws_key(text: &str) -> bool {
    text.match_indices("AKIA").any(|(at, _)| {
        let rest = &text.as_bytes()[at + 4..];
        rest.len() >= 16
            && rest[..16]
                .iter()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    })
}

sandrail_guest::export!(Guard);

#[cfg(test)]
mod tests {
    use super::*;
    use sandrail_guest::testing;
    use serde_json::json;

    const KEY: &str = "AKIAIOSFODNN7EXAMPLE";

    fn write(content: &str) -> Event {
        Event::pre_tool_use("Write", json!({"file_path": "a.txt", "content": content}))
    }

    fn curl() -> Event {
        Event::pre_tool_use("Bash", json!({"command": "curl https://example.com"}))
    }

    #[test]
    fn a_key_in_a_write_is_refused_and_counted() {
        let verdict = testing::evaluate::<Guard>(&write(KEY)).unwrap();
        assert!(matches!(verdict, Verdict::Violation(v) if v.rule == "aws-key"));
        assert_eq!(testing::state_value::<u32>(KEYS_SEEN), Some(1));
        assert!(testing::flag_is_set(KEY_FLAG));
    }

    #[test]
    fn an_ungranted_flag_fails_the_guardrail() {
        // Without the grant the host refuses the flag; the guardrail then fails,
        // which its entry's `on_error` decides about. Here: the error surfaces.
        testing::grant_flags(&[], &[], &[]);
        let failed = testing::evaluate::<Guard>(&write(KEY)).unwrap_err();
        assert!(failed.to_string().contains("aws-key-written"), "{failed}");
    }

    #[test]
    fn curl_is_refused_only_after_enough_keys() {
        let curl_after_2 = curl().with_config(json!({"curl_after": 2}));
        assert_eq!(testing::evaluate::<Guard>(&curl_after_2).unwrap(), Verdict::pass());
        testing::put_state(KEYS_SEEN, &2);
        let verdict = testing::evaluate::<Guard>(&curl_after_2).unwrap();
        assert!(matches!(verdict, Verdict::Violation(v) if v.rule == "curl-after-keys"));
    }

    #[test]
    fn plain_writes_pass() {
        assert_eq!(testing::evaluate::<Guard>(&write("hello")).unwrap(), Verdict::pass());
        assert!(testing::state_entries().is_empty());
        assert!(!testing::flag_is_set(KEY_FLAG));
    }
}
