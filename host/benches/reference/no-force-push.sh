#!/usr/bin/env bash
# The reference script hook the benchmark compares sandrail with: the same rule
# as no-destructive-git's force push, written the way hook scripts usually are
# (dotforge's style: bash, jq for the payload, a regex for the rule). It reads
# a Claude Code PreToolUse payload on stdin and refuses a force push.
set -euo pipefail

payload=$(cat)
tool=$(jq -r '.tool_name // empty' <<<"$payload")
[[ "$tool" == "Bash" ]] || exit 0
command=$(jq -r '.tool_input.command // empty' <<<"$payload")

if grep -Eq '(^|[;&|[:space:]])git([[:space:]]+-[^[:space:]]+)*[[:space:]]+push([[:space:]].*)?[[:space:]](-f|--force)([[:space:]]|$)' <<<"$command"; then
  jq -n '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny",
          permissionDecisionReason: "Refused: a force push rewrites the remote history."}}'
fi
exit 0
