//! The current time. `SANDRAIL_NOW` (RFC 3339) replaces it, so that tests can
//! drive what depends on time — TTLs, override windows — without waiting.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    let now = match std::env::var("SANDRAIL_NOW") {
        Ok(text) => humantime::parse_rfc3339_weak(&text).unwrap_or_else(|e| {
            eprintln!("sandrail: SANDRAIL_NOW is not an RFC 3339 time ({e}); using the clock");
            SystemTime::now()
        }),
        Err(_) => SystemTime::now(),
    };
    now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// `seconds` since the epoch as RFC 3339 in UTC, to the second.
pub fn rfc3339(seconds: u64) -> String {
    humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(seconds)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_seconds() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_776_000_000), "2026-04-12T13:20:00Z");
    }
}
