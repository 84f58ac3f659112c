//! `sandrail serve`: the resident engine, answering hook payloads over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use sandrail::locations::{self, Places};
use sandrail::managed;
use sandrail::policy;
use sandrail::serve::{self, Listen};

pub fn run(
    listen: Option<SocketAddr>,
    socket: Option<PathBuf>,
    socket_mode: Option<u32>,
    system: bool,
) -> anyhow::Result<ExitCode> {
    let (places, listen) = if system {
        let system = system_places()?;
        let listen = Listen {
            tcp: listen,
            socket: Some(socket.unwrap_or_else(|| system.socket())),
            // The users whose agents it judges reach it; its directory's mode
            // (RuntimeDirectoryMode=) narrows that to a group.
            socket_mode: socket_mode.unwrap_or(0o666),
        };
        (Places::System(system), listen)
    } else {
        let listen = Listen {
            tcp: listen,
            socket,
            socket_mode: socket_mode.unwrap_or(0o600),
        };
        (Places::User, listen)
    };
    serve::serve(listen, places, |places| {
        // One line on stdout a supervisor (or a test) can wait for.
        println!("sandrail: serving on {}", places.join(" and "));
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The managed server's places, checked before it listens: it runs as a user
/// of its own, root's policy is root's alone and can be used, and its state and
/// cache are its own.
fn system_places() -> anyhow::Result<managed::System> {
    let me = locations::current_uid()
        .context("cannot tell which user this process runs as (/proc/self)")?;
    if me == 0 {
        bail!(
            "--system runs as a user of its own, not root: create one (useradd --system sandrail) and run it as that user, as contrib/sandrail.service does"
        );
    }
    let system = managed::System::from_environment();
    let config = system.config();
    if let Some(why) = policy::managed_unfit(&config) {
        bail!(
            "the managed policy {} {why}. Every file of it (the config, its lock and mandate, its components and data) must be root's alone: owned by root, writable by nobody else",
            config.display()
        );
    }
    for (dir, what) in [
        (&system.state, "state directory"),
        (&system.cache, "compiled-code cache"),
    ] {
        locations::create_private_dir(dir)
            .with_context(|| format!("cannot create the {what} {}", dir.display()))?;
    }
    let found = Places::System(system.clone()).for_event(None);
    if found.state.is_none() || found.cache.is_none() {
        bail!(
            "the state directory {} and the cache {} must belong to this user (uid {me})",
            system.state.display(),
            system.cache.display()
        );
    }
    Ok(system)
}

/// An octal mode such as 660 or 0660.
pub fn parse_mode(text: &str) -> Result<u32, String> {
    let mode = u32::from_str_radix(text, 8)
        .map_err(|_| format!("'{text}' is not an octal mode such as 660"))?;
    if mode > 0o777 {
        return Err(format!("'{text}' is more than a file mode (at most 777)"));
    }
    if mode & 0o600 != 0o600 {
        return Err(format!(
            "'{text}' would shut the server out of its own socket: its owner needs 6"
        ));
    }
    Ok(mode)
}
