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
///
/// Not here, for what their documentation says they can do: `uniq IN OUT`
/// and `tree -o` write a file, `file -C` compiles one, `ack --output` and
/// `ag` run code of the line's choosing; `rg` is judged below (`--pre` runs a
/// program), and so are `sort`, `printf`, `test` and `find`.
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
    "pwd",
    "echo",
    "true",
    "false",
    "which",
    "type",
    "stat",
    "du",
    "df",
    "cut",
    "tr",
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

/// git's subcommands that only read the repository, on this machine: none
/// that talks to a remote (whose transport runs programs the config names),
/// not `help` (which runs a viewer).
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
    "cat-file",
    "describe",
    "shortlog",
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
/// does: the search path, start-up files, the loader, git's settings, aliases;
/// and bash's arithmetic, whose array subscripts run command substitutions
/// (`x='a[$(…)]'; echo $((x))`, `[[ x -eq 1 ]]`, `${a[x]}`, `let`, `declare -i`).
const CHANGES_WHAT_RUNS: &[&str] = &[
    "PATH", "ENV", "LD_", "GIT_", "alias", "enable", "hash", "shopt", "function", "()", "((", "[[",
    "${", "let", "declare", "typeset", "local", "readonly",
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
    // A program named by a path is the system's own only in one of its
    // directories, spelt plainly (not `/usr/bin/../../tmp/x/cat`).
    if first.contains('/')
        && !SYSTEM_DIRS.iter().any(|dir| {
            first
                .strip_prefix(dir)
                .is_some_and(|name| !name.is_empty() && !name.contains('/') && name != "..")
        })
    {
        return false;
    }
    let program = shell::program(first);
    let args = &command.argv[1..];
    match program {
        // `-o FILE` writes, `--compress-program` runs a program; GNU's long
        // options are taken by any unique start (`--outp`, `--comp`).
        "sort" => !args.iter().any(|a| {
            a.starts_with("--o") || a.starts_with("--co") || is_short_cluster_with(a, 'o')
        }),
        // `--pre COMMAND` runs a program on every file it searches.
        "rg" => !args.iter().any(|a| a.starts_with("--pre")),
        // `-v NAME` assigns (and evaluates an array subscript).
        "printf" | "test" | "[" => !args.iter().any(|a| a == "-v"),
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
        // `-O`/`--open-files-in-pager` runs a program; git takes any unique
        // start of a long option (`--open`).
        "grep" => !rest
            .iter()
            .any(|a| a.starts_with("-O") || a.starts_with("--op")),
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
        // What it does is its first word: `git config user.name list` sets.
        "config" => rest.first().is_some_and(|a| {
            matches!(
                a.as_str(),
                "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get" | "list"
            )
        }),
        _ => false,
    };
    reads
        && !rest.iter().any(|a| {
            a.starts_with("--output") || a.starts_with("--ext-diff") || a.starts_with("--textconv")
        })
        && !git_config_runs_programs(cwd)
}

/// Settings under which git runs a program of the configuration's choosing
/// while it reads: a file-system monitor, an external diff or a driver's
/// command, a text conversion, a filter, a signature program, a viewer, an
/// included file that could hold any of them, a worktree's own config. (A
/// pager runs only on a terminal, which an agent's command does not have;
/// credential helpers and editors only when git talks to a remote or asks
/// for a message.)
const RUNS_PROGRAMS: &[&str] = &[
    "fsmonitor",
    "external",
    "textconv",
    "command",
    "filter",
    "include",
    "program",
    "cmd",
    "viewer",
    "proxy",
    "uploadpack",
    "worktreeconfig",
];

/// Whether any config file git would read here names a setting that runs a
/// program (or cannot be read, or git's environment is set, or git would
/// read configs this cannot list): then no git command is taken to read only.
fn git_config_runs_programs(cwd: Option<&Path>) -> bool {
    std::env::vars_os().any(|(name, _)| name.to_string_lossy().starts_with("GIT_"))
        || configs_run_programs(cwd)
}

/// The config files' part of [`git_config_runs_programs`].
fn configs_run_programs(cwd: Option<&Path>) -> bool {
    let Some(files) = config_files(cwd) else {
        return true;
    };
    // Read without blocking: a FIFO in a config's place must not wedge the
    // hook; one that cannot be read is taken to run programs.
    files
        .iter()
        .any(|file| match sandrail_files::read_regular(file, 1 << 20) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
                RUNS_PROGRAMS.iter().any(|word| text.contains(word))
            }
            Err(sandrail_files::FileError::Missing { .. }) => false,
            Err(_) => true,
        })
}

/// The config files git reads for a command run in `cwd`: the system's, the
/// user's two, and the repository's — every `.git` above `cwd` (git passes
/// over one that is no repository, so each is read), a worktree's own and its
/// common one. `None` where git would read more than can be told here: a
/// repository with submodules, whose own configs git reads as it recurses.
fn config_files(cwd: Option<&Path>) -> Option<Vec<PathBuf>> {
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
        return Some(files);
    };
    for dir in cwd.ancestors() {
        if dir.join(".gitmodules").exists() {
            return None;
        }
        let dot_git = dir.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                if dot_git.join("modules").exists() {
                    return None;
                }
                files.push(dot_git.join("config"));
                files.push(dot_git.join("config.worktree"));
            }
            Ok(_) => {
                // `gitdir: PATH` of a worktree or submodule, and its common dir.
                let read = |path: &Path| {
                    sandrail_files::read_regular(path, 4096)
                        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
                        .unwrap_or_default()
                };
                if let Some(gitdir) = read(&dot_git).strip_prefix("gitdir:") {
                    let gitdir = dir.join(gitdir.trim());
                    files.push(gitdir.join("config"));
                    files.push(gitdir.join("config.worktree"));
                    let common = read(&gitdir.join("commondir"));
                    if !common.is_empty() {
                        files.push(gitdir.join(&common).join("config"));
                        files.push(gitdir.join(&common).join("config.worktree"));
                    }
                }
            }
            Err(_) => {}
        }
    }
    Some(files)
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
            "rg -n TODO src",
            "/usr/bin/cat a.txt",
            "git config --get user.name",
            "grep -v foo a.txt",
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
            "/usr/bin/../../tmp/x/cat a",
            "rg --pre rm .",
            "uniq /dev/null notes.txt",
            "sort --outp=notes.txt x",
            "sort -S 1K --compress-program=./x big.txt",
            "git ls-remote --upload-pack='touch x; git-upload-pack' .",
            "git grep -O'touch x;' pat",
            "git grep --open=vi pat",
            "git config user.name list",
            "git help log",
            "printf -v 'a[$(touch x)]' x",
            "test -v 'a[$(touch x)]'",
            "x='a[$(touch x)]'; echo $((x))",
            "file -C -m foo",
            "tree -o out.txt",
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
        let home_config = std::env::var_os("HOME")
            .map(|h| PathBuf::from(h).join(".gitconfig"))
            .filter(|p| p.exists());
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir_all(dir.path().join(".git")).expect("dir");
        std::fs::write(dir.path().join(".git/config"), "[core]\n\tbare = false\n").expect("write");
        if home_config.is_none() {
            assert!(!configs_run_programs(Some(dir.path())));
        }
        for (file, text) in [
            (".git/config", "[core]\n\tfsmonitor = rm -rf ..\n"),
            (".git/config.worktree", "[core]\n\tfsmonitor = x\n"),
            (".git/config", "[include]\n\tpath = elsewhere\n"),
            (".gitmodules", ""),
        ] {
            std::fs::write(dir.path().join(file), text).expect("write");
            assert!(configs_run_programs(Some(dir.path())), "{file}: {text}");
            std::fs::write(dir.path().join(".git/config"), "").expect("write");
            let _ = std::fs::remove_file(dir.path().join(".git/config.worktree"));
            let _ = std::fs::remove_file(dir.path().join(".gitmodules"));
        }
        // A setting in the repository above an empty `.git` git passes over.
        std::fs::write(dir.path().join(".git/config"), "[core]\n\tfsmonitor = x\n").expect("write");
        std::fs::create_dir_all(dir.path().join("sub/.git")).expect("dir");
        assert!(configs_run_programs(Some(&dir.path().join("sub"))));
        // Through the command: git status reads only where nothing runs.
        let command = &shell::analyse("git status").commands[0];
        assert!(!command_reads_only(command, Some(&dir.path().join("sub"))));
        std::fs::write(dir.path().join(".git/config"), "").expect("write");
        let git_environment = std::env::vars().any(|(k, _)| k.starts_with("GIT_"));
        if home_config.is_none() && !git_environment {
            assert!(command_reads_only(command, Some(dir.path())));
        }
    }
}
