//! Just enough of the shell's grammar to find every command a command line runs.
//!
//! A line is split into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines and
//! parentheses. Quotes (`'…'`, `"…"`, `$'…'`), escapes and line continuations are
//! honoured, so a destructive word inside a quoted string, a heredoc body with a
//! quoted delimiter, or an array literal is data, not a command. What the shell
//! does run is followed: command substitutions (`$(…)`, backticks, `<(…)`, also
//! inside double quotes and unquoted heredoc bodies), compound commands
//! (`if …; then …`, `for …; do …`, `{ …; }`), and the scripts of `sh -c`,
//! `bash -c`, `env -S` and `eval`.

/// Deepest nesting of substitutions and inline scripts followed. A command line
/// nested deeper cannot be analysed, and says so rather than pass.
pub const MAX_DEPTH: usize = 8;

/// What a command line runs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Every simple command, as an argument vector with the variable assignments,
    /// reserved words and wrappers (`env`, `sudo`, `timeout`, …) in front removed.
    pub commands: Vec<Vec<String>>,
    /// The line nests deeper than [`MAX_DEPTH`]; what it runs is not fully known.
    pub too_deep: bool,
}

/// Every command a line runs, collected. For large lines prefer [`visit`], which
/// holds one command at a time.
pub fn analyse(line: &str) -> Analysis {
    let mut commands = Vec::new();
    let too_deep = visit(line, &mut |argv| commands.push(argv));
    Analysis { commands, too_deep }
}

/// Calls `each` with every simple command the line runs, in order, as soon as it
/// is found; true when the line nests deeper than [`MAX_DEPTH`]. Time is linear in
/// the line, and memory is the line plus one command.
pub fn visit(line: &str, each: &mut dyn FnMut(Vec<String>)) -> bool {
    collect(line, 0, each)
}

fn collect(line: &str, depth: usize, out: &mut dyn FnMut(Vec<String>)) -> bool {
    let chars: Vec<char> = line.chars().collect();
    let mut scripts_too_deep = false;
    let mut on_command = |argv: Vec<String>| {
        let argv = unwrap(argv);
        if argv.is_empty() {
            return;
        }
        for command in find_exec_commands(&argv) {
            out(unwrap(command));
        }
        match inline_script(&argv) {
            Some(_) if depth >= MAX_DEPTH => scripts_too_deep = true,
            Some(script) => scripts_too_deep |= collect(&script, depth + 1, out),
            None => out(argv),
        }
    };
    let lexed_too_deep = {
        let mut lexer = Lexer::new(&chars, depth, Mode::Commands, &mut on_command);
        lexer.run(0);
        lexer.too_deep
    };
    lexed_too_deep || scripts_too_deep
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Words form commands.
    Commands,
    /// Words are data (an array literal); only substitutions in them run.
    Data,
}

struct Heredoc {
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
    sink: &'s mut dyn FnMut(Vec<String>),
    argv: Vec<String>,
    word: String,
    in_word: bool,
    /// The current word used quotes (which makes a heredoc delimiter literal).
    word_quoted: bool,
    /// The next word is a redirection target, not an argument.
    skip_next_word: bool,
    /// The next word is a heredoc delimiter (`true`: `<<-`, tabs stripped).
    heredoc_next: Option<bool>,
    heredocs: Vec<Heredoc>,
    /// Lexing the inside of `$(…)` or `<(…)`: an unmatched `)` ends it.
    in_substitution: bool,
    too_deep: bool,
}

impl<'a, 's> Lexer<'a, 's> {
    fn new(
        chars: &'a [char],
        depth: usize,
        mode: Mode,
        sink: &'s mut dyn FnMut(Vec<String>),
    ) -> Self {
        Lexer {
            in_substitution: false,
            chars,
            depth,
            mode,
            sink,
            argv: Vec::new(),
            word: String::new(),
            in_word: false,
            word_quoted: false,
            skip_next_word: false,
            heredoc_next: None,
            heredocs: Vec::new(),
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
            self.heredocs.push(Heredoc {
                delimiter: word,
                strip_tabs,
                expands: !self.word_quoted,
            });
        } else if self.skip_next_word {
            self.skip_next_word = false;
        } else {
            self.argv.push(word);
        }
        self.in_word = false;
        self.word_quoted = false;
    }

    fn end_command(&mut self) {
        self.end_word();
        let argv = std::mem::take(&mut self.argv);
        if self.mode == Mode::Commands && !argv.is_empty() {
            (self.sink)(argv);
        }
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
                '(' if !self.in_word && self.at(i + 1) == Some('(') => {
                    // Arithmetic `(( … ))`: no commands, and no heredocs, inside.
                    self.end_command();
                    i = skip_arithmetic(self.chars, i + 2);
                }
                '(' if self.in_word && is_assignment_start(&self.word) => {
                    // An array literal `NAME=( … )`: its words are data.
                    i = self.nested(i + 1, Mode::Data);
                    self.word.push_str("(…)");
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
                ';' | '|' => {
                    self.end_command();
                    i += 1;
                }
                '&' if self.at(i + 1) == Some('>') => {
                    // `&>file`: a redirection, not a separator.
                    self.end_word();
                    i += if self.at(i + 2) == Some('>') { 3 } else { 2 };
                    self.skip_next_word = true;
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
                '$' if self.at(i + 1) == Some('(') && self.at(i + 2) == Some('(') => {
                    self.in_word = true;
                    i = skip_arithmetic(self.chars, i + 3);
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
        while self
            .at(i)
            .is_some_and(|c| matches!(c, '>' | '<' | '&' | '|'))
        {
            i += 1;
        }
        self.skip_next_word = true;
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
            if heredoc.expands {
                let chars: Vec<char> = body.chars().collect();
                let mut expansion = Lexer::new(&chars, self.depth, Mode::Data, &mut *self.sink);
                expansion.substitutions_only();
                self.too_deep |= expansion.too_deep;
            }
        }
        i
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
                '$' if self.at(i + 1) == Some('(') && self.at(i + 2) == Some('(') => {
                    i = skip_arithmetic(self.chars, i + 3);
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
                '\\' => {
                    if let Some(next) = self.at(i + 1) {
                        self.word.push(next);
                    }
                    i += 2;
                }
                other => {
                    self.word.push(other);
                    i += 1;
                }
            }
        }
        i
    }

    /// Lexes a nested command list starting at `start` (just inside its opening
    /// parenthesis) and takes in what it runs; returns the index after its `)`.
    fn nested(&mut self, start: usize, mode: Mode) -> usize {
        if self.depth >= MAX_DEPTH {
            self.too_deep = true;
            return skip_balanced(self.chars, start);
        }
        let mut inner = Lexer::new(self.chars, self.depth + 1, mode, &mut *self.sink);
        inner.in_substitution = true;
        let end = inner.run(start);
        self.too_deep |= inner.too_deep;
        end
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
            let mut lexer = Lexer::new(&chars, self.depth + 1, Mode::Commands, &mut *self.sink);
            lexer.run(0);
            self.too_deep |= lexer.too_deep;
        }
        i + 1
    }
}

/// The index after the `))` closing arithmetic that started just before `start`.
fn skip_arithmetic(chars: &[char], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            ')' if chars.get(i + 1) == Some(&')') => return i + 2,
            _ => {}
        }
        i += 1;
    }
    chars.len()
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

fn is_assignment_start(word: &str) -> bool {
    word.strip_suffix('=').is_some_and(is_name)
}

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| is_name(name))
}

/// The program a command word names: its last path component.
pub fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Words that open or continue a compound command; the command follows them.
const RESERVED_PREFIXES: &[&str] = &[
    "!", "{", "}", "then", "do", "else", "elif", "if", "while", "until", "time",
];
/// Compound commands whose own words are not a command (`for x in a b`).
const RESERVED_NON_COMMANDS: &[&str] = &["for", "select", "case", "function", "done", "fi", "esac"];

/// Removes variable assignments, reserved words and command wrappers from the
/// front of a command. Finds where the command starts, then removes the front in
/// one step, so a thousand wrappers cost no more than a thousand words.
fn unwrap(mut argv: Vec<String>) -> Vec<String> {
    let mut start = 0;
    while let Some(first) = argv.get(start) {
        if RESERVED_NON_COMMANDS.contains(&first.as_str()) {
            return Vec::new();
        }
        let rest = &argv[start + 1..];
        let skip = if RESERVED_PREFIXES.contains(&first.as_str()) || is_assignment(first) {
            1
        } else {
            match program(first) {
                // `env -S SCRIPT` runs a command line: left for `inline_script`.
                "env" if splits_string(rest) => break,
                "env" => 1 + options_then(rest, ENV_OPTIONS, true),
                "sudo" | "doas" => 1 + options_then(rest, SUDO_OPTIONS, false),
                "nohup" | "command" | "builtin" | "exec" | "unbuffer" => {
                    1 + options_then(rest, &["-a"], false)
                }
                "nice" | "ionice" => 1 + options_then(rest, NICE_OPTIONS, false),
                "stdbuf" => 1 + options_then(rest, STDBUF_OPTIONS, false),
                "timeout" => {
                    let options = options_then(rest, TIMEOUT_OPTIONS, false);
                    // The duration comes before the command.
                    1 + options + usize::from(rest.len() > options)
                }
                "xargs" => 1 + options_then(rest, XARGS_OPTIONS, false),
                "watch" => 1 + options_then(rest, WATCH_OPTIONS, false),
                _ => break,
            }
        };
        start = (start + skip).min(argv.len());
    }
    argv.drain(..start);
    argv
}

/// Whether `env`'s options (before its command) include `-S` / `--split-string`.
fn splits_string(words: &[String]) -> bool {
    let options = options_then(words, ENV_OPTIONS, true);
    words[..options]
        .iter()
        .any(|w| w == "--split-string" || w.starts_with("--split-string=") || w.starts_with("-S"))
}

const WATCH_OPTIONS: &[&str] = &["-n", "--interval", "-q", "--equexit"];
const ENV_OPTIONS: &[&str] = &["-u", "--unset", "-C", "--chdir"];
const SUDO_OPTIONS: &[&str] = &[
    "-u",
    "--user",
    "-g",
    "--group",
    "-C",
    "--close-from",
    "-D",
    "--chdir",
    "-h",
    "--host",
    "-p",
    "--prompt",
    "-r",
    "--role",
    "-t",
    "--type",
    "-U",
    "--other-user",
    "-T",
    "--command-timeout",
];
const NICE_OPTIONS: &[&str] = &[
    "-n",
    "--adjustment",
    "-c",
    "--class",
    "-p",
    "--pid",
    "--classdata",
];
const STDBUF_OPTIONS: &[&str] = &["-i", "--input", "-o", "--output", "-e", "--error"];
const TIMEOUT_OPTIONS: &[&str] = &["-s", "--signal", "-k", "--kill-after"];
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
fn options_then(words: &[String], takes_value: &[&str], assignments: bool) -> usize {
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
    i
}

/// The commands `find … -exec CMD … ;` (or `-execdir`, `-ok`, `-okdir`) runs.
fn find_exec_commands(argv: &[String]) -> Vec<Vec<String>> {
    if program(&argv[0]) != "find" {
        return Vec::new();
    }
    let mut commands = Vec::new();
    let mut words = argv[1..].iter();
    while let Some(word) = words.next() {
        if matches!(word.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let command: Vec<String> = words
                .by_ref()
                .take_while(|w| *w != ";" && *w != "+")
                .cloned()
                .collect();
            commands.push(command);
        }
    }
    commands
}

/// Shell options that take a value, before `-c`.
const SHELL_OPTIONS_WITH_VALUE: &[&str] = &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"];

/// The script a command runs as a command line: `sh -c SCRIPT`, `env -S SCRIPT …`,
/// or `eval`'s arguments.
fn inline_script(argv: &[String]) -> Option<String> {
    let name = program(&argv[0]);
    if name == "eval" {
        return Some(argv[1..].join(" "));
    }
    if name == "env" {
        // `env -S 'a b'` splits its value into the command (after unwrap, only an
        // `env` still carrying -S reaches here).
        let at = argv[1..]
            .iter()
            .position(|w| w == "-S" || w.starts_with("-S") || w.starts_with("--split-string"))?
            + 1;
        let word = &argv[at];
        let inline = word
            .strip_prefix("--split-string=")
            .or_else(|| word.strip_prefix("-S").filter(|v| !v.is_empty()));
        let mut script: Vec<&str> = inline.into_iter().collect();
        script.extend(argv[at + 1..].iter().map(String::as_str));
        return Some(script.join(" "));
    }
    if !matches!(name, "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish") {
        return None;
    }
    let mut words = argv[1..].iter();
    let mut wants_script = false;
    while let Some(w) = words.next() {
        if wants_script {
            if w == "--" {
                continue;
            }
            return Some(w.clone());
        }
        if SHELL_OPTIONS_WITH_VALUE.contains(&w.as_str()) {
            words.next();
        } else if w.starts_with('-') && !w.starts_with("--") && w[1..].contains('c') {
            wants_script = true;
        } else if !w.starts_with('-') && !w.starts_with('+') {
            // A script file: not a command line to analyse.
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        let analysis = analyse(line);
        assert!(!analysis.too_deep, "{line}");
        analysis.commands.into_iter().map(|c| c.join(" ")).collect()
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
        assert_eq!(argv("watch -n 5 git push -f"), ["git push -f"]);
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
        assert_eq!(argv("bash -c \"git reset --hard\""), ["git reset --hard"]);
        assert_eq!(
            argv("sh -lc 'cd a && git clean -fd'"),
            ["cd a", "git clean -fd"]
        );
        assert_eq!(
            argv("bash -o errexit -c 'git reset --hard'"),
            ["git reset --hard"]
        );
        assert_eq!(
            argv("bash --rcfile x -c -- 'git reset --hard'"),
            ["git reset --hard"]
        );
        assert_eq!(argv("env -S 'git push -f'"), ["git push -f"]);
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
        assert_eq!(argv("eval git reset --hard"), ["git reset --hard"]);
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
        assert!(analyse(&line).too_deep);
        let mut line = String::from("git reset --hard");
        for _ in 0..=MAX_DEPTH {
            line = format!("bash -c {:?}", line);
        }
        assert!(analyse(&line).too_deep);
    }
}
