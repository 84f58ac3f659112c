//! The WASI interfaces a runtime links: only those its components import.
//!
//! Linking all of WASI 0.2 (sockets included) costs each hook process about a
//! third of a millisecond, for interfaces most guardrails never name. A component
//! that imports an interface gets it (sockets stay denied by the sandbox's WASI
//! context); one that imports nothing of WASI gets none of it.

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::cli::{WasiCli, WasiCliView as _};
use wasmtime_wasi::clocks::{WasiClocks, WasiClocksView as _};
use wasmtime_wasi::filesystem::{WasiFilesystem, WasiFilesystemView as _};
use wasmtime_wasi::p2::bindings::{cli, clocks, filesystem, random, sockets};
use wasmtime_wasi::random::WasiRandom;
use wasmtime_wasi::sockets::{WasiSockets, WasiSocketsView as _};

/// The resource table, as wasi:io's bindings reach it.
struct HasIo;

impl HasData for HasIo {
    type Data<'a> = &'a mut ResourceTable;
}

/// Adds to `linker` each WASI 0.2 interface for which `imported` (given the
/// interface's name without its version, `wasi:cli/stdout`) is true, as
/// `wasmtime_wasi::p2::add_to_linker_async` would.
pub fn add_to_linker<T: WasiView>(
    linker: &mut Linker<T>,
    imported: &dyn Fn(&str) -> bool,
) -> wasmtime::Result<()> {
    use wasmtime_wasi_io::bindings::wasi::io;
    let l = linker;
    macro_rules! link {
        ($name:literal, $add:expr) => {
            if imported($name) {
                $add?;
            }
        };
    }
    link!(
        "wasi:io/error",
        io::error::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)
    );
    link!(
        "wasi:io/poll",
        io::poll::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)
    );
    link!(
        "wasi:io/streams",
        io::streams::add_to_linker::<T, HasIo>(l, |t| t.ctx().table)
    );
    link!(
        "wasi:clocks/wall-clock",
        clocks::wall_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)
    );
    link!(
        "wasi:clocks/monotonic-clock",
        clocks::monotonic_clock::add_to_linker::<T, WasiClocks>(l, T::clocks)
    );
    link!(
        "wasi:filesystem/preopens",
        filesystem::preopens::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)
    );
    link!(
        "wasi:filesystem/types",
        filesystem::types::add_to_linker::<T, WasiFilesystem>(l, T::filesystem)
    );
    link!(
        "wasi:random/random",
        random::random::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())
    );
    link!(
        "wasi:random/insecure",
        random::insecure::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())
    );
    link!(
        "wasi:random/insecure-seed",
        random::insecure_seed::add_to_linker::<T, WasiRandom>(l, |t| t.ctx().ctx.random())
    );
    link!(
        "wasi:cli/exit",
        cli::exit::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/environment",
        cli::environment::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/stdin",
        cli::stdin::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/stdout",
        cli::stdout::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/stderr",
        cli::stderr::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/terminal-input",
        cli::terminal_input::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/terminal-output",
        cli::terminal_output::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/terminal-stdin",
        cli::terminal_stdin::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/terminal-stdout",
        cli::terminal_stdout::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:cli/terminal-stderr",
        cli::terminal_stderr::add_to_linker::<T, WasiCli>(l, T::cli)
    );
    link!(
        "wasi:sockets/tcp-create-socket",
        sockets::tcp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)
    );
    link!(
        "wasi:sockets/instance-network",
        sockets::instance_network::add_to_linker::<T, WasiSockets>(l, T::sockets)
    );
    link!(
        "wasi:sockets/network",
        sockets::network::add_to_linker::<T, WasiSockets>(l, &Default::default(), T::sockets)
    );
    link!(
        "wasi:sockets/ip-name-lookup",
        sockets::ip_name_lookup::add_to_linker::<T, WasiSockets>(l, T::sockets)
    );
    link!(
        "wasi:sockets/tcp",
        sockets::tcp::add_to_linker::<T, WasiSockets>(l, T::sockets)
    );
    link!(
        "wasi:sockets/udp",
        sockets::udp::add_to_linker::<T, WasiSockets>(l, T::sockets)
    );
    link!(
        "wasi:sockets/udp-create-socket",
        sockets::udp_create_socket::add_to_linker::<T, WasiSockets>(l, T::sockets)
    );
    Ok(())
}
