"""The benchmarks' subject: a two-commit git repository with a fixed identity, and the head of
a manifest that reviews it once per run."""

import os
import subprocess


def make_repo(tmp):
    """Creates `tmp/repo` holding two commits of `a.py`; returns its path."""
    repo = os.path.join(tmp, "repo")
    os.makedirs(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    for i in range(2):
        with open(os.path.join(repo, "a.py"), "w") as f:
            f.write("x = %d\n" % i)
        subprocess.run(["git", "add", "a.py"], cwd=repo, check=True, env=env)
        subprocess.run(["git", "commit", "-qm", str(i)], cwd=repo, check=True, env=env)
    return repo


def manifest_head(name, repo, runs):
    """A manifest's sections up to its reviewer: experiment `name`, `repo`'s last commit as the
    subject, and `runs` values of a `shard` axis, so each run is one cell."""
    shards = ", ".join(str(i) for i in range(1, runs + 1))
    return f"""version = 1
[experiment]
name = "{name}"
[target]
repo = "{repo}"
[matrix]
ref = ["HEAD~1"]
shard = [{shards}]
"""
