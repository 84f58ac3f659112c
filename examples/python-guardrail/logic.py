"""python-guardrail's decision, in plain Python: refuses a file write that holds an AWS
access key id, and once the session has tried `curl_after` of them (config,
default 3), refuses curl too.

It imports nothing of the component's bindings, so `pytest` runs it natively;
app.py only adapts the contract's types to it.
"""

import json
import re
from dataclasses import dataclass
from typing import Optional, Protocol

AWS_KEY = re.compile(r"AKIA[0-9A-Z]{16}")
# The state key counting the keys seen in this session (a JSON number, as the
# Rust SDK would store it).
KEYS_SEEN = "keys-seen"


class State(Protocol):
    """The guardrail's key-value state: the host's `state` interface in the
    component, a dict-backed stand-in in tests."""

    def get(self, key: str) -> Optional[str]: ...

    def set(self, key: str, value: str) -> None: ...


@dataclass(frozen=True)
class Violation:
    """A rule broken, and what the agent is told."""

    rule: str
    message: str


def parsed(text, default):
    """JSON text from the host, or `default` when there is none or it does not parse."""
    if text is None:
        return default
    try:
        return json.loads(text)
    except ValueError:
        return default


def keys_seen(state: State) -> int:
    seen = parsed(state.get(KEYS_SEEN), 0)
    return seen if isinstance(seen, int) else 0


def evaluate(
    tool_input: Optional[str], config: Optional[str], state: State
) -> Optional[Violation]:
    """The verdict on one tool call, given its input and the entry's config as
    the host's JSON text: a Violation, or None to let it pass. A state call the
    host refuses raises; left uncaught it fails the guardrail, which the host
    reports (as Rust's `?`)."""
    config = parsed(config, {}) or {}
    tool_input = parsed(tool_input, {})
    if not isinstance(tool_input, dict):
        tool_input = {}
    written = [tool_input.get(field) for field in ("content", "new_string")]
    if any(isinstance(text, str) and AWS_KEY.search(text) for text in written):
        state.set(KEYS_SEEN, json.dumps(keys_seen(state) + 1))
        return Violation(
            rule="aws-key",
            message="This write holds an AWS access key id; read the key from the environment instead.",
        )
    command = tool_input.get("command")
    curl = isinstance(command, str) and "curl" in command.split()
    if curl and keys_seen(state) >= config.get("curl_after", 3):
        return Violation(
            rule="curl-after-keys",
            message="AWS keys were written in this session, so curl is refused; ask the user to run it.",
        )
    return None
