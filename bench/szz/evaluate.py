#!/usr/bin/env python3
"""Precision and recall of `runner oracle mine` on developer-confirmed bug-inducing commits.

The data set is the developer-informed oracle of Rosa et al., "Evaluating SZZ Implementations
Through a Developer-informed Oracle" (ICSE 2021), replication package
github.com/grosa1/icse2021-szz-replication-package: `json-input-raw/bugfix_commits_all.json`
(1,115 fix commits, each with the commits its developers said introduced the bug) and
`json-output-raw/json-output.zip` (what each published SZZ variant found for each of them).
Standard library only.

    python3 bench/szz/evaluate.py check   --package PKG
    python3 bench/szz/evaluate.py mine    --package PKG --mirrors DIR --out OUT [--full-range --listed-only] [--runner BIN]
    python3 bench/szz/evaluate.py table   --package PKG --out OUT [--markdown FILE] [--json FILE]
    python3 bench/szz/evaluate.py compare --out OUT --out OTHER

PKG is the replication package, a checkout or a bare git directory (read at HEAD). DIR holds
one git directory per repository of the subset below, as `<owner>+<name>/repo` (bare, or with a
`.git` inside) or `<owner>/<name>` (a clone). OUT receives runner's records, one per instance
and run, and the scratch repositories of the blame-only run.

`mine` runs runner three times per instance, `--fixes` listing the fix, a fresh `--memo-dir` each time:
  - as shipped: on the repository itself. By default on the fix alone (`--range FIX^..FIX`);
    with `--full-range` over runner's default range, HEAD (the fix itself when HEAD does not
    reach it), one run per repository and range listing all its fixes; `--listed-only` then
    gives runner a fix word no message holds, so that few commits besides the listed fixes
    are mined (issue-closing messages, reverts and messages naming what they repair still
    are; how a listed fix is mined does not depend on the fix words);
  - blame only: on a scratch repository sharing the mirror's objects, where the fix is
    re-committed with the same tree, parent, author, committer and dates but a message that
    names nothing, so what runner reports comes from blame and its filters alone
    (`--range NEW^..NEW`), and again with `--candidates all`. The oracle was built from fix messages that name the inducing
    commit, which runner's explicit-reference signal reads: as shipped, the oracle's own
    evidence is scored.
`table` scores both runs and every published variant on exactly the same instances, counting
as the package's `scripts/overlap.py` does (see `score`). `check` recomputes the published
figures on all 1,115 instances and compares them with `results/results.zip`. `compare` says
whether two OUT folders (fix-alone and whole-history runs, say) hold the same result per fix.
"""

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile

# The subset: repositories of the data set whose history could be brought here, chosen for
# size (snapshots under 500 MiB) and to mix languages. Every instance of each is used.
REPOS = [
    "DistAlgo/distalgo",
    "Katello/katello",
    "OpenSIPS/opensips",
    "PmagPy/PmagPy",
    "Runalyze/Runalyze",
    "Zarel/Pokemon-Showdown",
    "analogdevicesinc/libiio",
    "avocado-framework/avocado",
    "dials/dials",
    "ejaku/grgen",
    "gaborpapp/AIam",
    "gpac/gpac",
    "hansec/fortran-language-server",
    "haproxy/haproxy",
    "icsharpcode/ILSpy",
    "icsharpcode/SharpDevelop",
    "magnumripper/JohnTheRipper",
    "mendix/m2ee-tools",
    "openmicroscopy/bioformats",
    "pimcore/pimcore",
    "smrealms/smr",
    "sqlitebrowser/sqlitebrowser",
    "sqlmapproject/sqlmap",
    "structr/structr",
    "syntheticpp/lyx",
    "thinkaurelius/titan",
    "wikimedia/parsoid",
]

# Repositories tried and left out, with why.
EXCLUDED = {
    "UniTime/unitime": "snapshot of 1.4 GB, over the 500 MiB that could be brought here",
}

# The published variants, as overlap.py names them and their files.
VARIANTS = [
    ("B-SZZ", "bic_b_bugfix_commits_all.json"),
    ("AG-SZZ", "bic_ag_bugfix_commits_all.json"),
    ("L-SZZ", "bic_l_bugfix_commits_all.json"),
    ("R-SZZ", "bic_r_bugfix_commits_all.json"),
    ("MA-SZZ", "bic_ma_bugfix_commits_all.json"),
    ("RA-SZZ*", "bic_ra_bugfix_commits_all.json"),
    ("SZZ@PYD", "bic_pd_bugfix_commits_all.json"),
    ("SZZ@UNL", "bic_unleashed_bugfix_commits_all.json"),
    ("SZZ@OPN", "bic_open_bugfix_commits_all.json"),
]
# Java-only tools: overlap.py scores them on the instances whose fix touches Java.
JAVA_ONLY = {"RA-SZZ*", "SZZ@OPN"}

# The message the blame-only run's re-committed fix carries: no fix word, hash or number.
WITHHELD = "Listed fix commit, message withheld for a blame-only evaluation\n"

RUNS = ("asshipped", "blameonly", "blameonly-all")
# What each run is called in the table, and the options it adds.
RUN_NAMES = {"asshipped": "runner, as shipped", "blameonly": "runner, blame only", "blameonly-all": "runner, blame only, --candidates all"}
RUN_OPTIONS = {"asshipped": [], "blameonly": [], "blameonly-all": ["--candidates", "all"]}


# ---------------------------------------------------------------------------------------------
# The package


def git(gitdir, *args, env=None, check=True):
    done = subprocess.run(["git", "--git-dir", gitdir, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {gitdir}: {done.stderr.decode(errors='replace').strip()}")
    return done


def read_package(pkg, path):
    """A file of the replication package: from a checkout, or from a bare git directory's HEAD."""
    plain = os.path.join(pkg, path)
    if os.path.isfile(plain):
        with open(plain, "rb") as f:
            return f.read()
    for gitdir in (pkg, os.path.join(pkg, ".git")):
        if os.path.isfile(os.path.join(gitdir, "HEAD")):
            return git(gitdir, "show", f"HEAD:{path}").stdout
    raise SystemExit(f"{path} is not in the package at {pkg}")


def load_instances(pkg):
    return json.loads(read_package(pkg, "json-input-raw/bugfix_commits_all.json"))


def load_variants(pkg):
    """Variant name → instance id → the inducing commits it found."""
    archive = zipfile.ZipFile(io.BytesIO(read_package(pkg, "json-output-raw/json-output.zip")))
    names = {os.path.basename(n): n for n in archive.namelist()}
    out = {}
    for variant, file in VARIANTS:
        rows = json.loads(archive.read(names[file]))
        out[variant] = {row["id"]: list(row.get("inducing_commit_hash") or []) for row in rows}
    return out


def subset(instances):
    return [x for x in instances if x["repo_name"] in REPOS]


# ---------------------------------------------------------------------------------------------
# Scoring, as the package's scripts/overlap.py does


def score(instances, predicted, java_only=False):
    """Per-commit counting over instances (overlap.py's `get_correct` and its recall and
    precision): every (repository, fix, inducing commit) the oracle lists is one actual
    commit; every (repository, fix, commit) a method reports is one identified commit; an
    identified commit is correct when the oracle lists it for that fix. Recall = correct /
    actual, precision = correct / identified (0 when nothing is identified), F1 their harmonic
    mean. A Java-only tool is scored on the instances whose fix touches Java."""
    actual, identified, n = set(), set(), 0
    for x in instances:
        if java_only and "java" not in x["language"]:
            continue
        n += 1
        key = (x["repo_name"], x["fix_commit_hash"])
        actual |= {key + (b,) for b in x["bug_commit_hash"]}
        identified |= {key + (b,) for b in predicted.get(x["id"], [])}
    correct = actual & identified
    recall = len(correct) / len(actual) if actual else 0.0
    precision = len(correct) / len(identified) if identified else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return {
        "instances": n,
        "actual": len(actual),
        "identified": len(identified),
        "correct": len(correct),
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }


def bootstrap(instances, methods, rounds=2000, seed=1):
    """95 % percentile intervals of each method's F1, and of the blame-only run's F1 less each
    other method's, over `rounds` resamples of the instances (with replacement, fixed seed).
    `methods`: name → (predicted, java_only)."""
    rng = random.Random(seed)
    f1s = {name: [] for name in methods}
    for _ in range(rounds):
        sample = [rng.choice(instances) for _ in instances]
        # Resampled instances are distinct draws: key them by draw so duplicates count twice.
        drawn = [dict(x, fix_commit_hash=f"{x['fix_commit_hash']}#{k}", id=(x["id"], k)) for k, x in enumerate(sample)]
        for name, (predicted, java_only) in methods.items():
            pred = {(x["id"], k): predicted.get(x["id"], []) for k, x in enumerate(sample)}
            f1s[name].append(score(drawn, pred, java_only)["f1"])

    def interval(values):
        v = sorted(values)
        return v[int(0.025 * len(v))], v[min(len(v) - 1, int(0.975 * len(v)))]

    return f1s, interval


# ---------------------------------------------------------------------------------------------
# Running runner


def mirror_gitdir(mirrors, repo):
    owner, name = repo.split("/")
    for d in (
        os.path.join(mirrors, f"{owner}+{name}", "repo", ".git"),
        os.path.join(mirrors, f"{owner}+{name}", "repo"),
        os.path.join(mirrors, owner, name, ".git"),
        os.path.join(mirrors, owner, name),
    ):
        if os.path.isfile(os.path.join(d, "HEAD")):
            return os.path.abspath(d)
    return None


def has_commit(gitdir, sha):
    return git(gitdir, "cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0


def is_ancestor(gitdir, a, b):
    return git(gitdir, "merge-base", "--is-ancestor", a, b, check=False).returncode == 0


def scratch_repo(out, repo, mirror):
    """A bare repository borrowing the mirror's objects, its HEAD at the mirror's HEAD."""
    path = os.path.abspath(os.path.join(out, "scratch", repo.replace("/", "+") + ".git"))
    if not os.path.isfile(os.path.join(path, "HEAD")):
        os.makedirs(path, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", path], check=True)
        objects = os.path.join(mirror, "objects")
        with open(os.path.join(path, "objects", "info", "alternates"), "w") as f:
            f.write(objects + "\n")
        head = git(mirror, "rev-parse", "HEAD").stdout.decode().strip()
        git(path, "update-ref", "refs/heads/main", head)
        git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    return path


def recommit_withheld(scratch, fix, instance_id):
    """The fix again, with the same tree, parents, people and dates, and a message naming nothing."""
    fmt = "%T%x00%P%x00%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd"
    fields = git(scratch, "log", "-1", "--date=raw", f"--format={fmt}", fix).stdout.decode().rstrip("\n").split("\x00")
    tree, parents, an, ae, ad, cn, ce, cd = fields
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME=an, GIT_AUTHOR_EMAIL=ae, GIT_AUTHOR_DATE=ad, GIT_COMMITTER_NAME=cn, GIT_COMMITTER_EMAIL=ce, GIT_COMMITTER_DATE=cd
    )
    args = ["commit-tree", tree]
    for p in parents.split():
        args += ["-p", p]
    done = subprocess.run(["git", "--git-dir", scratch, *args], input=WITHHELD.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=True)
    sha = done.stdout.decode().strip()
    git(scratch, "update-ref", f"refs/szz/{instance_id}", sha)
    return sha


# With --listed-only, the fix words runner is given: a word no message holds, so that of the
# range's commits mostly the listed fixes are mined (issue-closing messages, reverts and
# messages naming what they repair still count as fixes). A listed fix is mined the
# same whatever the fix words are; they only decide which other commits are fixes.
NO_FIX_WORD = "no-fix-word-for-szz-evaluation"


def run_runner(runner, gitdir, fixes, rng, fixes_file, workdir, extra=()):
    """`runner oracle mine` over `rng` with `fixes` listed; its JSON record and how it went."""
    with open(fixes_file, "w") as f:
        f.write("# listed fixes\n" + "".join(f"{sha}\n" for sha in fixes))
    # A fresh memo each time: runner's memo is keyed by the fix and options, not by its build.
    with tempfile.TemporaryDirectory(prefix="memo", dir=workdir) as memo:
        cmd = [runner, "oracle", "mine", "--repo", gitdir, "--range", rng, "--fixes", fixes_file, "--json", *extra, "--memo-dir", memo]
        start = time.monotonic()
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workdir)
        seconds = time.monotonic() - start
    record = {"command": cmd[:-2], "rc": done.returncode, "seconds": round(seconds, 3), "stderr": done.stderr.decode(errors="replace")[-4000:]}
    try:
        record["output"] = json.loads(done.stdout)
    except ValueError:
        record["output"] = None
        record["stdout"] = done.stdout.decode(errors="replace")[-4000:]
    return record


def only_fix(output, sha):
    """A run's output cut down to one listed fix: its record, its skip, the run's counts."""
    if not isinstance(output, dict):
        return output
    summary = dict(output.get("summary", {}))
    summary["skipped"] = [s for s in summary.get("skipped", []) if s.get("sha") == sha]
    summary["not_found"] = [s for s in summary.get("not_found", []) if s == sha]
    return {"summary": summary, "fixes": [f for f in output.get("fixes", []) if f.get("sha") == sha]}


def mine(args):
    instances = subset(load_instances(args.package))
    if args.repos:
        instances = [x for x in instances if x["repo_name"] in args.repos.split(",")]
    runner = os.path.abspath(args.runner)
    os.makedirs(args.out, exist_ok=True)
    for run in RUNS:
        os.makedirs(os.path.join(args.out, run), exist_ok=True)
    workdir = os.path.join(os.path.abspath(args.out), "workdir")
    os.makedirs(workdir, exist_ok=True)
    path = lambda run, iid: os.path.join(args.out, run, f"{iid}.json")
    availability_file = os.path.join(args.out, "availability.json")
    availability = json.load(open(availability_file)) if os.path.exists(availability_file) else {}
    # Each run: (name, repository's git dir, range, [(instance, fix as runner sees it)]).
    jobs = []
    for x in instances:
        repo, fix, iid = x["repo_name"], x["fix_commit_hash"], x["id"]
        mirror = mirror_gitdir(args.mirrors, repo)
        if mirror is None or not has_commit(mirror, fix):
            availability[str(iid)] = "no mirror" if mirror is None else "the mirror lacks the fix commit"
            continue
        availability[str(iid)] = "ok"
        reachable = is_ancestor(mirror, fix, "HEAD")
        x["_reachable"] = reachable
        if args.force or not os.path.exists(path("asshipped", iid)):
            # The whole history up to HEAD (runner's default), or up to the fix HEAD does not
            # reach; or the fix alone.
            rng = ("HEAD" if reachable else fix) if args.full_range else f"{fix}^..{fix}"
            group = next((j for j in jobs if j[0] == "asshipped" and j[1] == mirror and j[2] == rng), None)
            if group is None:
                jobs.append(("asshipped", mirror, rng, [(x, fix)]))
            else:
                group[3].append((x, fix))
        for run in ("blameonly", "blameonly-all"):
            if args.force or not os.path.exists(path(run, iid)):
                scratch = scratch_repo(args.out, repo, mirror)
                sha = recommit_withheld(scratch, fix, iid)
                jobs.append((run, scratch, f"{sha}^..{sha}", [(x, sha)]))
    for run, gitdir, rng, members in jobs:
        first = members[0][0]
        fixes_file = path(run, first["id"]) + ".fixes"
        extra = (["--fix-words", NO_FIX_WORD] if args.listed_only else []) + RUN_OPTIONS[run]
        record = run_runner(runner, gitdir, [sha for _, sha in members], rng, fixes_file, workdir, extra)
        if len(members) > 1:
            os.rename(fixes_file, os.path.join(args.out, run, f"{first['repo_name'].replace('/', '+')}.{rng[:12]}.fixes"))
            fixes_file = os.path.join(args.out, run, f"{first['repo_name'].replace('/', '+')}.{rng[:12]}.fixes")
        for x, sha in members:
            one = dict(record, output=only_fix(record["output"], sha))
            one.update(instance=x["id"], repo=x["repo_name"], fix=x["fix_commit_hash"], fix_in_run=sha, fix_reachable_from_head=x["_reachable"],
                       listed_in_run=len(members), fixes_file=os.path.relpath(fixes_file, args.out))
            with open(path(run, x["id"]), "w") as f:
                json.dump(one, f, indent=1)
        ids = ",".join(str(x["id"]) for x, _ in members)
        print(f"{run:9} {first['repo_name']:32} {rng[:24]:24} [{ids}] rc={record['rc']} {record['seconds']:.1f}s", file=sys.stderr)
    with open(availability_file, "w") as f:
        json.dump(availability, f, indent=1)


# ---------------------------------------------------------------------------------------------
# Reading runner's records


def runner_result(record):
    """What runner said of the listed fix: its inducing commits with how each was found, and
    why there are none when there are none."""
    out = record.get("output")
    if record.get("rc") != 0 or not isinstance(out, dict):
        return {"inducing": [], "status": "error", "why": (record.get("stderr") or "").strip()[:300]}
    sha = record["fix_in_run"]
    for fix in out.get("fixes", []):
        if fix.get("sha") == sha:
            inducing = [{"sha": i["sha"], "how": i["how"], "date": i.get("date", ""), "lines": len(i.get("lines", []))} for i in fix.get("inducing", [])]
            if inducing:
                return {"inducing": inducing, "status": "mapped", "why": None}
            return {"inducing": [], "status": "unmapped", "why": fix.get("unmapped")}
    summary = out.get("summary", {})
    for skipped in summary.get("skipped", []):
        if skipped.get("sha") == sha:
            return {"inducing": [], "status": "skipped", "why": skipped.get("reason")}
    if sha in summary.get("not_found", []):
        return {"inducing": [], "status": "not found", "why": "not a commit of the repository"}
    return {"inducing": [], "status": "absent", "why": "the fix is not in runner's record"}


def load_runs(out, instances):
    runs = {run: {} for run in RUNS}
    for run in RUNS:
        for x in instances:
            path = os.path.join(out, run, f"{x['id']}.json")
            if os.path.exists(path):
                with open(path) as f:
                    runs[run][x["id"]] = runner_result(json.load(f))
    return runs


# ---------------------------------------------------------------------------------------------
# The table


def fmt(s):
    return f"| {s['instances']} | {s['actual']} | {s['identified']} | {s['correct']} | {s['precision']:.2f} | {s['recall']:.2f} | {s['f1']:.2f} |"


def most_lines_only(result):
    """Post hoc: of runner's blame candidates, the one that wrote most of the fix's lines."""
    c = result["inducing"]
    if len(c) < 2 or any(p["how"] not in ("single-blame-candidate", "several-blame-candidates") for p in c):
        return [p["sha"] for p in c]
    return [max(c, key=lambda p: (p["lines"], p["date"]))["sha"]]


def table(args):
    everything = load_instances(args.package)
    variants = load_variants(args.package)
    instances = subset(everything)
    runs = load_runs(args.out, instances)
    # The same instances for every method: those both runner runs have a record of.
    scored = [x for x in instances if all(x["id"] in runs[r] for r in RUNS)]
    missing = [x["id"] for x in instances if x not in scored]
    shipped = {i: [p["sha"] for p in r["inducing"]] for i, r in runs["asshipped"].items()}
    blame = {i: [p["sha"] for p in r["inducing"]] for i, r in runs["blameonly"].items()}
    blame_all = {i: [p["sha"] for p in r["inducing"]] for i, r in runs["blameonly-all"].items()}
    methods = {RUN_NAMES["asshipped"]: (shipped, False), RUN_NAMES["blameonly"]: (blame, False), RUN_NAMES["blameonly-all"]: (blame_all, False)}
    notes = {
        RUN_NAMES["asshipped"]: "message signals, then blame (latest candidate)",
        RUN_NAMES["blameonly"]: "the same fixes, messages withheld",
        RUN_NAMES["blameonly-all"]: "messages withheld, every blame candidate kept",
    }
    for variant, _ in VARIANTS:
        methods[variant] = (variants[variant], variant in JAVA_ONLY)
        notes[variant] = "published output" + (" (Java fixes only)" if variant in JAVA_ONLY else "")
    f1s, interval = bootstrap(scored, methods, rounds=args.rounds)
    rows = []
    lines = [
        f"Instances: {len(scored)} of the subset's {len(instances)}, from {len(set(x['repo_name'] for x in scored))} repositories"
        + (f"; no runner record for {missing}" if missing else ""),
        "",
        "| method | what | instances | actual | identified | correct | precision | recall | F1 | F1, 95 % interval |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, (predicted, java_only) in methods.items():
        s = score(scored, predicted, java_only)
        lo, hi = interval(f1s[name])
        rows.append({"method": name, "what": notes[name], **s, "f1_interval": [lo, hi]})
        lines.append(f"| {name} | {notes[name]} " + fmt(s) + f" {lo:.2f}–{hi:.2f} |")

    lines += ["", f"Paired F1 differences, runner blame only less each method ({args.rounds} resamples of the instances, seed 1):", ""]
    lines += ["| method | F1 difference | 95 % interval | resamples where blame only is higher |", "|---|---:|---|---:|"]
    paired = []
    for name, (predicted, java_only) in methods.items():
        if name == "runner, blame only" or java_only:
            continue
        diffs = [a - b for a, b in zip(f1s["runner, blame only"], f1s[name])]
        lo, hi = interval(diffs)
        point = score(scored, blame)["f1"] - score(scored, predicted)["f1"]
        higher = sum(d > 0 for d in diffs) / len(diffs)
        paired.append({"method": name, "difference": point, "interval": [lo, hi], "share_higher": higher})
        lines.append(f"| {name} | {point:+.2f} | {lo:+.2f} to {hi:+.2f} | {higher:.0%} |")

    # How runner found what it found, and what it missed.
    detail = {}
    for run in RUNS:
        by_how, statuses = {}, {}
        for x in scored:
            r = runs[run][x["id"]]
            statuses.setdefault(r["status"], []).append(x["id"])
            for p in r["inducing"]:
                h = by_how.setdefault(p["how"], [0, 0])
                h[0] += p["sha"] in x["bug_commit_hash"]
                h[1] += 1
        detail[run] = {"by_how": by_how, "statuses": statuses}
        lines += ["", f"{RUN_NAMES[run]}: fixes " + ", ".join(f"{k} {len(v)}" for k, v in sorted(statuses.items()))]
        for how, (ok, n) in sorted(by_how.items()):
            lines.append(f"- {how}: {n} identified, {ok} correct")
        for status in ("unmapped", "skipped", "error", "absent", "not found"):
            for iid in statuses.get(status, []):
                lines.append(f"- {status} {iid}: {runs[run][iid]['why']}")
        for x in scored:
            wrong = [p for p in runs[run][x["id"]]["inducing"] if p["sha"] not in x["bug_commit_hash"] and p["how"] in ("explicit-reference", "revert")]
            for p in wrong:
                lines.append(f"- {x['id']}: {p['how']} {p['sha'][:10]} is not the oracle's {', '.join(b[:10] for b in x['bug_commit_hash'])}")

    # Subsets: by how many candidates blame left; and post-hoc choices among runner's candidates.
    sub = []

    def add_sub(label, among, predicted):
        s = score(among, predicted)
        sub.append({"subset": label, **s})
        return f"| {label} " + fmt(s)

    lines += ["", "| subset and method | instances | actual | identified | correct | precision | recall | F1 |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, how in (("a single blame candidate", "single-blame-candidate"), ("several blame candidates", "several-blame-candidates")):
        among = [x for x in scored if runs["blameonly-all"][x["id"]]["inducing"] and all(p["how"] == how for p in runs["blameonly-all"][x["id"]]["inducing"])]
        lines.append(add_sub(f"fixes with {label} (blame only): runner", among, blame))
        lines.append(add_sub(f"fixes with {label} (blame only): runner --candidates all", among, blame_all))
        for variant in ("B-SZZ", "AG-SZZ", "R-SZZ", "MA-SZZ"):
            lines.append(add_sub(f"fixes with {label} (blame only): {variant}", among, variants[variant]))
    undecided = [x for x in scored if not any(p["how"] in ("explicit-reference", "revert") for p in runs["asshipped"][x["id"]]["inducing"])]
    lines.append(add_sub("fixes the message did not decide (as shipped): runner as shipped", undecided, shipped))
    lines.append(add_sub("all: runner blame only --candidates all, post hoc: candidate with most lines only", scored, {i: most_lines_only(r) for i, r in runs["blameonly-all"].items()}))

    # Agreement of the blame-only run with each published variant, instance by instance.
    lines += ["", "Instances where runner blame only reports exactly the published variant's set: " + ", ".join(
        f"{v} {sum(set(blame.get(x['id'], [])) == set(variants[v].get(x['id'], [])) for x in scored)}" for v, _ in VARIANTS if v not in JAVA_ONLY
    ) + f" (of {len(scored)})"]

    composition = {}
    for x in scored:
        c = composition.setdefault(x["repo_name"], {"instances": 0, "languages": set(), "ids": []})
        c["instances"] += 1
        c["languages"] |= set(x["language"])
        c["ids"].append(x["id"])
    lines += ["", "| repository | instances | languages of the fix | instance ids |", "|---|---:|---|---|"]
    for repo, c in sorted(composition.items(), key=lambda kv: kv[0].lower()):
        lines.append(f"| {repo} | {c['instances']} | {', '.join(sorted(c['languages']))} | {', '.join(map(str, sorted(c['ids'])))} |")
    langs = {}
    for x in scored:
        for l in x["language"]:
            langs[l] = langs.get(l, 0) + 1
    lines += ["", "Instances touching each language: " + ", ".join(f"{k} {v}" for k, v in sorted(langs.items(), key=lambda kv: (-kv[1], kv[0])))]
    lines += ["", "Repositories tried and left out: " + ("; ".join(f"{k} ({v})" for k, v in EXCLUDED.items()) or "none")]

    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "instances": [x["id"] for x in scored],
                    "rows": rows,
                    "paired_f1_differences": paired,
                    "subsets": sub,
                    "runner": {run: {str(i): runs[run][i] for i in sorted(runs[run])} for run in RUNS},
                    "detail": detail,
                },
                f,
                indent=1,
            )


def fix_record(record):
    """What a run said of its listed fix, less the SHA it had in that run: inducing commits
    with how, date and lines, dropped candidates, why unmapped or skipped. Not the inducing
    commits' titles: runner takes a title from the range's log when the commit is in the range
    (the message's first line) and from `git log %s` otherwise (its first paragraph)."""
    out = record.get("output") or {}
    for fix in out.get("fixes", []):
        if fix.get("sha") == record["fix_in_run"]:
            inducing = [{k: v for k, v in i.items() if k != "title"} for i in fix.get("inducing", [])]
            return {"inducing": inducing, "dropped": fix.get("dropped"), "unmapped": fix.get("unmapped")}
    skipped = [s.get("reason") for s in out.get("summary", {}).get("skipped", []) if s.get("sha") == record["fix_in_run"]]
    return {"skipped": skipped, "rc": record.get("rc")}


def compare(args):
    """Whether two or more OUT folders' records say the same of each fix they share."""
    first, *others = args.out
    differ = 0
    for run in RUNS:
        names = sorted(n for n in os.listdir(os.path.join(first, run)) if n.endswith(".json"))
        shared = 0
        for name in names:
            paths = [os.path.join(d, run, name) for d in args.out]
            if not all(os.path.exists(p) for p in paths):
                continue
            shared += 1
            records = []
            for p in paths:
                with open(p) as f:
                    records.append(fix_record(json.load(f)))
            if any(r != records[0] for r in records[1:]):
                differ += 1
                print(f"{run} {name[:-5]}: the records differ")
        print(f"{run}: {shared} instances in all of {len(args.out)} folders compared")
    print(f"{differ} differences")
    if differ:
        raise SystemExit(1)


def check(args):
    """The published table, recomputed from the published outputs on all 1,115 instances."""
    instances = load_instances(args.package)
    variants = load_variants(args.package)
    archive = zipfile.ZipFile(io.BytesIO(read_package(args.package, "results/results.zip")))
    name = next(n for n in archive.namelist() if n.endswith("/all-recall-precision.csv") or n == "all-recall-precision.csv")
    published = {}
    for line in archive.read(name).decode().splitlines()[1:]:
        f = line.split(",")
        published[f[0]] = [float(f[1]), float(f[2]), float(f[3]), int(f[4]), int(f[5])]
    bad = 0
    print("| variant | instances | actual | identified | recall | precision | F1 | published: recall, precision, F1, actual, identified |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for variant, _ in VARIANTS:
        s = score(instances, variants[variant], variant in JAVA_ONLY)
        mine_ = [round(s["recall"], 2), round(s["precision"], 2), round(s["f1"], 2), s["actual"], s["identified"]]
        same = all(abs(a - b) < 0.0051 for a, b in zip(mine_, published[variant]))
        bad += not same
        print(f"| {variant} | {s['instances']} | {s['actual']} | {s['identified']} | {s['recall']:.2f} | {s['precision']:.2f} | {s['f1']:.2f} | {published[variant]} {'same' if same else 'DIFFERENT'} |")
    if bad:
        raise SystemExit(f"{bad} variants differ from the published figures")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("mine", help="run runner oracle mine on every instance of the subset")
    m.add_argument("--package", required=True)
    m.add_argument("--mirrors", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--runner", default=os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "target", "debug", "runner"))
    m.add_argument("--full-range", action="store_true", help="mine the whole history (runner's default range) instead of the fix alone")
    m.add_argument("--listed-only", action="store_true", help="no fix words: few fixes besides the listed ones are mined (with --full-range: much faster, same results)")
    m.add_argument("--force", action="store_true", help="run again where a record exists")
    m.add_argument("--repos", help="only these repositories of the subset, comma-separated")
    t = sub.add_parser("table", help="score runner and the published variants on the same instances")
    t.add_argument("--package", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--markdown")
    t.add_argument("--json")
    t.add_argument("--rounds", type=int, default=2000, help="bootstrap resamples")
    k = sub.add_parser("compare", help="whether OUT folders (say, fix-alone and whole-history runs) say the same of each fix")
    k.add_argument("--out", action="append", required=True)
    c = sub.add_parser("check", help="recompute the published figures on all instances")
    c.add_argument("--package", required=True)
    args = p.parse_args()
    {"mine": mine, "table": table, "check": check, "compare": compare}[args.command](args)


if __name__ == "__main__":
    main()
