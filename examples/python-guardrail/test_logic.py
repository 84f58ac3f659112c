"""Native tests of logic.py: `pytest`, no component and no host. The state is a
dict standing in for the host's."""

import json

import logic


class DictState:
    """The host's `state` interface over a dict."""

    def __init__(self):
        self.values = {}

    def get(self, key):
        return self.values.get(key)

    def set(self, key, value):
        self.values[key] = value


def write(content):
    return json.dumps({"file_path": "config.py", "content": content})


def bash(command):
    return json.dumps({"command": command})


def test_a_key_in_a_write_is_refused_and_counted():
    state = DictState()
    broken = logic.evaluate(write("KEY = 'AKIAIOSFODNN7EXAMPLE'"), None, state)
    assert broken is not None and broken.rule == "aws-key"
    assert "AWS access key" in broken.message
    assert json.loads(state.values[logic.KEYS_SEEN]) == 1


def test_a_key_in_an_edit_is_refused_too():
    state = DictState()
    edit = json.dumps(
        {"file_path": "b.py", "old_string": "x", "new_string": "AKIAI44QH8DHBEXAMPLE"}
    )
    broken = logic.evaluate(edit, None, state)
    assert broken is not None and broken.rule == "aws-key"


def test_curl_is_refused_only_after_enough_keys():
    state = DictState()
    config = json.dumps({"curl_after": 2})
    assert logic.evaluate(bash("curl https://example.com"), config, state) is None
    logic.evaluate(write("AKIAIOSFODNN7EXAMPLE"), config, state)
    assert logic.evaluate(bash("curl https://example.com"), config, state) is None
    logic.evaluate(write("AKIAI44QH8DHBEXAMPLE"), config, state)
    refused = logic.evaluate(bash("curl https://example.com"), config, state)
    assert refused is not None and refused.rule == "curl-after-keys"


def test_plain_writes_and_unreadable_input_pass():
    state = DictState()
    assert logic.evaluate(write("print('hello')"), None, state) is None
    assert logic.evaluate("not json", None, state) is None
    assert logic.evaluate(None, None, state) is None
    assert state.values == {}
