#!/usr/bin/env python3
"""An example reviewer for runner's `command` reviewer kind; replace it with your own.

runner starts it as `example.py BASE HEAD` (the manifest's `args`) in a checkout of the commit
under review, with a cleared environment (PATH, the locale, an empty HOME), and reads what it
prints on stdout:

    {"findings": [{"file": "src/app.py", "line": 12, "severity": "warning",
                   "category": "correctness", "confidence": 0.8,
                   "message": "What is wrong, in one sentence.",
                   "suggestion": "How to fix it (optional)."}],
     "usage": {"prompt_tokens": 0, "completion_tokens": 0}}

- file: the path in the repository; line: 1-based, in the new version (0: the whole file).
- severity: error | warning | info | nitpick.
- category: bug | security | correctness | performance | style | maintainability |
  best_practice | testing | documentation | design | accessibility.
- confidence: 0 to 1. `suggestion`, `usage` (tokens, when a model was called) and `id` (64 hex
  digits; runner computes one from file, line and message when absent) are optional.
- One `{"type": "finding", "data": {...}}` object per line (NDJSON) is read as well.

A non-zero exit fails the run (its stderr is shown in the summary); exit code 2 means "the
model server is unreachable" and stops the runs against it.

This one needs no model: it flags work markers and long lines on the lines a commit added.
"""

import json
import re
import subprocess
import sys

MARKER = re.compile(r"\b(TODO|FIXME|XXX)\b")
LONG_LINE = 100


def added_lines(base, head):
    """Yields (path, line number, text) for every line the change from BASE to HEAD added."""
    diff = subprocess.run(
        ["git", "diff", "--no-color", "--no-ext-diff", "--unified=0", base, head],
        capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")
    path, line = None, 0
    for text in diff.splitlines():
        if text.startswith("+++ "):
            path = text[6:] if text.startswith("+++ b/") else None
        elif text.startswith("@@"):
            match = re.match(r"@@ -\S+ \+(\d+)", text)
            line = int(match.group(1)) if match else 0
        elif text.startswith("+") and path is not None:
            yield path, line, text[1:]
            line += 1


def main():
    base, head = sys.argv[1], sys.argv[2]
    findings = []
    for path, line, text in added_lines(base, head):
        if MARKER.search(text):
            findings.append({"file": path, "line": line, "severity": "info", "category": "maintainability",
                             "confidence": 0.9, "message": "A work marker was added: finish the work or track it in an issue."})
        if len(text) > LONG_LINE:
            findings.append({"file": path, "line": line, "severity": "nitpick", "category": "style",
                             "confidence": 0.6, "message": f"This line is {len(text)} characters long; the limit is {LONG_LINE}."})
    json.dump({"findings": findings}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
