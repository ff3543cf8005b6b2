#!/usr/bin/env python3
"""Re-computes AACR-Bench's line matching of the bundled outputs independently of runner, and
checks runner's `aacr` analysis against it.

Usage: check.py CORPUS_DIR [RESULTS_JSON]

- CORPUS_DIR: corpus/aacr-bench (gold/positive_samples.json, outputs/<model>/<instance>.json).
- RESULTS_JSON (optional): what `runner exec experiments/aacr-bench.toml` wrote; every model's
  generated comments, line hits and line hits under any judge must equal what this script finds.

The rule, written from the benchmark's description (its leaderboard's `judge.py` is not
copied): a generated comment is `review.comments[i]` with non-empty trimmed `content`, on the
right side; a reference and a generated comment are at the same place when their paths agree
once `\\/` and `\\` are `/` (an empty one passes), their sides agree where both are given, and
their line ranges (a missing end from the start and the reverse, a reversed range swapped)
overlap or lie within one line. References are taken in the gold's order; each scans the
generated comments in order and takes the first one at its place that no earlier reference
took; a judge's "yes" ends the scan (its comment is then taken for the semantic stage). Line
hits with a judge that never says yes, and the fewest and most line hits over every answer a
judge could give (all subsets of the pairs at the same place). The scorers' cut of
`<details>` blocks is left out: no bundled note or comment has one. Standard library only;
prints one line per model and exits 1 on a disagreement.
"""

import itertools
import json
import os
import sys


def line_range(a, b):
    if a is None and b is None:
        return None
    if a is None:
        a = b
    if b is None:
        b = a
    return (min(a, b), max(a, b))


def path_of(p):
    return (p or "").replace("\\/", "/").replace("\\", "/")


def at_same_place(r, g):
    if r["path"] and g["path"] and r["path"] != g["path"]:
        return False
    if r["side"] is not None and g["side"] is not None and r["side"] != g["side"]:
        return False
    if r["lines"] is None or g["lines"] is None:
        return True
    (rf, rt), (gf, gt) = r["lines"], g["lines"]
    if not (rf > gt or rt < gf):
        return True
    return min(abs(rf - gt), abs(rt - gf)) <= 1


def scan(refs, gens, yes):
    line_taken, semantic_taken, hits = set(), set(), 0
    for ri, r in enumerate(refs):
        matched = False
        for gi, g in enumerate(gens):
            if not at_same_place(r, g):
                continue
            if not matched and gi not in line_taken:
                matched = True
                line_taken.add(gi)
            if gi in semantic_taken:
                continue
            if (ri, gi) in yes:
                semantic_taken.add(gi)
                break
        hits += matched
    return hits


def instance_id(pr):
    repo = pr["githubPrUrl"].split("github.com/", 1)[1].split("/pull/", 1)[0]
    return repo.replace("/", "__", 1) + "@" + pr["target_commit"][:7]


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    corpus = sys.argv[1]
    with open(os.path.join(corpus, "gold", "positive_samples.json"), encoding="utf-8") as f:
        gold = json.load(f)
    models = sorted(d for d in os.listdir(os.path.join(corpus, "outputs")) if os.path.isdir(os.path.join(corpus, "outputs", d)))
    found = {}
    for model in models:
        generated = hits = fewest = most = 0
        for pr in gold:
            refs = [{"path": path_of(c.get("path")), "side": c.get("side"), "lines": line_range(c.get("from_line"), c.get("to_line"))} for c in pr["comments"] if c.get("note")]
            path = os.path.join(corpus, "outputs", model, instance_id(pr) + ".json")
            if not os.path.isfile(path):
                continue
            with open(path, encoding="utf-8") as f:
                review = json.load(f).get("review") or {}
            gens = []
            for c in review.get("comments") or []:
                if isinstance(c, dict) and (c.get("content") or "").strip():
                    gens.append({"path": path_of(c.get("path")), "side": "right", "lines": line_range(c.get("start_line"), c.get("end_line"))})
            generated += len(gens)
            pairs = [(ri, gi) for ri, r in enumerate(refs) for gi, g in enumerate(gens) if at_same_place(r, g)]
            never = scan(refs, gens, set())
            hits += never
            answers = [scan(refs, gens, set(s)) for k in range(len(pairs) + 1) for s in itertools.combinations(pairs, k)]
            fewest += min(answers)
            most += max(answers)
        found[model] = {"generated": generated, "line_hits": hits, "fewest": fewest, "most": most}
        print(f"{model}: {generated} generated, {hits} line hits, {fewest}–{most} under any judge")
    if len(sys.argv) == 3:
        with open(sys.argv[2], encoding="utf-8") as f:
            results = json.load(f)
        analysis = next(a for a in results["analyses"] if a["kind"] == "aacr")
        bad = 0
        for cell in analysis["data"]["cells"]:
            mine = found.get(cell["label"])
            theirs = {"generated": cell["generated"], "line_hits": cell["line_hits"], "fewest": cell["line_hits_any_judge"]["fewest"], "most": cell["line_hits_any_judge"]["most"]}
            if mine != theirs:
                bad += 1
                print(f"DIFFERS {cell['label']}: runner {theirs}, this script {mine}")
        if bad:
            sys.exit(1)
        print("runner's figures agree")


if __name__ == "__main__":
    main()
