//! Commands with no safe reading: what `tool.is_destructive` and
//! `tool.destructive_reason` are derived from, judged over every command the shell
//! analysis finds in a command line (however it is wrapped) and over the line as
//! a whole (a fork bomb).
//!
//! The reasons: recursive deletion of the root, the home directory or a system
//! directory (`recursive-delete`); formatting a disk (`disk-format`); writing to a
//! block device (`device-write`); a fork bomb (`fork-bomb`); changing the
//! permissions or owner of such a tree (`recursive-permissions`); downloaded or
//! decoded text run by a shell or interpreter (`download-to-shell`,
//! `decoded-to-shell`); git's history-destroying commands (`force-push`,
//! `reset-hard`, `clean-force`, `branch-force-delete`, `history-clear`); commands a
//! config declares; and a line that cannot be analysed (`unanalysable`). A program
//! name the shell computes (`$(which git)`, an unset `$X`) is judged as every
//! program it could be.

pub(super) mod deletion;

use std::borrow::Cow;
use std::path::Path;

use super::patterns::{DOWNLOADERS, Patterns, SHELLS};
use super::places::Reach;
use sandrail_shell::{self as shell, Command, RedirectKind};

use deletion::{DELETE_OUTSIDE_PROJECT, FILE_SHRED};

/// Why a command is destructive: the `destructive_reason` fact.
pub type Reason = Cow<'static, str>;

const FORCE_PUSH: &str = "force-push";
const RESET_HARD: &str = "reset-hard";
const CLEAN_FORCE: &str = "clean-force";
const BRANCH_FORCE_DELETE: &str = "branch-force-delete";
const HISTORY_CLEAR: &str = "history-clear";
const RECURSIVE_DELETE: &str = "recursive-delete";
const DISK_FORMAT: &str = "disk-format";
const DEVICE_WRITE: &str = "device-write";
const FORK_BOMB: &str = "fork-bomb";
const RECURSIVE_PERMISSIONS: &str = "recursive-permissions";
const DOWNLOAD_TO_SHELL: &str = "download-to-shell";
const DECODED_TO_SHELL: &str = "decoded-to-shell";
const REMOTE_DELETE: &str = "remote-delete";
const REF_DELETE: &str = "ref-delete";
const DISCARD_CHANGES: &str = "discard-changes";
const STASH_DROP: &str = "stash-drop";
const HISTORY_REWRITE: &str = "history-rewrite";
const BOOT_CONFIG: &str = "boot-config";
const BACKUP_DELETE: &str = "backup-delete";
pub const UNANALYSABLE: &str = "unanalysable";

/// Git options that come before the subcommand and take a separate value.
const GLOBAL_OPTIONS_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--exec-path",
    "--attr-source",
    "--super-prefix",
];

/// Directories whose recursive deletion (or change of mode or owner) wrecks the
/// system or the user's home, written without a trailing slash.
const CRITICAL_DIRECTORIES: &[&str] = &[
    "/",
    "~",
    "$home",
    "${home}",
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/boot",
    "/var",
    "/home",
    "/opt",
    "/root",
    "/sys",
    "/proc",
    "/dev",
    "/srv",
    "/mnt",
    "/media",
    "/snap",
    "/users",
    "/system",
    "/library",
    "/applications",
    "/private",
    "/volumes",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/var/lib",
    "c:",
    "c:\\",
    "c:\\windows",
    "c:\\users",
    "c:\\program files",
    "c:\\program files (x86)",
    "$env:userprofile",
    "$env:systemroot",
    "$env:windir",
    "$env:homedrive",
    "%userprofile%",
    "%systemroot%",
    "$env:home",
];

/// What the line has done so far that changes how a later command reads.
#[derive(Debug, Default)]
pub struct Line {
    /// A `cd` into a critical directory: `rm -rf *` now deletes it.
    in_critical_directory: bool,
    /// Files a download was saved to earlier in the line (`curl -o f URL`), so
    /// running one (`sh f`, `./f`) is running the download.
    downloaded: Vec<String>,
    /// git aliases: the repository's and the user's config (read at the line's
    /// first git command), then any a `git config alias.…` on the line defines.
    git_aliases: Option<Vec<(String, String)>>,
    /// Where the line runs, when known: `git branch -M` is destructive only over
    /// an existing branch of that repository.
    cwd: Option<std::path::PathBuf>,
    /// The project and the places a deletion may reach.
    reach: Reach,
}

impl Line {
    /// A line that runs in `cwd`, when it is known, judged against `reach`.
    pub fn new(cwd: Option<&Path>, reach: Reach) -> Line {
        Line {
            cwd: cwd.map(Path::to_path_buf),
            reach,
            ..Line::default()
        }
    }
}

/// The first destructive command in a POSIX shell command line.
pub fn find(command_line: &str, patterns: &Patterns) -> Option<Reason> {
    let mut found = None;
    let mut line = Line::new(None, Reach::new(None, patterns.deletion_scope()));
    let too_deep = shell::visit(command_line, &mut |command| {
        if found.is_none() {
            found = judge(&command, patterns, &mut line);
        }
    });
    found
        .or_else(|| line_reason(command_line))
        .or(too_deep.then_some(Cow::Borrowed(UNANALYSABLE)))
}

/// What the line does as a whole: a fork bomb defines a function that pipes itself
/// into itself in the background (`:(){ :|:& };:`).
pub fn line_reason(line: &str) -> Option<Reason> {
    if !line.contains("(){") && !line.contains("()") {
        return None;
    }
    let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
    let mut from = 0;
    while let Some(at) = compact[from..].find("(){") {
        let definition = from + at;
        let name: String = compact[..definition]
            .chars()
            .rev()
            .take_while(|c| !matches!(c, ';' | '&' | '|' | '(' | ')' | '{' | '}' | '\n'))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let name = name.strip_prefix("function").unwrap_or(&name);
        if !name.is_empty() {
            let body = &compact[definition + 3..];
            let body = &body[..body.find('}').unwrap_or(body.len())];
            // A function that calls itself in the background, whatever its name.
            let backgrounds = body.replace("&&", "").contains('&');
            let recurses = body
                .split(['|', '&', ';', '(', ')', '{', '}'])
                .any(|token| token == name);
            if backgrounds && recurses {
                return Some(Cow::Borrowed(FORK_BOMB));
            }
        }
        from = definition + 3;
    }
    None
}

/// Judges one simple command, in the line so far.
pub fn judge(command: &Command, patterns: &Patterns, line: &mut Line) -> Option<Reason> {
    let cwd = line.cwd.clone();
    let cwd = cwd.as_deref();
    if let Some(reason) = device_redirect(command).or_else(|| history_truncated(command)) {
        return Some(Cow::Borrowed(reason));
    }
    // `> /etc/hosts`, `: > /etc/passwd`: a file of the system's emptied or
    // overwritten.
    if command.redirects.iter().any(|r| {
        r.kind == RedirectKind::Write
            && !r.target.starts_with("/dev/")
            && !r.target.starts_with("/proc/")
            && line.reach.place(&r.target, cwd) == super::places::Place::System
    }) {
        return Some(Cow::Borrowed(DELETE_OUTSIDE_PROJECT));
    }
    if let Some(reason) = runs_a_download(command, line) {
        return Some(Cow::Borrowed(reason));
    }
    let first = command.argv.first()?;
    if matches!(
        first.as_str(),
        "cd" | "pushd" | "set-location" | "sl" | "chdir" | "push-location"
    ) {
        // `cd "$(dirname "$0")"`: a printer's words stand for the substitution;
        // one made by a command known to stay clear (`mktemp -d`) is no critical
        // directory; any other is judged as the root.
        let printed = shell::printed::substituted_words(command);
        let argv = printed.as_ref().unwrap_or(&command.argv);
        let clear_substitution = argv.get(1).is_some_and(String::is_empty)
            && !command.fed_by.is_empty()
            && command
                .fed_by
                .iter()
                .all(|f| produces_no_critical_path(&shell::feeder(f), cwd));
        // `cd -P DIR`, `cd -- DIR`: its options are not where it goes.
        let target = argv[1..]
            .iter()
            .find(|w| !(w.is_empty() || (w.starts_with('-') && w.len() > 1)))
            .or(argv.get(1));
        if target.is_some_and(|t| t == "-") {
            // The previous directory: not known here.
            line.cwd = None;
            return None;
        }
        if clear_substitution && printed.is_none() {
            line.in_critical_directory = false;
            line.cwd = None;
            return None;
        }
        line.in_critical_directory = target.is_none_or(|d| reaches_critical(d, cwd));
        // Later relative paths are from there.
        line.cwd = match target {
            // `Set-Location D:\old`: a Windows directory, as a path from the root.
            Some(dir) if dir.as_bytes().get(1) == Some(&b':') => {
                Some(std::path::PathBuf::from(dir.replace('\\', "/")))
            }
            Some(dir) => absolute(dir, cwd).map(std::path::PathBuf::from),
            None => home().map(std::path::PathBuf::from),
        };
        return None;
    }
    // `git config alias.p 'push -f' && git p`: a git command is judged with the
    // aliases it could be using.
    let aliased;
    let command = match with_git_aliases(command, line, cwd) {
        Some(argv) => {
            aliased = Command {
                argv,
                ..command.clone()
            };
            &aliased
        }
        None => command,
    };
    // `rm -rf ../../..`, `~/../..`, `/e?c`: path operands that reach a critical
    // directory, written as it.
    let resolved;
    let command = match resolve_operands(command, cwd) {
        Some(argv) => {
            resolved = Command {
                argv,
                ..command.clone()
            };
            &resolved
        }
        None => command,
    };
    // `echo / | xargs rm -rf`: what xargs reads becomes operands.
    let widened;
    let command = if command.args_from_stdin {
        let mut argv = command.argv.clone();
        for feeder in command.fed_by.iter().map(|f| shell::feeder(f)) {
            // A printer's words, options included (`xargs git push <<< -f`);
            // another's operands.
            let lister = feeder
                .first()
                .map(|p| shell::program(p).to_ascii_lowercase());
            match shell::printed::words(&feeder) {
                Some(words) => argv.extend(words),
                // `find . -name '*.o' | xargs rm`: what a lister lists lies
                // under where it starts.
                None if lister.as_deref().is_some_and(|p| {
                    matches!(p, "find" | "fd" | "ls" | "get-childitem" | "gci" | "dir")
                }) =>
                {
                    let starts: Vec<String> = operands(feeder.get(1..).unwrap_or_default())
                        .take_while(|o| !o.starts_with(['*', '(', '!']))
                        .map(|o| format!("{}/*", o.trim_end_matches('/')))
                        .collect();
                    if starts.is_empty() {
                        argv.push("./*".to_owned());
                    }
                    argv.extend(starts);
                }
                None => {
                    argv.extend(operands(feeder.get(1..).unwrap_or_default()).map(str::to_owned))
                }
            }
        }
        widened = Command {
            argv,
            ..command.clone()
        };
        &widened
    } else {
        command
    };
    // `git push origin $(echo --force)`: a substitution of `echo`/`printf`
    // produces its arguments.
    let substituted;
    let command = match shell::printed::substituted_words(command) {
        Some(argv) => {
            substituted = Command {
                argv,
                ..command.clone()
            };
            &substituted
        }
        None => command,
    };
    // `rm -rf "$(pwd)"`: the working directory, judged by where it is.
    let here;
    let command = if command.argv.iter().skip(1).any(String::is_empty)
        && command
            .fed_by
            .iter()
            .any(|f| prints_the_working_directory(&shell::feeder(f)))
    {
        here = Command {
            argv: command
                .argv
                .iter()
                .map(|w| {
                    if w.is_empty() {
                        ".".to_owned()
                    } else {
                        w.clone()
                    }
                })
                .collect(),
            ..command.clone()
        };
        &here
    } else {
        command
    };
    // `rm -rf "$(mktemp -d)"`: an operand a substitution made is unknown, and
    // judged as the root unless what made it is known to stay clear of it.
    let cleared;
    let command = if command.argv.iter().skip(1).any(String::is_empty)
        && !command.fed_by.is_empty()
        && command
            .fed_by
            .iter()
            .all(|f| produces_no_critical_path(&shell::feeder(f), cwd))
    {
        cleared = Command {
            argv: command
                .argv
                .iter()
                .filter(|w| !w.is_empty())
                .cloned()
                .collect(),
            ..command.clone()
        };
        &cleared
    } else {
        command
    };
    if line.in_critical_directory
        && matches!(shell::program(first), "rm" | "chmod" | "chown")
        && operands(&command.argv[1..]).any(|o| matches!(o, "*" | "." | "./*" | ".*"))
        && let Some(reason) = judge_program(
            shell::program(first),
            None,
            &Command {
                argv: command
                    .argv
                    .iter()
                    .map(|w| {
                        if matches!(w.as_str(), "*" | "." | "./*" | ".*") {
                            "/".to_owned()
                        } else {
                            w.clone()
                        }
                    })
                    .collect(),
                ..command.clone()
            },
        )
    {
        return Some(Cow::Borrowed(reason));
    }
    if let Some(reason) = patterns.destructive_reason(&command.argv) {
        return Some(Cow::Owned(reason.to_owned()));
    }
    if let Some(reason) = super::packs::judge(patterns.packs(), command) {
        return Some(Cow::Borrowed(reason));
    }
    let program = shell::program(first);
    let program: Cow<'_, str> = if program.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(program.to_ascii_lowercase())
    } else {
        Cow::Borrowed(program)
    };
    let program = program.strip_suffix(".exe").unwrap_or(&program);
    let computed = program.is_empty() || program.starts_with('$');
    if computed {
        return ["git", "rm", "chmod", "dd", "find"]
            .iter()
            .find_map(|name| {
                judge_program(name, cwd, command).or_else(|| {
                    let found = deletion::of_command(name, &command.argv, cwd)?;
                    deletion::judge(&found, &line.reach, cwd)
                })
            })
            .map(Cow::Borrowed);
    }
    let reason = judge_program(program, cwd, command)
        .or_else(|| {
            let mut found = deletion::of_command(program, &command.argv, cwd)?;
            // `rm -rf "$(git rev-parse --show-toplevel)/dist"`: a path a
            // substitution begins is not the `/dist` left when it is removed.
            found.substituted = !command.fed_by.is_empty() && !command.args_from_stdin;
            deletion::judge(&found, &line.reach, cwd)
        })
        .or_else(|| system_permissions(program, &command.argv, &line.reach, cwd))
        .or_else(|| as_if_wrapped(program, command, &line.reach, cwd));
    if reason == Some(FORCE_PUSH)
        && program == "git"
        && patterns.allows_force_with_lease()
        && judge_git(&without_lease(&command.argv[1..]), cwd).is_none()
    {
        return None;
    }
    reason.map(Cow::Borrowed)
}

/// `chmod -R`, `chown -R`, `chgrp -R` or `icacls /T` over the home directory or
/// a system directory, wherever under it.
fn system_permissions(
    program: &str,
    argv: &[String],
    reach: &Reach,
    cwd: Option<&Path>,
) -> Option<&'static str> {
    let args = argv.get(1..).unwrap_or_default();
    let targets: Vec<&str> = match program {
        "chmod" | "chown" | "chgrp" => {
            let recursive = args
                .iter()
                .any(|a| a == "--recursive" || (is_short_options(a) && a.contains('R')));
            if !recursive {
                return None;
            }
            // The first operand is the mode or owner.
            let skip = usize::from(!args.iter().any(|a| a.starts_with("--reference")));
            operands(args).skip(skip).collect()
        }
        "icacls" if args.iter().any(|a| a.eq_ignore_ascii_case("/t")) => {
            args.first().map(String::as_str).into_iter().collect()
        }
        _ => return None,
    };
    targets
        .iter()
        .any(|t| reach.place(t, cwd) == super::places::Place::System)
        .then_some(RECURSIVE_PERMISSIONS)
}

/// git's arguments without `--force-with-lease[=…]` and `--force-if-includes`
/// (and their abbreviations), to tell a leased push from a forced one.
fn without_lease(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| {
            let name = a.split('=').next().unwrap_or(a);
            !(name.len() >= 9
                && ("--force-with-lease".starts_with(name)
                    || "--force-if-includes".starts_with(name)))
        })
        .cloned()
        .collect()
}

/// Whether `argv` prints the working directory: `pwd`, `git rev-parse
/// --show-toplevel`.
fn prints_the_working_directory(argv: &[String]) -> bool {
    match argv.first().map(|p| shell::program(p)) {
        Some("pwd") => true,
        Some("git") => argv.iter().any(|a| a == "--show-toplevel"),
        _ => false,
    }
}

/// Programs whose arguments are data, never a command they run: `echo rm -rf /`
/// prints.
const DATA_PROGRAMS: &[&str] = &[
    "echo",
    "printf",
    "print",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "man",
    "info",
    "help",
    "which",
    "whereis",
    "type",
    "whatis",
    "apropos",
    "alias",
    "unalias",
    "complete",
    "compgen",
    "hash",
    "cowsay",
    "figlet",
    "logger",
    "notify-send",
    "say",
    "wall",
    "git",
    "test",
    "[",
    "[[",
    "expr",
    "read",
    "declare",
    "export",
    "local",
    "readonly",
    "typeset",
    "set",
    "jq",
    "yq",
    "sed",
    "tldr",
    "cheat",
    "history",
    "gh",
    "glab",
    "write-host",
    "write-output",
    // Readers and listers: their arguments are files to read, never a command.
    "head",
    "tail",
    "wc",
    "cat",
    "less",
    "more",
    "ls",
    "stat",
    "file",
    "du",
    "diff",
    "cmp",
    "sort",
    "uniq",
    "cut",
    "nl",
    "od",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha256sum",
    "sha512sum",
    "cksum",
    "touch",
    "mkdir",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "bat",
    "tac",
    "column",
    "fold",
    "fmt",
    "pr",
    "rev",
    "tr",
    "comm",
    "join",
    "paste",
];

/// Programs whose commands are judged when they appear inside another's
/// arguments.
const JUDGED_INSIDE: &[&str] = &[
    "rm",
    "git",
    "dd",
    "find",
    "chmod",
    "chown",
    "chgrp",
    "shred",
    "wipefs",
    "fdisk",
    "sfdisk",
    "parted",
    "blkdiscard",
    "mkfs",
    "mke2fs",
    "rsync",
    "nvme",
    "cryptsetup",
];

/// At most this many inner commands are tried in one command's arguments.
const MAX_INNER_TRIES: usize = 8;

/// Whether what `argv` prints is never the root, the home directory or a
/// system directory: a new temporary directory, ids and names, the working
/// directory (when it is not one), what `find`/`ls` list under a directory that is
/// not one, and what `echo`/`printf` print (judged as words).
fn produces_no_critical_path(argv: &[String], cwd: Option<&Path>) -> bool {
    let Some(first) = argv.first() else {
        return false;
    };
    let args = &argv[1..];
    let cwd_is_clear = || {
        cwd.is_some_and(|cwd| {
            let cwd = cwd.to_string_lossy();
            let home = std::env::var("HOME").unwrap_or_default();
            !is_critical(&cwd) && cwd.trim_end_matches('/') != home.trim_end_matches('/')
        })
    };
    match shell::program(first) {
        "mktemp" | "id" | "whoami" | "date" | "uname" | "hostname" | "nproc" | "echo"
        | "printf" | "basename" => true,
        "pwd" => cwd_is_clear(),
        // What they list lies under where they start.
        "find" | "fd" | "ls" => match operands(args).next() {
            Some(start) if start.starts_with('/') || start.starts_with('~') => !is_critical(start),
            Some(start) => !is_critical(start) && (cwd.is_none() || cwd_is_clear()),
            None => cwd.is_none() || cwd_is_clear(),
        },
        _ => false,
    }
}

/// A program not known to run its arguments, whose arguments form a destructive
/// command (`frobnicate --quiet rm -rf /`), is judged as if it ran them: an
/// unknown wrapper must not be a way around the rules.
fn as_if_wrapped(
    program: &str,
    command: &Command,
    reach: &Reach,
    cwd: Option<&Path>,
) -> Option<&'static str> {
    if DATA_PROGRAMS.contains(&program) {
        return None;
    }
    command.argv[1..]
        .iter()
        .enumerate()
        .filter(|(_, word)| {
            let inner = shell::program(word);
            JUDGED_INSIDE.contains(&inner) || inner.starts_with("mkfs")
        })
        .take(MAX_INNER_TRIES)
        .find_map(|(at, word)| {
            let inner = Command {
                argv: command.argv[at + 1..].to_vec(),
                ..Command::default()
            };
            let name = shell::program(word);
            judge_program(name, None, &inner).or_else(|| {
                let found = deletion::of_command(name, &inner.argv, cwd)?;
                deletion::judge(&found, reach, cwd)
            })
        })
}

/// The rules of one program over a command's arguments.
fn judge_program(program: &str, cwd: Option<&Path>, command: &Command) -> Option<&'static str> {
    let args = &command.argv[1..];
    if SHELLS.contains(&program) {
        // `echo ':(){ :|:& };:' | bash`: the text a printer feeds it, too.
        let fed = shell::printed::fed_script(command);
        if args.iter().any(|a| line_reason(a).is_some())
            || fed.as_deref().is_some_and(|t| line_reason(t).is_some())
            || forks_in_a_loop(program, args)
        {
            return Some(FORK_BOMB);
        }
        if program == "invoke-expression"
            && args
                .iter()
                .any(|a| a.to_ascii_lowercase().contains("downloadstring"))
        {
            return Some(DOWNLOAD_TO_SHELL);
        }
    }
    if (SHELLS.contains(&program) && runs_what_it_is_fed(program, args))
        || shell::runs_stdin(&command.argv)
    {
        let feeders: Vec<Vec<String>> = command.fed_by.iter().map(|f| shell::feeder(f)).collect();
        if feeders.iter().any(|argv| is_downloader(argv)) {
            return Some(DOWNLOAD_TO_SHELL);
        }
        if feeders.iter().any(|argv| is_decoder(argv)) {
            return Some(DECODED_TO_SHELL);
        }
    }
    match program {
        "git" => judge_git(args, cwd),
        "rm" | "rmdir" | "unlink" => judge_rm(command),
        "find" => judge_find(args),
        "chmod" | "chown" | "chgrp" | "setfacl" => {
            let recursive = args
                .iter()
                .any(|a| a == "--recursive" || (is_short_options(a) && a.contains('R')));
            // The first operand is the mode or owner (setfacl's is a path).
            let skip = usize::from(
                program != "setfacl" && !args.iter().any(|a| a.starts_with("--reference")),
            );
            (recursive && operands(args).skip(skip).any(is_critical))
                .then_some(RECURSIVE_PERMISSIONS)
        }
        "dd" => {
            // `of="$(echo /dev/sda)"`: the words a printing substitution made.
            let printed: Vec<String> = command
                .fed_by
                .iter()
                .filter_map(|f| shell::printed::words(&shell::feeder(f)))
                .flatten()
                .collect();
            args.iter()
                .filter_map(|a| a.strip_prefix("of="))
                .any(|target| {
                    is_block_device(target)
                        || (target.is_empty()
                            && (printed.iter().any(|w| is_block_device(w))
                                || (printed.is_empty() && !command.fed_by.is_empty())))
                })
                .then_some(DEVICE_WRITE)
        }
        "shred" => {
            if operands(args).any(is_block_device) {
                Some(DEVICE_WRITE)
            } else {
                (operands(args).next().is_some()
                    && !args.iter().any(|a| a == "--help" || a == "--version"))
                .then_some(FILE_SHRED)
            }
        }
        "cp" | "tee" | "cat" | "pv" => operands(args).any(is_block_device).then_some(DEVICE_WRITE),
        // A Windows drive's format; the boot configuration; the system's backups.
        "format" | "format.com" => operands(args)
            .chain(args.iter().map(String::as_str))
            .any(|a| {
                let a = a.trim_end_matches(['\\', '/']);
                a.len() == 2 && a.ends_with(':')
            })
            .then_some(DISK_FORMAT),
        "bcdedit" | "bootrec" => (!args.is_empty()
            && !args.iter().all(|a| {
                matches!(
                    a.to_ascii_lowercase().as_str(),
                    "/enum" | "/v" | "all" | "/?"
                )
            }))
        .then_some(BOOT_CONFIG),
        "efibootmgr" => args
            .iter()
            .any(|a| a == "-B" || a == "--delete-bootnum" || a == "-o" || a == "--bootorder")
            .then_some(BOOT_CONFIG),
        "vssadmin" | "wbadmin" | "tmutil" => {
            let words: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
            let deletes = words.iter().any(|w| {
                matches!(
                    w.as_str(),
                    "delete" | "deletesnapshot" | "delete-backup" | "deletelocalsnapshots"
                ) || (program == "vssadmin" && w == "resize")
            });
            deletes.then_some(BACKUP_DELETE)
        }
        "format-volume" | "clear-disk" | "initialize-disk" | "diskpart" => {
            (!args.iter().any(|a| a.eq_ignore_ascii_case("-whatif"))).then_some(DISK_FORMAT)
        }
        "wipefs"
            if !args
                .iter()
                .any(|a| a == "-a" || a == "--all" || a.starts_with("-o") || a == "--offset") =>
        {
            None
        }
        "wipefs" | "fdisk" | "sfdisk" | "cfdisk" | "sgdisk" | "parted" | "mkswap"
        | "blkdiscard" => {
            let listing = args.iter().any(|a| {
                if program == "parted" {
                    return matches!(a.as_str(), "print" | "-l" | "--list");
                }
                matches!(
                    a.as_str(),
                    "-l" | "--list"
                        | "print"
                        | "-p"
                        | "--print"
                        | "-n"
                        | "--no-act"
                        | "-d"
                        | "--dump"
                        | "-s"
                        | "--show-size"
                        | "-V"
                        | "--verify"
                        | "-J"
                        | "--json"
                        | "-g"
                        | "--show-geometry"
                )
            });
            (!listing && operands(args).any(is_block_device)).then_some(DISK_FORMAT)
        }
        name if name.starts_with("mkfs") || name.starts_with("mke2fs") => {
            let dry_run = args.iter().any(|a| a == "-n");
            (!dry_run && operands(args).any(is_block_device)).then_some(DISK_FORMAT)
        }
        "history" => args.iter().any(|a| a == "-c").then_some(HISTORY_CLEAR),
        "diskutil" => args
            .iter()
            .any(|a| {
                matches!(
                    a.to_ascii_lowercase().as_str(),
                    "erasedisk"
                        | "erasevolume"
                        | "partitiondisk"
                        | "zerodisk"
                        | "randomdisk"
                        | "secureerase"
                        | "reformat"
                        | "apfs deletecontainer"
                )
            })
            .then_some(DISK_FORMAT),
        "wmic" => {
            let words: Vec<String> = args.iter().map(|a| a.to_ascii_lowercase()).collect();
            (words.iter().any(|w| w == "shadowcopy") && words.iter().any(|w| w == "delete"))
                .then_some(BACKUP_DELETE)
        }
        // `rsync --delete src/ ~/` deletes whatever the destination has that the
        // source does not.
        "rsync" => {
            let deletes = args
                .iter()
                .any(|a| a.starts_with("--del") || a == "--remove-source-files");
            (deletes && operands(args).last().is_some_and(is_critical)).then_some(RECURSIVE_DELETE)
        }
        "nvme" => (matches!(
            args.first().map(String::as_str),
            Some("format" | "sanitize")
        ) && operands(args).any(is_block_device))
        .then_some(DISK_FORMAT),
        "cryptsetup" => (operands(args)
            .any(|a| matches!(a, "luksFormat" | "erase" | "luksErase" | "reencrypt"))
            && operands(args).any(is_block_device))
        .then_some(DISK_FORMAT),
        _ => None,
    }
}

/// Shell history files: truncating or deleting one erases the record of what ran.
const HISTORY_FILES: &[&str] = &[
    ".bash_history",
    ".zsh_history",
    ".zhistory",
    ".history",
    ".sh_history",
    ".ksh_history",
    "fish_history",
];

fn is_history_file(path: &str) -> bool {
    let name = shell::program(path.trim_matches('"'));
    HISTORY_FILES.contains(&name) || path.contains("$HISTFILE") || path.contains("${HISTFILE}")
}

/// `> ~/.bash_history`, `truncate -s 0 ~/.zsh_history`, `rm ~/.bash_history`,
/// `ln -sf /dev/null ~/.bash_history`, `cp /dev/null …`.
fn history_truncated(command: &Command) -> Option<&'static str> {
    let truncates = command
        .redirects
        .iter()
        .any(|r| r.kind == RedirectKind::Write && is_history_file(&r.target));
    let program = command.argv.first().map(|p| shell::program(p));
    let erases = matches!(
        program,
        Some("truncate" | "rm" | "unlink" | "shred" | "ln" | "cp" | "mv")
    ) && operands(&command.argv[1..]).any(is_history_file)
        && !(program == Some("cp")
            && operands(&command.argv[1..])
                .next()
                .is_some_and(is_history_file));
    (truncates || erases).then_some(HISTORY_CLEAR)
}

/// At most this many downloaded files are remembered on one line.
const MAX_DOWNLOADS: usize = 16;

/// Notes the file a downloader saves to, and judges a command that runs a file
/// downloaded earlier in the line (`curl -o i.sh URL && sh i.sh`).
fn runs_a_download(command: &Command, line: &mut Line) -> Option<&'static str> {
    let argv = &command.argv;
    let program = shell::program(argv.first()?).to_ascii_lowercase();
    if DOWNLOADERS.contains(&program.as_str()) {
        let mut saved: Vec<String> = command
            .redirects
            .iter()
            .filter(|r| r.kind != RedirectKind::Read)
            .map(|r| r.target.clone())
            .collect();
        let url_name = || {
            argv.iter()
                .find(|a| a.contains("://"))
                .and_then(|url| url.split(['?', '#']).next())
                .and_then(|url| url.rsplit('/').next())
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
        };
        let mut words = argv[1..].iter();
        while let Some(word) = words.next() {
            match word.as_str() {
                "-o" | "--output" | "--output-document" => saved.extend(words.next().cloned()),
                "-O" if program == "wget" => saved.extend(words.next().cloned()),
                "-O" | "--remote-name" => saved.extend(url_name()),
                w if w.starts_with("--output-document=") || w.starts_with("--output=") => {
                    saved.extend(w.split_once('=').map(|(_, f)| f.to_owned()))
                }
                _ => {}
            }
        }
        if program == "wget" && saved.is_empty() && !argv.iter().any(|a| a == "-O" || a == "-qO-") {
            saved.extend(url_name());
        }
        for file in saved {
            if line.downloaded.len() < MAX_DOWNLOADS && file != "-" {
                line.downloaded.push(file);
            }
        }
        return None;
    }
    if line.downloaded.is_empty() {
        return None;
    }
    let same = |a: &str, b: &str| a.trim_start_matches("./") == b.trim_start_matches("./");
    let is_downloaded = |word: &str| line.downloaded.iter().any(|d| same(d, word));
    let runs_it = is_downloaded(&argv[0])
        || ((SHELLS.contains(&program.as_str())
            || matches!(
                program.as_str(),
                "python" | "python3" | "node" | "perl" | "ruby" | "php" | "deno" | "bun"
            ))
            && operands(&argv[1..]).next().is_some_and(is_downloaded));
    runs_it.then_some(DOWNLOAD_TO_SHELL)
}

/// `> /dev/sda`: a redirection onto a block device.
fn device_redirect(command: &Command) -> Option<&'static str> {
    command
        .redirects
        .iter()
        .any(|r| r.kind != RedirectKind::Read && is_block_device(&r.target))
        .then_some(DEVICE_WRITE)
}

/// Whether a shell or interpreter runs the text it is fed (on its standard input,
/// or as a script from a substitution), rather than a script file or a module.
fn runs_what_it_is_fed(program: &str, args: &[String]) -> bool {
    if matches!(program, "eval" | "source" | "." | "invoke-expression") {
        return true;
    }
    // A module, or a shell told only to parse (`bash -n`).
    if args
        .iter()
        .any(|a| a == "-m" || (a == "-n" && !matches!(program, "node" | "perl" | "ruby")))
    {
        return false;
    }
    // An empty operand is a word a substitution made (`sh -c "$(curl …)"`).
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word.is_empty() || word == "-" || word == "-s" {
            return true;
        }
        if matches!(
            word.as_str(),
            "-c" | "-e" | "-E" | "-r" | "--eval" | "-Command" | "-command"
        ) {
            return words.next().is_none_or(|code| code.is_empty());
        }
        if !word.starts_with('-') {
            return word.starts_with("/dev/fd/") || word.starts_with("/proc/self/fd/");
        }
    }
    true
}

fn is_downloader(argv: &[String]) -> bool {
    let Some(first) = argv.first() else {
        return false;
    };
    let program = shell::program(first).to_ascii_lowercase();
    DOWNLOADERS.contains(&program.as_str())
        || argv.iter().any(|w| {
            let w = w.to_ascii_lowercase();
            w.contains("downloadstring") || w.contains("downloaddata")
        })
}

fn is_decoder(argv: &[String]) -> bool {
    let Some(first) = argv.first() else {
        return false;
    };
    let args = &argv[1..];
    let has = |flags: &[&str]| args.iter().any(|a| flags.contains(&a.as_str()));
    match shell::program(first) {
        "base64" | "base32" | "basenc" => has(&["-d", "--decode", "-D"]),
        "xxd" => has(&["-r", "-revert"]),
        "openssl" => has(&["-d", "base64", "-base64"]),
        "uudecode" | "rev" => true,
        // rot13 and its kin map letter ranges; `tr '\n' ' '` decodes nothing.
        "tr" => args
            .iter()
            .any(|a| a.contains("A-Z") || a.contains("a-z") || a.contains("[:alpha:]")),
        "echo" | "printf" => args.iter().any(|a| a.contains("\\x") || a.contains("\\0")),
        _ => false,
    }
}

/// Recursive deletion of a critical directory.
fn judge_rm(command: &Command) -> Option<&'static str> {
    let args = &command.argv[1..];
    if args.iter().any(|a| a == "--no-preserve-root") {
        return Some(RECURSIVE_DELETE);
    }
    // `find / | xargs rm -f`: every file under a critical directory, one by one.
    let finds_critical = command.args_from_stdin
        && command.fed_by.iter().any(|feeder| {
            let feeder = shell::feeder(feeder);
            feeder.first().is_some_and(|p| shell::program(p) == "find")
                && feeder[1..].first().is_some_and(|start| is_critical(start))
        });
    if finds_critical {
        return Some(RECURSIVE_DELETE);
    }
    let recursive = args.iter().any(|a| {
        a == "--recursive" || (is_short_options(a) && (a.contains('r') || a.contains('R')))
    });
    if !recursive {
        return None;
    }
    // (Operands read by xargs were added to argv by `judge`.)
    operands(args).any(is_critical).then_some(RECURSIVE_DELETE)
}

/// `perl -e 'fork while fork'`: a loop of forks in interpreter code.
fn forks_in_a_loop(program: &str, args: &[String]) -> bool {
    matches!(
        program,
        "perl" | "python" | "python2" | "python3" | "ruby" | "node"
    ) && args.iter().any(|code| {
        code.matches("fork").count() >= 2
            || (code.contains("fork")
                && [
                    "while",
                    "until",
                    "loop",
                    "iter(",
                    "itertools.count",
                    "for(;;)",
                    "for (;;)",
                    "for ",
                    "for(",
                    "..",
                    "range(",
                    ".times",
                    "each",
                    "map ",
                    "map{",
                    "map(",
                    "repeat",
                ]
                .iter()
                .any(|endless| code.contains(endless)))
    })
}

/// `find / -delete`, `find ~ -exec rm -rf {} +`, `find / -exec chmod 777 {} +`.
fn judge_find(args: &[String]) -> Option<&'static str> {
    let starts: Vec<&str> = args
        .iter()
        .take_while(|a| !a.starts_with('-') && !matches!(a.as_str(), "(" | "!"))
        .map(String::as_str)
        .collect();
    let deletes = args.iter().any(|a| a == "-delete")
        || args.windows(2).any(|pair| {
            matches!(pair[0].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                && matches!(shell::program(&pair[1]), "rm" | "shred")
        });
    let runs = |programs: &[&str]| {
        args.windows(2).any(|pair| {
            matches!(pair[0].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                && programs
                    .iter()
                    .any(|p| shell::program(&pair[1]).starts_with(p))
        })
    };
    if runs(&["wipefs", "mkfs", "dd", "shred"]) && starts.iter().any(|s| s.starts_with("/dev")) {
        return Some(DISK_FORMAT);
    }
    if !starts.iter().any(|s| is_critical(s)) {
        return None;
    }
    if deletes {
        Some(RECURSIVE_DELETE)
    } else if runs(&["chmod", "chown", "chgrp"]) {
        Some(RECURSIVE_PERMISSIONS)
    } else {
        None
    }
}

/// The arguments that are not options (everything after `--`).
fn operands(args: &[String]) -> impl Iterator<Item = &str> {
    let mut after_dashes = false;
    args.iter().filter_map(move |a| {
        if after_dashes {
            return Some(a.as_str());
        }
        if a == "--" {
            after_dashes = true;
            return None;
        }
        (!a.starts_with('-') || a == "-").then_some(a.as_str())
    })
}

fn is_short_options(arg: &str) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg.len() > 1
}

/// At most this many git aliases are remembered for a line.
const MAX_GIT_ALIASES: usize = 256;

/// A git command's argv with `-c alias.NAME=VALUE` in front for each known alias
/// it names; None when it names none. Records aliases the command defines.
fn with_git_aliases(command: &Command, line: &mut Line, cwd: Option<&Path>) -> Option<Vec<String>> {
    let argv = &command.argv;
    if shell::program(argv.first()?) != "git" {
        return None;
    }
    let aliases = line
        .git_aliases
        .get_or_insert_with(|| configured_git_aliases(cwd));
    // `git config [--global] alias.NAME VALUE`, `git config set alias.NAME VALUE`.
    let words: Vec<&str> = argv[1..]
        .iter()
        .map(String::as_str)
        .filter(|w| !w.starts_with('-'))
        .collect();
    if let ["config", rest @ ..] = words.as_slice() {
        let rest = rest.strip_prefix(&["set"]).unwrap_or(rest);
        if let [key, value, ..] = rest
            && let Some(name) = key.to_ascii_lowercase().strip_prefix("alias.")
            && aliases.len() < MAX_GIT_ALIASES
        {
            aliases.push((name.to_owned(), (*value).to_owned()));
        }
        return None;
    }
    let named: Vec<String> = aliases
        .iter()
        .filter(|(name, _)| argv[1..].iter().any(|w| w.eq_ignore_ascii_case(name)))
        .map(|(name, value)| format!("alias.{name}={value}"))
        .collect();
    if named.is_empty() {
        return None;
    }
    let mut widened = vec![argv[0].clone()];
    for setting in named {
        widened.extend(["-c".to_owned(), setting]);
    }
    widened.extend(argv[1..].iter().cloned());
    Some(widened)
}

/// The `[alias]` entries of the repository's config (at `cwd`) and the user's.
fn configured_git_aliases(cwd: Option<&Path>) -> Vec<(String, String)> {
    let home = home().map(std::path::PathBuf::from);
    let files = [
        cwd.map(|c| c.join(".git/config")),
        home.as_ref().map(|h| h.join(".gitconfig")),
        home.as_ref().map(|h| h.join(".config/git/config")),
    ];
    let mut aliases = Vec::new();
    for path in files.into_iter().flatten() {
        let Ok(bytes) = sandrail_files::read_regular(&path, 1 << 16) else {
            continue;
        };
        let mut in_alias = false;
        for line in String::from_utf8_lossy(&bytes).lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_alias = line
                    .trim_matches(['[', ']'])
                    .trim()
                    .eq_ignore_ascii_case("alias");
            } else if in_alias
                && !line.starts_with(['#', ';'])
                && let Some((name, value)) = line.split_once('=')
                && aliases.len() < MAX_GIT_ALIASES
            {
                let value = value.trim();
                let value = value
                    .strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .unwrap_or(value);
                aliases.push((name.trim().to_ascii_lowercase(), value.to_owned()));
            }
        }
    }
    aliases
}

/// Programs whose operands are paths judged against the critical directories.
const PATH_PROGRAMS: &[&str] = &[
    "rm", "rmdir", "unlink", "chmod", "chown", "chgrp", "setfacl", "find", "rsync", "shred",
];

/// The command's argv with each path operand that reaches a critical directory
/// (through `..`, `~`, `~root`, `$HOME`, the working directory or a glob)
/// written as that directory; None when none does.
fn resolve_operands(command: &Command, cwd: Option<&Path>) -> Option<Vec<String>> {
    let program = shell::program(command.argv.first()?);
    if !PATH_PROGRAMS.contains(&program) {
        return None;
    }
    let mut changed = false;
    let argv = command
        .argv
        .iter()
        .enumerate()
        .map(|(i, word)| {
            if i == 0 || word.starts_with('-') || is_critical(word) {
                return word.clone();
            }
            match critical_form(word, cwd) {
                Some(critical) => {
                    changed = true;
                    critical
                }
                None => word.clone(),
            }
        })
        .collect();
    changed.then_some(argv)
}

/// Whether `path`, resolved where the line runs, is a critical directory.
fn reaches_critical(path: &str, cwd: Option<&Path>) -> bool {
    is_critical(path) || critical_form(path, cwd).is_some()
}

/// The critical directory `path` reaches, if any: resolved against the home
/// directory and `cwd`, or matched as a glob.
fn critical_form(path: &str, cwd: Option<&Path>) -> Option<String> {
    let path = path.trim_matches('"');
    if path.contains(['*', '?', '[']) && !path.ends_with("/*") {
        let glob = globset::GlobBuilder::new(path)
            .literal_separator(true)
            .build()
            .ok()?
            .compile_matcher();
        return CRITICAL_DIRECTORIES
            .iter()
            .filter(|d| d.starts_with('/'))
            .map(|d| (*d).to_owned())
            .chain(home())
            .find(|d| glob.is_match(d));
    }
    let absolute = absolute(path, cwd)?;
    let trimmed = absolute.trim_end_matches("/*").trim_end_matches('/');
    if home().is_some_and(|home| home.trim_end_matches('/') == trimmed) {
        return Some("~".to_owned());
    }
    is_critical(&absolute).then_some(absolute)
}

/// `path` made absolute: `~`, `~root`, `$HOME` and relative paths (from `cwd`)
/// resolved and `..` collapsed, lexically.
fn absolute(path: &str, cwd: Option<&Path>) -> Option<String> {
    let joined = if let Some(rest) = path.strip_prefix("~root") {
        (rest.is_empty() || rest.starts_with('/')).then(|| format!("/root{rest}"))?
    } else if path == "~" || path.starts_with("~/") {
        format!("{}{}", home()?, &path[1..])
    } else if let Some(rest) = path
        .strip_prefix("${HOME}")
        .or_else(|| path.strip_prefix("$HOME"))
    {
        format!("{}{rest}", home()?)
    } else if path.starts_with('/') {
        path.to_owned()
    } else if !path.starts_with(['~', '$']) && !path.is_empty() {
        format!("{}/{path}", cwd?.to_str()?)
    } else {
        return None;
    };
    Some(normalise(&joined))
}

/// The home directory of the user the hook runs as (the agent's).
fn home() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| h.starts_with('/'))
}

/// Whether a path names the root, the home directory or a system directory (also
/// spelt with a trailing `/`, `/*`, `/.`, doubled slashes or `..`).
pub fn is_critical(path: &str) -> bool {
    let lowered = path.trim().trim_matches('"').to_ascii_lowercase();
    let mut normal = normalise(&lowered);
    for suffix in ["/*", "\\*", "/.", "/"] {
        while normal.len() > 1 && normal.ends_with(suffix) {
            normal.truncate(normal.len() - suffix.len());
        }
    }
    let trimmed = normal.trim_end_matches('\\');
    let normal = if trimmed.is_empty() { "/" } else { trimmed };
    CRITICAL_DIRECTORIES.contains(&normal)
        || CRITICAL_DIRECTORIES.contains(&normal.replace('/', "\\").as_str())
}

/// Collapses `//`, `/./` and `dir/..` in an absolute path, lexically.
fn normalise(path: &str) -> String {
    if !path.starts_with('/') {
        return path.to_owned();
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    let mut normal = format!("/{}", parts.join("/"));
    if path.ends_with("/*") && !normal.ends_with('*') {
        normal.push_str("/*");
    }
    normal
}

/// A block device: a disk, partition or volume under /dev.
fn is_block_device(path: &str) -> bool {
    let path = path.trim_matches('"');
    // `/dev/./sda`, `/dev//sda`, `/proc/self/root/dev/sda`: the same device.
    let normal;
    let path = if path.contains("//") || path.contains("/.") || path.starts_with("/proc/") {
        normal = normalise(path.strip_prefix("/proc/self/root").unwrap_or(path));
        normal.as_str()
    } else {
        path
    };
    // Windows' raw disks and volumes: `\\.\PhysicalDrive0`, `\\.\C:`.
    let lowered = path.to_ascii_lowercase().replace('/', "\\");
    if lowered.starts_with("\\\\.\\physicaldrive") || lowered.starts_with("\\\\.\\harddisk") {
        return true;
    }
    let Some(device) = path.strip_prefix("/dev/") else {
        return false;
    };
    [
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "mapper/", "md", "dm-", "loop",
        "sr", "root", "block/", "bcache", "zd", "ubd", "nbd", "rbd", "mtdblock", "fd0",
    ]
    .iter()
    .any(|prefix| device.starts_with(prefix))
}

/// Judges git's arguments (everything after `git`).
fn judge_git(args: &[String], cwd: Option<&Path>) -> Option<&'static str> {
    let mut rest = args.iter().map(String::as_str);
    let mut settings: Vec<(String, String)> = Vec::new();
    let subcommand = loop {
        let word = rest.next()?;
        if word == "-c" {
            if let Some((key, value)) = rest.next().and_then(|kv| kv.split_once('=')) {
                settings.push((key.to_ascii_lowercase(), value.to_owned()));
            }
        } else if GLOBAL_OPTIONS_WITH_VALUE.contains(&word) {
            rest.next();
        } else if !word.starts_with('-') {
            break word;
        }
    };
    let args: Vec<&str> = rest.collect();

    // `git -c alias.x='push --force' x`: judge what the alias expands to.
    let alias = format!("alias.{}", subcommand.to_ascii_lowercase());
    if let Some((_, expansion)) = settings.iter().find(|(key, _)| *key == alias) {
        return match expansion.strip_prefix('!') {
            Some(shell_command) => {
                let mut found = None;
                shell::visit(shell_command, &mut |command| {
                    if found.is_none()
                        && command
                            .argv
                            .first()
                            .is_some_and(|p| shell::program(p) == "git")
                    {
                        found = judge_git(&command.argv[1..], cwd);
                    }
                });
                found
            }
            None => {
                let mut expanded: Vec<String> =
                    expansion.split_whitespace().map(str::to_owned).collect();
                expanded.extend(args.iter().map(|a| (*a).to_owned()));
                judge_git(&expanded, cwd)
            }
        };
    }
    let short = |flag: char| {
        args.iter()
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(flag))
    };
    // Git accepts any unambiguous prefix of a long option (`--ha` for `--hard`).
    let long = |option: &str, shortest: usize| {
        args.iter().any(|a| {
            let name = a.split('=').next().unwrap_or(a);
            name.len() >= shortest && option.starts_with(name)
        })
    };
    let setting = |pattern: &dyn Fn(&str, &str) -> bool| {
        settings.iter().any(|(key, value)| pattern(key, value))
    };
    let operands: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    match subcommand {
        // `checkout -B main X`, `switch -C main X`: a branch that exists reset
        // to another commit.
        "checkout" | "switch"
            if args
                .iter()
                .any(|a| *a == "-B" || *a == "-C" || *a == "--force-create") =>
        {
            let at = args
                .iter()
                .position(|a| *a == "-B" || *a == "-C" || *a == "--force-create")?;
            let branch = args.get(at + 1)?;
            let current = current_branch(cwd);
            (existing_branch_at(cwd, branch) && current.as_deref() != Some(*branch))
                .then_some(HISTORY_REWRITE)
        }
        "push" => {
            // A mirror push, or a push refspec with `+`, set for this call.
            let forced_by_settings = setting(&|key, value| {
                (key.starts_with("remote.") && key.ends_with(".mirror") && !is_false(value))
                    || (key.starts_with("remote.")
                        && key.ends_with(".push")
                        && value.starts_with('+'))
            });
            let forced = short('f')
                || long("--force", 5)
                || long("--force-with-lease", 9)
                || long("--force-if-includes", 9)
                || long("--mirror", 3)
                || forced_by_settings
                || args.iter().any(|a| a.starts_with('+') && a.len() > 1);
            if forced {
                return Some(FORCE_PUSH);
            }
            // `--delete`, `-d`, or a refspec with nothing before the colon.
            let deletes = short('d')
                || long("--delete", 4)
                || long("--prune", 4)
                || operands
                    .iter()
                    .skip(1)
                    .any(|a| a.starts_with(':') && a.len() > 1);
            deletes.then_some(REMOTE_DELETE)
        }
        // git refuses a hard reset with paths (`git reset --hard -- f`).
        "reset" => {
            let paths = args
                .iter()
                .position(|a| *a == "--")
                .map_or(operands.len().saturating_sub(1), |at| args.len() - at - 1);
            ((long("--hard", 4) || long("--merge", 3)) && paths == 0).then_some(RESET_HARD)
        }
        "update-ref" if short('d') || long("--stdin", 4) => Some(REF_DELETE),
        // Moving a branch that exists (`update-ref refs/heads/main $(git
        // commit-tree …)`) can drop its commits; creating one cannot.
        "update-ref" => {
            let branch = operands.first()?.strip_prefix("refs/heads/")?;
            (operands.len() >= 2 && existing_branch_at(cwd, branch)).then_some(HISTORY_REWRITE)
        }
        "send-pack" => (long("--force", 3)
            || short('f')
            || long("--mirror", 3)
            || args.iter().any(|a| a.starts_with('+') && a.len() > 1))
        .then_some(FORCE_PUSH),
        // `read-tree --reset -u` overwrites the working tree with the index read.
        "read-tree" => (long("--reset", 4) && short('u')).then_some(DISCARD_CHANGES),
        "switch" => (short('f') || long("--force", 3) || long("--discard-changes", 3))
            .then_some(DISCARD_CHANGES),
        "checkout" | "restore" => {
            // Whole-tree pathspecs after `--`, or forced switches, discard work.
            let whole_tree = |a: &&str| matches!(*a, "." | "./" | ":/" | "*" | ":(top)");
            let dashes = args.iter().position(|a| *a == "--");
            let pathspecs: Vec<&str> = match dashes {
                Some(at) => args[at + 1..].to_vec(),
                None if subcommand == "restore" => operands.clone(),
                None => operands.iter().copied().filter(|a| whole_tree(a)).collect(),
            };
            let staged_only = subcommand == "restore"
                && (long("--staged", 3) || short('S'))
                && !(long("--worktree", 3) || short('W'));
            // `checkout -f` overwrites local changes, with or without a branch.
            let forced = subcommand == "checkout" && (short('f') || long("--force", 4));
            ((pathspecs.iter().any(whole_tree) && !staged_only) || forced)
                .then_some(DISCARD_CHANGES)
        }
        "stash" => matches!(operands.first(), Some(&"clear") | Some(&"drop")).then_some(STASH_DROP),
        "reflog" => {
            // Any explicit expiry but never (`=now`, `=1.second.ago`, `=all`).
            let expires_now = args.iter().any(|a| {
                a.starts_with("--expire")
                    && a.split_once('=')
                        .is_some_and(|(_, v)| !matches!(v, "never" | "false"))
            });
            (matches!(operands.first(), Some(&"delete"))
                || (matches!(operands.first(), Some(&"expire")) && expires_now))
                .then_some(HISTORY_REWRITE)
        }
        "filter-branch" | "filter-repo" => Some(HISTORY_REWRITE),
        // Unreachable objects pruned now: commits only the reflog still held.
        "gc" | "prune" => args
            .iter()
            .any(|a| {
                (subcommand == "prune" && !a.starts_with('-'))
                    || a.strip_prefix("--prune=")
                        .or_else(|| a.strip_prefix("--expire="))
                        .is_some_and(|v| matches!(v, "now" | "all") || v.contains("ago"))
            })
            .then_some(HISTORY_REWRITE),
        "checkout-index"
            if (short('f') || long("--force", 3)) && (short('a') || long("--all", 3)) =>
        {
            Some(DISCARD_CHANGES)
        }
        "worktree" if operands.first() == Some(&"remove") && (short('f') || long("--force", 3)) => {
            Some(DISCARD_CHANGES)
        }
        "submodule"
            if operands.first() == Some(&"deinit") && (short('f') || long("--force", 3)) =>
        {
            Some(DISCARD_CHANGES)
        }
        // A branch that exists moved elsewhere (`branch -f main HEAD~5`,
        // `checkout -B main X`, `switch -C main X`): its commits can be lost.
        "branch"
            if (short('f') || long("--force", 3))
                && !short('d')
                && !short('D')
                && !short('m')
                && !short('c')
                && operands.len() >= 2 =>
        {
            existing_branch_at(cwd, operands[0]).then_some(HISTORY_REWRITE)
        }

        "branch"
            if args.iter().any(|a| {
                a.starts_with('-') && !a.starts_with("--") && (a.contains('M') || a.contains('C'))
            }) || (short('f')
                && (short('m') || short('c') || long("--move", 3) || long("--copy", 3))) =>
        {
            // Renaming or copying over a branch that exists drops its commits.
            let target = operands.last()?;
            existing_branch(cwd, target).then_some(BRANCH_FORCE_DELETE)
        }
        "clean" => {
            let dry_run = short('n') || long("--dry-run", 3);
            let interactive = short('i') || long("--interactive", 3);
            let force_not_required = settings
                .iter()
                .any(|(key, value)| key == "clean.requireforce" && is_false(value));
            let forced = short('f') || long("--force", 3) || force_not_required;
            (forced && !dry_run && !interactive).then_some(CLEAN_FORCE)
        }
        "branch" => {
            let capital_d = args
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('D'));
            let delete = short('d') || long("--delete", 5);
            let force = short('f') || long("--force", 6);
            (capital_d || (delete && force)).then_some(BRANCH_FORCE_DELETE)
        }
        _ => None,
    }
}

/// The branch checked out in the repository at `cwd`, when git says.
fn current_branch(cwd: Option<&Path>) -> Option<String> {
    let ran = git_in(cwd?, &["symbolic-ref", "--quiet", "--short", "HEAD"])?;
    (ran.code == Some(0)).then(|| ran.stdout.trim().to_owned())
}

/// Whether `dir` is in a repository (a `.git` there or above): where there is
/// none, git has no branch to lose.
fn in_a_repository(dir: &Path) -> bool {
    dir.ancestors()
        .any(|d| d.join(".git").symlink_metadata().is_ok())
        || std::env::var_os("GIT_DIR").is_some()
}

/// Whether `name` is a branch of the repository at `cwd`, the one checked out
/// included. Unknown counts as existing.
fn existing_branch_at(cwd: Option<&Path>, name: &str) -> bool {
    let Some(cwd) = cwd else {
        return true;
    };
    if !in_a_repository(cwd) {
        return false;
    }
    let reference = format!("refs/heads/{name}");
    git_in(cwd, &["show-ref", "--verify", "--quiet", &reference])
        .is_none_or(|ran| ran.code != Some(1))
}

/// The system's git run in the repository at `cwd`; a repository's git asked
/// about a branch answers at once, or not at all (None).
fn git_in(cwd: &Path, args: &[&str]) -> Option<crate::system_programs::Ran> {
    let mut command = crate::system_programs::command("git")?;
    command.arg("-C").arg(cwd).args(args);
    crate::system_programs::run_within(&mut command, std::time::Duration::from_millis(500))
}

/// Whether `name` is a branch of the repository at `cwd` other than the one
/// checked out (renaming the current branch onto itself changes nothing). Unknown
/// (no cwd, no git of the system's, git too slow) counts as existing.
fn existing_branch(cwd: Option<&Path>, name: &str) -> bool {
    existing_branch_at(cwd, name) && current_branch(cwd).is_none_or(|head| head != name)
}

fn is_false(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "false" | "no" | "off" | "0"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: &str) -> Option<&'static str> {
        find(line, &Patterns::default()).map(|r| &*Box::leak(r.into_owned().into_boxed_str()))
    }

    #[test]
    fn refuses_each_destructive_form() {
        assert_eq!(rule("git push --force origin main"), Some("force-push"));
        assert_eq!(rule("git push -fu origin main"), Some("force-push"));
        assert_eq!(rule("git push --force-with-lease"), Some("force-push"));
        assert_eq!(rule("git push origin +main"), Some("force-push"));
        assert_eq!(rule("git -C repo reset --hard HEAD~1"), Some("reset-hard"));
        assert_eq!(rule("git clean -fdx"), Some("clean-force"));
        assert_eq!(rule("git branch -D feature"), Some("branch-force-delete"));
        assert_eq!(
            rule("git branch --delete --force feature"),
            Some("branch-force-delete")
        );
    }

    #[test]
    fn sees_through_git_abbreviations_aliases_and_settings() {
        assert_eq!(rule("git reset --ha"), Some("reset-hard"));
        assert_eq!(rule("git push --force-w origin main"), Some("force-push"));
        assert_eq!(
            rule("git branch --del --forc x"),
            Some("branch-force-delete")
        );
        assert_eq!(
            rule("git -c clean.requireForce=false clean -dx"),
            Some("clean-force")
        );
        assert_eq!(rule("git -c alias.p='push --force' p"), Some("force-push"));
        assert_eq!(
            rule("git -c alias.nuke='!git reset --hard' nuke"),
            Some("reset-hard")
        );
        assert_eq!(rule("$(which git) push -f"), Some("force-push"));
        assert_eq!(rule("$GIT reset --hard"), Some("reset-hard"));
    }

    #[test]
    fn refuses_what_it_cannot_analyse() {
        let mut line = String::from("git status");
        for _ in 0..12 {
            line = format!("echo $({line})");
        }
        assert_eq!(rule(&line), Some("unanalysable"));
    }

    #[test]
    fn sees_through_wrappers() {
        assert_eq!(rule("FOO=1 git push -f"), Some("force-push"));
        assert_eq!(rule("bash -c \"git reset --hard\""), Some("reset-hard"));
        assert_eq!(rule("cd x && git clean -f"), Some("clean-force"));
        assert_eq!(
            rule("sudo -u me /usr/bin/git branch -D x"),
            Some("branch-force-delete")
        );
        assert_eq!(
            rule("git add . && \\\n  git push --force"),
            Some("force-push")
        );
        assert_eq!(rule("for b in x; do git push -f; done"), Some("force-push"));
        assert_eq!(
            rule("git commit -m \"$(cat <<'EOF'\nDon't\nEOF\n)\" && git push --force"),
            Some("force-push")
        );
        assert_eq!(rule("echo $'it\\'s' ; git push -f"), Some("force-push"));
        assert_eq!(rule("env -S 'git push -f'"), Some("force-push"));
        assert_eq!(
            rule("env -i --split-string='git reset --hard' x"),
            Some("reset-hard")
        );
        assert_eq!(
            rule("nohup nohup env FOO=1 nice git clean -f"),
            Some("clean-force")
        );
    }

    #[test]
    fn leaves_safe_commands_alone() {
        for line in [
            "git push origin main",
            "git reset --soft HEAD~1",
            "git clean -n",
            "git clean -nf",
            "git branch -d merged",
            "echo 'git push --force'",
            "git commit -m 'never git reset --hard'",
            "grep -r 'push -f' .",
            "git push --follow-tags origin main",
            "git clean -i",
            "git branch --format='%(refname)'",
            "BLOCKED=(git push --force)",
            "git commit -m \"$(cat <<'EOF'\nDon't reset --hard (ever)\nEOF\n)\"",
        ] {
            assert_eq!(rule(line), None, "{line}");
        }
    }
}
