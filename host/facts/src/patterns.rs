//! The pattern lists the derived facts come from, in one place: which paths hold
//! secrets, which commands and tools move data off the machine, which tools pay,
//! and extra destructive commands. Each list is data, and a config's `[facts]`
//! table extends it.
//!
//! These are pattern lists, not classifiers: they miss what they do not name, which
//! is why a rule can also test the raw `tool.path` and `tool.command`.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;

use super::packs::Pack;
use super::places::DeletionScope;

/// Paths that hold credentials: environment files, private keys, cloud profiles,
/// keyrings. Matched against the absolute path.
pub const SECRET_PATHS: &[&str] = &[
    "**/.env",
    "**/.env.*",
    "**/.envrc",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*.jks",
    "**/*.keystore",
    "**/*.kdbx",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.ssh/**",
    "**/.aws/credentials",
    "**/.aws/config",
    "**/.config/gcloud/**",
    "**/.azure/**",
    "**/.kube/config",
    "**/.docker/config.json",
    "**/.npmrc",
    "**/.pypirc",
    "**/.netrc",
    "**/_netrc",
    "**/.git-credentials",
    "**/.pgpass",
    "**/.my.cnf",
    "**/.vault-token",
    "**/.gnupg/**",
    "**/.password-store/**",
    "**/.local/share/keyrings/**",
    "**/Library/Keychains/**",
    "**/*.keychain",
    "**/*.keychain-db",
    "**/secrets.yml",
    "**/secrets.yaml",
    "**/secrets.json",
    "**/credentials.json",
    "**/service-account*.json",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
];

/// Paths under the secret patterns that hold nothing secret.
pub const NOT_SECRET_PATHS: &[&str] = &[
    "**/.env.example",
    "**/.env.sample",
    "**/.env.template",
    "**/.env.dist",
    "**/*.pub",
    "**/.ssh/known_hosts",
    "**/.ssh/known_hosts.old",
];

/// Programs (and subcommands) that move data off the machine.
pub const EGRESS_COMMANDS: &[&str] = &[
    "curl",
    "wget",
    "scp",
    "sftp",
    "ftp",
    "rsync",
    "ssh",
    "nc",
    "ncat",
    "netcat",
    "socat",
    "telnet",
    "http",
    "https",
    "xh",
    "aria2c",
    "invoke-webrequest",
    "invoke-restmethod",
    "start-bitstransfer",
    "git push",
    "npm publish",
    "cargo publish",
    "docker push",
    "gh gist create",
    "aws s3 cp",
    "aws s3 sync",
    "gsutil cp",
];

/// Tools that move data off the machine.
pub const EGRESS_TOOLS: &[&str] = &["WebFetch", "WebSearch", "web_fetch", "google_web_search"];

/// Words in a tool's name that make it a payment tool (`mcp__stripe__create_payment`,
/// `x402_pay`).
pub const PAYMENT_WORDS: &[&str] = &["pay", "payment", "payments", "checkout", "purchase", "x402"];

/// Programs that download (their output piped into a shell runs unseen code).
pub const DOWNLOADERS: &[&str] = &[
    "curl",
    "wget",
    "fetch",
    "aria2c",
    "http",
    "https",
    "xh",
    "invoke-webrequest",
    "invoke-restmethod",
    "start-bitstransfer",
];

/// Programs that run the code they read on their standard input or in an argument.
pub const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "eval",
    "source",
    ".",
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "nodejs",
    "php",
    "pwsh",
    "powershell",
    "invoke-expression",
];

/// The `[facts]` table of a config: additions to the lists above.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPatterns {
    #[serde(default)]
    pub secret_paths: Vec<String>,
    #[serde(default)]
    pub egress_commands: Vec<String>,
    #[serde(default)]
    pub egress_tools: Vec<String>,
    #[serde(default)]
    pub payment_tools: Vec<String>,
    #[serde(default)]
    pub destructive: Vec<RawDestructive>,
    /// `git push --force-with-lease` (which refuses to overwrite work the
    /// pusher has not seen) is not destructive.
    #[serde(default)]
    pub allow_force_with_lease: bool,
    /// How far a recursive or forced delete may reach besides the project and
    /// the temporary and cache directories.
    #[serde(default)]
    pub deletion_scope: DeletionScope,
    /// Opt-in rule packs for what the default leaves alone (SQL, Kubernetes,
    /// infrastructure, cloud CLIs, Docker).
    #[serde(default)]
    pub destructive_packs: Vec<Pack>,
}

/// A command the config declares destructive: `command = "terraform destroy"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDestructive {
    pub command: String,
    pub reason: String,
}

/// The lists in force. The secret globs are compiled on first use: most events
/// name no path, and compiling them is most of what a list costs. Copies of one
/// config's lists share what was compiled (the server copies a kept policy
/// for each event).
#[derive(Debug, Clone)]
pub struct Patterns {
    secret_globs: Vec<String>,
    secrets: std::sync::Arc<std::sync::OnceLock<(GlobSet, GlobSet)>>,
    egress_commands: Vec<Vec<String>>,
    egress_tools: Vec<String>,
    payment_tools: Vec<String>,
    destructive: Vec<(Vec<String>, String)>,
    allow_force_with_lease: bool,
    deletion_scope: DeletionScope,
    packs: Vec<Pack>,
}

impl Default for Patterns {
    fn default() -> Self {
        Patterns::with(&RawPatterns::default()).expect("the built-in patterns compile")
    }
}

impl Patterns {
    /// The built-in lists extended by a config's `[facts]` table.
    pub fn with(raw: &RawPatterns) -> Result<Patterns, String> {
        // Validated now, so a bad glob is a config error; compiled on first use.
        for pattern in &raw.secret_paths {
            Glob::new(pattern)
                .map_err(|e| format!("facts.secret_paths: '{pattern}' is not a glob: {e}"))?;
        }
        let words = |text: &str| -> Vec<String> {
            text.split_whitespace()
                .map(|w| w.to_ascii_lowercase())
                .collect()
        };
        let mut destructive = Vec::new();
        for entry in &raw.destructive {
            let command = words(&entry.command);
            if command.is_empty() || entry.reason.trim().is_empty() {
                return Err("facts.destructive entries need a command and a reason".into());
            }
            destructive.push((command, entry.reason.trim().to_owned()));
        }
        Ok(Patterns {
            secret_globs: SECRET_PATHS
                .iter()
                .map(|p| (*p).to_owned())
                .chain(raw.secret_paths.iter().cloned())
                .collect(),
            secrets: Default::default(),
            egress_commands: EGRESS_COMMANDS
                .iter()
                .copied()
                .chain(raw.egress_commands.iter().map(String::as_str))
                .map(words)
                .filter(|w| !w.is_empty())
                .collect(),
            egress_tools: EGRESS_TOOLS
                .iter()
                .map(|t| (*t).to_owned())
                .chain(raw.egress_tools.iter().cloned())
                .collect(),
            payment_tools: raw.payment_tools.clone(),
            destructive,
            allow_force_with_lease: raw.allow_force_with_lease,
            deletion_scope: raw.deletion_scope,
            packs: raw.destructive_packs.clone(),
        })
    }

    /// How far a recursive or forced delete may reach.
    pub fn deletion_scope(&self) -> DeletionScope {
        self.deletion_scope
    }

    /// The opt-in rule packs in force.
    pub fn packs(&self) -> &[Pack] {
        &self.packs
    }

    /// Whether the config lets `git push --force-with-lease` pass.
    pub fn allows_force_with_lease(&self) -> bool {
        self.allow_force_with_lease
    }

    /// Whether an absolute path holds credentials.
    pub fn is_secret(&self, absolute_path: &str) -> bool {
        let (secrets, not_secrets) = self.secrets.get_or_init(|| {
            (
                glob_set(self.secret_globs.iter().map(String::as_str)),
                glob_set(NOT_SECRET_PATHS.iter().copied()),
            )
        });
        secrets.is_match(absolute_path) && !not_secrets.is_match(absolute_path)
    }

    /// Whether a command (unwrapped argv) moves data off the machine.
    pub fn is_egress_command(&self, argv: &[String]) -> bool {
        let Some(program) = argv.first().map(|p| sandrail_shell::program(p)) else {
            return false;
        };
        self.egress_commands.iter().any(|pattern| {
            pattern[0].eq_ignore_ascii_case(program) && command_matches(pattern, argv)
        })
    }

    pub fn is_egress_tool(&self, tool: &str) -> bool {
        self.egress_tools
            .iter()
            .any(|t| t.eq_ignore_ascii_case(tool))
    }

    /// Whether a tool (by name and normalised name) makes payments.
    pub fn is_payment_tool(&self, tool: &str, normalised: &str) -> bool {
        self.payment_tools.iter().any(|t| t == tool)
            || normalised
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|word| PAYMENT_WORDS.contains(&word))
    }

    /// The reason a config gives for a command it declares destructive.
    pub fn destructive_reason(&self, argv: &[String]) -> Option<&str> {
        if self.destructive.is_empty() {
            return None;
        }
        self.destructive
            .iter()
            .find(|(pattern, _)| command_matches(pattern, argv))
            .map(|(_, reason)| reason.as_str())
    }
}

/// A set of globs already validated (an invalid one is left out).
fn glob_set<'a>(patterns: impl Iterator<Item = &'a str>) -> GlobSet {
    let mut set = GlobSetBuilder::new();
    for glob in patterns.filter_map(|p| Glob::new(p).ok()) {
        set.add(glob);
    }
    set.build().unwrap_or_else(|_| GlobSet::empty())
}

/// Whether argv runs `pattern`: its program is the pattern's first word, and the
/// rest follow one another among its first operands, options skipped (`git push`
/// matches `git -C repo push -f`: an option's value may come first).
pub fn command_matches(pattern: &[String], argv: &[String]) -> bool {
    let (Some(first), Some(program)) = (pattern.first(), argv.first()) else {
        return false;
    };
    if !sandrail_shell::program(program).eq_ignore_ascii_case(first) {
        return false;
    }
    let rest = &pattern[1..];
    if rest.is_empty() {
        return true;
    }
    let operands: Vec<&String> = argv[1..]
        .iter()
        .filter(|w| !w.starts_with('-'))
        .take(rest.len() + 2)
        .collect();
    operands.windows(rest.len()).any(|window| {
        window
            .iter()
            .zip(rest)
            .all(|(operand, word)| operand.eq_ignore_ascii_case(word))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn secrets_match_by_path_with_exceptions() {
        let p = Patterns::default();
        assert!(p.is_secret("/work/app/.env"));
        assert!(p.is_secret("/work/app/.env.production"));
        assert!(p.is_secret("/home/u/.ssh/id_ed25519"));
        assert!(p.is_secret("/home/u/.aws/credentials"));
        assert!(!p.is_secret("/work/app/.env.example"));
        assert!(!p.is_secret("/home/u/.ssh/id_ed25519.pub"));
        assert!(!p.is_secret("/work/app/src/main.rs"));
    }

    #[test]
    fn config_additions_extend_the_lists() {
        let raw = RawPatterns {
            secret_paths: vec!["**/*.vault".into()],
            egress_commands: vec!["mysync".into()],
            destructive: vec![RawDestructive {
                command: "terraform destroy".into(),
                reason: "infrastructure-destroy".into(),
            }],
            ..RawPatterns::default()
        };
        let p = Patterns::with(&raw).unwrap();
        assert!(p.is_secret("/x/prod.vault"));
        assert!(p.is_egress_command(&argv("mysync a b")));
        assert_eq!(
            p.destructive_reason(&argv("terraform -chdir=x destroy -auto-approve")),
            Some("infrastructure-destroy")
        );
        assert_eq!(p.destructive_reason(&argv("terraform plan")), None);
    }

    #[test]
    fn subcommand_patterns_skip_options() {
        let p = Patterns::default();
        assert!(p.is_egress_command(&argv("git -C repo push origin main")));
        assert!(!p.is_egress_command(&argv("git status")));
        assert!(p.is_payment_tool("mcp__stripe__create_payment", "mcp__stripe__create_payment"));
        assert!(!p.is_payment_tool("mcp__x__display", "mcp__x__display"));
    }
}
