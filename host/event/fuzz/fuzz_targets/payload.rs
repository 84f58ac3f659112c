//! Any bytes on stdin, as a harness would send them: the reader must end
//! without a panic, and what it reads must keep its promises (valid UTF-8 text,
//! a session, the tool's fields only for a tool event).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sandrail_event::payload::HookInput;

fuzz_target!(|data: &[u8]| {
    if let Ok(input) = HookInput::read(data) {
        assert!(!input.session_id.is_empty());
        assert!(input.kind.is_tool_event() || input.tool_input.is_none());
        let _ = sandrail_event::text::one_line(&input.raw, 100);
    }
});
