//! Opt-in rule packs: the destructive commands of tools the embedded default
//! leaves alone, because what they delete is the team's to judge — a database,
//! a cluster, cloud infrastructure, Docker's volumes. Each is one word in
//! `[facts] destructive_packs`; what a pack refuses becomes
//! `tool.is_destructive` with the pack's reason, which destructive-commands
//! refuses like any other.

use serde::Deserialize;

use sandrail_shell::{self as shell, Command};

/// A pack of rules, as a config names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pack {
    /// `DROP`, `TRUNCATE`, and `DELETE` without `WHERE` through psql, mysql,
    /// sqlite3 and their kin.
    Sql,
    /// `kubectl delete namespace`, `--all`, volumes.
    Kubernetes,
    /// `terraform destroy`, `pulumi destroy`, `cdk destroy`.
    Infrastructure,
    /// The cloud CLIs' deletes: `aws s3 rm --recursive`, `gcloud … delete`,
    /// `az … delete`.
    Cloud,
    /// `docker system prune -a --volumes`, volume removal, `compose down -v`.
    Docker,
}

pub const SQL_DESTROY: &str = "sql-destroy";
pub const KUBERNETES_DELETE: &str = "kubernetes-delete";
pub const INFRASTRUCTURE_DESTROY: &str = "infrastructure-destroy";
pub const CLOUD_DELETE: &str = "cloud-delete";
pub const DOCKER_PRUNE: &str = "docker-prune";

/// The reason one of `packs` refuses `command` for, if any.
pub fn judge(packs: &[Pack], command: &Command) -> Option<&'static str> {
    let program = shell::program(command.argv.first()?).to_ascii_lowercase();
    let program = program.strip_suffix(".exe").unwrap_or(&program);
    let args = &command.argv[1..];
    packs.iter().find_map(|pack| match pack {
        Pack::Sql => sql(program, args, command).then_some(SQL_DESTROY),
        Pack::Kubernetes => kubernetes(program, args).then_some(KUBERNETES_DELETE),
        Pack::Infrastructure => infrastructure(program, args).then_some(INFRASTRUCTURE_DESTROY),
        Pack::Cloud => cloud(program, args).then_some(CLOUD_DELETE),
        Pack::Docker => docker(program, args, command).then_some(DOCKER_PRUNE),
    })
}

/// The words after `args`' options, lower-cased: the subcommand path.
fn subcommands(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| a.to_ascii_lowercase())
        .collect()
}

fn has(args: &[String], flags: &[&str]) -> bool {
    args.iter().any(|a| {
        let name = a.split('=').next().unwrap_or(a);
        flags.contains(&name)
    })
}

/// SQL clients given statements in an argument, or fed them by a printer.
fn sql(program: &str, args: &[String], command: &Command) -> bool {
    let mut texts: Vec<String> = Vec::new();
    let flags: &[&str] = match program {
        "psql" => &["-c", "--command"],
        "mysql" | "mariadb" => &["-e", "--execute"],
        "sqlcmd" => &["-q", "-Q"],
        "clickhouse-client" => &["-q", "--query"],
        "mongosh" | "mongo" => &["--eval"],
        "sqlite3" | "duckdb" => &["-cmd", "-c"],
        "cockroach" => &["-e", "--execute"],
        _ => return false,
    };
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if let Some((name, value)) = word.split_once('=')
            && flags.contains(&name)
        {
            texts.push(value.to_owned());
        } else if flags.contains(&word.as_str()) {
            texts.extend(words.next().cloned());
        } else if let Some(value) = flags
            .iter()
            .filter(|f| f.len() == 2)
            .find_map(|f| word.strip_prefix(f).filter(|v| !v.is_empty()))
        {
            texts.push(value.to_owned());
        }
    }
    // `sqlite3 app.db "DELETE FROM t"`: statements after the database.
    if matches!(program, "sqlite3" | "duckdb") {
        texts.extend(args.iter().filter(|a| !a.starts_with('-')).skip(1).cloned());
    }
    // `echo 'DROP TABLE t' | psql`, `psql <<< 'TRUNCATE t'`.
    for feeder in &command.fed_by {
        if let Some(text) = shell::printed::text(&shell::feeder(feeder)) {
            texts.push(text);
        }
    }
    texts.iter().any(|text| destroys_data(text))
}

/// Whether SQL text drops or truncates something, or deletes or updates every
/// row of a table (no `WHERE`).
pub fn destroys_data(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    if upper.contains("DROPDATABASE(")
        || upper.contains(".DROP()")
        || upper.contains("DELETEMANY({})")
    {
        return true;
    }
    upper.split(';').any(|statement| {
        let words: Vec<&str> = statement.split_whitespace().collect();
        match words.as_slice() {
            ["DROP", object, ..] => !matches!(*object, "TRIGGER" | "FUNCTION" | "PROCEDURE"),
            ["TRUNCATE", ..] => true,
            ["DELETE", "FROM", ..] | ["DELETE", _, "FROM", ..] => !words.contains(&"WHERE"),
            ["UPDATE", ..] => words.contains(&"SET") && !words.contains(&"WHERE"),
            ["ALTER", "TABLE", ..] => words.contains(&"DROP"),
            _ => false,
        }
    })
}

fn kubernetes(program: &str, args: &[String]) -> bool {
    if !matches!(program, "kubectl" | "oc" | "k" | "microk8s.kubectl") {
        return false;
    }
    let words = subcommands(args);
    // `kubectl -n prod delete …`: the verb after the global options' values.
    let Some(verb) = words.iter().position(|w| w == "delete") else {
        return false;
    };
    if args.iter().any(|a| a.starts_with("--dry-run")) {
        return false;
    }
    let kinds = words.get(verb + 1).map(String::as_str).unwrap_or_default();
    let whole = kinds.split(',').any(|kind| {
        let kind = kind.split('/').next().unwrap_or(kind);
        matches!(
            kind,
            "namespace"
                | "namespaces"
                | "ns"
                | "pv"
                | "pvc"
                | "persistentvolume"
                | "persistentvolumes"
                | "persistentvolumeclaim"
                | "persistentvolumeclaims"
                | "crd"
                | "crds"
                | "customresourcedefinition"
                | "customresourcedefinitions"
                | "node"
                | "nodes"
                | "all"
        )
    });
    whole || has(args, &["--all", "-A", "--all-namespaces"])
}

fn infrastructure(program: &str, args: &[String]) -> bool {
    let words = subcommands(args);
    let first = words.first().map(String::as_str);
    match program {
        "terraform" | "tofu" | "terragrunt" | "opentofu" => {
            first == Some("destroy")
                || (first == Some("apply") && has(args, &["-destroy", "--destroy"]))
                || (first == Some("state") && words.get(1).is_some_and(|w| w == "rm"))
                || (first == Some("workspace") && words.get(1).is_some_and(|w| w == "delete"))
                || (first == Some("run-all") && words.get(1).is_some_and(|w| w == "destroy"))
        }
        "pulumi" => {
            first == Some("destroy")
                || first == Some("down")
                || (first == Some("stack") && words.get(1).is_some_and(|w| w == "rm"))
        }
        "cdk" | "cdktf" => first == Some("destroy"),
        "serverless" | "sls" => first == Some("remove"),
        "sam" | "copilot" => first == Some("delete"),
        _ => false,
    }
}

fn cloud(program: &str, args: &[String]) -> bool {
    let words = subcommands(args);
    let word = |at: usize| words.get(at).map(String::as_str).unwrap_or_default();
    match program {
        "aws" => match word(0) {
            "s3" => {
                (word(1) == "rm" && has(args, &["--recursive"]))
                    || word(1) == "rb"
                    || (word(1) == "sync" && has(args, &["--delete"]))
            }
            _ => {
                let action = word(1);
                action.starts_with("delete-")
                    || action.starts_with("terminate-")
                    || action.starts_with("remove-")
                    || action == "purge-queue"
            }
        },
        "gcloud" => {
            words.iter().take(5).any(|w| w == "delete")
                || (word(0) == "storage" && word(1) == "rm" && has(args, &["-r", "--recursive"]))
        }
        "gsutil" => (word(0) == "rm" && has(args, &["-r", "-R", "-a"])) || word(0) == "rb",
        "az" => words.iter().take(5).any(|w| w == "delete" || w == "purge"),
        "doctl" | "linode-cli" | "hcloud" | "flyctl" | "fly" | "heroku" => words
            .iter()
            .take(4)
            .any(|w| matches!(w.as_str(), "delete" | "destroy" | "rm" | "apps:destroy")),
        _ => false,
    }
}

fn docker(program: &str, args: &[String], command: &Command) -> bool {
    if !matches!(program, "docker" | "podman" | "docker-compose") {
        return false;
    }
    let words = subcommands(args);
    let word = |at: usize| words.get(at).map(String::as_str).unwrap_or_default();
    let everything = has(args, &["-a", "--all"]) || args.iter().any(|a| a == "-af" || a == "-fa");
    let volumes = has(args, &["--volumes", "-v"]);
    // `docker rm -f $(docker ps -aq)`: what a listing of every container feeds.
    let fed_everything = command.fed_by.iter().any(|f| {
        let argv = shell::feeder(f);
        argv.first().is_some_and(|p| shell::program(p) == program)
            && argv
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('q'))
    });
    match (program, word(0), word(1)) {
        (_, "system", "prune") => everything || volumes,
        (_, "volume", "prune" | "rm") => true,
        (_, "image" | "container" | "network" | "builder", "prune") => everything,
        ("docker-compose", "down", _) | (_, "compose", "down") => volumes,
        (_, "rm" | "rmi", _) | (_, "container" | "image", "rm") => fed_everything,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(line: &str) -> Command {
        sandrail_shell::analyse(line)
            .commands
            .into_iter()
            .last()
            .expect("a command")
    }

    fn reason(line: &str) -> Option<&'static str> {
        let all = [
            Pack::Sql,
            Pack::Kubernetes,
            Pack::Infrastructure,
            Pack::Cloud,
            Pack::Docker,
        ];
        judge(&all, &command(line))
    }

    #[test]
    fn each_pack_refuses_its_destroyers() {
        for (line, want) in [
            ("psql -c 'DROP TABLE users'", Some(SQL_DESTROY)),
            ("mysql -u root -e 'truncate orders'", Some(SQL_DESTROY)),
            ("sqlite3 app.db 'DELETE FROM users'", Some(SQL_DESTROY)),
            (
                "echo 'DROP SCHEMA public CASCADE' | psql",
                Some(SQL_DESTROY),
            ),
            ("sqlite3 app.db \"DELETE FROM s WHERE x < 1\"", None),
            ("psql -c 'SELECT 1'", None),
            ("kubectl delete namespace prod", Some(KUBERNETES_DELETE)),
            ("kubectl delete pods --all -n prod", Some(KUBERNETES_DELETE)),
            ("kubectl delete pod web-1", None),
            ("kubectl delete ns x --dry-run=client", None),
            (
                "terraform destroy -auto-approve",
                Some(INFRASTRUCTURE_DESTROY),
            ),
            ("terraform apply -destroy", Some(INFRASTRUCTURE_DESTROY)),
            ("pulumi destroy --yes", Some(INFRASTRUCTURE_DESTROY)),
            ("terraform plan -destroy", None),
            ("aws s3 rm s3://b --recursive", Some(CLOUD_DELETE)),
            (
                "aws ec2 terminate-instances --instance-ids i-1",
                Some(CLOUD_DELETE),
            ),
            ("gcloud projects delete p", Some(CLOUD_DELETE)),
            ("az group delete -n rg --yes", Some(CLOUD_DELETE)),
            ("aws s3 rm s3://b/one.txt", None),
            ("aws s3 ls", None),
            ("docker system prune -a --volumes", Some(DOCKER_PRUNE)),
            ("docker rm -f $(docker ps -aq)", Some(DOCKER_PRUNE)),
            ("docker compose down -v", Some(DOCKER_PRUNE)),
            ("docker rm -f web", None),
            ("docker image prune -f", None),
            ("docker compose down", None),
        ] {
            assert_eq!(reason(line), want, "{line}");
        }
    }

    #[test]
    fn no_pack_no_refusal() {
        assert_eq!(judge(&[], &command("terraform destroy")), None);
    }
}
