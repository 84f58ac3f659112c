//! Any line, as bash, PowerShell and cmd would run it, with a script file it
//! runs: the analysis must end, within its bounds, without a panic. The input
//! is the line, then optionally a NUL and the text every script file it runs
//! holds.
#![no_main]

use std::io::Read;
use std::path::Path;

use libfuzzer_sys::fuzz_target;
use sandrail_shell::{RunIn, ScriptFiles, ScriptUnread};

/// Every script file the line runs holds `text`.
struct Holding<'a>(&'a [u8]);

impl ScriptFiles for Holding<'_> {
    fn open(&self, _path: &Path) -> Result<(Box<dyn Read + '_>, u64), ScriptUnread> {
        Ok((Box::new(self.0), self.0.len() as u64))
    }
}

fuzz_target!(|data: &[u8]| {
    let (line, script) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let line = String::from_utf8_lossy(line);
    let analysis = sandrail_shell::analyse(&line);
    for command in &analysis.commands {
        let _ = sandrail_shell::printed::text(&command.argv);
        let _ = sandrail_shell::printed::fed_script(command);
    }
    let files = Holding(script);
    let run_in = RunIn {
        cwd: Path::new("/project"),
        files: &files,
    };
    sandrail_shell::visit_in(&line, Some(run_in), &mut |_| {});
    sandrail_shell::powershell::visit(&line, 0, &mut |_| {});
    for argv in sandrail_shell::cmd::commands(&line) {
        let _ = sandrail_shell::cmd::script(&argv);
    }
});
