#!/usr/bin/env bash
# Installs what the OS-sandbox test needs (tests/all/os_sandbox.rs): bubblewrap,
# ripgrep, socat and rsync from Debian, and Anthropic's sandbox runtime (`srt`,
# Node.js 20.11 or later) from npm. Without them that test is skipped, saying so.
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
packages="bubblewrap ripgrep socat rsync"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    packages="$packages nodejs npm"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $packages >/dev/null
$sudo npm install -g --no-audit --no-fund @anthropic-ai/sandbox-runtime@0.0.78 >/dev/null
echo "sandbox runtime: $(command -v srt) (node $(node --version))"
