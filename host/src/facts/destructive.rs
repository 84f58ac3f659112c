//! Commands with no safe reading: what `tool.is_destructive` and
//! `tool.destructive_reason` are derived from, over every command the shell
//! analysis finds in a command line (however it is wrapped).
//!
//! So far these are git's history-destroying commands: force pushes,
//! `reset --hard`, `clean -f` and forced branch deletion, also abbreviated, through
//! `-c alias.x=…` and `-c clean.requireForce=false`, and through a program name the
//! shell computes (`$(which git)`, `$GIT`), which may be git. A line nested too deep
//! to analyse is reported as `unanalysable`.

use crate::shell;

/// Why a command is destructive: the `destructive_reason` fact.
pub type Reason = &'static str;

const FORCE_PUSH: Reason = "force-push";
const RESET_HARD: Reason = "reset-hard";
const CLEAN_FORCE: Reason = "clean-force";
const BRANCH_FORCE_DELETE: Reason = "branch-force-delete";

const UNANALYSABLE: Reason = "unanalysable";

/// Git options that come before the subcommand and take a separate value.
const GLOBAL_OPTIONS_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
    "--exec-path",
];

/// The first destructive command in a shell command line.
pub fn find(command_line: &str) -> Option<Reason> {
    let mut found = None;
    let too_deep = shell::visit(command_line, &mut |argv| {
        if found.is_none() {
            found = judge(&argv);
        }
    });
    found.or(too_deep.then_some(UNANALYSABLE))
}

/// Judges one simple command. A program name the shell computes (`$(which git)`,
/// `$GIT`) may be git, so its arguments are judged as git's.
fn judge(argv: &[String]) -> Option<Reason> {
    let program = shell::program(argv.first()?);
    let computed = program.is_empty() || program.starts_with('$');
    if program != "git" && !computed {
        return None;
    }
    judge_git(&argv[1..])
}

/// Judges git's arguments (everything after `git`).
fn judge_git(args: &[String]) -> Option<Reason> {
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
            Some(shell_command) => find(shell_command),
            None => {
                let mut expanded: Vec<String> =
                    expansion.split_whitespace().map(str::to_owned).collect();
                expanded.extend(args.iter().map(|a| (*a).to_owned()));
                judge_git(&expanded)
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
    match subcommand {
        "push" => {
            let forced = short('f')
                || long("--force", 5)
                || long("--force-with-lease", 9)
                || args.iter().any(|a| a.starts_with('+') && a.len() > 1);
            forced.then_some(FORCE_PUSH)
        }
        "reset" => long("--hard", 4).then_some(RESET_HARD),
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
        find(line)
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
