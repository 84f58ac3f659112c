#!/usr/bin/env bash
# Fails when host/link/hot-symbols.txt has gone stale: when fewer than
# MIN_PERCENT of its names are functions of the release `sandrail` binary. A
# function's symbol names its crate, so a change to a sandrail crate's
# dependencies, features or profile renames every function of that crate, and
# the list then silently stops placing them (each hook pays the page faults
# again). The fix is `bash host/link/generate.sh` (it needs Linux `perf`).
set -euo pipefail
cd "$(dirname "$0")/../.."

MIN_PERCENT="${HOT_SYMBOLS_MIN_PERCENT:-90}"
list=host/link/hot-symbols.txt

cargo build --release -p sandrail --bin sandrail
bin=target/release/sandrail
command -v nm >/dev/null || { echo "host/link/check.sh: needs nm (binutils)" >&2; exit 1; }

listed=$(sort -u "$list" | wc -l)
found=$(nm --defined-only "$bin" | awk '{ print $3 }' | sort -u | comm -12 - <(sort -u "$list") | wc -l)
percent=$((found * 100 / listed))
echo "host/link/hot-symbols.txt: $found of $listed names are in the release binary ($percent%)"
if [ "$percent" -lt "$MIN_PERCENT" ]; then
    echo "the hot-function list is stale (under $MIN_PERCENT%): run \`bash host/link/generate.sh\` on Linux with perf, and commit the list" >&2
    exit 1
fi
