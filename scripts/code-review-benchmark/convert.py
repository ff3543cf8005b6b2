#!/usr/bin/env python3
"""Converts the offline part of the public code-review benchmark (withmartian/code-review-benchmark:
`golden_comments/*.json`, `candidates.gpt-5.2.json`, `pr_labels.json`, `LICENSE`) into runner's
external-target corpus:

    OUT/changes.json          [{"id", "title", "url"}], one per pull request, sorted by id
    OUT/oracle.json           runner's oracle: one case per pull request, one finding per golden comment
    OUT/tools/<tool>.jsonl    one row per candidate comment: {"subject", "file": null, "line": null, "message"}
    OUT/LICENSE               the benchmark's MIT licence, copied
    OUT/README.md             where the data came from and how it was converted

Usage: convert.py SOURCE_DIR [OUT_DIR]   (OUT_DIR defaults to corpus/code-review-benchmark beside this
repository's scripts/). Standard library only; the output is byte-for-byte deterministic.

Subject ids are `<project>-<PR number>` (`sentry-93824`, `calcom-8087`, `discourse-3`), the project
named by the golden-comment file. Severity: Critical → error + blocking, High → error, Medium →
warning, Low → info; the benchmark's own label is kept as `severityLabel`. A tool with no review of a
pull request (no entry, or an empty list) has no rows for it.
"""

import json
import os
import re
import shutil
import sys
from collections import Counter, OrderedDict

# The benchmark's file stems → readable project names for subject ids.
PROJECTS = {"cal_dot_com": "calcom", "discourse": "discourse", "grafana": "grafana", "keycloak": "keycloak", "sentry": "sentry"}

# The benchmark's severity → runner's oracle severity and blocking flag.
SEVERITY = OrderedDict([("Critical", ("error", True)), ("High", ("error", False)), ("Medium", ("warning", False)), ("Low", ("info", False))])

PR_URL = re.compile(r"^https://github\.com/[^/]+/[^/]+/pull/(\d+)$")


def fail(message):
    sys.stderr.write(f"convert.py: {message}\n")
    sys.exit(1)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"cannot read `{path}`: {e}")


def dump(path, value):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def golden(source):
    """(subject id, project, PR entry) for every pull request of the golden comments, in file order."""
    gdir = os.path.join(source, "golden_comments")
    try:
        names = sorted(n for n in os.listdir(gdir) if n.endswith(".json"))
    except OSError as e:
        fail(f"cannot list `{gdir}`: {e}")
    out = []
    for name in names:
        stem = name[: -len(".json")]
        project = PROJECTS.get(stem)
        if project is None:
            fail(f"unknown project file `{name}`: add it to PROJECTS")
        for pr in load(os.path.join(gdir, name)):
            m = PR_URL.match(pr.get("url", ""))
            if not m:
                fail(f"`{name}`: `{pr.get('url')}` is not a pull request URL")
            out.append((f"{project}-{m.group(1)}", project, pr))
    ids = Counter(i for i, _, _ in out)
    dup = [i for i, n in ids.items() if n > 1]
    if dup:
        fail(f"subject ids collide: {', '.join(sorted(dup))}")
    return sorted(out, key=lambda t: t[0])


def convert(source, out):
    prs = golden(source)
    candidates = load(os.path.join(source, "candidates.gpt-5.2.json"))
    labels = load(os.path.join(source, "pr_labels.json"))
    by_url = {pr["url"]: sid for sid, _, pr in prs}
    unknown = sorted(set(candidates) - set(by_url))
    if unknown:
        fail(f"candidates for pull requests without golden comments: {', '.join(unknown)}")

    changes, findings, cases = [], [], []
    severities = Counter()
    for sid, _, pr in prs:
        change = OrderedDict([("id", sid), ("title", pr["pr_title"]), ("url", pr["url"])])
        changes.append(change)
        ids = []
        for n, c in enumerate(pr["comments"], start=1):
            label = c["severity"]
            if label not in SEVERITY:
                fail(f"{sid}: unknown severity `{label}`")
            severity, blocking = SEVERITY[label]
            severities[label] += 1
            fid = f"{sid}/G{n}"
            ids.append(fid)
            findings.append(
                OrderedDict(
                    [
                        ("id", fid),
                        ("caseId", sid),
                        ("description", c["comment"]),
                        ("severity", severity),
                        ("blocking", blocking),
                        ("severityLabel", label),
                    ]
                )
            )
        source_note = f"; the change as first published: {pr['original_url']}" if pr.get("original_url") else ""
        cases.append(
            OrderedDict(
                [
                    ("id", sid),
                    ("expectedFindingIds", ids),
                    ("rationale", f"The code-review benchmark's golden comments on {pr['url']} ({pr['pr_title']}){source_note}."),
                ]
            )
        )
        label = labels.get(pr["url"], {}).get("derived", {})
        if label and label.get("num_golden_comments") != len(ids):
            fail(f"{sid}: pr_labels.json counts {label.get('num_golden_comments')} golden comments, the golden file {len(ids)}")

    os.makedirs(os.path.join(out, "tools"), exist_ok=True)
    dump(os.path.join(out, "changes.json"), changes)
    dump(os.path.join(out, "oracle.json"), OrderedDict([("version", 1), ("cases", cases), ("findings", findings)]))

    tools = sorted({t for per_pr in candidates.values() for t in per_pr})
    counts = {}
    for tool in tools:
        if not re.fullmatch(r"[a-z0-9_-]+", tool):
            fail(f"tool name `{tool}` is not a safe file name")
        rows, reviewed = [], 0
        for sid, _, pr in prs:
            comments = candidates.get(pr["url"], {}).get(tool) or []
            reviewed += bool(comments)
            for c in comments:
                if not isinstance(c.get("text"), str) or not c["text"].strip():
                    fail(f"{tool} on {sid}: a candidate without text")
                rows.append(OrderedDict([("subject", sid), ("file", None), ("line", None), ("message", c["text"].strip())]))
        with open(os.path.join(out, "tools", f"{tool}.jsonl"), "w", encoding="utf-8", newline="\n") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        counts[tool] = (reviewed, len(rows))

    shutil.copyfile(os.path.join(source, "LICENSE"), os.path.join(out, "LICENSE"))
    write_readme(out, prs, labels, severities, counts, len(findings))
    return len(changes), len(findings), severities, counts


def write_readme(out, prs, labels, severities, counts, total):
    sev = ", ".join(f"{k} {severities[k]}" for k in SEVERITY)
    lines = [
        "# The code-review benchmark, as an external target",
        "",
        "Converted from the offline part of the public code-review benchmark",
        "([withmartian/code-review-benchmark](https://github.com/withmartian/code-review-benchmark), MIT,",
        "`LICENSE` here) by `scripts/code-review-benchmark/convert.py` (standard library only; run",
        "`python3 scripts/code-review-benchmark/convert.py SOURCE_DIR` to regenerate these files byte for",
        "byte from the benchmark's `golden_comments/*.json`, `candidates.gpt-5.2.json` and `pr_labels.json`).",
        "",
        f"- `changes.json`: the {len(prs)} pull requests as runner's external subjects `{{id, title, url}}`",
        "  (no diff: only change-level comparison is possible). The id is `<project>-<PR number>`.",
        f"- `oracle.json`: runner's oracle, one case per pull request and one finding per golden comment",
        f"  ({total}: {sev}), id `<subject>/G<n>` in the benchmark's order. No file or line (the",
        "  benchmark has none), so findings are matched at change level. Severity: Critical → `error`",
        "  + `blocking`, High → `error`, Medium → `warning`, Low → `info`; the benchmark's own label is kept",
        "  as `severityLabel`, and the fixture analysis reports recall in those four levels. No",
        "  ground-truth program (the cases have none).",
        "- `tools/<tool>.jsonl`: each tool's candidate comments (the issues an LLM extracted from the",
        "  tool's review, `candidates.gpt-5.2.json`), one row `{subject, file: null, line: null, message}`",
        "  per candidate. A tool with no review of a pull request has no rows for it; a replay reviewer",
        "  with `missing = \"empty\"` reads that as a review without findings, so its golden comments",
        "  count as missed (the benchmark's own rule).",
        "",
        "| tool | pull requests with candidates | candidates |",
        "|---|---:|---:|",
    ]
    for tool, (reviewed, n) in sorted(counts.items()):
        lines.append(f"| {tool} | {reviewed} | {n} |")
    lines += ["", "| subject | language | context needed | golden comments | url |", "|---|---|---|---:|---|"]
    for sid, _, pr in prs:
        entry = labels.get(pr["url"], {})
        language = entry.get("derived", {}).get("language", "")
        context = entry.get("llm_pr_labels", {}).get("requires_context", "")
        lines.append(f"| `{sid}` | {language} | {context} | {len(pr['comments'])} | {pr['url']} |")
    with open(os.path.join(out, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    if len(argv) not in (2, 3):
        fail("usage: convert.py SOURCE_DIR [OUT_DIR]")
    here = os.path.dirname(os.path.abspath(__file__))
    out = argv[2] if len(argv) == 3 else os.path.join(here, "..", "..", "corpus", "code-review-benchmark")
    n, total, severities, counts = convert(argv[1], os.path.normpath(out))
    sev = ", ".join(f"{k} {severities[k]}" for k in SEVERITY)
    sys.stdout.write(f"{n} subjects, {total} oracle findings ({sev}), {len(counts)} tools\n")


if __name__ == "__main__":
    main(sys.argv)
