//! Just enough of the shell's grammar to find every command a command line runs.
//!
//! A line is split into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines and
//! parentheses. Quotes (`'…'`, `"…"`, `$'…'`), escapes and line continuations are
//! honoured, so a destructive word inside a quoted string, a heredoc body with a
//! quoted delimiter, or an array literal is data, not a command. What the shell
//! does run is followed: command substitutions (`$(…)`, backticks, `<(…)`, also
//! inside double quotes and unquoted heredoc bodies), compound commands
//! (`if …; then …`, `for …; do …`, `{ …; }`), and the scripts of `sh -c`,
//! `bash -c`, `env -S`, `eval`, `ssh host …`, PowerShell's `-Command` and
//! `-EncodedCommand`, and the commands interpreter one-liners (`python -c`,
//! `node -e`, `perl -e`, `ruby -e`, `awk`'s `system()`, `sed`'s `e`) run
//! (see [`embedded`]). Words the shell assembles are resolved where they can be:
//! `r''m`, `$'\x72\x6d'`, a variable assigned earlier on the line.

pub mod cmd;
mod embedded;
pub mod powershell;
pub mod printed;
mod wrappers;

use std::io::Read;
use std::path::{Path, PathBuf};

pub use embedded::Script;
pub use embedded::interpreter_code;
pub use wrappers::runs_stdin;

/// Deepest nesting of substitutions and inline scripts followed. A command line
/// nested deeper cannot be analysed, and says so rather than pass.
pub const MAX_DEPTH: usize = 8;

/// How many commands feeding one command (through a pipe or a substitution) are
/// remembered: enough to see `curl … | sh`, bounded for pathological lines.
const MAX_FEEDERS: usize = 16;

/// How the analysis reads a script file a line runs (`bash a.sh`, `./a.sh`):
/// the one thing it reads from outside the line. The caller decides how a file
/// is opened (sandrail opens it without blocking, and only a regular file, so
/// a FIFO put in its place cannot wedge the hook).
pub trait ScriptFiles {
    /// `path`, opened for reading, with its size in bytes.
    fn open(&self, path: &Path) -> Result<(Box<dyn Read + '_>, u64), ScriptUnread>;
}

/// Why a script file a line runs was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptUnread {
    /// It is there but may not be read (a managed server runs as a user of its
    /// own): what the line runs cannot be seen, so it cannot be judged.
    Denied,
    /// It is not there, or is not a regular file: the line runs nothing from it.
    Absent,
}

/// Where a line runs, for reading the script files it runs.
#[derive(Clone, Copy)]
pub struct RunIn<'a> {
    /// The directory the line runs in; relative script paths are read from it.
    pub cwd: &'a Path,
    /// How the script files are opened.
    pub files: &'a dyn ScriptFiles,
}

/// One simple command a line runs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Command {
    /// The argument vector, with the variable assignments, reserved words and
    /// wrappers (`env`, `sudo`, `timeout`, …) in front removed. Empty for a bare
    /// redirection (`> file`).
    pub argv: Vec<String>,
    /// Files the command's redirections open.
    pub redirects: Vec<Redirect>,
    /// Commands whose output this one consumes: the nearest earlier stages of its
    /// pipeline, and substitutions (`$(…)`, backticks, `<(…)`) in its words, as
    /// written (see [`feeder`] for what each runs).
    pub fed_by: Vec<Feeder>,
    /// `xargs` ran it, so more arguments arrive on its standard input.
    pub args_from_stdin: bool,
}

/// A command feeding another, shared by every command it feeds (a long pipeline
/// does not copy its stages into each).
pub type Feeder = std::rc::Rc<Vec<String>>;

/// A redirection to or from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub kind: RedirectKind,
    pub target: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// `< file`
    Read,
    /// `> file`, `>| file`, `&> file`, `<> file`
    Write,
    /// `>> file`, `&>> file`
    Append,
}

/// What a command line runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command, in the order the shell meets them.
    pub commands: Vec<Command>,
    /// The line nests deeper than [`MAX_DEPTH`] or expands past
    /// [`MAX_EXPANDED_BYTES`]; what it runs is not fully known.
    pub incomplete: bool,
}

/// Every command a line runs, collected. For large lines prefer [`visit`], which
/// holds one command at a time.
pub fn analyse(line: &str) -> Analysis {
    let mut commands = Vec::new();
    let incomplete = visit(line, &mut |command| commands.push(command));
    Analysis {
        commands,
        incomplete,
    }
}

/// Calls `each` with every simple command the line runs, in order, as soon as it
/// is found; true when what it runs is not fully known (it nests deeper than
/// [`MAX_DEPTH`] or expands past [`MAX_EXPANDED_BYTES`]). Time is linear in the
/// line, and memory is the line plus one command.
pub fn visit(line: &str, each: &mut dyn FnMut(Command)) -> bool {
    visit_in(line, None, each)
}

/// [`visit`] for a line run where `run_in` says: a script file it runs
/// (`bash a.sh`, `./a.sh`) is read from there and followed too.
pub fn visit_in(line: &str, run_in: Option<RunIn<'_>>, each: &mut dyn FnMut(Command)) -> bool {
    let mut variables = Variables {
        run_in,
        ..Variables::default()
    };
    let too_deep = collect(line, 0, &mut variables, each);
    too_deep || variables.exhausted
}

/// `{rm,-rf,/}` is the words `rm -rf /`, and `/{etc,usr}` the words `/etc /usr`:
/// brace expansion of comma lists with no spaces, which bash performs before
/// running the command (one list per word; `${x}` is a variable, not a list).
fn expand_braces(argv: Vec<String>) -> Vec<String> {
    if !argv.iter().any(|w| brace_list(w).is_some()) {
        return argv;
    }
    let mut expanded = Vec::with_capacity(argv.len());
    for word in argv {
        match brace_list(&word) {
            Some((open, close)) => {
                let (prefix, inner, suffix) =
                    (&word[..open], &word[open + 1..close], &word[close + 1..]);
                expanded.extend(
                    inner
                        .split(',')
                        .take(MAX_BRACE_ITEMS)
                        .map(|item| format!("{prefix}{item}{suffix}")),
                )
            }
            None => expanded.push(word),
        }
    }
    expanded
}

/// At most this many items of one brace list become words.
const MAX_BRACE_ITEMS: usize = 64;

/// Where a word's brace list opens and closes: `{a,b}` with a comma, no
/// whitespace, no nested braces, not after `$`.
fn brace_list(word: &str) -> Option<(usize, usize)> {
    let open = word.find('{')?;
    if word[..open].ends_with('$') || word.contains(char::is_whitespace) {
        return None;
    }
    let close = open + word[open..].find('}')?;
    let inner = &word[open + 1..close];
    (inner.contains(',') && !inner.contains('{') && !word[close + 1..].contains(['{', '}']))
        .then_some((open, close))
}

/// Variables assigned by earlier commands of the line (`x=rm; $x -rf /`), so a
/// word that is only a reference to one can be resolved.
#[derive(Default)]
struct Variables<'a> {
    values: std::collections::HashMap<String, String>,
    /// Bytes of values substituted so far on this line.
    expanded: usize,
    /// The line expands past [`MAX_EXPANDED_BYTES`]: what it runs is not fully
    /// known.
    exhausted: bool,
    /// Files the line wrote with a printer (`echo 'rm -rf /' > a.sh`), and what
    /// it wrote, so running one later on the line runs that text.
    scripts: Vec<(String, String)>,
    /// Where the line runs, so a script file it runs can be read.
    run_in: Option<RunIn<'a>>,
    /// The script files followed, each once per line, and their bytes.
    followed: std::collections::HashSet<PathBuf>,
    followed_bytes: u64,
    /// Aliases the line defined (`alias gr='git reset --hard'`).
    aliases: Vec<(String, String)>,
}

/// Variables whose value is a command a program runs in a shell: editors,
/// pagers, git's ssh command and external diff.
const COMMAND_VARIABLES: &[&str] = &[
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "EDITOR",
    "VISUAL",
    "GIT_PAGER",
    "PAGER",
    "GIT_SSH_COMMAND",
    "GIT_EXTERNAL_DIFF",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
];

/// The values of a command's leading assignments to [`COMMAND_VARIABLES`].
fn command_variables(argv: &[String]) -> Vec<String> {
    argv.iter()
        .take_while(|w| is_assignment(w))
        .filter_map(|w| w.split_once('='))
        .filter(|(name, value)| COMMAND_VARIABLES.contains(name) && !value.is_empty())
        .map(|(_, value)| value.to_owned())
        .collect()
}

/// At most this many aliases are remembered for a line.
const MAX_ALIASES: usize = 64;

/// The POSIX-family shells: their scripts are read with this grammar and
/// followed, and what they are fed on their input is their script.
pub const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh", "ksh93", "mksh", "ash"];

/// At most this many scripts written on a line are remembered, each this long.
const MAX_SCRIPTS: usize = 8;
const MAX_SCRIPT_LEN: usize = 1 << 16;
/// The largest script file a line runs that is read and followed.
pub const MAX_SCRIPT_FILE: u64 = 4 << 20;
/// The most bytes of script files one line's analysis reads.
pub const MAX_FOLLOWED_BYTES: u64 = 8 << 20;

/// The script file `argv` runs, and whether a shell was named to run it
/// (`bash a.sh`, `. a.sh`) rather than the file itself (`./a.sh`).
fn script_run(argv: &[String]) -> Option<(&str, bool)> {
    let (first, args) = argv.split_first()?;
    match program(first) {
        shell if SHELLS.contains(&shell) || shell == "source" || shell == "." => {
            let mut words = args.iter();
            while let Some(word) = words.next() {
                match word.as_str() {
                    // A command, or only parsing or printing (`bash -n x.sh`).
                    "-c" | "-n" | "--noexec" | "--help" | "--version" => return None,
                    "-o" | "+o" if words.as_slice().first().is_some_and(|o| o == "noexec") => {
                        return None;
                    }
                    "-o" | "+o" | "-O" | "+O" => {
                        words.next();
                    }
                    w if w.starts_with('-') || w.starts_with('+') => {}
                    w if w.is_empty() || w.starts_with("/dev/") => return None,
                    w => return Some((w, true)),
                }
            }
            None
        }
        _ => Some((first.as_str(), false)),
    }
}

/// At most this many variables are remembered, and values this long.
const MAX_VARIABLES: usize = 64;
const MAX_VARIABLE_LEN: usize = 4096;
/// At most this many bytes of variable values are substituted into one line's
/// words, so that a value referenced thousands of times (`x='a a … a'; echo $x
/// $x …`) costs bounded time and memory; past it the line is unanalysable.
pub const MAX_EXPANDED_BYTES: usize = 1 << 20;

impl Variables<'_> {
    /// Records the assignments of a command made only of assignments, or of
    /// `export`/`declare`/`local`/`readonly`/`typeset` (`export D=/`).
    fn record(&mut self, command: &Command) {
        let argv = &command.argv;
        // `for d in /a /b; do rm -rf "$d"; done`: the loop's variable stands for
        // every word it takes.
        if let [first, name, keyword, words @ ..] = argv.as_slice()
            && first == "for"
            && keyword == "in"
            && is_name(name)
            && (self.values.len() < MAX_VARIABLES || self.values.contains_key(name))
        {
            let words: Vec<&str> = words
                .iter()
                .map(|w| w.trim_end_matches(';'))
                .take_while(|w| *w != "do" && !w.is_empty())
                .collect();
            let value = words.join(" ");
            if value.len() <= MAX_VARIABLE_LEN {
                self.values.insert(name.clone(), value);
            }
            return;
        }
        let assignments = match argv.first().map(String::as_str) {
            Some("export" | "declare" | "local" | "readonly" | "typeset") => argv[1..]
                .iter()
                .filter(|w| is_assignment(w))
                .collect::<Vec<_>>(),
            Some(_) if argv.iter().all(|w| is_assignment(w)) => argv.iter().collect(),
            _ => return,
        };
        for word in assignments {
            // `x=$(…)`: the value a substitution made is what a printer printed
            // (`x=$(echo /)`), or not known (`x=$(mktemp -d)`), never empty.
            if let Some((name, "")) = word.split_once('=')
                && !command.fed_by.is_empty()
            {
                let printed: Option<Vec<String>> = command
                    .fed_by
                    .iter()
                    .map(|f| printed::text(&feeder(f)))
                    .collect();
                match printed {
                    Some(texts)
                        if texts.iter().map(String::len).sum::<usize>() <= MAX_VARIABLE_LEN =>
                    {
                        self.values.insert(name.to_owned(), texts.join(" "));
                    }
                    _ => {
                        self.values.remove(name);
                    }
                }
                continue;
            }
            if let Some((name, value)) = word.split_once('=')
                && value.len() <= MAX_VARIABLE_LEN
                && (self.values.len() < MAX_VARIABLES || self.values.contains_key(name))
            {
                self.values.insert(name.to_owned(), value.to_owned());
            }
        }
    }

    /// Records `alias NAME=VALUE …`.
    fn record_aliases(&mut self, argv: &[String]) {
        if argv.first().map(String::as_str) != Some("alias") {
            return;
        }
        for word in &argv[1..] {
            if let Some((name, value)) = word.split_once('=')
                && !name.is_empty()
                && value.len() <= MAX_VARIABLE_LEN
                && self.aliases.len() < MAX_ALIASES
            {
                self.aliases.push((name.to_owned(), value.to_owned()));
            }
        }
    }

    /// The text a command runs when its program is an alias the line defined:
    /// the alias's value, then the command's words, quoted. Each alias is
    /// expanded once per command, as the shell does.
    fn aliased(&self, argv: &[String]) -> Option<String> {
        let first = argv.first()?;
        let (_, value) = self.aliases.iter().rev().find(|(name, _)| name == first)?;
        let mut text = value.clone();
        for word in &argv[1..] {
            text.push_str(" '");
            text.push_str(&word.replace('\'', "'\\''"));
            text.push('\'');
        }
        // An alias naming itself (`alias ls='ls -l'`) runs the program.
        (value.split_whitespace().next() != Some(first.as_str())).then_some(text)
    }

    /// Remembers the text a printer writes into a file (`>` replaces, `>>`
    /// appends).
    fn record_script(&mut self, command: &Command) {
        let Some(text) = printed::text(&command.argv) else {
            return;
        };
        for redirect in &command.redirects {
            let existing = self.scripts.iter().position(|(f, _)| *f == redirect.target);
            match (redirect.kind, existing) {
                (RedirectKind::Read, _) => {}
                (RedirectKind::Append, Some(at)) => {
                    let script = &mut self.scripts[at].1;
                    if script.len() + text.len() < MAX_SCRIPT_LEN {
                        script.push('\n');
                        script.push_str(&text);
                    }
                }
                (_, Some(at)) => self.scripts[at].1 = text.clone(),
                (_, None) if self.scripts.len() < MAX_SCRIPTS && text.len() < MAX_SCRIPT_LEN => {
                    self.scripts.push((redirect.target.clone(), text.clone()))
                }
                (_, None) => {}
            }
        }
    }

    /// The text of a script the line wrote, when `argv` runs it (`bash a.sh`,
    /// `. ./a.sh`, `./a.sh`).
    fn written_script(&mut self, argv: &[String]) -> Option<(&str, &str)> {
        if self.scripts.is_empty() {
            return None;
        }
        let (file, _) = script_run(argv)?;
        let file = file.strip_prefix("./").unwrap_or(file);
        let at = self
            .scripts
            .iter()
            .position(|(written, _)| written.strip_prefix("./").unwrap_or(written) == file)?;
        // Each text followed once per line: a script that runs itself is not
        // followed again (which would grow without end).
        let key = PathBuf::from(format!("written:{file}:{}", self.scripts[at].1.len()));
        if !self.followed.insert(key) {
            return None;
        }
        let (name, text) = &self.scripts[at];
        Some((name.as_str(), text.as_str()))
    }

    /// The text of a script file `argv` runs, read from where the line runs: a
    /// shell's script operand, or a program named by its path whose first line
    /// names a shell (or that is text with no `#!`, which the shell runs itself).
    /// Each file is followed once per line, and the files followed share a byte
    /// budget ([`MAX_FOLLOWED_BYTES`]); a script past [`MAX_SCRIPT_FILE`], or past
    /// the budget, makes the line unanalysable, as does one sandrail may not
    /// read. A binary is not read.
    fn script_file(&mut self, argv: &[String]) -> Option<(String, String)> {
        let run_in = self.run_in?;
        let (file, by_shell) = script_run(argv)?;
        if !by_shell && !file.contains('/') {
            return None;
        }
        let path = run_in.cwd.join(file);
        let (mut opened, size) = match run_in.files.open(&path) {
            Ok(opened) => opened,
            // What it runs cannot be seen, so the line cannot be judged.
            Err(ScriptUnread::Denied) => {
                self.exhausted = true;
                return None;
            }
            Err(ScriptUnread::Absent) => return None,
        };
        let mut head = [0u8; 256];
        let read = opened.read(&mut head).ok()?;
        let head = &head[..read];
        let runs_as_shell = match head.strip_prefix(b"#!") {
            Some(shebang) => {
                let line = String::from_utf8_lossy(shebang);
                let line = line.lines().next().unwrap_or_default();
                let mut words = line.split_whitespace();
                let interpreter = words.next().map(program);
                let interpreter = match interpreter {
                    Some("env") => words.find(|w| !w.starts_with('-')).map(program),
                    Some("busybox") => words.next().map(program),
                    other => other,
                };
                by_shell || interpreter.is_some_and(|i| SHELLS.contains(&i))
            }
            // Text the shell runs itself when exec refuses it; never a binary.
            None => by_shell || (!head.contains(&0) && !head.starts_with(b"\x7fELF")),
        };
        if !runs_as_shell || !self.followed.insert(path.clone()) {
            return None;
        }
        if size > MAX_SCRIPT_FILE || self.followed_bytes + size > MAX_FOLLOWED_BYTES {
            self.exhausted = true;
            return None;
        }
        self.followed_bytes += size;
        let mut bytes = head.to_vec();
        opened.take(size).read_to_end(&mut bytes).ok()?;
        Some((
            file.to_owned(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ))
    }

    /// Replaces each word that is only `$name` or `${name}` of a known variable by
    /// its value, split into words as the shell would split it. Past the line's
    /// budget words are left as written and the line is marked exhausted.
    fn resolve(&mut self, argv: Vec<String>) -> Vec<String> {
        let defaults = |w: &String| w.contains("${") && w.contains([':', '-', '=', '?']);
        if !argv.iter().any(|w| w.contains('$'))
            || (self.values.is_empty() && !argv.iter().any(defaults))
        {
            return argv;
        }
        let mut resolved = Vec::with_capacity(argv.len());
        // `IFS=,; c=rm,-rf,/; $c`: a value splits on the line's IFS too.
        let separators: Vec<char> = self
            .values
            .get("IFS")
            .map(|ifs| ifs.chars().collect())
            .unwrap_or_default();
        for word in argv {
            let name = word
                .strip_prefix("${")
                .and_then(|w| w.strip_suffix('}'))
                .map(without_subscript)
                .or_else(|| word.strip_prefix('$'));
            match name.and_then(|n| self.values.get(n)) {
                Some(value) if self.expanded + value.len() <= MAX_EXPANDED_BYTES => {
                    self.expanded += value.len().max(1);
                    resolved.extend(
                        value
                            .split(|c: char| c.is_whitespace() || separators.contains(&c))
                            .filter(|field| !field.is_empty())
                            .map(str::to_owned),
                    )
                }
                None if word.starts_with("${") && word.contains([':', '-', '=', '?']) => {
                    resolved.push(self.within(word))
                }
                Some(_) => {
                    self.exhausted = true;
                    resolved.push(word)
                }
                None if word.contains('$') => resolved.push(self.within(word)),
                None => resolved.push(word),
            }
        }
        resolved
    }

    /// Replaces the references to known variables inside a word (`"$D"/*`,
    /// `of=${DISK}`), as one word.
    fn within(&mut self, word: String) -> String {
        let mut out = String::with_capacity(word.len());
        let mut rest = word.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let (name, used) = match after.strip_prefix('{') {
                Some(braced) => match braced.find('}') {
                    Some(end) => {
                        let inner = &braced[..end];
                        // `${X:-/}`, `${X:=/}`, `${HOME:?}`: the name, and the
                        // default used when it is not known.
                        if let Some(at) = inner.find([':', '-', '=', '?'])
                            && is_name(&inner[..at])
                        {
                            let operator = inner[at..].trim_start_matches(':');
                            let default = operator
                                .strip_prefix('-')
                                .or_else(|| operator.strip_prefix('='));
                            match (self.values.get(&inner[..at]), default) {
                                (Some(value), _)
                                    if self.expanded + value.len() <= MAX_EXPANDED_BYTES =>
                                {
                                    self.expanded += value.len().max(1);
                                    out.push_str(value);
                                }
                                (Some(_), _) => {
                                    self.exhausted = true;
                                    out.push_str("${");
                                    out.push_str(inner);
                                    out.push('}');
                                }
                                (None, Some(default)) => out.push_str(default),
                                (None, None) => {
                                    out.push('$');
                                    out.push_str(&inner[..at]);
                                }
                            }
                            rest = &after[end + 2..];
                            continue;
                        }
                        (without_subscript(inner), end + 2)
                    }
                    None => ("", 0),
                },
                None => {
                    let end = after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len());
                    (&after[..end], end)
                }
            };
            match self.values.get(name) {
                Some(value) if self.expanded + value.len() <= MAX_EXPANDED_BYTES => {
                    self.expanded += value.len().max(1);
                    out.push_str(value);
                    rest = &after[used..];
                }
                found => {
                    self.exhausted |= found.is_some();
                    out.push('$');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        out
    }
}

fn collect(
    line: &str,
    depth: usize,
    variables: &mut Variables,
    out: &mut dyn FnMut(Command),
) -> bool {
    let chars: Vec<char> = line.chars().collect();
    let mut scripts_too_deep = false;
    let mut on_command = |mut command: Command| {
        variables.record(&command);
        variables.record_aliases(&command.argv);
        // `GIT_EDITOR='…' git commit`: a variable naming a command the program
        // runs in a shell.
        for value in command_variables(&command.argv) {
            scripts_too_deep |= depth >= MAX_DEPTH || collect(&value, depth + 1, variables, out);
        }
        command.argv = expand_braces(command.argv);
        let (argv, args_from_stdin) = unwrap(variables.resolve(command.argv));
        // `alias gr='git reset --hard'; gr`: an alias the line defined runs its
        // text with the command's words after it.
        if let Some(text) = variables.aliased(&argv) {
            scripts_too_deep |= depth >= MAX_DEPTH || collect(&text, depth + 1, variables, out);
        }
        // `f=sandrail.toml; echo x > $f`: a redirection's target is a word too.
        for redirect in &mut command.redirects {
            if redirect.target.contains('$') {
                let target = std::mem::take(&mut redirect.target);
                redirect.target = variables.resolve(vec![target]).join(" ");
            }
        }
        command.argv = argv;
        command.args_from_stdin = args_from_stdin;
        if command.argv.is_empty() && command.redirects.is_empty() {
            return;
        }
        if !command.argv.is_empty() {
            for argv in find_exec_commands(&command.argv) {
                let argv = unwrap(argv).0;
                scripts_too_deep |= follow_scripts(&argv, depth, variables, out);
                out(Command {
                    argv,
                    ..Command::default()
                });
            }
            scripts_too_deep |= follow_scripts(&command.argv, depth, variables, out);
            // `echo 'rm -rf /' | bash`, `bash < <(printf …)`: the printed text
            // is the script; `echo '…' > a.sh; bash a.sh`: so is the file's.
            let script = printed::fed_script(&command)
                .map(|text| (None, text))
                .or_else(|| {
                    variables
                        .written_script(&command.argv)
                        .map(|(name, text)| (Some(name.to_owned()), text.to_owned()))
                })
                .or_else(|| {
                    variables
                        .script_file(&command.argv)
                        .map(|(name, text)| (Some(name), text))
                });
            if let Some((name, script)) = script {
                // Inside a script file, `$0` is its path (`cd "$(dirname "$0")"`),
                // also where a substitution reads it.
                let script = match name {
                    Some(name) => script.replace("${0}", &name).replace("$0", &name),
                    None => script,
                };
                scripts_too_deep |=
                    depth >= MAX_DEPTH || collect(&script, depth + 1, variables, out);
            }
            variables.record_script(&command);
        }
        out(command)
    };
    let lexed_too_deep = {
        let mut lexer = Lexer::new(&chars, depth, Mode::Commands, &mut on_command);
        lexer.run(0);
        lexer.too_deep
    };
    lexed_too_deep || scripts_too_deep
}

/// Analyses the scripts and commands `argv` runs besides itself (`sh -c`, an
/// interpreter's code, a wrapper's script); true when one is too deep to follow.
fn follow_scripts(
    argv: &[String],
    depth: usize,
    variables: &mut Variables,
    out: &mut dyn FnMut(Command),
) -> bool {
    let mut too_deep = false;
    let scripts = embedded::scripts(argv)
        .into_iter()
        .chain(wrappers::scripts(argv));
    for script in scripts {
        match script {
            _ if depth >= MAX_DEPTH => too_deep = true,
            Script::Shell(text) => too_deep |= collect(&text, depth + 1, variables, out),
            Script::PowerShell(text) => too_deep |= powershell::visit(&text, depth + 1, out),
            Script::Unanalysable => too_deep = true,
            Script::Command(argv) => out(Command {
                argv,
                ..Command::default()
            }),
        }
    }
    too_deep
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Words form commands.
    Commands,
    /// Words are data (an array literal); only substitutions in them run.
    Data,
}

/// What the next word is, when a redirection operator came before it.
#[derive(Clone, Copy)]
enum NextWord {
    Argument,
    /// A here-string: data.
    Data,
    /// A file to redirect to or from.
    Target(RedirectKind),
    /// `>&` / `<&`: a file, or a descriptor to duplicate (`2>&1`).
    TargetOrDescriptor(RedirectKind),
}

struct Heredoc {
    /// The command reading it is a shell: the body is a script it runs.
    runs: bool,
    delimiter: String,
    strip_tabs: bool,
    /// An unquoted delimiter: the shell expands substitutions in the body.
    expands: bool,
}

/// Splits command text into simple commands of unquoted words, handing each to
/// its sink as it ends.
struct Lexer<'a, 's> {
    chars: &'a [char],
    depth: usize,
    mode: Mode,
    sink: &'s mut dyn FnMut(Command),
    argv: Vec<String>,
    redirects: Vec<Redirect>,
    /// Earlier stages of the pipeline the current command is in.
    pipeline: Vec<Feeder>,
    /// Commands substituted into the current command's words.
    substituted: Vec<Feeder>,
    word: String,
    in_word: bool,
    /// The current word used quotes (which makes a heredoc delimiter literal).
    word_quoted: bool,
    /// What the next word is, when it is not an argument.
    next_word: NextWord,
    /// The next word is a heredoc delimiter (`true`: `<<-`, tabs stripped).
    heredoc_next: Option<bool>,
    heredocs: Vec<Heredoc>,
    /// Lexing the inside of `$(…)` or `<(…)`: an unmatched `)` ends it.
    in_substitution: bool,
    /// In [`Mode::Data`], the words read (an array literal's elements).
    data: Vec<String>,
    too_deep: bool,
}

impl<'a, 's> Lexer<'a, 's> {
    fn new(chars: &'a [char], depth: usize, mode: Mode, sink: &'s mut dyn FnMut(Command)) -> Self {
        Lexer {
            in_substitution: false,
            chars,
            depth,
            mode,
            sink,
            argv: Vec::new(),
            redirects: Vec::new(),
            pipeline: Vec::new(),
            substituted: Vec::new(),
            word: String::new(),
            in_word: false,
            word_quoted: false,
            next_word: NextWord::Argument,
            heredoc_next: None,
            heredocs: Vec::new(),
            data: Vec::new(),
            too_deep: false,
        }
    }

    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).copied()
    }

    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.word);
        if let Some(strip_tabs) = self.heredoc_next.take() {
            let runs = self.runs_its_input();
            self.heredocs.push(Heredoc {
                runs,
                delimiter: word,
                strip_tabs,
                expands: !self.word_quoted,
            });
        } else {
            match std::mem::replace(&mut self.next_word, NextWord::Argument) {
                NextWord::Argument => self.argv.push(word),
                NextWord::Data => {
                    // `sh <<<'…'`: a shell runs the here-string; for any other
                    // command it is what it reads (`xargs rm -rf <<< /`).
                    if self.runs_its_input() {
                        self.lex_script(&word);
                    } else if self.substituted.len() < MAX_FEEDERS {
                        self.substituted
                            .push(Feeder::new(vec!["echo".to_owned(), word]));
                    }
                }
                NextWord::Target(kind) => self.redirects.push(Redirect { kind, target: word }),
                NextWord::TargetOrDescriptor(kind) => {
                    let descriptor = word == "-" || word.chars().all(|c| c.is_ascii_digit());
                    if !descriptor {
                        self.redirects.push(Redirect { kind, target: word });
                    }
                }
            }
        }
        self.in_word = false;
        self.word_quoted = false;
    }

    /// Ends the current command; `piped`: its output feeds the next command.
    fn end_command_piped(&mut self, piped: bool) {
        self.end_word();
        let argv = std::mem::take(&mut self.argv);
        let redirects = std::mem::take(&mut self.redirects);
        let mut fed_by = std::mem::take(&mut self.substituted);
        if piped {
            fed_by.extend(self.pipeline.iter().cloned());
            push_stage(&mut self.pipeline, &argv);
        } else {
            fed_by.extend(std::mem::take(&mut self.pipeline));
        }
        if self.mode == Mode::Data {
            self.data.extend(argv);
        } else if !argv.is_empty() || !redirects.is_empty() {
            (self.sink)(Command {
                argv,
                redirects,
                fed_by,
                args_from_stdin: false,
            });
        }
    }

    fn end_command(&mut self) {
        self.end_command_piped(false);
    }

    /// Lexes from `start` to the end, or — inside a substitution — to the `)` that
    /// closes it. Returns the index after where it stopped.
    fn run(&mut self, start: usize) -> usize {
        let mut parens = 0usize;
        let mut i = start;
        while let Some(c) = self.at(i) {
            match c {
                ' ' | '\t' => {
                    self.end_word();
                    i += 1;
                }
                '\n' => {
                    self.end_command();
                    i = self.heredoc_bodies(i + 1);
                }
                '(' if !self.in_word
                    && self.at(i + 1) == Some('(')
                    && arithmetic_end(self.chars, i + 2).is_some() =>
                {
                    // Arithmetic `(( … ))`: no commands, and no heredocs, inside.
                    self.end_command();
                    i = self.arithmetic(i + 2);
                }
                '(' if self.in_word && is_assignment_start(&self.word) => {
                    // An array literal `NAME=( … )`: its words are data, kept
                    // as the value (`a=(rm -rf /); "${a[@]}"` runs them).
                    let (end, elements) = self.array_literal(i + 1);
                    i = end;
                    self.word.push_str(&elements.join(" "));
                }
                '(' => {
                    self.end_command();
                    parens += 1;
                    i += 1;
                }
                ')' => {
                    self.end_command();
                    if parens == 0 && self.in_substitution {
                        return i + 1;
                    }
                    parens = parens.saturating_sub(1);
                    i += 1;
                }
                '|' if self.at(i + 1) == Some('|') => {
                    self.end_command();
                    i += 2;
                }
                '|' => {
                    self.end_command_piped(true);
                    i += if self.at(i + 1) == Some('&') { 2 } else { 1 };
                }
                ';' => {
                    self.end_command();
                    i += 1;
                }
                '&' if self.at(i + 1) == Some('>') => {
                    // `&>file`: a redirection, not a separator.
                    self.end_word();
                    let append = self.at(i + 2) == Some('>');
                    i += if append { 3 } else { 2 };
                    self.next_word = NextWord::Target(if append {
                        RedirectKind::Append
                    } else {
                        RedirectKind::Write
                    });
                }
                '&' => {
                    self.end_command();
                    i += 1;
                }
                '<' | '>' if self.at(i + 1) == Some('(') => {
                    // Process substitution: its contents run.
                    self.end_word();
                    i = self.nested(i + 2, Mode::Commands);
                }
                '<' | '>' => i = self.redirection(i),
                '#' if !self.in_word => {
                    while self.at(i).is_some_and(|c| c != '\n') {
                        i += 1;
                    }
                }
                '\\' => {
                    match self.at(i + 1) {
                        // A line continuation joins lines; it is not part of a word.
                        Some('\n') => {}
                        Some(next) => {
                            self.word.push(next);
                            self.in_word = true;
                        }
                        None => {}
                    }
                    i += 2;
                }
                '\'' => {
                    self.in_word = true;
                    self.word_quoted = true;
                    i += 1;
                    while let Some(c) = self.at(i).filter(|&c| c != '\'') {
                        self.word.push(c);
                        i += 1;
                    }
                    i += 1;
                }
                '$' if self.at(i + 1) == Some('\'') => i = self.ansi_c_quoted(i + 2),
                '"' => i = self.double_quoted(i + 1),
                '$' if self.at(i + 1) == Some('"') => i = self.double_quoted(i + 2),
                '$' if self.at(i + 1) == Some('(')
                    && self.at(i + 2) == Some('(')
                    && arithmetic_end(self.chars, i + 3).is_some() =>
                {
                    self.in_word = true;
                    i = self.arithmetic(i + 3);
                }
                '$' if self.at(i + 1) == Some('(') => {
                    self.in_word = true;
                    i = self.nested(i + 2, Mode::Commands);
                }
                '`' => {
                    self.in_word = true;
                    i = self.backticks(i + 1);
                }
                other => {
                    self.in_word = true;
                    self.word.push(other);
                    i += 1;
                }
            }
        }
        self.end_command();
        i
    }

    /// A redirection operator at `i`; the word after it is its target.
    fn redirection(&mut self, mut i: usize) -> usize {
        // A file descriptor number written against the operator belongs to it.
        if self.in_word && !self.word_quoted && self.word.chars().all(|d| d.is_ascii_digit()) {
            self.word.clear();
            self.in_word = false;
        }
        self.end_word();
        let here = self.at(i) == Some('<') && self.at(i + 1) == Some('<');
        if here && self.at(i + 2) != Some('<') {
            let strip_tabs = self.at(i + 2) == Some('-');
            self.heredoc_next = Some(strip_tabs);
            return i + if strip_tabs { 3 } else { 2 };
        }
        let start = i;
        while self
            .at(i)
            .is_some_and(|c| matches!(c, '>' | '<' | '&' | '|'))
        {
            i += 1;
        }
        let operator: String = self.chars[start..i].iter().collect();
        self.next_word = match operator.as_str() {
            "<" => NextWord::Target(RedirectKind::Read),
            ">>" => NextWord::Target(RedirectKind::Append),
            ">" | ">|" | "<>" => NextWord::Target(RedirectKind::Write),
            ">&" => NextWord::TargetOrDescriptor(RedirectKind::Write),
            "<&" => NextWord::TargetOrDescriptor(RedirectKind::Read),
            // `<<<` here-strings: the word is data.
            _ => NextWord::Data,
        };
        i
    }

    /// Skips the bodies of the heredocs opened on the line that just ended, from
    /// `i` (the start of the next line); substitutions in expanding bodies run.
    fn heredoc_bodies(&mut self, mut i: usize) -> usize {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while i < self.chars.len() {
                let start = i;
                while self.at(i).is_some_and(|c| c != '\n') {
                    i += 1;
                }
                let line: String = self.chars[start..i].iter().collect();
                i += 1;
                let line = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == heredoc.delimiter {
                    break;
                }
                body.push_str(line);
                body.push('\n');
            }
            if heredoc.runs {
                self.lex_script(&body);
            } else if heredoc.expands {
                let chars: Vec<char> = body.chars().collect();
                let mut expansion = Lexer::new(&chars, self.depth, Mode::Data, &mut *self.sink);
                expansion.substitutions_only();
                self.too_deep |= expansion.too_deep;
            }
        }
        i
    }

    /// Whether the command so far is a shell reading its script from its input.
    fn runs_its_input(&self) -> bool {
        let Some(first) = self.argv.iter().find(|w| !is_assignment(w)) else {
            return false;
        };
        let at = self.argv.iter().position(|w| w == first).unwrap_or(0);
        let argv = &self.argv[at..];
        match program(first) {
            shell if SHELLS.contains(&shell) => !argv.iter().any(|w| w == "-c" || w == "-n"),
            // `source <<< '…'`, `. /dev/stdin <<EOF`.
            "source" | "." => argv
                .get(1)
                .is_none_or(|f| matches!(f.as_str(), "/dev/stdin" | "-" | "/proc/self/fd/0")),
            _ => wrappers::runs_stdin(argv),
        }
    }

    /// Lexes text a shell runs as a script, one level deeper.
    fn lex_script(&mut self, text: &str) {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return;
        }
        let chars: Vec<char> = text.chars().collect();
        let mut inner = Lexer::new(&chars, self.depth + 1, Mode::Commands, &mut *self.sink);
        inner.run(0);
        self.too_deep |= inner.too_deep;
    }

    /// Runs the substitutions in text the shell expands but does not execute as
    /// commands (a heredoc body): `$(…)` and backticks.
    fn substitutions_only(&mut self) {
        let mut i = 0;
        while let Some(c) = self.at(i) {
            i = match c {
                '\\' => i + 2,
                '$' if self.at(i + 1) == Some('(') => self.nested(i + 2, Mode::Commands),
                '`' => self.backticks(i + 1),
                _ => i + 1,
            };
        }
    }

    fn double_quoted(&mut self, mut i: usize) -> usize {
        self.in_word = true;
        self.word_quoted = true;
        while let Some(c) = self.at(i) {
            match c {
                '"' => return i + 1,
                '\\' if matches!(self.at(i + 1), Some('"' | '\\' | '$' | '`' | '\n')) => {
                    if let Some(next) = self.at(i + 1).filter(|&n| n != '\n') {
                        self.word.push(next);
                    }
                    i += 2;
                }
                '$' if self.at(i + 1) == Some('(')
                    && self.at(i + 2) == Some('(')
                    && arithmetic_end(self.chars, i + 3).is_some() =>
                {
                    i = self.arithmetic(i + 3);
                }
                '$' if self.at(i + 1) == Some('(') => i = self.nested(i + 2, Mode::Commands),
                '`' => i = self.backticks(i + 1),
                other => {
                    self.word.push(other);
                    i += 1;
                }
            }
        }
        i
    }

    /// `$'…'`: backslash escapes, including `\'`, end at an unescaped `'`.
    fn ansi_c_quoted(&mut self, mut i: usize) -> usize {
        self.in_word = true;
        self.word_quoted = true;
        while let Some(c) = self.at(i) {
            match c {
                '\'' => return i + 1,
                '\\' => i = self.ansi_c_escape(i + 1),
                other => {
                    self.word.push(other);
                    i += 1;
                }
            }
        }
        i
    }

    /// Decodes the escape after a backslash in `$'…'` (`\n`, `\x72`, `\162`,
    /// `\u00e9`, `\cA`, …) into the word, as bash does; returns the index after it.
    fn ansi_c_escape(&mut self, i: usize) -> usize {
        let Some(c) = self.at(i) else { return i };
        let digits = |radix: u32, max: usize, from: usize| {
            let mut value = 0u32;
            let mut n = 0;
            while n < max {
                match self.at(from + n).and_then(|d| d.to_digit(radix)) {
                    Some(d) => value = value * radix + d,
                    None => break,
                }
                n += 1;
            }
            (value, n)
        };
        let (decoded, next) = match c {
            'n' => (Some('\n'), i + 1),
            't' => (Some('\t'), i + 1),
            'r' => (Some('\r'), i + 1),
            'a' => (Some('\u{7}'), i + 1),
            'b' => (Some('\u{8}'), i + 1),
            'e' | 'E' => (Some('\u{1b}'), i + 1),
            'f' => (Some('\u{c}'), i + 1),
            'v' => (Some('\u{b}'), i + 1),
            'c' => (
                self.at(i + 1).map(|x| char::from((x as u32 & 0x1f) as u8)),
                i + 2,
            ),
            'x' | 'u' | 'U' => {
                let max = match c {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let (value, n) = digits(16, max, i + 1);
                if n == 0 {
                    (Some('\\'), i)
                } else {
                    (char::from_u32(value), i + 1 + n)
                }
            }
            '0'..='7' => {
                // Bash keeps the low byte: `\562` is `r`, as `\162` is.
                let (value, n) = digits(8, 3, i);
                (char::from_u32(value & 0xff), i + n)
            }
            other => (Some(other), i + 1),
        };
        if let Some(decoded) = decoded {
            self.word.push(decoded);
        }
        next
    }

    /// Lexes a nested command list starting at `start` (just inside its opening
    /// parenthesis) and takes in what it runs; returns the index after its `)`.
    fn nested(&mut self, start: usize, mode: Mode) -> usize {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return skip_balanced(self.chars, start);
        }
        let substituted = &mut self.substituted;
        let sink = &mut *self.sink;
        let mut capture = |command: Command| {
            remember_feeder(substituted, &command);
            sink(command)
        };
        let mut inner = Lexer::new(self.chars, self.depth + 1, mode, &mut capture);
        inner.in_substitution = true;
        let end = inner.run(start);
        self.too_deep |= inner.too_deep;
        end
    }

    /// Lexes an array literal's elements, up to its closing `)`; substitutions
    /// in them run.
    fn array_literal(&mut self, start: usize) -> (usize, Vec<String>) {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return (skip_balanced(self.chars, start), Vec::new());
        }
        let mut inner = Lexer::new(self.chars, self.depth + 1, Mode::Data, &mut *self.sink);
        inner.in_substitution = true;
        let end = inner.run(start);
        self.too_deep |= inner.too_deep;
        (end, std::mem::take(&mut inner.data))
    }

    /// Skips arithmetic `(( … ))` from `start`, running the substitutions in it
    /// (`$(( $(rm -rf /) ))` runs `rm`). Returns the index after its `))`.
    fn arithmetic(&mut self, start: usize) -> usize {
        let end = skip_arithmetic(self.chars, start);
        let mut i = start;
        while i < end {
            match self.at(i) {
                Some('$') if self.at(i + 1) == Some('(') && self.at(i + 2) != Some('(') => {
                    i = self.nested(i + 2, Mode::Commands);
                }
                Some('`') => i = self.backticks(i + 1),
                _ => i += 1,
            }
        }
        end.max(i)
    }

    fn backticks(&mut self, start: usize) -> usize {
        let mut i = start;
        let mut inner = String::new();
        while let Some(c) = self.at(i).filter(|&c| c != '`') {
            if c == '\\' {
                if let Some(next) = self.at(i + 1) {
                    inner.push(next);
                }
                i += 2;
                continue;
            }
            inner.push(c);
            i += 1;
        }
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
        } else {
            let chars: Vec<char> = inner.chars().collect();
            let substituted = &mut self.substituted;
            let sink = &mut *self.sink;
            let mut capture = |command: Command| {
                remember_feeder(substituted, &command);
                sink(command)
            };
            let mut lexer = Lexer::new(&chars, self.depth + 1, Mode::Commands, &mut capture);
            lexer.run(0);
            self.too_deep |= lexer.too_deep;
        }
        i + 1
    }
}

/// The index after the `))` closing arithmetic that started just before `start`.
fn skip_arithmetic(chars: &[char], start: usize) -> usize {
    arithmetic_end(chars, start).unwrap_or(chars.len())
}

/// How far an arithmetic `((` is looked into for its end; longer, it is read as
/// subshells, which hides nothing.
const MAX_ARITHMETIC_SCAN: usize = 1 << 16;

/// The index after the `))` closing an arithmetic expression that opened just
/// before `start`, or None when the `((` opens subshells instead: as bash, only a
/// `))` written together closes arithmetic, so `((rm -rf /) )` runs `rm`.
fn arithmetic_end(chars: &[char], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let end = chars.len().min(start.saturating_add(MAX_ARITHMETIC_SCAN));
    let mut i = start;
    while i < end {
        match chars[i] {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ')' => return (chars.get(i + 1) == Some(&')')).then_some(i + 2),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index after the `)` matching an opening just before `start`, not lexing.
fn skip_balanced(chars: &[char], start: usize) -> usize {
    let mut depth = 1usize;
    for (offset, &c) in chars[start.min(chars.len())..].iter().enumerate() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return start + offset + 1;
                }
            }
            _ => {}
        }
    }
    chars.len()
}

/// An array's name without its subscript: `a[@]`, `a[*]` and `a[0]` read `a`,
/// whose value is all its elements (an over-reach for `a[0]`, never an under-).
fn without_subscript(reference: &str) -> &str {
    reference
        .split_once('[')
        .filter(|(_, subscript)| subscript.ends_with(']'))
        .map_or(reference, |(name, _)| name)
}

fn is_assignment_start(word: &str) -> bool {
    word.strip_suffix('=').is_some_and(is_name)
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| is_name(name))
}

/// The program a command word names: its last path component.
pub fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The interpreter a versioned name runs (`python3.11`, `pypy3`, `perl5.36`,
/// `ruby3.2`, `node20`), or None for other names.
pub fn interpreter_family(name: &str) -> Option<&'static str> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let versioned = base.len() < name.len();
    match base {
        "python" | "pypy" if versioned => Some("python3"),
        "perl" if versioned => Some("perl"),
        "ruby" if versioned => Some("ruby"),
        "node" if versioned => Some("node"),
        _ => None,
    }
}

/// Words that open or continue a compound command; the command follows them.
const RESERVED_PREFIXES: &[&str] = &[
    "!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "coproc",
];
/// Compound commands whose own words are not a command (`for x in a b`).
const RESERVED_NON_COMMANDS: &[&str] = &["for", "select", "case", "done", "fi", "esac"];

/// Removes variable assignments, reserved words and command wrappers from the
/// front of a command. Finds where the command starts, then removes the front in
/// one step, so a thousand wrappers cost no more than a thousand words. Also says
/// whether `xargs` was among the wrappers (the command takes more arguments from
/// its standard input).
pub(crate) fn unwrap(mut argv: Vec<String>) -> (Vec<String>, bool) {
    let mut start = 0;
    let mut through_xargs = false;
    while let Some(first) = argv.get(start) {
        if RESERVED_NON_COMMANDS.contains(&first.as_str()) {
            return (Vec::new(), false);
        }
        let rest = &argv[start + 1..];
        let skip = if RESERVED_PREFIXES.contains(&first.as_str()) || is_assignment(first) {
            1
        } else if first == "function" {
            // `function f { …; }`: the body follows the name.
            2
        } else if first == "time" {
            1 + options_then(rest, &[], false)
        } else {
            match program(first) {
                // `env -S SCRIPT` runs a command line: left for `inline_script`.
                "env" if splits_string(rest) => break,
                "env" => 1 + options_then(rest, ENV_OPTIONS, true),
                "xargs" => {
                    through_xargs = true;
                    1 + options_then(rest, XARGS_OPTIONS, false)
                }
                "watch" => {
                    // watch hands its words to `sh -c` as one line.
                    let options = options_then(rest, WATCH_OPTIONS, false);
                    let line = rest[options..].join(" ");
                    argv.truncate(start);
                    argv.extend(["sh".to_owned(), "-c".to_owned(), line]);
                    continue;
                }
                _ => match wrappers::command_start(&argv[start..]) {
                    Some(skip) => skip,
                    None => break,
                },
            }
        };
        start = (start + skip).min(argv.len());
    }
    argv.drain(..start);
    (argv, through_xargs)
}

/// Notes a pipeline stage that feeds the next ones, keeping the nearest
/// [`MAX_FEEDERS`].
pub(crate) fn push_stage(pipeline: &mut Vec<Feeder>, argv: &[String]) {
    if argv.is_empty() {
        return;
    }
    if pipeline.len() == MAX_FEEDERS {
        pipeline.remove(0);
    }
    pipeline.push(Feeder::new(argv.to_vec()));
}

/// Notes a command whose output a substitution feeds into the words around it
/// (up to [`MAX_FEEDERS`]).
pub(crate) fn remember_feeder(feeders: &mut Vec<Feeder>, command: &Command) {
    if feeders.len() < MAX_FEEDERS && !command.argv.is_empty() {
        feeders.push(Feeder::new(command.argv.clone()));
    }
}

/// What a feeding command runs, its wrappers removed (`sudo curl …` is curl).
pub fn feeder(argv: &[String]) -> Vec<String> {
    unwrap(expand_braces(argv.to_vec())).0
}

/// Whether `env`'s options (before its command) include `-S` / `--split-string`.
pub(crate) fn splits_string(words: &[String]) -> bool {
    let options = options_then(words, ENV_OPTIONS, true);
    words[..options]
        .iter()
        .any(|w| env_split_option(w).is_some())
}

/// Whether `word` is env's split-string option, alone (`-S`, `--split-string`)
/// or in a cluster of short options (`-iS`, `-vS'…'`), and the string attached
/// to it (empty when the string is the next word).
pub(crate) fn env_split_option(word: &str) -> Option<&str> {
    if word == "--split-string" {
        return Some("");
    }
    if let Some(attached) = word.strip_prefix("--split-string=") {
        return Some(attached);
    }
    let cluster = word.strip_prefix('-').filter(|c| !c.starts_with('-'))?;
    for (at, c) in cluster.char_indices() {
        match c {
            'S' => return Some(&cluster[at + 1..]),
            // These take the rest of the word, or the next, as their value.
            'u' | 'C' => return None,
            _ => {}
        }
    }
    None
}

const WATCH_OPTIONS: &[&str] = &["-n", "--interval", "-q", "--equexit"];
pub(crate) const ENV_OPTIONS: &[&str] = &["-u", "--unset", "-C", "--chdir"];
const XARGS_OPTIONS: &[&str] = &[
    "-I",
    "-L",
    "-n",
    "-P",
    "-s",
    "-d",
    "-E",
    "-a",
    "--delimiter",
    "--max-args",
    "--max-procs",
    "--max-lines",
    "--max-chars",
    "--arg-file",
];

/// How many leading words are options (with `takes_value` ones consuming the next
/// word), stopping at `--` (consumed) or the first non-option. `assignments` also
/// skips `NAME=value` words, as `env` takes them.
pub(crate) fn options_then(words: &[String], takes_value: &[&str], assignments: bool) -> usize {
    let mut i = 0;
    while let Some(w) = words.get(i).map(String::as_str) {
        if w == "--" {
            return i + 1;
        }
        if assignments && is_assignment(w) {
            i += 1;
        } else if w.starts_with('-') && w.len() > 1 {
            i += if takes_value.contains(&w) { 2 } else { 1 };
        } else {
            break;
        }
    }
    // An option whose value is missing ends the words, not past them.
    i.min(words.len())
}

/// The commands `find … -exec CMD … ;` (or `-execdir`, `-ok`, `-okdir`) runs.
fn find_exec_commands(argv: &[String]) -> Vec<Vec<String>> {
    if program(&argv[0]) != "find" {
        return Vec::new();
    }
    // `{}` stands for each file found: under the paths find starts from.
    let start = argv[1..]
        .iter()
        .find(|w| !w.starts_with('-') && !matches!(w.as_str(), "(" | "!"))
        .filter(|w| argv[1..].iter().position(|x| x == *w) == Some(0))
        .cloned()
        .unwrap_or_else(|| ".".to_owned());
    // With name tests (and no negation), `{}` is what they match, as a glob
    // (`find . -name __pycache__ -exec rm -rf {} +` removes `./**/__pycache__`,
    // not `.`); otherwise anything under the start.
    let negated = argv[1..].iter().any(|w| matches!(w.as_str(), "!" | "-not"));
    let mut matched: Vec<String> = Vec::new();
    if !negated {
        for pair in argv[1..].windows(2) {
            match pair[0].as_str() {
                "-name" | "-iname" => {
                    matched.push(format!("{}/**/{}", start.trim_end_matches('/'), pair[1]))
                }
                "-path" | "-ipath" | "-wholename" => matched.push(pair[1].clone()),
                _ => {}
            }
        }
    }
    if matched.is_empty() {
        matched.push(start);
    }
    let mut commands = Vec::new();
    let mut words = argv[1..].iter();
    while let Some(word) = words.next() {
        if matches!(word.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let template: Vec<&String> = words
                .by_ref()
                .take_while(|w| *w != ";" && *w != "+")
                .collect();
            for found in matched.iter().take(MAX_FEEDERS) {
                commands.push(
                    template
                        .iter()
                        .map(|w| {
                            if *w == "{}" {
                                found.clone()
                            } else {
                                (*w).clone()
                            }
                        })
                        .collect(),
                );
            }
        }
    }
    commands
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        let analysis = analyse(line);
        assert!(!analysis.incomplete, "{line}");
        analysis
            .commands
            .into_iter()
            .filter(|c| !c.argv.is_empty())
            .map(|c| c.argv.join(" "))
            .collect()
    }

    #[test]
    fn splits_on_operators_with_or_without_spaces() {
        assert_eq!(argv("cd x&&git push -f"), ["cd x", "git push -f"]);
        assert_eq!(argv("a; b || c | d & e"), ["a", "b", "c", "d", "e"]);
        assert_eq!(
            argv("git add . && \\\n  git push --force"),
            ["git add .", "git push --force"]
        );
    }

    #[test]
    fn strips_assignments_wrappers_and_reserved_words() {
        assert_eq!(argv("FOO=1 BAR=2 git status"), ["git status"]);
        assert_eq!(
            argv("sudo -u me env -i A=b timeout 5 git push"),
            ["git push"]
        );
        assert_eq!(
            argv("sudo --user me nice --adjustment 5 git push"),
            ["git push"]
        );
        assert_eq!(argv("xargs -n 1 git branch -D"), ["git branch -D"]);
        assert_eq!(
            argv("watch -n 5 git push -f"),
            ["git push -f", "sh -c git push -f"]
        );
        assert_eq!(
            argv("find . -name x -exec git reset --hard \\; -print"),
            [
                "git reset --hard",
                "find . -name x -exec git reset --hard ; -print"
            ]
        );
        assert_eq!(argv("for b in x y; do git push -f; done"), ["git push -f"]);
        assert_eq!(
            argv("if true; then git reset --hard; fi"),
            ["true", "git reset --hard"]
        );
        assert_eq!(argv("{ git reset --hard; }"), ["git reset --hard"]);
        assert_eq!(argv("! git reset --hard"), ["git reset --hard"]);
        assert_eq!(
            argv("f() { git reset --hard; }; f"),
            ["f", "git reset --hard", "f"]
        );
    }

    #[test]
    fn sees_into_shells_and_substitutions() {
        assert_eq!(
            argv("bash -c \"git reset --hard\""),
            ["git reset --hard", "bash -c git reset --hard"]
        );
        assert_eq!(
            argv("sh -lc 'cd a && git clean -fd'"),
            ["cd a", "git clean -fd", "sh -lc cd a && git clean -fd"]
        );
        assert_eq!(
            argv("bash -o errexit -c 'git reset --hard'"),
            ["git reset --hard", "bash -o errexit -c git reset --hard"]
        );
        assert_eq!(
            argv("bash --rcfile x -c -- 'git reset --hard'"),
            ["git reset --hard", "bash --rcfile x -c -- git reset --hard"]
        );
        assert_eq!(
            argv("env -S 'git push -f'"),
            ["git push -f", "env -S git push -f"]
        );
        assert_eq!(
            argv("echo $(git push --force)"),
            ["git push --force", "echo "]
        );
        assert_eq!(
            argv("echo \"$(git push --force)\""),
            ["git push --force", "echo "]
        );
        assert_eq!(
            argv("echo `git reset --hard`"),
            ["git reset --hard", "echo "]
        );
        assert_eq!(argv("diff <(git show) x"), ["git show", "diff x"]);
        assert_eq!(
            argv("eval git reset --hard"),
            ["git reset --hard", "eval git reset --hard"]
        );
        assert_eq!(
            argv("cat <<EOF\n$(git reset --hard)\nEOF"),
            ["cat", "git reset --hard"]
        );
    }

    #[test]
    fn quoted_text_heredocs_and_arrays_are_data() {
        assert_eq!(argv("echo 'git push --force'"), ["echo git push --force"]);
        assert_eq!(
            argv("cat <<EOF > notes.md\ngit reset --hard\nEOF\ngit status"),
            ["cat", "git status"]
        );
        assert_eq!(argv("git log 2>&1 >out.txt # git push -f"), ["git log"]);
        assert_eq!(argv("BLOCKED=(git push --force); echo ok"), ["echo ok"]);
        assert_eq!(
            argv("echo $'it\\'s' 'a; git reset --hard'"),
            ["echo it's a; git reset --hard"]
        );
        assert_eq!(argv("(( n = 1 << 3 ))\ngit status"), ["git status"]);
    }

    #[test]
    fn claude_style_commit_messages_do_not_hide_what_follows() {
        let line =
            "git commit -m \"$(cat <<'EOF'\nDon't panic (really)\nEOF\n)\" && git push --force";
        assert_eq!(argv(line), ["cat", "git commit -m ", "git push --force"]);
        let line = "notes=$(cat <<'EOF'\na) git reset --hard is never run\nEOF\n)";
        assert_eq!(argv(line), ["cat"]);
    }

    #[test]
    fn nesting_past_the_limit_is_reported() {
        let mut line = String::from("git reset --hard");
        for _ in 0..=MAX_DEPTH {
            line = format!("echo $({line})");
        }
        assert!(analyse(&line).incomplete);
        let mut line = String::from("git reset --hard");
        for _ in 0..=MAX_DEPTH {
            line = format!("bash -c {:?}", line);
        }
        assert!(analyse(&line).incomplete);
    }

    #[test]
    fn expansion_has_a_budget() {
        let value = vec!["a"; 2048].join(" ");
        let few = format!("x='{value}'; echo $x $x; git push -f");
        assert!(!analyse(&few).incomplete);
        let line = format!("x='{value}'; echo {}; git push -f", "$x ".repeat(5000));
        let analysis = analyse(&line);
        assert!(analysis.incomplete, "past the budget");
        let words: usize = analysis.commands.iter().map(|c| c.argv.len()).sum();
        assert!(
            words < 2 * (MAX_EXPANDED_BYTES / 2) + 10_000,
            "{words} words"
        );
        assert_eq!(
            analysis.commands.last().map(|c| c.argv.join(" ")),
            Some("git push -f".to_owned()),
            "the rest of the line is still read"
        );
    }
}
