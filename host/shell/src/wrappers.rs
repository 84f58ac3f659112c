//! Programs that run another command: which words of theirs are that command.
//!
//! The table is data: a wrapper is its name, the subcommand that makes it run
//! something (`docker exec`), the options that take a value, and where the
//! command it runs is found ([`Runs`]). `sudo git push -f` is judged as
//! `git push -f`, `su -c 'rm -rf /'` as the script `rm -rf /`. A program not in
//! the table whose arguments form a destructive command is judged as if it ran
//! them (see `facts::destructive`).

use super::{Script, options_then, program};

/// Where a wrapper's command is.
#[derive(Debug, Clone, Copy)]
pub enum Runs {
    /// The words after its options and this many operands (`flock FILE cmd`,
    /// `timeout 5 cmd`).
    Command { operands: usize },
    /// The words after `--` (`kubectl exec POD -- cmd`).
    AfterDashes,
    /// The value of one of these options is a shell script (`su -c '…'`); without
    /// one, the words after `operands` operands are a command when `otherwise` is
    /// set (`runuser -u bob -- cmd`), and nothing runs when it is not (`script`).
    Script {
        options: &'static [&'static str],
        operands: usize,
        otherwise: bool,
    },
    /// Its operands after the first `skip`, joined, are a shell script
    /// (`tmux new 'cmd'`); only the first when `first_only` (`trap 'cmd' EXIT`).
    Joined { skip: usize, first_only: bool },
    /// Its operands are keys typed into a shell; `Enter` ends a line
    /// (`tmux send-keys 'rm -rf /' Enter`).
    Keys,
    /// The words before `:::` are a command, run once per word after it
    /// (`parallel rm -rf ::: /`).
    Parallel,
    /// Its standard input is a shell script (`at now`, `batch`).
    Stdin,
    /// Its standard input is a script when this option names it (`make -f -`,
    /// `make -f /dev/stdin`); a makefile's recipes read as shell.
    StdinIf { option: &'static str },
}

pub struct Wrapper {
    pub name: &'static str,
    /// The word that must follow the name (after its global options) for it to run
    /// a command; any of these. Empty: it always does.
    pub subcommands: &'static [&'static str],
    /// Options that take the next word as their value.
    pub options_with_value: &'static [&'static str],
    pub runs: Runs,
}

const fn wrapper(
    name: &'static str,
    options_with_value: &'static [&'static str],
    runs: Runs,
) -> Wrapper {
    Wrapper {
        name,
        subcommands: &[],
        options_with_value,
        runs,
    }
}

const fn sub(
    name: &'static str,
    subcommands: &'static [&'static str],
    options_with_value: &'static [&'static str],
    runs: Runs,
) -> Wrapper {
    Wrapper {
        name,
        subcommands,
        options_with_value,
        runs,
    }
}

const PLAIN: Runs = Runs::Command { operands: 0 };

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
const DOCKER_RUN_OPTIONS: &[&str] = &[
    "-a",
    "--attach",
    "-e",
    "--env",
    "--env-file",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "-v",
    "--volume",
    "-p",
    "--publish",
    "--name",
    "--entrypoint",
    "--network",
    "--net",
    "--mount",
    "-l",
    "--label",
    "--platform",
    "-m",
    "--memory",
    "--cpus",
    "-h",
    "--hostname",
    "--add-host",
    "--device",
    "--cap-add",
    "--cap-drop",
    "--security-opt",
    "--tmpfs",
    "--ulimit",
    "--volumes-from",
    "--pull",
    "--restart",
    "--log-driver",
    "--log-opt",
    "--shm-size",
    "--ipc",
    "--pid",
    "--userns",
    "--gpus",
    "--runtime",
    "--stop-signal",
    "--dns",
    "--expose",
    "--link",
    "--detach-keys",
];

const CONTAINER_EXEC_OPTIONS: &[&str] = &[
    "-e",
    "--env",
    "--env-file",
    "-u",
    "--user",
    "-w",
    "--workdir",
    "--detach-keys",
];

/// Every wrapper known, by program name.
pub const WRAPPERS: &[Wrapper] = &[
    wrapper("sudo", SUDO_OPTIONS, PLAIN),
    wrapper("doas", &["-u", "-C"], PLAIN),
    wrapper("nohup", &[], PLAIN),
    wrapper("command", &[], PLAIN),
    wrapper("builtin", &[], PLAIN),
    wrapper("exec", &["-a"], PLAIN),
    wrapper("unbuffer", &[], PLAIN),
    wrapper("nice", NICE_OPTIONS, PLAIN),
    wrapper("ionice", NICE_OPTIONS, PLAIN),
    wrapper(
        "stdbuf",
        &["-i", "--input", "-o", "--output", "-e", "--error"],
        PLAIN,
    ),
    wrapper(
        "timeout",
        &["-s", "--signal", "-k", "--kill-after"],
        Runs::Command { operands: 1 },
    ),
    wrapper("busybox", &[], PLAIN),
    wrapper("setsid", &[], PLAIN),
    wrapper(
        "flock",
        &["-w", "--timeout", "-E", "--conflict-exit-code"],
        Runs::Script {
            options: &["-c", "--command"],
            operands: 1,
            otherwise: true,
        },
    ),
    wrapper("taskset", &[], Runs::Command { operands: 1 }),
    wrapper(
        "strace",
        &[
            "-e", "-o", "-p", "-s", "-u", "-E", "-a", "-b", "-I", "-O", "-P", "-S", "-X",
        ],
        PLAIN,
    ),
    wrapper(
        "ltrace",
        &[
            "-a", "-A", "-D", "-e", "-F", "-l", "-n", "-o", "-p", "-s", "-u", "-w", "-x",
        ],
        PLAIN,
    ),
    wrapper(
        "script",
        &[
            "-E",
            "--echo",
            "-I",
            "--log-in",
            "-O",
            "--log-out",
            "-T",
            "--log-timing",
            "-m",
        ],
        Runs::Script {
            options: &["-c", "--command"],
            operands: 0,
            otherwise: false,
        },
    ),
    wrapper(
        "su",
        &["-g", "--group", "-G", "--supp-group", "-s", "--shell", "-w"],
        Runs::Script {
            options: &["-c", "--command", "--session-command"],
            operands: 0,
            otherwise: false,
        },
    ),
    wrapper(
        "runuser",
        &[
            "-u",
            "--user",
            "-g",
            "--group",
            "-G",
            "--supp-group",
            "-s",
            "--shell",
            "-w",
        ],
        Runs::Script {
            options: &["-c", "--command", "--session-command"],
            operands: 0,
            otherwise: true,
        },
    ),
    wrapper(
        "sg",
        &[],
        Runs::Joined {
            skip: 1,
            first_only: false,
        },
    ),
    sub(
        "tmux",
        &[
            "new",
            "new-session",
            "new-window",
            "neww",
            "split-window",
            "splitw",
            "respawn-pane",
            "respawnp",
            "respawn-window",
            "respawnw",
            "run-shell",
            "run",
        ],
        &[
            "-c", "-s", "-n", "-t", "-x", "-y", "-e", "-F", "-f", "-l", "-L", "-S",
        ],
        Runs::Joined {
            skip: 0,
            first_only: false,
        },
    ),
    sub(
        "tmux",
        &["send-keys", "send"],
        &["-t", "-N", "-L", "-S"],
        Runs::Keys,
    ),
    wrapper(
        "screen",
        &["-S", "-c", "-t", "-e", "-h", "-p", "-T", "-Logfile"],
        PLAIN,
    ),
    wrapper(
        "trap",
        &[],
        Runs::Joined {
            skip: 0,
            first_only: true,
        },
    ),
    wrapper(
        "rlwrap",
        &[
            "-f", "-H", "-l", "-p", "-P", "-S", "-w", "-z", "-C", "-D", "-g", "-M", "-o", "-q",
            "-s", "-t",
        ],
        PLAIN,
    ),
    wrapper(
        "chroot",
        &["--userspec", "--groups"],
        Runs::Command { operands: 1 },
    ),
    wrapper(
        "unshare",
        &[
            "-S", "-G", "--setuid", "--setgid", "-R", "--root", "-w", "--wd",
        ],
        PLAIN,
    ),
    wrapper("eatmydata", &[], PLAIN),
    sub("direnv", &["exec"], &[], Runs::Command { operands: 1 }),
    sub(
        "docker",
        &["exec"],
        CONTAINER_EXEC_OPTIONS,
        Runs::Command { operands: 1 },
    ),
    sub(
        "docker",
        &["run"],
        DOCKER_RUN_OPTIONS,
        Runs::Command { operands: 1 },
    ),
    sub(
        "podman",
        &["exec"],
        CONTAINER_EXEC_OPTIONS,
        Runs::Command { operands: 1 },
    ),
    sub(
        "podman",
        &["run"],
        DOCKER_RUN_OPTIONS,
        Runs::Command { operands: 1 },
    ),
    sub("kubectl", &["exec"], &[], Runs::AfterDashes),
    sub("oc", &["exec", "rsh"], &[], Runs::AfterDashes),
    wrapper(
        "parallel",
        &["-j", "--jobs", "-S", "--sshlogin", "--delay", "--timeout"],
        Runs::Parallel,
    ),
    wrapper("at", &["-q", "-t", "-M"], Runs::Stdin),
    wrapper("make", &[], Runs::StdinIf { option: "-f" }),
    wrapper("batch", &["-q", "-M"], Runs::Stdin),
    wrapper(
        "nix-shell",
        &[
            "-p",
            "--packages",
            "-I",
            "--arg",
            "--argstr",
            "-A",
            "--attr",
        ],
        Runs::Script {
            options: &["--run", "--command"],
            operands: 0,
            otherwise: false,
        },
    ),
];

/// The wrapper `argv` starts with, if any, and where its own words end (the
/// index of the word after its subcommand).
pub fn of(argv: &[String]) -> Option<(&'static Wrapper, usize)> {
    let name = program(argv.first()?);
    WRAPPERS.iter().find_map(|w| {
        if w.name != name {
            return None;
        }
        if w.subcommands.is_empty() {
            return Some((w, 1));
        }
        // Global options (`docker --context x exec`) come before the subcommand.
        let at = 1 + options_then(&argv[1..], &["--context", "-H", "--host", "-n"], false);
        let word = argv.get(at)?;
        w.subcommands
            .contains(&word.as_str())
            .then_some((w, at + 1))
    })
}

/// How many words a wrapper in front of a command takes before the command it
/// runs; None when what it runs is not its following words (a script, keys,
/// standard input) or it runs nothing.
pub fn command_start(argv: &[String]) -> Option<usize> {
    let (wrapper, start) = of(argv)?;
    let rest = &argv[start..];
    let options = options_then(rest, wrapper.options_with_value, false);
    match wrapper.runs {
        Runs::Command { operands } => Some(start + options + operands.min(rest.len() - options)),
        Runs::AfterDashes => rest
            .iter()
            .position(|w| w == "--")
            .map(|dashes| start + dashes + 1),
        Runs::Script {
            options: script_options,
            operands,
            otherwise,
        } => {
            let scripted = rest
                .iter()
                .any(|w| script_options.contains(&w.as_str()) || has_attached(w, script_options));
            (otherwise && !scripted).then(|| {
                let after = operands.min(rest.len() - options);
                let mut at = start + options + after;
                // `runuser -u bob -- cmd`: options may follow the operands.
                at += options_then(&argv[at..], wrapper.options_with_value, false);
                at
            })
        }
        Runs::Joined { .. } | Runs::Keys | Runs::Parallel | Runs::Stdin | Runs::StdinIf { .. } => {
            None
        }
    }
}

/// `--command=…`: an option with its value attached.
fn has_attached(word: &str, options: &[&str]) -> bool {
    options
        .iter()
        .any(|o| o.starts_with("--") && word.strip_prefix(o).is_some_and(|v| v.starts_with('=')))
}

/// Whether `argv`'s program reads a shell script on its standard input.
pub fn runs_stdin(argv: &[String]) -> bool {
    match of(argv).map(|(w, _)| w.runs) {
        Some(Runs::Stdin) => true,
        Some(Runs::StdinIf { option }) => argv.windows(2).any(|pair| {
            pair[0] == option && matches!(pair[1].as_str(), "-" | "/dev/stdin" | "/proc/self/fd/0")
        }),
        _ => false,
    }
}

/// At most this many arguments of `parallel` are each made a command.
const MAX_PARALLEL_ARGUMENTS: usize = 64;

/// The scripts and commands a wrapper runs that are not simply its following
/// words.
pub fn scripts(argv: &[String]) -> Vec<Script> {
    let Some((wrapper, start)) = of(argv) else {
        return Vec::new();
    };
    let rest = &argv[start..];
    let options = options_then(rest, wrapper.options_with_value, false);
    let operands = &rest[options..];
    match wrapper.runs {
        Runs::Script {
            options: script_options,
            ..
        } => {
            let mut words = rest.iter();
            while let Some(word) = words.next() {
                // `script -qc CMD`: a cluster of short options ending in one.
                // (`-` first: a word opening with a wider character is not cut.)
                let clustered = word.starts_with('-')
                    && !word.starts_with("--")
                    && word.len() > 2
                    && word[1..].chars().all(|c| c.is_ascii_alphabetic())
                    && script_options
                        .iter()
                        .any(|o| o.len() == 2 && word.ends_with(&o[1..]));
                if script_options.contains(&word.as_str()) || clustered {
                    return words
                        .next()
                        .cloned()
                        .map(Script::Shell)
                        .into_iter()
                        .collect();
                }
                if has_attached(word, script_options)
                    && let Some((_, value)) = word.split_once('=')
                {
                    return vec![Script::Shell(value.to_owned())];
                }
            }
            Vec::new()
        }
        Runs::Joined { skip, first_only } => {
            let operands = operands.get(skip..).unwrap_or_default();
            // `trap -- 'cmd' EXIT`, `sg group -c 'cmd'`.
            let operands = if operands.first().is_some_and(|w| w == "--" || w == "-c") {
                &operands[1..]
            } else {
                operands
            };
            let script = if first_only {
                operands.first().cloned().unwrap_or_default()
            } else {
                operands.join(" ")
            };
            if script.is_empty() {
                Vec::new()
            } else {
                vec![Script::Shell(script)]
            }
        }
        Runs::Keys => {
            let typed: Vec<&str> = operands
                .iter()
                .map(|key| match key.as_str() {
                    "Enter" | "C-m" | "KPEnter" | "C-j" => "\n",
                    other => other,
                })
                .collect();
            vec![Script::Shell(typed.join(" "))]
        }
        Runs::Parallel => {
            let Some(separator) = operands.iter().position(|w| w == ":::" || w == "::::") else {
                return Vec::new();
            };
            let template = &operands[..separator];
            operands[separator + 1..]
                .iter()
                .take(MAX_PARALLEL_ARGUMENTS)
                .map(|argument| {
                    let mut command: Vec<String> =
                        template.iter().map(|w| w.replace("{}", argument)).collect();
                    if !template.iter().any(|w| w.contains("{}")) {
                        command.push(argument.clone());
                    }
                    Script::Command(command)
                })
                .collect()
        }
        Runs::Command { .. } | Runs::AfterDashes | Runs::Stdin | Runs::StdinIf { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    /// Found by the fuzz target (host/shell/fuzz): a wrapper's option that
    /// takes a value, last on the line, counted its missing value as a word,
    /// so where the command starts was past the end of the line.
    #[test]
    fn an_option_missing_its_value_ends_the_wrapper_s_words() {
        for line in ["rlwrap -p", "strace -o", "flock -w", "taskset -c"] {
            let argv = words(line);
            if let Some(start) = command_start(&argv) {
                assert!(start <= argv.len(), "{line}: {start}");
            }
        }
    }

    /// Found by the fuzz target: a word after a wrapper that runs a script
    /// (`su`, `script`) opening with a character wider than a byte was cut
    /// inside it, and the analysis panicked.
    #[test]
    fn a_wide_first_character_after_a_wrapper_is_read_whole() {
        for line in ["su éclair; rm -rf /", "script ñ -c 'rm -rf /'"] {
            let analysis = crate::analyse(line);
            assert!(
                analysis
                    .commands
                    .iter()
                    .any(|c| c.argv.first().is_some_and(|p| p == "rm")),
                "{line}: {analysis:?}"
            );
        }
    }

    #[test]
    fn finds_where_the_command_starts() {
        for (line, start) in [
            ("flock /tmp/l rm -rf /", Some(2)),
            ("taskset -c 0 git push", Some(3)),
            ("strace -f -o log rm x", Some(4)),
            ("runuser -u bob -- rm x", Some(4)),
            ("docker exec -it web rm x", Some(4)),
            ("docker run --rm -v a:b alpine rm x", Some(6)),
            ("kubectl exec pod -c c -- rm x", Some(6)),
            ("direnv exec . rm x", Some(3)),
            ("docker ps", None),
            ("su -c x", None),
            ("script -q log", None),
        ] {
            assert_eq!(command_start(&words(line)), start, "{line}");
        }
    }

    #[test]
    fn finds_scripts_keys_and_parallel_commands() {
        let script = |s: &str| vec![Script::Shell(s.to_owned())];
        let mut su = words("su root -c");
        su.push("rm -rf /".into());
        assert_eq!(scripts(&su), script("rm -rf /"));
        assert_eq!(scripts(&words("trap x EXIT")), script("x"));
        assert_eq!(
            scripts(&words("tmux send-keys -t 0 rm Enter")),
            script("rm \n")
        );
        assert_eq!(
            scripts(&words("parallel rm -rf ::: / ~")),
            vec![
                Script::Command(words("rm -rf /")),
                Script::Command(words("rm -rf ~"))
            ]
        );
        assert_eq!(scripts(&words("tmux ls")), Vec::<Script>::new());
    }
}
