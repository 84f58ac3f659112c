#!/usr/bin/env python3
"""Regenerate corpus.jsonl from destructive_command_guard's test corpus at 1a52415.

Usage: extract.py MIRROR [OUT]

MIRROR is a git clone (bare or not) of
https://github.com/Dicklesworthstone/destructive_command_guard holding commit
1a52415 (version 0.4.1, MIT). OUT defaults to corpus.jsonl next to this script;
`-` writes to stdout. Reads the repository only through `git ls-tree` and
`git show`; nothing is checked out or run.

Selection: every active `[[case]]` (commented-out cases are not TOML and so are
not read) of every `tests/corpus/true_positives/*.toml` (each must say
`expected = "deny"`; labelled destructive) and `tests/corpus/false_positives/*.toml`
(each must say `expected = "allow"`; labelled safe), files in path order, cases
in file order. A command already taken is skipped (it keeps its first source).
"""

import json
import pathlib
import subprocess
import sys
import tomllib

COMMIT = "1a52415"
SUITES = {
    "tests/corpus/true_positives/": ("deny", True),
    "tests/corpus/false_positives/": ("allow", False),
}


def git(mirror, *args):
    return subprocess.run(
        ["git", "-C", mirror, *args], check=True, capture_output=True
    ).stdout


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    mirror = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else str(
        pathlib.Path(__file__).with_name("corpus.jsonl")
    )
    paths = git(mirror, "ls-tree", "-r", "--name-only", COMMIT, "tests/corpus/")
    paths = sorted(p for p in paths.decode().splitlines() if p.endswith(".toml"))
    seen, rows = set(), []
    for path in paths:
        suite = next((s for s in SUITES if path.startswith(s)), None)
        if suite is None:
            continue
        expected, destructive = SUITES[suite]
        doc = tomllib.loads(git(mirror, "show", f"{COMMIT}:{path}").decode())
        for case in doc.get("case", []):
            if case["expected"] != expected:
                sys.exit(f"{path}: {case['command']!r} expects {case['expected']!r}")
            if case["command"] in seen:
                print(f"duplicate skipped: {case['command']!r} in {path}", file=sys.stderr)
                continue
            seen.add(case["command"])
            rows.append(
                {
                    "command": case["command"],
                    "destructive": destructive,
                    "source": f"{path}@{COMMIT}",
                }
            )
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if out == "-":
        sys.stdout.write(text)
    else:
        pathlib.Path(out).write_text(text, encoding="utf-8")
    n = sum(r["destructive"] for r in rows)
    print(f"{len(rows)} cases: {n} destructive, {len(rows) - n} safe", file=sys.stderr)


if __name__ == "__main__":
    main()
