//! `sandrail serve`: the resident engine, answering hook payloads over HTTP.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use sandrail::locations;
use sandrail::serve::{self, Listen};

pub fn run(listen: Option<SocketAddr>, socket: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    serve::serve(
        Listen {
            tcp: listen,
            socket,
        },
        locations::cache_dir(),
        |places| {
            // One line on stdout a supervisor (or a test) can wait for.
            println!("sandrail: serving on {}", places.join(" and "));
        },
    )?;
    Ok(ExitCode::SUCCESS)
}
