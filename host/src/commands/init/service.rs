//! The user service `sandrail init --serve` installs: `sandrail serve --user`
//! kept running by systemd's user manager (Linux) or launchd (macOS), and the
//! forwarding hook registered to hand it each event.
//!
//! Nothing here can loosen the guard: the registered `sandrail-hook` judges an
//! event itself, as `sandrail hook` would, whenever the server cannot be
//! reached, so a server that is stopped, never started or removed costs time,
//! never a judgement.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use sandrail::harness::settings::{FORWARDING_HOOK, shell_word};

/// The templates in contrib/, filled in for this user.
const SYSTEMD_UNIT: &str = include_str!("../../../../contrib/sandrail-user.service");
const LAUNCHD_AGENT: &str = include_str!("../../../../contrib/dev.sandrail.serve.plist");

/// The socket's name in the user's state directory.
const SOCKET_NAME: &str = "sandrail-serve.sock";

/// The most bytes a Unix socket's path may have (`sun_path`, less its NUL).
const MAX_SOCKET_PATH: usize = 103;

/// The variables that decide where sandrail keeps its state and cache: the
/// service is given the values `init` sees, so the server and the local hook it
/// stands in for keep the same records. Not `SANDRAIL_CONFIG`: the server finds
/// each event's project config as the local hook does, and one config baked
/// into it for every project would judge them apart.
const PLACE_VARS: [&str; 5] = [
    "SANDRAIL_STATE_DIR",
    "SANDRAIL_CACHE_DIR",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "HOME",
];

/// Where this user's server listens: in the user's state directory, which the
/// OS sandbox keeps from the agent's commands.
pub fn user_socket() -> anyhow::Result<PathBuf> {
    let state = sandrail::locations::state_dir_from_env()
        .context("no state directory for the server's socket: set SANDRAIL_STATE_DIR or HOME")?;
    let socket = state.join(SOCKET_NAME);
    if socket.as_os_str().len() > MAX_SOCKET_PATH {
        bail!(
            "{} is longer than a Unix socket's path may be ({MAX_SOCKET_PATH} bytes); name a shorter one with --socket",
            socket.display()
        );
    }
    Ok(socket)
}

/// The forwarding hook's command line for the user service: what `init
/// --serve` registers, and what `init` without it replaces.
pub fn forwarding_command(forwarder: &Path, socket: &Path) -> String {
    format!(
        "{}={} {}",
        sandrail::forward::SOCKET_VAR,
        shell_word(&socket.to_string_lossy()),
        shell_word(&forwarder.to_string_lossy())
    )
}

/// [`user_socket`], with its directory made (the user's alone) for the server
/// to bind in.
pub fn prepared_user_socket() -> anyhow::Result<PathBuf> {
    let socket = user_socket()?;
    if let Some(dir) = socket.parent() {
        sandrail::locations::create_private_dir(dir)
            .with_context(|| format!("cannot create the state directory {}", dir.display()))?;
    }
    Ok(socket)
}

/// The service for this machine: which manager runs it, the file it is
/// described in, and that file's text.
pub struct Service {
    pub manager: Manager,
    pub file: PathBuf,
    pub text: String,
    pub socket: PathBuf,
    /// The forwarding hook's command line, for the harness's settings.
    pub command: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Systemd,
    Launchd,
}

impl Service {
    /// The service running `sandrail` (this binary), with the forwarding hook
    /// beside it registered.
    pub fn plan(sandrail: &Path) -> anyhow::Result<Service> {
        let forwarder = sandrail.with_file_name(FORWARDING_HOOK);
        if !forwarder.is_file() {
            bail!(
                "{} is not there: --serve registers the forwarding hook beside this binary; install both (`cargo install --path host` does)",
                forwarder.display()
            );
        }
        let socket = user_socket()?;
        // A line break would start a directive of its own in the unit.
        let controlled = |text: &str| text.chars().any(char::is_control);
        if controlled(&sandrail.to_string_lossy()) || controlled(&socket.to_string_lossy()) {
            bail!(
                "the binary's or the socket's path holds a control character: it cannot be written into a service file"
            );
        }
        let environment: Vec<(&str, String)> = PLACE_VARS
            .iter()
            .filter_map(|name| {
                let value = std::env::var_os(name)?;
                let value = value.to_str()?.to_owned();
                (!value.is_empty() && !value.chars().any(char::is_control))
                    .then_some((*name, value))
            })
            .collect();
        let file = sandrail::locations::user_service_file()
            .context("no home directory to install the user service in")?;
        let (manager, text) = if cfg!(target_os = "macos") {
            let environment = environment
                .iter()
                .map(|(name, value)| {
                    format!(
                        "        <key>{name}</key>\n        <string>{}</string>",
                        xml_text(value)
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let text = LAUNCHD_AGENT
                .replace("@SANDRAIL@", &xml_text(&sandrail.to_string_lossy()))
                .replace("@SOCKET@", &xml_text(&socket.to_string_lossy()))
                .replace("@ENVIRONMENT@", &environment);
            (Manager::Launchd, text)
        } else {
            let environment = environment
                .iter()
                .map(|(name, value)| {
                    format!("Environment=\"{name}={}\"", unit_quoted(value, false))
                })
                .collect::<Vec<_>>()
                .join("\n");
            let text = SYSTEMD_UNIT
                .replace(
                    "@SANDRAIL@",
                    &unit_quoted(&sandrail.to_string_lossy(), true),
                )
                .replace("@SOCKET@", &unit_quoted(&socket.to_string_lossy(), true))
                .replace("@ENVIRONMENT@", &environment);
            (Manager::Systemd, text)
        };
        let command = forwarding_command(&forwarder, &socket);
        Ok(Service {
            manager,
            file,
            text,
            socket,
            command,
        })
    }

    /// Writes the service's file and has its manager (re)start it. Says what it
    /// did; an error says what is left to do by hand.
    pub fn install(&self, write: impl Fn(&Path, &str) -> anyhow::Result<()>) -> anyhow::Result<()> {
        write(&self.file, &self.text)?;
        println!(
            "wrote {}: the user service running sandrail serve --user",
            self.file.display()
        );
        let steps: Vec<Vec<String>> = match self.manager {
            Manager::Systemd => vec![
                words(&["systemctl", "--user", "daemon-reload"]),
                words(&["systemctl", "--user", "enable", "sandrail.service"]),
                words(&["systemctl", "--user", "restart", "sandrail.service"]),
            ],
            Manager::Launchd => {
                let domain = format!("gui/{}", current_uid()?);
                let plist = self.file.to_string_lossy().into_owned();
                vec![
                    // An agent loaded before is replaced; one that is not is fine.
                    vec![
                        "launchctl".into(),
                        "bootout".into(),
                        domain.clone(),
                        plist.clone(),
                    ],
                    vec!["launchctl".into(), "bootstrap".into(), domain, plist],
                ]
            }
        };
        for (at, step) in steps.iter().enumerate() {
            let ran = Command::new(&step[0]).args(&step[1..]).status();
            let tolerated = self.manager == Manager::Launchd && at == 0;
            match ran {
                Ok(status) if status.success() || tolerated => {}
                Ok(status) => bail!(
                    "`{}` failed ({status}): the service is not running, so events are judged by the local hook until it is; start it with `{}`",
                    step.join(" "),
                    self.start_by_hand()
                ),
                Err(_) if tolerated => {}
                Err(e) => bail!(
                    "cannot run `{}` ({e}): the service is not running, so events are judged by the local hook until it is; start it with `{}`",
                    step.join(" "),
                    self.start_by_hand()
                ),
            }
        }
        println!(
            "started sandrail serve --user on {}: sandrail-hook hands it each event, and judges the event itself while it is down",
            self.socket.display()
        );
        Ok(())
    }

    fn start_by_hand(&self) -> String {
        match self.manager {
            Manager::Systemd => "systemctl --user enable --now sandrail.service".into(),
            Manager::Launchd => format!("launchctl bootstrap gui/$(id -u) {}", self.file.display()),
        }
    }
}

fn words(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| (*w).to_owned()).collect()
}

/// This process's uid: from `/proc` where there is one, else from `id -u`
/// (macOS).
fn current_uid() -> anyhow::Result<u32> {
    if let Some(uid) = sandrail::locations::current_uid() {
        return Ok(uid);
    }
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("cannot tell which user this is")?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .context("cannot tell which user this is")
}

/// Text inside a double-quoted word of a systemd unit: quotes, backslashes and
/// the specifier sign escaped, and `$` where the line expands variables
/// (`ExecStart=` does, `Environment=` does not).
fn unit_quoted(text: &str, expands: bool) -> String {
    let quoted = text
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('%', "%%");
    if expands {
        quoted.replace('$', "$$")
    } else {
        quoted
    }
}

fn xml_text(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_stays_one_word_in_a_unit_and_a_plist() {
        assert_eq!(
            unit_quoted(r#"/a b/"q"%$x\y"#, true),
            r#"/a b/\"q\"%%$$x\\y"#
        );
        assert_eq!(unit_quoted("/a$b", false), "/a$b");
        assert_eq!(xml_text("/a&b/<c>"), "/a&amp;b/&lt;c&gt;");
    }
}
