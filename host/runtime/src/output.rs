//! What a guardrail makes sandrail print: its log messages and what it wrote to
//! stdout and stderr, all on sandrail's stderr, every line prefixed with the
//! guardrail's name, within one budget per event.
//!
//! Each line costs its bytes plus [`LINE_COST`], so a guardrail cannot flood the
//! terminal with empty lines any more than with long ones.

use sandrail_event::text as guest_text;

/// What a line costs on top of its text: about what sandrail's prefix adds, so the
/// budget bounds what is really printed (at most 1,024 lines in the default 64 KiB).
pub const LINE_COST: usize = 64;

/// One guardrail's output for one event.
pub struct Output {
    guardrail: String,
    /// Most bytes its lines may cost in this event (`limits.log_kib`).
    budget: usize,
    used: usize,
    dropped_lines: usize,
    /// Log messages cut to the per-message limit, and the bytes cut from them.
    cut_messages: usize,
    cut_bytes: usize,
}

impl Output {
    pub fn new(guardrail: &str, budget: usize) -> Self {
        Output {
            guardrail: guardrail.to_owned(),
            budget,
            used: 0,
            dropped_lines: 0,
            cut_messages: 0,
            cut_bytes: 0,
        }
    }

    /// Prints each line of `text`, labelled (`warn`, `stdout`, …), while the budget lasts.
    pub fn print(&mut self, label: &str, text: &str) {
        for line in guest_text::lines(text) {
            let cost = line.len() + LINE_COST;
            if self.used + cost > self.budget {
                self.dropped_lines += 1;
                continue;
            }
            self.used += cost;
            eprintln!("sandrail: [{}] {label}: {line}", self.guardrail);
        }
    }

    /// Counts a log message cut to `max` bytes before it was printed.
    pub fn cut(&mut self, cut_bytes: usize) {
        self.cut_messages += 1;
        self.cut_bytes += cut_bytes;
    }

    /// Says how much was dropped, if anything was; true when the budget ran out.
    pub fn finish(&self, dropped_bytes: usize) -> bool {
        if self.cut_messages > 0 {
            eprintln!(
                "sandrail: [{}] {} log message(s) longer than {} KiB were cut: {} bytes dropped",
                self.guardrail,
                self.cut_messages,
                super::host::LOG_MESSAGE_BYTES / 1024,
                self.cut_bytes
            );
        }
        let exceeded = self.dropped_lines > 0 || dropped_bytes > 0;
        if exceeded {
            eprintln!(
                "sandrail: [{}] limit reached: log_kib: {} more lines and {dropped_bytes} more bytes dropped (this guardrail may print {} KiB per event, {LINE_COST} bytes counted per line)",
                self.guardrail,
                self.dropped_lines,
                self.budget / 1024
            );
        }
        exceeded
    }
}
