//! no-destructive-git: refuses git commands that destroy work with no way back —
//! force pushes, `reset --hard`, `clean -f` and forced branch deletion — however
//! they are wrapped (`FOO=1 git …`, `bash -c "git …"`, `cd x && git …`, `$(…)`).

mod shell;

use sandrail_guest::{Event, Guardrail, Result, Verdict};

/// A destructive git command: the rule it breaks and why it is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    pub rule: &'static str,
    pub what: &'static str,
    pub instead: &'static str,
}

const FORCE_PUSH: Finding = Finding {
    rule: "force-push",
    what: "a force push overwrites the remote's history",
    instead: "push without force, or `git revert` the commits to undo",
};
const RESET_HARD: Finding = Finding {
    rule: "reset-hard",
    what: "`git reset --hard` discards uncommitted work",
    instead: "use `git stash` or `git reset --soft`",
};
const CLEAN_FORCE: Finding = Finding {
    rule: "clean-force",
    what: "`git clean -f` deletes untracked files for good",
    instead: "run `git clean -n` to see what would go, then remove files one by one",
};
const BRANCH_FORCE_DELETE: Finding = Finding {
    rule: "branch-force-delete",
    what: "`git branch -D` deletes a branch even when its commits are not merged",
    instead: "use `git branch -d`, which refuses to drop unmerged work",
};

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

/// The first destructive git command in a shell command line.
pub fn find(command_line: &str) -> Option<Finding> {
    shell::commands(command_line)
        .iter()
        .find_map(|argv| judge_git(argv))
}

fn judge_git(argv: &[String]) -> Option<Finding> {
    let program = argv.first()?.rsplit('/').next()?;
    if program != "git" {
        return None;
    }
    let mut rest = argv[1..].iter().map(String::as_str);
    let subcommand = loop {
        let word = rest.next()?;
        if GLOBAL_OPTIONS_WITH_VALUE.contains(&word) {
            rest.next();
        } else if !word.starts_with('-') {
            break word;
        }
    };
    let args: Vec<&str> = rest.collect();
    let has = |long: &str, short: char| {
        args.iter().any(|a| {
            *a == long
                || a.starts_with(&format!("{long}="))
                || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(short))
        })
    };
    match subcommand {
        "push" => {
            let forced = has("--force", 'f')
                || args.iter().any(|a| a.starts_with("--force-with-lease"))
                || args.iter().any(|a| a.starts_with('+') && a.len() > 1);
            forced.then_some(FORCE_PUSH)
        }
        "reset" => args.contains(&"--hard").then_some(RESET_HARD),
        "clean" => {
            let dry_run = has("--dry-run", 'n');
            (has("--force", 'f') && !dry_run).then_some(CLEAN_FORCE)
        }
        "branch" => {
            let capital_d = args
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('D'));
            let delete_forced = has("--delete", 'd') && has("--force", 'f');
            (capital_d || delete_forced).then_some(BRANCH_FORCE_DELETE)
        }
        _ => None,
    }
}

struct NoDestructiveGit;

impl Guardrail for NoDestructiveGit {
    fn evaluate(event: &Event) -> Result<Verdict> {
        let Some(command) = event.command() else {
            return Ok(Verdict::pass());
        };
        Ok(match find(command) {
            Some(f) => Verdict::violation(
                f.rule,
                format!(
                    "Refused: {}. Instead, {}. If this really is what the user wants, ask them to run it themselves.",
                    f.what, f.instead
                ),
            ),
            None => Verdict::pass(),
        })
    }
}

sandrail_guest::export!(NoDestructiveGit);

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: &str) -> Option<&'static str> {
        find(line).map(|f| f.rule)
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
    fn sees_through_wrappers() {
        assert_eq!(rule("FOO=1 git push -f"), Some("force-push"));
        assert_eq!(rule("bash -c \"git reset --hard\""), Some("reset-hard"));
        assert_eq!(rule("cd x && git clean -f"), Some("clean-force"));
        assert_eq!(
            rule("sudo -u me /usr/bin/git branch -D x"),
            Some("branch-force-delete")
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
        ] {
            assert_eq!(rule(line), None, "{line}");
        }
    }
}
