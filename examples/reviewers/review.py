#!/usr/bin/env python3
"""A `command` reviewer in Python: prints one findings document (docs/reviewer-output.md).

runner starts it as `review.py BASE HEAD` in a checkout of the change. It flags the work
markers (TODO, FIXME, XXX) on the lines the change added, and states the tokens it spent
(none: it calls no model) in `usage`.
"""

import json
import re
import subprocess
import sys

MARKER = re.compile(r"\b(TODO|FIXME|XXX)\b")


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
        marker = MARKER.search(text)
        if marker:
            findings.append({
                "file": path,
                "line": line,
                "severity": "info",
                "category": "maintainability",
                "confidence": 1,
                "message": f"Unfinished work: {marker.group(1)} marker left in the change.",
                "suggestion": "Finish it, or track it in an issue.",
            })
    json.dump({"findings": findings, "usage": {"prompt_tokens": 0, "completion_tokens": 0}}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
