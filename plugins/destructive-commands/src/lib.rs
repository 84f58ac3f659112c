//! destructive-commands: refuses every command the host judges destructive — one
//! with no safe reading — giving the host's `destructive_reason` as the rule and
//! saying what to do instead.
//!
//! The host's shell analysis (`tool.is_destructive`, `tool.destructive_reason`)
//! sees through wrappers, substitutions, interpreters and PowerShell once, for
//! every guardrail; this guardrail and no-destructive-git read the same facts, so
//! they always agree.

use sandrail_guest::{Event, Guardrail, Result, Verdict};

/// What a reason means, and what to do instead.
const REASONS: &[(&str, &str, &str)] = &[
    (
        "recursive-delete",
        "it deletes the root, the home directory or a system directory recursively",
        "delete the specific files or build directories you mean, by path",
    ),
    (
        "disk-format",
        "it formats or repartitions a disk",
        "ask the user to do disk administration themselves",
    ),
    (
        "device-write",
        "it writes raw bytes onto a block device",
        "write to an image file instead, and ask the user to flash it",
    ),
    (
        "fork-bomb",
        "it is a fork bomb, which would exhaust the machine's processes",
        "do not run it",
    ),
    (
        "recursive-permissions",
        "it changes the permissions or owner of the root, the home directory or a system directory recursively",
        "change the specific files that need it",
    ),
    (
        "download-to-shell",
        "it runs text downloaded from the network without anyone reading it",
        "download the script to a file, show it to the user, and run it only once they agree",
    ),
    (
        "decoded-to-shell",
        "it runs text decoded or transformed on the fly, which nobody can review",
        "write the command out plainly",
    ),
    (
        "force-push",
        "a force push overwrites the remote's history",
        "push without force, or `git revert` the commits to undo",
    ),
    (
        "reset-hard",
        "`git reset --hard` discards uncommitted work",
        "use `git stash` or `git reset --soft`",
    ),
    (
        "clean-force",
        "`git clean -f` deletes untracked files for good",
        "run `git clean -n` to see what would go, then remove files one by one",
    ),
    (
        "branch-force-delete",
        "`git branch -D` deletes a branch even when its commits are not merged",
        "use `git branch -d`, which refuses to drop unmerged work",
    ),
    (
        "remote-delete",
        "it deletes branches or tags on the remote",
        "ask the user to delete remote refs themselves",
    ),
    (
        "ref-delete",
        "`git update-ref -d` deletes a ref and can orphan its commits",
        "use `git branch -d` or `git tag -d`, which say what they drop",
    ),
    (
        "discard-changes",
        "it throws away uncommitted changes across the working tree",
        "use `git stash` to set them aside, or restore the specific files you mean",
    ),
    (
        "stash-drop",
        "it deletes stashed work for good",
        "leave the stash in place; `git stash list` shows what is there",
    ),
    (
        "history-rewrite",
        "it rewrites or erases the repository's history (`filter-branch`, `filter-repo`, expiring the reflog)",
        "make a new commit instead, and ask the user before any history rewrite",
    ),
    (
        "history-clear",
        "it erases history that cannot be recovered",
        "leave the history in place",
    ),
    (
        "delete-outside-project",
        "it deletes or empties, recursively or without asking, what lies outside the project and the temporary directories",
        "delete only inside the project, or under /tmp; if something elsewhere must go, name it to the user and let them delete it",
    ),
    (
        "repository-delete",
        "it deletes the repository's history (`.git`) or the project itself",
        "leave `.git` in place; to start over, make a new branch, or `git clean -n` to see what is untracked",
    ),
    (
        "file-shred",
        "`shred` overwrites a file so that it can never be recovered",
        "delete the file with `rm` (or move it aside) if it must go",
    ),
    (
        "boot-config",
        "it changes how the machine boots",
        "ask the user to change the boot configuration themselves",
    ),
    (
        "backup-delete",
        "it deletes the system's backups or snapshots",
        "leave the backups in place",
    ),
    (
        "sql-destroy",
        "it drops or truncates a database object, or deletes or updates every row of a table",
        "add a `WHERE` clause, or write a migration the user can review",
    ),
    (
        "kubernetes-delete",
        "it deletes a whole namespace, every object of a kind, or storage from the cluster",
        "delete the specific objects you mean, by name, or use `--dry-run=client` to show what would go",
    ),
    (
        "infrastructure-destroy",
        "it destroys infrastructure an infrastructure-as-code stack manages",
        "run a plan (`terraform plan -destroy`, `pulumi preview --destroy`) and show it to the user",
    ),
    (
        "cloud-delete",
        "it deletes cloud resources or data",
        "list what would go and ask the user to delete it",
    ),
    (
        "docker-prune",
        "it deletes every container, image or Docker volume, or volumes with their data",
        "remove the specific containers or images you mean, by name",
    ),
    (
        "unanalysable",
        "it runs code that cannot be read before it runs (nested too deeply, or generated on the fly)",
        "write the command out plainly",
    ),
];

/// The verdict for a call the host judged destructive for `reason`.
fn verdict_for(reason: &str) -> Verdict {
    let message = match REASONS.iter().find(|(r, _, _)| *r == reason) {
        Some((_, what, instead)) => format!(
            "Refused: {what}. Instead, {instead}. If this really is what the user wants, ask them to run it themselves."
        ),
        // A reason the config declared.
        None => format!(
            "Refused: the configuration marks this command as destructive ({reason}). If this really is what the user wants, ask them to run it themselves."
        ),
    };
    Verdict::violation(reason, message)
}

struct DestructiveCommands;

impl Guardrail for DestructiveCommands {
    fn evaluate(event: &Event) -> Result<Verdict> {
        if event.fact("tool.is_destructive").and_then(|v| v.as_bool()) != Some(true) {
            return Ok(Verdict::pass());
        }
        let reason = event
            .fact("tool.destructive_reason")
            .and_then(|v| v.as_str())
            .unwrap_or("unanalysable");
        Ok(verdict_for(reason))
    }
}

sandrail_guest::export!(DestructiveCommands);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_refused_under_its_own_name() {
        for (reason, _, _) in REASONS {
            match verdict_for(reason) {
                Verdict::Violation(v) => {
                    assert_eq!(v.rule, *reason);
                    assert!(v.message.starts_with("Refused: "), "{}", v.message);
                }
                _ => panic!("{reason} passed"),
            }
        }
        assert!(matches!(
            verdict_for("infrastructure-destroy"),
            Verdict::Violation(_)
        ));
    }
}
