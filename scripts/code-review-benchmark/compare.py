#!/usr/bin/env python3
"""Compares runner's scores of the code-review benchmark (results/code-review-benchmark/results.json)
with the benchmark's own published table, and, given the benchmark's judge verdicts, agreement
per golden comment.

Usage: compare.py RESULTS_JSON CORPUS_DIR [EVALUATIONS_JSON]

- RESULTS_JSON: what `runner exec experiments/code-review-benchmark.toml` wrote.
- CORPUS_DIR: corpus/code-review-benchmark (oracle.json, tools/*.jsonl).
- EVALUATIONS_JSON (optional): the benchmark's `offline/results/openai_gpt-5.2/evaluations.json`
  (its LLM judge's true positives per tool and pull request), for agreement per golden comment.

It also re-computes runner's change-level matching independently (content-word Dice, one to one,
most similar pair first, at the threshold results.json names) and checks that every tool's TP,
FP and FN equal runner's. Standard library only; prints Markdown.
"""

import json
import math
import os
import re
import sys
from collections import defaultdict

# The benchmark's published table (offline/analysis/benchmark_dashboard.json, `overall_metrics`,
# withmartian/code-review-benchmark at 012d682, MIT): precision, recall and F1 in percent per tool,
# for the two judges whose candidates match ours (GPT-5.2, which also extracted the candidates
# runner replays) and the dashboard's default (Claude Opus 4.5).
PUBLISHED = {
    "gpt-5.2": {
        "augment": (37.3, 59.1, 45.8), "bugbot": (38.3, 43.1, 40.5), "propel": (38.9, 37.2, 38.1),
        "greptile": (33.8, 36.5, 35.1), "claude": (30.5, 37.2, 33.6), "copilot": (23.5, 53.3, 32.6),
        "baz": (34.6, 27.0, 30.3), "qodo": (23.4, 42.3, 30.1), "gemini": (24.6, 32.8, 28.1),
        "coderabbit": (21.2, 41.6, 28.1), "kg": (48.9, 16.8, 25.0), "graphite": (66.7, 8.8, 15.5),
    },
    "claude-opus-4.5": {
        "augment": (47.0, 62.8, 53.8), "bugbot": (46.2, 43.8, 44.9), "propel": (46.0, 38.0, 41.6),
        "greptile": (38.4, 38.7, 38.5), "qodo": (30.6, 43.8, 36.0), "copilot": (26.6, 53.3, 35.5),
        "baz": (44.0, 29.2, 35.1), "claude": (33.1, 35.8, 34.4), "gemini": (29.8, 37.2, 33.1),
        "coderabbit": (23.9, 39.4, 29.8), "kg": (46.9, 16.8, 24.7), "graphite": (75.0, 8.8, 15.7),
    },
}

STOP = set(
    "the and for are but not you all any can had her was one our out has have its into this that with from then than "
    "when which will would there their these those such may might could should does did each every also only instead "
    "here where what while being been them they line code change changed".split()
)


def words(text):
    out, cur = [], []
    for ch in text.lower():
        if ch.isalnum():
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def stems(text):
    return {w[:5] for w in words(text) if len(w) >= 3 and w not in STOP}


def dice(a, b):
    sa, sb = stems(a), stems(b)
    if not sa or not sb:
        return 0.0
    return 2 * len(sa & sb) / (len(sa) + len(sb))


def match(golden, reported, found_at, partial_at):
    """{golden index: report index} for found pairs, greedy: found before partial, most similar first."""
    cands = []
    for gi, g in enumerate(golden):
        for ri, r in enumerate(reported):
            s = dice(r, g)
            if s >= partial_at:
                cands.append((0 if s >= found_at else 1, -s, gi, ri))
    cands.sort()
    taken_g, taken_r, found = set(), set(), {}
    for verdict, _, gi, ri in cands:
        if gi in taken_g or ri in taken_r:
            continue
        taken_g.add(gi)
        taken_r.add(ri)
        if verdict == 0:
            found[gi] = ri
    return found


def ranks(values):
    """Average ranks, 1 = largest."""
    order = sorted(range(len(values)), key=lambda i: -values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb))


def kendall_tau_b(a, b):
    conc = disc = ta = tb = 0
    n = len(a)
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ta += 1
            elif db == 0:
                tb += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    return (conc - disc) / math.sqrt((conc + disc + ta) * (conc + disc + tb))


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write("usage: compare.py RESULTS_JSON CORPUS_DIR [EVALUATIONS_JSON]\n")
        return 1
    results = json.load(open(argv[1], encoding="utf-8"))
    corpus = argv[2]
    fixture = next(a for a in results["analyses"] if a["kind"] == "fixture")
    rule = fixture["rule"]
    found_at = float(re.search(r"≥ ([0-9.]+), by text alone", rule).group(1))
    partial_at = float(re.search(r"partial = similarity ≥ ([0-9.]+)", rule).group(1))
    ours = {c["cell"].split("=", 1)[1]: c["overall"] for c in fixture["data"]["cells"]}

    oracle = json.load(open(os.path.join(corpus, "oracle.json"), encoding="utf-8"))
    golden = defaultdict(list)
    for f in oracle["findings"]:
        golden[f["caseId"]].append(f)
    subjects = sorted(golden)

    # Independent re-computation of runner's matching.
    verdicts = {}
    print(f"Re-computed independently (content-word Dice, found ≥ {found_at:.2f}, partial ≥ {partial_at:.2f}):\n")
    mismatch = 0
    for tool in sorted(ours):
        rows = defaultdict(list)
        for line in open(os.path.join(corpus, "tools", f"{tool}.jsonl"), encoding="utf-8"):
            row = json.loads(line)
            rows[row["subject"]].append(row["message"])
        tp = fp = fn = 0
        for sid in subjects:
            g = [f["description"] for f in golden[sid]]
            found = match(g, rows.get(sid, []), found_at, partial_at)
            for gi, f in enumerate(golden[sid]):
                verdicts[(tool, f["id"])] = gi in found
            tp += len(found)
            fp += len(rows.get(sid, [])) - len(found)
            fn += len(g) - len(found)
        same = (tp, fp, fn) == (ours[tool]["tp"], ours[tool]["fp"], ours[tool]["fn"])
        mismatch += not same
        print(f"- {tool}: TP {tp}, FP {fp}, FN {fn} — {'equal to runner' if same else 'DIFFERS from runner: ' + str(ours[tool])}")
    print()

    tools = sorted(ours)
    for judge, table in PUBLISHED.items():
        print(f"### Against the published table ({judge} judge)\n")
        print("| tool | runner F1 | rank | published F1 | rank | runner P / R | published P / R |")
        print("|---|---:|---:|---:|---:|---|---|")
        f_ours = [ours[t]["f1"] for t in tools]
        f_pub = [table[t][2] for t in tools]
        r_ours, r_pub = ranks(f_ours), ranks(f_pub)
        for i in sorted(range(len(tools)), key=lambda i: r_ours[i]):
            t = tools[i]
            o, p = ours[t], table[t]
            print(
                f"| {t} | {o['f1']:.3f} | {r_ours[i]:g} | {p[2] / 100:.3f} | {r_pub[i]:g} | "
                f"{o['precision']:.3f} / {o['recall']:.3f} | {p[0] / 100:.3f} / {p[1] / 100:.3f} |"
            )
        print()
        for name, key in (("F1", 2), ("precision", 0), ("recall", 1)):
            mine = [ours[t]["f1" if key == 2 else ("precision" if key == 0 else "recall")] for t in tools]
            theirs = [table[t][key] for t in tools]
            print(f"- {name}: Spearman ρ = {spearman(mine, theirs):.3f}, Kendall τ-b = {kendall_tau_b(mine, theirs):.3f} (12 tools)")
        print()

    if len(argv) == 4:
        evaluations = json.load(open(argv[3], encoding="utf-8"))
        by_url = {}
        for c in json.load(open(os.path.join(corpus, "changes.json"), encoding="utf-8")):
            by_url[c["url"]] = c["id"]
        judge = {}
        for url, per_tool in evaluations.items():
            sid = by_url.get(url)
            if sid is None:
                continue
            for tool, ev in per_tool.items():
                hits = [tp.get("golden_comment") for tp in ev.get("true_positives", [])]
                for f in golden[sid]:
                    judge[(tool, f["id"])] = f["description"] in hits
        both = [(verdicts[k], judge[k]) for k in verdicts if k in judge]
        a = sum(1 for x, y in both if x and y)
        b = sum(1 for x, y in both if x and not y)
        c = sum(1 for x, y in both if not x and y)
        d = sum(1 for x, y in both if not x and not y)
        n = a + b + c + d
        po = (a + d) / n
        pe = ((a + b) * (a + c) + (c + d) * (b + d)) / (n * n)
        print("### Per golden comment, against the GPT-5.2 judge's verdicts\n")
        print(f"{n} (tool, golden comment) pairs: both found {a}, runner only {b}, judge only {c}, neither {d};")
        print(f"agreement {po:.3f}, Cohen's κ = {(po - pe) / (1 - pe):.3f}; of the judge's matches runner finds {a / (a + c):.3f},")
        print(f"of runner's matches the judge confirms {a / (a + b):.3f}.\n")
        label = {f["id"]: f["severityLabel"] for f in oracle["findings"]}
        print("| severity | golden × tools | runner recall | judge recall |")
        print("|---|---:|---:|---:|")
        for level in ("Critical", "High", "Medium", "Low"):
            keys = [k for k in verdicts if k in judge and label[k[1]] == level]
            mine = sum(verdicts[k] for k in keys) / len(keys)
            theirs = sum(judge[k] for k in keys) / len(keys)
            print(f"| {level} | {len(keys)} | {mine:.3f} | {theirs:.3f} |")
    return 1 if mismatch else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
