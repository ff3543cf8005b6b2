#!/usr/bin/env bash
# Install the reference implementation runner's statistics are compared with (the ignored
# `scipy_reference` tests, tests/helpers/scipy_reference.py) into <repo>/.tools/venv
# (git-ignored; the venv scripts/analyzers/install.sh uses), pinned:
#
#   numpy 2.4.6, scipy 1.17.1  (PyPI wheels)  -> .tools/venv/bin/python
#
#   scripts/stats-reference/install.sh    # install / check; idempotent, ~1 s when done
#
# Needs python3 (3.11 or later) with the venv module, and access to PyPI.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
PY="${PYTHON:-python3}"

# ---- pins -------------------------------------------------------------------
NUMPY_VERSION="2.4.6"
SCIPY_VERSION="1.17.1"
# -----------------------------------------------------------------------------

case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac

say() { echo "stats-reference/install.sh: $*"; }
die() { echo "stats-reference/install.sh: ERROR: $*" >&2; exit 1; }

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
mkdir -p "$TOOLS"
[ -f "$TOOLS/.gitignore" ] || printf '# written by scripts/stats-reference/install.sh\n*\n' > "$TOOLS/.gitignore"

versions() { "$VENV/bin/python" -c 'import numpy, scipy; print(numpy.__version__, scipy.__version__)' 2>/dev/null; }
if [ -x "$VENV/bin/python" ] && [ "$(versions)" = "$NUMPY_VERSION $SCIPY_VERSION" ]; then
  say "ok: .tools/venv (numpy $NUMPY_VERSION, scipy $SCIPY_VERSION)"
  exit 0
fi
command -v "$PY" >/dev/null 2>&1 || die "$PY not found; install Python 3 (Debian: apt-get install python3 python3-venv)"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  "$PY" -c 'import venv, ensurepip' 2>/dev/null \
    || die "the Python venv module (or ensurepip) is missing for $("$PY" --version 2>&1); install it (Debian/Ubuntu: apt-get install python3-venv) and rerun"
  rm -rf "$VENV"
  say "creating venv .tools/venv"
  "$PY" -m venv "$VENV" || die "'$PY -m venv $VENV' failed (Debian/Ubuntu: apt-get install python3-venv)"
fi
say "pip install numpy==$NUMPY_VERSION scipy==$SCIPY_VERSION"
"$VENV/bin/python" -m pip install --quiet --only-binary=:all: "numpy==$NUMPY_VERSION" "scipy==$SCIPY_VERSION" \
  || die "pip install numpy==$NUMPY_VERSION scipy==$SCIPY_VERSION failed (it needs prebuilt wheels for this platform and Python — both need Python 3.11 or later — and access to PyPI)"
[ "$(versions)" = "$NUMPY_VERSION $SCIPY_VERSION" ] || die "the venv's numpy/scipy are not $NUMPY_VERSION/$SCIPY_VERSION (they are: $(versions || true))"
say "installed numpy $NUMPY_VERSION and scipy $SCIPY_VERSION into .tools/venv"
