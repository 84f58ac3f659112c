//! Command lines inside a command's arguments: the scripts of `sh -c`, `env -S`,
//! `eval` and `ssh host …`; PowerShell's `-Command` and `-EncodedCommand`; and
//! what interpreter one-liners run (`python -c`, `node -e`, `perl -e`, `ruby -e`,
//! `php -r`, `awk`'s `system()` and pipes, `sed`'s `e`).
//!
//! An interpreter's code is not parsed: when it calls something that runs a
//! command (`system`, `popen`, `exec`, `spawn`, `subprocess`, backticks …), each
//! string literal in it (and each list of literals, `["rm", "-rf", "/"]`) is
//! analysed as a command line, and calls that delete a tree (`shutil.rmtree`,
//! `fs.rmSync`, `FileUtils.rm_rf`, …) are read as `rm -rf` of their literal
//! argument. Code that builds its command from variables is not seen through.

use base64::Engine as _;

use super::{ENV_OPTIONS, env_split_option, options_then, program, splits_string};

/// A script found in a command's arguments.
#[derive(Debug, PartialEq, Eq)]
pub enum Script {
    /// A POSIX shell command line.
    Shell(String),
    /// A PowerShell command line.
    PowerShell(String),
    /// A command an interpreter's code runs directly, as an argument vector.
    Command(Vec<String>),
    /// Code runs that cannot be read: sed's `e` on the pattern space, an encoded
    /// command that does not decode.
    Unanalysable,
}

/// Shell options that take a value, before `-c`.
const SHELL_OPTIONS_WITH_VALUE: &[&str] = &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"];

/// ssh options that take a value (before the destination).
const SSH_OPTIONS_WITH_VALUE: &[&str] = &[
    "-b", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L", "-l", "-m", "-O", "-o", "-p", "-Q",
    "-R", "-S", "-W", "-w", "-B", "-P",
];

/// What the command `argv` (already unwrapped) runs besides itself.
pub fn scripts(argv: &[String]) -> Vec<Script> {
    let Some(first) = argv.first() else {
        return Vec::new();
    };
    let name = program(first);
    let args = &argv[1..];
    let name = name.strip_suffix(".exe").unwrap_or(name);
    let name = super::interpreter_family(name).unwrap_or(name);
    match name {
        "eval" => vec![Script::Shell(args.join(" "))],
        "env" if splits_string(args) => env_split_string(args).into_iter().collect(),
        "invoke-expression" => vec![Script::PowerShell(args.join(" "))],
        shell if super::SHELLS.contains(&shell) || shell == "fish" => {
            shell_script(args).map(Script::Shell).into_iter().collect()
        }
        "ssh" => remote_command(args)
            .map(Script::Shell)
            .into_iter()
            .collect(),
        "powershell" | "pwsh" => powershell_script(args).into_iter().collect(),
        "python" | "python2" | "python3" | "node" | "nodejs" | "perl" | "ruby" | "php" | "deno"
        | "bun" | "lua" | "luajit" => interpreter_code(name, args)
            .map(|code| from_code(&code))
            .unwrap_or_default(),
        "awk" | "gawk" | "mawk" | "nawk" => {
            awk_program(args).map(|p| from_awk(&p)).unwrap_or_default()
        }
        "sed" | "gsed" => from_sed(args),
        "cmd" => super::cmd::script(args)
            .map(|text| {
                super::cmd::commands(&text)
                    .into_iter()
                    .map(Script::Command)
                    .collect()
            })
            .unwrap_or_default(),
        "vim" | "vi" | "nvim" | "ex" | "view" | "gvim" | "vimdiff" | "evim" | "nvi" => {
            editor_commands(args)
        }
        "git" => git_settings_scripts(args),
        _ => Vec::new(),
    }
}

/// What an editor runs in a shell from the commands it is given to run at
/// start (`vim -c '!git reset --hard'`, `+'silent !…'`, `--cmd`,
/// `call system('…')`, `:terminal …`).
fn editor_commands(args: &[String]) -> Vec<Script> {
    let mut commands = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let command = match word.as_str() {
            "-c" | "--cmd" | "-S" => words.next().map(String::as_str),
            w if w.starts_with('+') && w.len() > 1 => Some(&w[1..]),
            w if w.starts_with("-c") && w.len() > 2 => Some(&w[2..]),
            _ => None,
        };
        if let Some(text) = command.and_then(editor_shell_command) {
            commands.push(Script::Shell(text));
        }
    }
    commands
}

/// The shell command in one editor command, if it runs one.
fn editor_shell_command(command: &str) -> Option<String> {
    let mut rest = command.trim_start_matches([':', ' ']);
    for prefix in ["silent!", "silent", "exe", "execute", "sil!", "sil"] {
        if let Some(after) = rest.strip_prefix(prefix) {
            rest = after.trim_start();
        }
    }
    // A range, then `r`/`read`/`w`/`write` before the bang (`:r !cmd`, `%!cmd`).
    let rest =
        rest.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, ',' | '%' | '.' | '$'));
    let rest = ["read", "write", "r", "w"]
        .iter()
        .find_map(|verb| rest.strip_prefix(verb).map(str::trim_start))
        .filter(|r| r.starts_with('!'))
        .unwrap_or(rest);
    if let Some(shell) = rest.strip_prefix('!') {
        return Some(shell.to_owned());
    }
    for verb in ["terminal ", "term "] {
        if let Some(shell) = rest.strip_prefix(verb) {
            return Some(shell.to_owned());
        }
    }
    // `call system('…')`, `echo systemlist("…")`.
    let at = rest.find("system")?;
    let after = rest[at..].split_once('(')?.1.trim_start();
    let quote = after.chars().next().filter(|q| matches!(q, '\'' | '"'))?;
    let inner = &after[1..];
    Some(inner[..inner.find(quote)?].to_owned())
}

/// What git runs in a shell for a command line: the value of a setting that
/// names a command, given with `-c` (`git -c core.editor='…' commit`) or written
/// with `git config KEY VALUE` (it runs at the next command that uses it); and
/// the commands `submodule foreach`, `rebase --exec`/`-x`, `bisect run` and
/// `difftool -x` run.
fn git_settings_scripts(args: &[String]) -> Vec<Script> {
    let mut scripts = Vec::new();
    let mut words = args.iter();
    let mut subcommand_at = None;
    while let Some(word) = words.next() {
        if word == "-c" {
            if let Some((key, value)) = words.next().and_then(|kv| kv.split_once('=')) {
                scripts.extend(setting_script(key, value));
            }
            continue;
        }
        if matches!(
            word.as_str(),
            "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--exec-path" | "--config-env"
        ) {
            words.next();
            continue;
        }
        if !word.starts_with('-') {
            subcommand_at = args.iter().position(|w| std::ptr::eq(w, word));
            break;
        }
    }
    let Some(at) = subcommand_at else {
        return scripts;
    };
    let rest = &args[at + 1..];
    let operands: Vec<&String> = rest.iter().filter(|w| !w.starts_with('-')).collect();
    match args[at].as_str() {
        "config" => {
            // `git config [--global] [set] KEY VALUE`.
            let words: Vec<&String> = operands
                .iter()
                .copied()
                .skip_while(|w| *w == "set")
                .collect();
            if let [key, value, ..] = words.as_slice() {
                scripts.extend(setting_script(key, value));
            }
        }
        "submodule" if operands.first().is_some_and(|w| *w == "foreach") => {
            let from = rest
                .iter()
                .position(|w| w == "foreach")
                .map_or(0, |p| p + 1);
            let command: Vec<&str> = rest[from..]
                .iter()
                .map(String::as_str)
                .skip_while(|w| matches!(*w, "--recursive" | "-q" | "--quiet"))
                .collect();
            if !command.is_empty() {
                scripts.push(Script::Shell(command.join(" ")));
            }
        }
        "rebase" => {
            let mut words = rest.iter();
            while let Some(word) = words.next() {
                if word == "-x" || word == "--exec" {
                    scripts.extend(words.next().map(|c| Script::Shell(c.clone())));
                } else if let Some(command) = word.strip_prefix("--exec=") {
                    scripts.push(Script::Shell(command.to_owned()));
                }
            }
        }
        "bisect" if operands.first().is_some_and(|w| *w == "run") => {
            let from = rest.iter().position(|w| w == "run").map_or(0, |p| p + 1);
            scripts.push(Script::Shell(rest[from..].join(" ")));
        }
        "difftool" | "mergetool" => {
            let mut words = rest.iter();
            while let Some(word) = words.next() {
                if word == "-x" || word == "--extcmd" {
                    scripts.extend(words.next().map(|c| Script::Shell(c.clone())));
                } else if let Some(command) = word.strip_prefix("--extcmd=") {
                    scripts.push(Script::Shell(command.to_owned()));
                }
            }
        }
        _ => {}
    }
    scripts
}

/// The shell command a git setting names, when it names one: the editor, the
/// pager, the ssh command, an external diff, the fsmonitor hook, a filter's
/// clean and smudge, and `!`-aliases and credential helpers.
fn setting_script(key: &str, value: &str) -> Option<Script> {
    let key = key.to_ascii_lowercase();
    let runs = matches!(
        key.as_str(),
        "core.editor"
            | "sequence.editor"
            | "core.pager"
            | "core.sshcommand"
            | "diff.external"
            | "core.fsmonitor"
            | "gpg.program"
            | "core.askpass"
            | "core.hookspath"
    ) || key.starts_with("pager.")
        || (key.starts_with("filter.")
            && (key.ends_with(".clean") || key.ends_with(".smudge") || key.ends_with(".process")))
        || (key.starts_with("difftool.") && key.ends_with(".cmd"))
        || (key.starts_with("mergetool.") && key.ends_with(".cmd"));
    if runs && !value.is_empty() && key != "core.hookspath" {
        return Some(Script::Shell(value.to_owned()));
    }
    let shell = value.strip_prefix('!')?;
    (key.starts_with("credential") || key.starts_with("alias."))
        .then(|| Script::Shell(shell.to_owned()))
}

/// `env -S 'a b' c`: the split string and what follows it.
fn env_split_string(args: &[String]) -> Option<Script> {
    let options = options_then(args, ENV_OPTIONS, true);
    let at = args[..options]
        .iter()
        .position(|w| env_split_option(w).is_some())?;
    let inline = env_split_option(&args[at]).filter(|v| !v.is_empty());
    let mut script: Vec<&str> = inline.into_iter().collect();
    script.extend(args[at + 1..].iter().map(String::as_str));
    Some(Script::Shell(script.join(" ")))
}

/// The script of `sh [options] -c SCRIPT [NAME ARGS…]`, if the shell runs one,
/// with its positional parameters (`$1`, `"$@"`) replaced by the words given.
fn shell_script(args: &[String]) -> Option<String> {
    let mut words = args.iter();
    let mut wants_script = false;
    while let Some(w) = words.next() {
        if wants_script {
            if w == "--" {
                continue;
            }
            let positional: Vec<&String> = words.collect();
            return Some(with_positional(w, &positional));
        }
        if SHELL_OPTIONS_WITH_VALUE.contains(&w.as_str()) {
            words.next();
        } else if w.starts_with('-') && !w.starts_with("--") && w[1..].contains('c') {
            wants_script = true;
        } else if !w.starts_with('-') && !w.starts_with('+') {
            // A script file (or busybox's applet): not a command line to analyse.
            return None;
        }
    }
    None
}

/// `script` with `$1`…`$9`, `${1}`…, `$@` and `$*` (quoted or not) replaced by the
/// words after its name (`positional[0]` is `$0`).
fn with_positional(script: &str, positional: &[&String]) -> String {
    if positional.len() < 2 || !script.contains('$') {
        return script.to_owned();
    }
    let all = positional[1..]
        .iter()
        .map(|w| w.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let mut text = script
        .replace("\"$@\"", &all)
        .replace("\"$*\"", &all)
        .replace("$@", &all)
        .replace("$*", &all);
    for (n, word) in positional.iter().enumerate().skip(1).take(9).rev() {
        text = text
            .replace(&format!("${{{n}}}"), word)
            .replace(&format!("${n}"), word);
    }
    text
}

/// The command `ssh [options] HOST COMMAND…` runs on the remote host.
fn remote_command(args: &[String]) -> Option<String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        if w == "--" {
            i += 1;
            break;
        }
        if !w.starts_with('-') {
            break;
        }
        i += if SSH_OPTIONS_WITH_VALUE.contains(&w.as_str()) {
            2
        } else {
            1
        };
    }
    let command = args.get(i + 1..)?;
    (!command.is_empty()).then(|| command.join(" "))
}

/// `powershell -Command …`, `pwsh -c …`, `-EncodedCommand BASE64` (UTF-16LE).
fn powershell_script(args: &[String]) -> Option<Script> {
    let mut words = args.iter().enumerate();
    while let Some((i, w)) = words.next() {
        let option = w.to_ascii_lowercase();
        let option = option.trim_start_matches(['-', '/']);
        if !w.starts_with(['-', '/']) {
            // A script file, or the command itself with no -Command.
            if w.to_ascii_lowercase().ends_with(".ps1") {
                return None;
            }
            return Some(Script::PowerShell(args[i..].join(" ")));
        }
        let encoded = option == "ec"
            || option == "enc"
            || (!option.is_empty()
                && "encodedcommand".starts_with(option)
                && option.starts_with('e'));
        if encoded {
            let encoded = words.next().map(|(_, w)| w.as_str()).unwrap_or("");
            return Some(
                decode_utf16le_base64(encoded).map_or(Script::Unanalysable, Script::PowerShell),
            );
        }
        if !option.is_empty() && "command".starts_with(option) {
            return Some(Script::PowerShell(args[i + 1..].join(" ")));
        }
        if matches!(
            option,
            "executionpolicy"
                | "ep"
                | "windowstyle"
                | "w"
                | "file"
                | "f"
                | "configurationname"
                | "workingdirectory"
                | "wd"
                | "inputformat"
                | "outputformat"
                | "of"
                | "if"
        ) {
            words.next();
        }
    }
    None
}

/// PowerShell's `-EncodedCommand`: base64 of UTF-16LE text.
pub fn decode_utf16le_base64(encoded: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    if bytes.len() % 2 != 0 {
        return None;
    }
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|pair| u16::from_le_bytes([pair[0], pair[1]]))
        .collect();
    String::from_utf16(&units).ok()
}

/// The code an interpreter runs from its arguments (`-c`, `-e`, `--eval`, `-p`,
/// `-E`, `-r`; `deno eval`, `bun -e`).
pub fn interpreter_code(name: &str, args: &[String]) -> Option<String> {
    let flags: &[&str] = match name {
        "python" | "python2" | "python3" => &["-c"],
        "node" | "nodejs" | "bun" => &["-e", "--eval", "-p", "--print"],
        "perl" => &["-e", "-E"],
        "ruby" => &["-e"],
        "php" => &["-r"],
        "lua" | "luajit" => &["-e"],
        "deno" => {
            return (args.first().map(String::as_str) == Some("eval")).then(|| args[1..].join(" "));
        }
        _ => return None,
    };
    let mut code = Vec::new();
    let mut words = args.iter();
    while let Some(w) = words.next() {
        if flags.contains(&w.as_str()) {
            code.extend(words.next().cloned());
        } else if name.starts_with("python")
            && w.starts_with('-')
            && !w.starts_with("--")
            && w.len() > 2
            && w.ends_with('c')
            && w[1..].chars().all(|c| c.is_ascii_alphabetic())
        {
            // `-qc CODE`, `-Ic CODE`: options bundled before `-c`.
            code.extend(words.next().cloned());
        } else if let Some(attached) = flags.iter().find_map(|f| {
            w.strip_prefix(f)
                .filter(|rest| f.len() == 2 && !rest.is_empty())
        }) {
            // `-c'…'` and Perl's bundled `-le'…'` forms.
            code.push(attached.to_owned());
        } else if name == "perl"
            && w.starts_with('-')
            && !w.starts_with("--")
            && w.ends_with('e')
            && w[1..].chars().all(|c| c.is_ascii_alphabetic())
        {
            code.extend(words.next().cloned());
        }
    }
    (!code.is_empty()).then(|| code.join("\n"))
}

/// Calls in interpreter code that run a command.
const RUNS_COMMANDS: &[&str] = &[
    "system",
    "popen",
    "exec",
    "spawn",
    "subprocess",
    "child_process",
    "`",
    "%x",
    "qx",
    "shell",
    "Popen",
    "check_output",
    "check_call",
    "Command",
];

/// Calls that delete a tree, read as `rm -rf` of their first literal argument.
const DELETES_TREES: &[&str] = &[
    "rmtree",
    "rmSync",
    "rmdirSync",
    "rm_rf",
    "rm_r",
    "remove_dir_all",
    "RemoveAll",
    "remove_tree",
    "removeSync",
];

/// Expressions for the home directory in interpreter code.
const HOME_EXPRESSIONS: &[&str] = &[
    "homedir()",
    "Dir.home",
    "Path.home()",
    "expanduser(\"~\")",
    "expanduser('~')",
    "ENV['HOME']",
    "ENV[\"HOME\"]",
    "environ['HOME']",
    "$ENV{HOME}",
    "env.HOME",
];

/// Calls that write the file named by their first literal argument, read as
/// `tee FILE`, and calls that delete it, read as `rm FILE`: so the writes list
/// (and self-protection) sees them.
const WRITES_FILES: &[&str] = &[
    "writeFileSync",
    "appendFileSync",
    "writeFile(",
    "File.write",
    "File.open",
    "IO.write",
    "file_put_contents",
];
const DELETES_FILES: &[&str] = &["unlink", "os.remove", "remove(", "File.delete", "rm_f"];

/// What interpreter code writes and deletes, as far as its literals show.
fn file_changes(code: &str) -> Vec<Script> {
    let mut scripts = Vec::new();
    // `needs`: words one of which must follow the call for it to write (a mode,
    // pathlib's `.write_text`); empty: it always writes.
    let mut literal_after = |call: &str, program: &str, needs: &[&str]| {
        let mut from = 0;
        while let Some(at) = code[from..].find(call) {
            let after = from + at + call.len();
            let window: String = code[after..].chars().take(160).collect();
            let writes_mode = needs.is_empty() || needs.iter().any(|m| window.contains(m));
            if writes_mode && let Some(literal) = string_literals(&window).into_iter().next() {
                scripts.push(Script::Command(vec![program.to_owned(), literal.text]));
            }
            from = after;
        }
    };
    for call in WRITES_FILES {
        literal_after(call, "tee", &[]);
    }
    // Python's `open(PATH, "w")`, read loosely.
    let modes = ["'w", "\"w", "'a", "\"a", "'x", "\"x", "'r+", "\"r+"];
    literal_after("open(", "tee", &modes);
    // pathlib: `Path("X").write_text(…)`, `.unlink()`.
    let pathlib = [
        ".write_text",
        ".write_bytes",
        ".touch",
        ".unlink",
        ".rename",
        ".replace",
    ];
    literal_after("Path(", "tee", &pathlib);
    for call in DELETES_FILES {
        literal_after(call, "rm", &[]);
    }
    scripts
}

/// What interpreter code runs, as far as its literals show.
fn from_code(code: &str) -> Vec<Script> {
    let mut scripts = file_changes(code);
    if RUNS_COMMANDS.iter().any(|call| code.contains(call)) {
        let literals = string_literals(code);
        for literal in &literals {
            scripts.push(Script::Shell(literal.text.clone()));
        }
        // `subprocess.run(["rm", "-rf", "/"])`: consecutive literals in a list.
        for list in literal_lists(code, &literals) {
            scripts.push(Script::Command(list));
        }
    }
    for call in DELETES_TREES {
        let mut from = 0;
        while let Some(at) = code[from..].find(call) {
            let after = from + at + call.len();
            let argument: String = code[after..].chars().take(80).collect();
            if HOME_EXPRESSIONS.iter().any(|home| argument.contains(home)) {
                scripts.push(Script::Command(vec!["rm".into(), "-rf".into(), "~".into()]));
            } else if let Some(literal) = string_literals(&code[after..]).into_iter().next() {
                scripts.push(Script::Command(vec![
                    "rm".into(),
                    "-rf".into(),
                    literal.text,
                ]));
            }
            from = after;
        }
    }
    scripts
}

/// awk's program: the first operand, unless `-f FILE` gives it.
fn awk_program(args: &[String]) -> Option<String> {
    let mut words = args.iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "-f" | "--file" => return None,
            "-F" | "-v" | "--assign" | "--field-separator" => {
                words.next();
            }
            "--" => return words.next().cloned(),
            _ if w.starts_with('-') && w.len() > 1 => {}
            _ => return Some(w.clone()),
        }
    }
    None
}

/// Commands an awk program runs: `system("…")`, `"cmd" | getline`, `print | "cmd"`.
fn from_awk(program: &str) -> Vec<Script> {
    // `print … > "FILE"` and `>> "FILE"` write FILE.
    let mut scripts = Vec::new();
    let mut from = 0;
    while let Some(at) = program[from..].find('>') {
        let rest = program[from + at..].trim_start_matches('>');
        let after = program.len() - rest.len();
        if let Some(literal) = string_literals(rest)
            .into_iter()
            .next()
            .filter(|_| rest.trim_start().starts_with(['"', '\'']))
        {
            scripts.push(Script::Command(vec!["tee".to_owned(), literal.text]));
        }
        from = after;
    }
    if program.contains("system") || program.contains('|') {
        scripts.extend(
            string_literals(program)
                .into_iter()
                .map(|literal| Script::Shell(literal.text)),
        );
    }
    scripts
}

/// sed's `e` command runs its argument (or, bare, the pattern space); the `e`
/// flag of `s` runs the pattern space.
fn from_sed(args: &[String]) -> Vec<Script> {
    let mut scripts_text = Vec::new();
    let mut words = args.iter();
    let mut explicit = false;
    let mut first_operand = None;
    while let Some(w) = words.next() {
        match w.as_str() {
            "-e" | "--expression" => {
                explicit = true;
                scripts_text.extend(words.next().cloned());
            }
            "-f" | "--file" => {
                explicit = true;
                words.next();
            }
            _ if w.starts_with("--expression=") => {
                explicit = true;
                scripts_text.push(w["--expression=".len()..].to_owned());
            }
            _ if w.starts_with('-') && w.len() > 1 => {}
            _ if first_operand.is_none() => first_operand = Some(w.clone()),
            _ => {}
        }
    }
    if !explicit {
        scripts_text.extend(first_operand);
    }
    let mut found = Vec::new();
    for text in scripts_text {
        for piece in text.split(['\n', ';']) {
            let command = strip_sed_address(piece.trim());
            if let Some(rest) = command.strip_prefix('e') {
                if rest.is_empty() {
                    found.push(Script::Unanalysable);
                } else if rest.starts_with([' ', '\t']) {
                    found.push(Script::Shell(rest.trim().to_owned()));
                }
            } else if let Some(flags) = substitution_flags(command)
                && flags.contains('e')
            {
                found.push(Script::Unanalysable);
            }
        }
    }
    found
}

/// A sed command without its address (`1`, `$`, `/re/`, `1,5`, `/a/,/b/`).
fn strip_sed_address(command: &str) -> &str {
    let mut rest = command;
    for _ in 0..2 {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('/') {
            rest = after.find('/').map_or("", |end| &after[end + 1..]);
        } else {
            rest = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == '$');
        }
        match rest.strip_prefix(',') {
            Some(after) => rest = after,
            None => break,
        }
    }
    rest.trim_start().trim_start_matches('!').trim_start()
}

/// The flags of a sed `s` command (`s/a/b/ge` → `ge`).
fn substitution_flags(command: &str) -> Option<&str> {
    let rest = command.strip_prefix('s')?;
    let delimiter = rest.chars().next()?;
    if delimiter.is_alphanumeric() || delimiter == '\\' {
        return None;
    }
    // The pattern and the replacement end at the delimiter not escaped by a
    // backslash (`s/src\/lib/x/g`).
    let body = &rest[delimiter.len_utf8()..];
    let mut ends = 0;
    let mut escaped = false;
    for (at, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            c if c == delimiter => {
                ends += 1;
                if ends == 2 {
                    let flags = &body[at + c.len_utf8()..];
                    // The flags end where the next command starts (`}` or space).
                    let end = flags
                        .find(|f: char| !f.is_ascii_alphanumeric())
                        .unwrap_or(flags.len());
                    return Some(&flags[..end]);
                }
            }
            _ => {}
        }
    }
    None
}

/// A string literal in interpreter code, with where it ends.
struct Literal {
    text: String,
    start: usize,
    end: usize,
}

/// The quoted strings ('…', "…", `…`) in code, with backslash escapes undone.
fn string_literals(code: &str) -> Vec<Literal> {
    let mut literals = Vec::new();
    let mut chars = code.char_indices().peekable();
    while let Some((start, c)) = chars.next() {
        if !matches!(c, '\'' | '"' | '`') {
            continue;
        }
        let mut text = String::new();
        let mut end = code.len();
        while let Some((i, d)) = chars.next() {
            if d == '\\' {
                if let Some((_, escaped)) = chars.next() {
                    text.push(escaped);
                }
            } else if d == c {
                end = i + 1;
                break;
            } else {
                text.push(d);
            }
        }
        literals.push(Literal { text, start, end });
    }
    literals
}

/// Runs of two or more literals separated only by commas and spaces, inside
/// brackets: argument vectors.
fn literal_lists(code: &str, literals: &[Literal]) -> Vec<Vec<String>> {
    let mut lists = Vec::new();
    let mut current: Vec<String> = Vec::new();
    let mut previous_end = None;
    for literal in literals {
        let joined = previous_end.is_some_and(|end: usize| {
            code.get(end..literal.start)
                .is_some_and(|between| between.chars().all(|c| c == ',' || c.is_whitespace()))
        });
        if !joined && current.len() > 1 {
            lists.push(std::mem::take(&mut current));
        }
        if !joined {
            current.clear();
        }
        current.push(literal.text.clone());
        previous_end = Some(literal.end);
    }
    if current.len() > 1 {
        lists.push(current);
    }
    lists
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn finds_what_interpreters_run() {
        let python = vec![
            "python3".to_owned(),
            "-c".to_owned(),
            "import os; os.system('rm -rf /')".to_owned(),
        ];
        assert!(scripts(&python).contains(&Script::Shell("rm -rf /".into())));
        let listed = vec![
            "python".to_owned(),
            "-c".to_owned(),
            "import subprocess; subprocess.run(['rm', '-rf', '/'])".to_owned(),
        ];
        assert!(scripts(&listed).contains(&Script::Command(words("rm -rf /"))));
        let rmtree = vec![
            "python".to_owned(),
            "-c".to_owned(),
            "import shutil; shutil.rmtree('/etc')".to_owned(),
        ];
        assert_eq!(scripts(&rmtree), [Script::Command(words("rm -rf /etc"))]);
        let printing = vec![
            "python".to_owned(),
            "-c".to_owned(),
            "print('rm -rf /')".to_owned(),
        ];
        assert_eq!(scripts(&printing), []);
    }

    #[test]
    fn finds_awk_and_sed_execution() {
        let awk = vec!["awk".to_owned(), "BEGIN{system(\"rm -rf /\")}".to_owned()];
        assert_eq!(scripts(&awk), [Script::Shell("rm -rf /".into())]);
        let sed = vec!["sed".to_owned(), "1e rm -rf /".to_owned(), "f".to_owned()];
        assert_eq!(scripts(&sed), [Script::Shell("rm -rf /".into())]);
        let sed = vec!["sed".to_owned(), "s/x/y/e".to_owned()];
        assert_eq!(scripts(&sed), [Script::Unanalysable]);
        let sed = vec![
            "sed".to_owned(),
            "-i".to_owned(),
            "s/e/E/g".to_owned(),
            "f".to_owned(),
        ];
        assert_eq!(scripts(&sed), []);
    }

    #[test]
    fn decodes_powershell_encoded_commands() {
        let encoded = base64::engine::general_purpose::STANDARD.encode(
            "Remove-Item -Recurse -Force C:\\"
                .encode_utf16()
                .flat_map(u16::to_le_bytes)
                .collect::<Vec<u8>>(),
        );
        let argv = vec!["powershell.exe".to_owned(), "-enc".to_owned(), encoded];
        assert_eq!(
            scripts(&argv),
            [Script::PowerShell(
                "Remove-Item -Recurse -Force C:\\".into()
            )]
        );
        let argv = words("pwsh -NoProfile -EncodedCommand !!!");
        assert_eq!(scripts(&argv), [Script::Unanalysable]);
    }

    #[test]
    fn reads_the_remote_command_of_ssh() {
        assert_eq!(
            scripts(&words("ssh -p 22 -i key host rm -rf /")),
            [Script::Shell("rm -rf /".into())]
        );
        assert_eq!(scripts(&words("ssh host")), []);
    }
}
