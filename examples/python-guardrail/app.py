"""python-guardrail: refuses a file write that holds an AWS access key id, and once the
session has tried `curl_after` of them (config, default 3), refuses curl too.

Build: componentize-py -d ../../wit -w guardrail componentize app -o guardrail.wasm
Test:  sandrail test
"""

import json
import re

import wit_world
from wit_world.imports import state
from wit_world.imports.types import (
    Event,
    Verdict,
    Verdict_Pass,
    Verdict_Violation,
    Violation,
)

AWS_KEY = re.compile(r"AKIA[0-9A-Z]{16}")
# The state key counting the keys seen in this session (a JSON number, as the
# Rust SDK would store it).
KEYS_SEEN = "keys-seen"


def parsed(text, default):
    """JSON text from the host, or `default` when there is none or it does not parse."""
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def keys_seen() -> int:
    # A state call the host refuses raises componentize_py_types.Err: left
    # uncaught it fails the guardrail, which the host reports (as Rust's `?`).
    seen = parsed(state.get(KEYS_SEEN), 0)
    return seen if isinstance(seen, int) else 0


class WitWorld(wit_world.WitWorld):
    def evaluate(self, event: Event) -> Verdict:
        config = parsed(event.config, {}) or {}
        tool_input = parsed(event.tool_input, {})
        if not isinstance(tool_input, dict):
            tool_input = {}
        written = [tool_input.get(field) for field in ("content", "new_string")]
        if any(isinstance(text, str) and AWS_KEY.search(text) for text in written):
            state.set(KEYS_SEEN, json.dumps(keys_seen() + 1))
            return Verdict_Violation(
                Violation(
                    rule="aws-key",
                    message="This write holds an AWS access key id; read the key from the environment instead.",
                )
            )
        command = tool_input.get("command")
        curl = isinstance(command, str) and "curl" in command.split()
        if curl and keys_seen() >= config.get("curl_after", 3):
            return Verdict_Violation(
                Violation(
                    rule="curl-after-keys",
                    message="AWS keys were written in this session, so curl is refused; ask the user to run it.",
                )
            )
        return Verdict_Pass()
