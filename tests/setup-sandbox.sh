#!/usr/bin/env bash
# Installs what the OS-sandbox test needs (tests/all/os_sandbox.rs): bubblewrap,
# ripgrep, socat and rsync from Debian (with Node.js and npm when missing), and
# Anthropic's sandbox runtime (`srt`, Node.js 20.11 or later) from npm. Without
# them that test is skipped, saying so. What is already there is not installed
# again; what must be installed as root goes through sudo when not run as root.
set -euo pipefail

SRT_VERSION=0.0.78

# Runs a command as root: directly when root, else through sudo.
as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "setup-sandbox: \`$*\` must run as root and sudo is not installed: run it as root, or install what it names" >&2
        exit 1
    fi
}

missing=""
for package_command in bubblewrap:bwrap ripgrep:rg socat:socat rsync:rsync; do
    command -v "${package_command#*:}" >/dev/null || missing="$missing ${package_command%%:*}"
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    missing="$missing nodejs npm"
fi
if [ -n "$missing" ]; then
    echo "setup-sandbox: installing from Debian:$missing"
    as_root apt-get update -qq
    # shellcheck disable=SC2086 # one word per package
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi

if [ "$(srt --version 2>/dev/null)" != "$SRT_VERSION" ]; then
    echo "setup-sandbox: installing @anthropic-ai/sandbox-runtime@$SRT_VERSION from npm (global)"
    install=(npm install -g --no-audit --no-fund --loglevel=error "@anthropic-ai/sandbox-runtime@$SRT_VERSION")
    # A global prefix the user can write (nvm, a prefix in the home) needs no root.
    if [ -w "$(npm prefix -g)" ]; then "${install[@]}"; else as_root "${install[@]}"; fi
fi

node_version=$(node --version)
if ! printf '%s\n' v20.11.0 "$node_version" | sort -V -C; then
    echo "setup-sandbox: srt needs Node.js 20.11 or later and node is $node_version: the OS-sandbox test will skip" >&2
fi
echo "setup-sandbox: sandbox runtime $(command -v srt) $SRT_VERSION (node $node_version)"
