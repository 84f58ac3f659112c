//! Whether a command line provably changes no file: every program it runs is
//! one that only reads (by what its own documentation says it does with the
//! arguments it is given), no redirection writes, and nothing on the line can
//! make a program other than the one named run (`PATH`, `BASH_ENV`, git's
//! settings). The host skips a checkpoint for such a call; anything it cannot
//! be sure of is taken to write, which costs a checkpoint, never a loss.

use std::path::{Path, PathBuf};

use sandrail_shell::{self as shell, Command, RedirectKind};

/// Programs that read their operands and write nothing, with any arguments
/// (the commands below with options that write are judged on their own).
const READERS: &[&str] = &[
    "ls",
    "dir",
    "cat",
    "tac",
    "nl",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "ack",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "which",
    "type",
    "file",
    "stat",
    "du",
    "df",
    "tree",
    "cut",
    "tr",
    "uniq",
    "diff",
    "cmp",
    "comm",
    "date",
    "whoami",
    "id",
    "uname",
    "hostname",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "jq",
    "column",
    "fold",
    "rev",
    "seq",
    "sleep",
    "nproc",
    "uptime",
    "ps",
    "od",
    "hexdump",
    "strings",
    "base64",
    "cd",
    "pushd",
    "popd",
    ":",
    "printenv",
    "env",
    "wait",
    "fmt",
    "paste",
    "join",
    "expand",
    "unexpand",
    "look",
    "cal",
    "locale",
    "tty",
    "groups",
    "getconf",
    "arch",
];

/// git's subcommands that only read the repository.
const GIT_READERS: &[&str] = &[
    "status",
    "diff",
    "log",
    "show",
    "blame",
    "annotate",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "ls-remote",
    "cat-file",
    "describe",
    "shortlog",
    "grep",
    "rev-list",
    "show-ref",
    "for-each-ref",
    "name-rev",
    "merge-base",
    "whatchanged",
    "check-ignore",
    "check-attr",
    "count-objects",
    "var",
    "version",
    "help",
];

/// Directories a program may be named from and still be the system's own.
const SYSTEM_DIRS: &[&str] = &[
    "/bin/",
    "/usr/bin/",
    "/usr/local/bin/",
    "/sbin/",
    "/usr/sbin/",
];

/// Words that, anywhere on the line, can change which program runs or what it
/// does: the search path, start-up files, the loader, git's settings, aliases.
const CHANGES_WHAT_RUNS: &[&str] = &[
    "PATH", "ENV", "LD_", "GIT_", "alias", "enable", "hash", "shopt", "function", "()",
];

/// Whether one command (as the shell analysis found it) only reads.
pub fn command_reads_only(command: &Command, cwd: Option<&Path>) -> bool {
    let writes = command.redirects.iter().any(|r| {
        matches!(r.kind, RedirectKind::Write | RedirectKind::Append)
            && !matches!(
                r.target.as_str(),
                "/dev/null" | "/dev/stdout" | "/dev/stderr"
            )
    });
    if writes || command.args_from_stdin {
        return false;
    }
    let Some(first) = command.argv.first() else {
        // A bare redirection reading a file (`< f`) changes nothing.
        return true;
    };
    if first.contains('/') && !SYSTEM_DIRS.iter().any(|dir| first.starts_with(dir)) {
        return false;
    }
    let program = shell::program(first);
    let args = &command.argv[1..];
    match program {
        "sort" => !args
            .iter()
            .any(|a| a == "-o" || a.starts_with("--output") || is_short_cluster_with(a, 'o')),
        "find" => !args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-delete"
                    | "-exec"
                    | "-execdir"
                    | "-ok"
                    | "-okdir"
                    | "-fprint"
                    | "-fprint0"
                    | "-fprintf"
                    | "-fls"
            )
        }),
        "git" => git_reads_only(args, cwd),
        // `env CMD` is unwrapped before here; bare, it prints.
        p => READERS.contains(&p),
    }
}

/// Whether the line's text leaves no room for another program to run than
/// the ones the analysis found.
pub fn line_is_plain(line: &str) -> bool {
    !CHANGES_WHAT_RUNS.iter().any(|word| line.contains(word))
}

fn is_short_cluster_with(arg: &str, flag: char) -> bool {
    arg.starts_with('-') && !arg.starts_with("--") && arg[1..].contains(flag)
}

/// `git SUBCOMMAND …` that reads only: a reading subcommand, no option that
/// sets configuration, moves the repository or writes a file, and no setting
/// in any config file git reads that runs a program.
fn git_reads_only(args: &[String], cwd: Option<&Path>) -> bool {
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        if !arg.starts_with('-') {
            break;
        }
        // `-c`, `--config-env`, `--exec-path`, `--git-dir`, `-C`, …: another
        // configuration or repository than the one looked at.
        if !matches!(arg.as_str(), "--no-pager" | "-P" | "--no-optional-locks") {
            return false;
        }
        at += 1;
    }
    let Some(subcommand) = args.get(at) else {
        return true;
    };
    let rest = &args[at + 1..];
    let reads = match subcommand.as_str() {
        s if GIT_READERS.contains(&s) => true,
        "branch" | "tag" => rest.iter().all(|a| {
            matches!(
                a.as_str(),
                "-l" | "--list"
                    | "-a"
                    | "--all"
                    | "-r"
                    | "--remotes"
                    | "-v"
                    | "-vv"
                    | "--verbose"
                    | "--show-current"
                    | "-n"
            )
        }),
        "remote" => rest.is_empty() || rest.iter().all(|a| a == "-v" || a == "--verbose"),
        "stash" | "worktree" => matches!(rest.first().map(String::as_str), Some("list")),
        "reflog" => rest
            .first()
            .is_none_or(|a| a == "show" || a.starts_with('-')),
        "config" => rest.iter().any(|a| {
            matches!(
                a.as_str(),
                "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get" | "list"
            )
        }),
        _ => false,
    };
    reads
        && !rest.iter().any(|a| {
            a.starts_with("--output")
                || a == "-O"
                || a.starts_with("--open-files-in-pager")
                || a.starts_with("--ext-diff")
                || a.starts_with("--textconv")
        })
        && !git_config_runs_programs(cwd)
}

/// Settings under which git runs a program of the configuration's choosing
/// while it reads: a file-system monitor, an external diff or a driver's
/// command, a text conversion, a filter, a signature program, an included
/// file that could hold any of them. (A pager runs only on a terminal, which
/// an agent's command does not have; credential helpers and editors only when
/// git talks to a remote or asks for a message.)
const RUNS_PROGRAMS: &[&str] = &[
    "fsmonitor",
    "external",
    "textconv",
    "command",
    "filter",
    "include",
    "program",
];

/// Whether any config file git would read here names a setting that runs a
/// program (or cannot be read, or git's environment is set): then no git
/// command is taken to read only.
fn git_config_runs_programs(cwd: Option<&Path>) -> bool {
    if std::env::vars_os().any(|(name, _)| name.to_string_lossy().starts_with("GIT_")) {
        return true;
    }
    config_files(cwd)
        .iter()
        .any(|file| match std::fs::read(file) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
                RUNS_PROGRAMS.iter().any(|word| text.contains(word))
            }
            Err(e) => e.kind() != std::io::ErrorKind::NotFound,
        })
}

/// The config files git reads for a command run in `cwd`: the system's, the
/// user's two, and the repository's (a worktree's and its common one).
fn config_files(cwd: Option<&Path>) -> Vec<PathBuf> {
    let mut files = vec![PathBuf::from("/etc/gitconfig")];
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        files.push(home.join(".gitconfig"));
        files.push(home.join(".config/git/config"));
    }
    if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
        files.push(PathBuf::from(xdg).join("git/config"));
    }
    let Some(cwd) = cwd else {
        return files;
    };
    for dir in cwd.ancestors() {
        let dot_git = dir.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                files.push(dot_git.join("config"));
                break;
            }
            Ok(_) => {
                // `gitdir: PATH` of a worktree or submodule, and its common dir.
                let text = std::fs::read_to_string(&dot_git).unwrap_or_default();
                if let Some(gitdir) = text.trim().strip_prefix("gitdir:") {
                    let gitdir = dir.join(gitdir.trim());
                    files.push(gitdir.join("config"));
                    files.push(gitdir.join("config.worktree"));
                    let common =
                        std::fs::read_to_string(gitdir.join("commondir")).unwrap_or_default();
                    if !common.trim().is_empty() {
                        files.push(gitdir.join(common.trim()).join("config"));
                    }
                }
                break;
            }
            Err(_) => {}
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads_only(line: &str) -> bool {
        let dir = tempfile::tempdir().expect("dir");
        let analysis = shell::analyse(line);
        line_is_plain(line)
            && !analysis.incomplete
            && analysis
                .commands
                .iter()
                .all(|c| command_reads_only(c, Some(dir.path())))
    }

    #[test]
    fn reading_lines_read_only() {
        for line in [
            "ls -la",
            "cat README.md | grep -n foo | head -5",
            "git status",
            "git log --oneline -5",
            "git diff HEAD~1 -- src",
            "find . -name '*.rs' | wc -l",
            "rg TODO src/ > /dev/null",
            "cd src && ls",
            "git branch",
            "sort -u names.txt",
        ] {
            if line.starts_with("git") && std::env::vars().any(|(k, _)| k.starts_with("GIT_")) {
                continue;
            }
            assert!(reads_only(line), "{line}");
        }
    }

    #[test]
    fn anything_else_may_write() {
        for line in [
            "ls > listing.txt",
            "cat a >> b",
            "rm -rf src",
            "ls; rm x",
            "echo $(rm -rf x)",
            "find . -delete",
            "find . -exec rm {} +",
            "sort -o out.txt in.txt",
            "git checkout -- f",
            "git -c diff.external=x diff",
            "git diff --output=patch.txt",
            "git branch -D feature",
            "git stash",
            "PATH=/tmp/evil:$PATH ls",
            "./ls",
            "f(){ rm -rf x; }; f",
            "python3 -c 'print(1)'",
            "cargo test",
            "$X status",
            "ls | xargs rm",
            "alias ls=rm; ls",
        ] {
            assert!(!reads_only(line), "{line}");
        }
    }

    #[test]
    fn git_reads_only_where_no_setting_runs_a_program() {
        if std::env::vars().any(|(k, _)| k.starts_with("GIT_")) {
            return;
        }
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(dir.path().join(".git")).expect("dir");
        std::fs::write(
            dir.path().join(".git/config"),
            "[core]\n\tfsmonitor = rm -rf ..\n",
        )
        .expect("write");
        let command = &shell::analyse("git status").commands[0];
        assert!(!command_reads_only(command, Some(dir.path())));
        std::fs::write(dir.path().join(".git/config"), "[core]\n\tbare = false\n").expect("write");
        let home_config = std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".gitconfig"))
            .filter(|p| p.exists());
        if home_config.is_none() {
            assert!(command_reads_only(command, Some(dir.path())));
        }
    }
}
