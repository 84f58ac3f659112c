//! What a guardrail makes sandrail print: its log messages and what it wrote to
//! stdout and stderr, all on sandrail's stderr, every line prefixed with the
//! guardrail's name, within one budget per event.
//!
//! Each line costs its bytes plus [`LINE_COST`], so a guardrail cannot flood the
//! terminal with empty lines any more than with long ones.

use crate::guest_text;

/// Most bytes one guardrail's lines may cost per event.
pub const BUDGET_BYTES: usize = 64 * 1024;
/// What a line costs on top of its text: about what sandrail's prefix adds, so the
/// budget bounds what is really printed (at most 1,024 lines per event).
pub const LINE_COST: usize = 64;

/// One guardrail's output for one event.
pub struct Output {
    guardrail: String,
    used: usize,
    dropped_lines: usize,
}

impl Output {
    pub fn new(guardrail: &str) -> Self {
        Output {
            guardrail: guardrail.to_owned(),
            used: 0,
            dropped_lines: 0,
        }
    }

    /// Prints each line of `text`, labelled (`warn`, `stdout`, …), while the budget lasts.
    pub fn print(&mut self, label: &str, text: &str) {
        for line in guest_text::lines(text) {
            let cost = line.len() + LINE_COST;
            if self.used + cost > BUDGET_BYTES {
                self.dropped_lines += 1;
                continue;
            }
            self.used += cost;
            eprintln!("sandrail: [{}] {label}: {line}", self.guardrail);
        }
    }

    /// Says how much was dropped, if anything was.
    pub fn finish(&self, dropped_bytes: usize) {
        if self.dropped_lines > 0 || dropped_bytes > 0 {
            eprintln!(
                "sandrail: [{}] output limit reached: {} more lines and {dropped_bytes} more bytes dropped (each event allows {} KiB, {LINE_COST} bytes counted per line)",
                self.guardrail,
                self.dropped_lines,
                BUDGET_BYTES / 1024
            );
        }
    }
}
