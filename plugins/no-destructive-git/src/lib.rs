//! no-destructive-git: refuses git commands that destroy work with no way back —
//! force and mirror pushes, remote deletions, `reset --hard`/`--merge`, `clean -f`,
//! forced branch deletion or renaming over a branch, whole-tree checkouts and
//! restores, stash drops, ref deletion and history rewrites — however
//! they are wrapped (`FOO=1 git …`, `bash -c "git …"`, `cd x && git …`, `$(…)`).
//!
//! The host analyses the command line once, natively and in linear time, and
//! states the result in the facts (`tool.is_destructive`, `tool.destructive_reason`);
//! this guardrail refuses the git rules among them and says what to do instead.

use sandrail_guest::{Event, Guardrail, Result, Verdict};

/// A rule this guardrail enforces: the host's `destructive_reason`, what it does,
/// and what to do instead.
struct Rule {
    reason: &'static str,
    what: &'static str,
    instead: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        reason: "force-push",
        what: "a force push overwrites the remote's history",
        instead: "push without force, or `git revert` the commits to undo",
    },
    Rule {
        reason: "reset-hard",
        what: "`git reset --hard` discards uncommitted work",
        instead: "use `git stash` or `git reset --soft`",
    },
    Rule {
        reason: "clean-force",
        what: "`git clean -f` deletes untracked files for good",
        instead: "run `git clean -n` to see what would go, then remove files one by one",
    },
    Rule {
        reason: "branch-force-delete",
        what: "`git branch -D` deletes a branch even when its commits are not merged",
        instead: "use `git branch -d`, which refuses to drop unmerged work",
    },
    Rule {
        reason: "remote-delete",
        what: "it deletes branches or tags on the remote",
        instead: "ask the user to delete remote refs themselves",
    },
    Rule {
        reason: "ref-delete",
        what: "`git update-ref -d` deletes a ref and can orphan its commits",
        instead: "use `git branch -d` or `git tag -d`, which say what they drop",
    },
    Rule {
        reason: "discard-changes",
        what: "it throws away uncommitted changes across the working tree",
        instead: "use `git stash` to set them aside, or restore the specific files you mean",
    },
    Rule {
        reason: "stash-drop",
        what: "it deletes stashed work for good",
        instead: "leave the stash in place; `git stash list` shows what is there",
    },
    Rule {
        reason: "history-rewrite",
        what: "it rewrites or erases the repository's history (`filter-branch`, `filter-repo`, expiring the reflog)",
        instead: "make a new commit instead, and ask the user before any history rewrite",
    },
    Rule {
        reason: "unanalysable",
        what: "the command nests shells or substitutions too deeply to tell what it runs",
        instead: "write the command out plainly",
    },
];

/// The verdict for a call the host judged destructive for `reason`.
fn verdict_for(reason: &str) -> Verdict {
    match RULES.iter().find(|rule| rule.reason == reason) {
        Some(rule) => Verdict::violation(
            rule.reason,
            format!(
                "Refused: {}. Instead, {}. If this really is what the user wants, ask them to run it themselves.",
                rule.what, rule.instead
            ),
        ),
        // Destructive for a reason outside git's history: not this guardrail's rule.
        None => Verdict::pass(),
    }
}

struct NoDestructiveGit;

impl Guardrail for NoDestructiveGit {
    fn evaluate(event: &Event) -> Result<Verdict> {
        if event.fact("tool.is_destructive").and_then(|v| v.as_bool()) != Some(true) {
            return Ok(Verdict::pass());
        }
        Ok(
            match event
                .fact("tool.destructive_reason")
                .and_then(|v| v.as_str())
            {
                Some(reason) => verdict_for(reason),
                // Destructive without a reason: refuse as unanalysable rather than pass.
                None => verdict_for("unanalysable"),
            },
        )
    }
}

sandrail_guest::export!(NoDestructiveGit);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_git_reason_is_refused_under_its_own_rule() {
        for rule in RULES {
            match verdict_for(rule.reason) {
                Verdict::Violation(v) => {
                    assert_eq!(v.rule, rule.reason);
                    assert!(v.message.starts_with("Refused: "), "{}", v.message);
                }
                _ => panic!("{} passed", rule.reason),
            }
        }
    }

    #[test]
    fn other_reasons_are_left_to_other_guardrails() {
        assert!(matches!(verdict_for("fork-bomb"), Verdict::Pass));
    }
}
