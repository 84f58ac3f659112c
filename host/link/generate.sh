#!/usr/bin/env bash
# Regenerates host/link/hot-symbols.txt: the functions a `sandrail hook` runs,
# hottest first, which the release build links next to one another (see
# host/build.rs). Needs Linux `perf`. Run it after a dependency or toolchain
# update; a stale list is harmless (names it no longer finds are skipped) but
# gains less.
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build --release -p sandrail --bin sandrail
bin="$PWD/target/release/sandrail"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project"
export SANDRAIL_STATE_DIR="$work/state" SANDRAIL_CACHE_DIR="$work/cache" HOME="$work"
# A project as an agent works in: a git repository of a few files, which the
# hook checkpoints before each call that can change it.
mkdir -p "$work/project/src"
for n in 1 2 3 4 5 6 7 8; do echo "pub fn f$n() {}" >"$work/project/src/m$n.rs"; done
printf 'target/\n' >"$work/project/.gitignore"
git -C "$work/project" init -q
git -C "$work/project" add -A
git -C "$work/project" -c user.name=sandrail -c user.email=sandrail@localhost commit -q -m project
printf '%s\n' '{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}' >"$work/transcript.jsonl"

# The embedded default's everyday events: a command allowed and one refused, a
# write it counts, an edit, a prompt and a stop.
payload() {
    printf '{"session_id":"order","transcript_path":"%s","cwd":"%s","permission_mode":"default","hook_event_name":"%s"%s}\n' \
        "$work/transcript.jsonl" "$work/project" "$1" "$2"
}
payload PreToolUse ',"tool_name":"Bash","tool_input":{"command":"npm test -- --watch=false","description":"Run the tests"},"tool_use_id":"t1"' >"$work/bash.json"
payload PreToolUse ',"tool_name":"Bash","tool_input":{"command":"git push --force origin main"},"tool_use_id":"t2"' >"$work/push.json"
payload PreToolUse ",\"tool_name\":\"Write\",\"tool_input\":{\"file_path\":\"$work/project/src/lib.rs\",\"content\":\"pub fn answer() -> u32 { 42 }\\n\"},\"tool_use_id\":\"t3\"" >"$work/write.json"
payload PreToolUse ",\"tool_name\":\"Edit\",\"tool_input\":{\"file_path\":\"$work/project/src/lib.rs\",\"old_string\":\"42\",\"new_string\":\"43\"},\"tool_use_id\":\"t4\"" >"$work/edit.json"
payload UserPromptSubmit ',"prompt":"Run the tests"' >"$work/prompt.json"
payload Stop ',"stop_hook_active":false' >"$work/stop.json"

events=(bash push write edit prompt stop)
for event in "${events[@]}"; do
    # Fills the cache, and stops here on a payload the hook cannot read.
    if "$bin" hook <"$work/$event.json" 2>&1 >/dev/null | grep -F 'unjudged'; then
        exit 1
    fi
done
runs="${HOT_SYMBOL_RUNS:-400}"
perf record -q -o "$work/perf.data" -F 49999 -e cpu-clock:u -- bash -c "
    for i in \$(seq $runs); do
        for event in ${events[*]}; do \"$bin\" hook <\"$work/\$event.json\" >/dev/null 2>&1 || true; done
    done"
perf report -i "$work/perf.data" --comm sandrail --dso sandrail --no-demangle \
    --sort sym --stdio -g none 2>/dev/null |
    awk '$2 == "[.]" { print $3 }' >host/link/hot-symbols.txt
echo "host/link/hot-symbols.txt: $(wc -l <host/link/hot-symbols.txt) functions"
