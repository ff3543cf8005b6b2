#!/usr/bin/env python3
"""scipy's results for runner's paired statistics (the ignored `scipy_reference` tests).

Reads JSON on stdin:
  {"resamples": B, "level": 0.95, "seed": S,
   "datasets": [{"name": "...", "diffs": [...], "exact": true|false}]}
and prints JSON on stdout, one object per dataset in order:
  {"name": ..., "exact_p": p or null, "mc_p": p, "percentile": [low, high], "bca": [low, high]}

- exact_p: scipy.stats.permutation_test((diffs,), mean, permutation_type='samples',
  n_resamples=inf, alternative='two-sided') -- every sign pattern (only when "exact").
- mc_p: the same test with n_resamples=B drawn from numpy's generator seeded with S.
- percentile / bca: scipy.stats.bootstrap((diffs,), mean, n_resamples=B,
  confidence_level=level, method='percentile' / 'BCa', rng=default_rng(S)).
"""
import json
import sys

import numpy as np
from scipy import stats


def mean(x, axis):
    return np.mean(x, axis=axis)


def main():
    request = json.load(sys.stdin)
    b, level, seed = int(request["resamples"]), float(request["level"]), int(request["seed"])
    out = []
    for ds in request["datasets"]:
        x = np.asarray(ds["diffs"], dtype=np.float64)
        row = {"name": ds["name"], "exact_p": None}
        if ds.get("exact"):
            res = stats.permutation_test((x,), mean, permutation_type="samples", vectorized=True,
                                         n_resamples=np.inf, alternative="two-sided")
            row["exact_p"] = float(res.pvalue)
        res = stats.permutation_test((x,), mean, permutation_type="samples", vectorized=True,
                                     n_resamples=b, alternative="two-sided",
                                     rng=np.random.default_rng(seed))
        row["mc_p"] = float(res.pvalue)
        for method, key in (("percentile", "percentile"), ("BCa", "bca")):
            res = stats.bootstrap((x,), mean, n_resamples=b, confidence_level=level, method=method,
                                  vectorized=True, batch=10_000, rng=np.random.default_rng(seed))
            ci = res.confidence_interval
            row[key] = [float(ci.low), float(ci.high)]
        out.append(row)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
