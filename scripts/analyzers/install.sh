#!/usr/bin/env bash
# Install the static analyzers runner runs for smells (CRScore pseudo-references) into
# <repo>/.tools/ (git-ignored), pinned:
#
#   ruff   0.17.5  (PyPI)  -> .tools/venv/bin/ruff
#   jshint 2.13.6  (npm)   -> .tools/node/node_modules/.bin/jshint  (npm ci from the
#                             committed scripts/analyzers/package-lock.json)
#   Rust: the machine's toolchain, clippy-driver when rustup's clippy is installed, else
#         rustc's own warnings (checked here, not installed).
#
#   scripts/analyzers/install.sh          # install / check; idempotent, ~1 s when done
#
# Needs python3 with the venv module, node and npm, and network access to PyPI and npm.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
NODE_DIR="$TOOLS/node"
PY="${PYTHON:-python3}"

# ---- pins -------------------------------------------------------------------
RUFF_VERSION="0.17.5"
JSHINT_VERSION="2.13.6"   # also in package.json / package-lock.json beside this script
# -----------------------------------------------------------------------------

case "${1:-}" in
  "") ;;
  -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
  *) echo "usage: $0" >&2; exit 2 ;;
esac

T0=$(date +%s.%N)
say() { echo "analyzers/install.sh: $*"; }
die() { echo "analyzers/install.sh: ERROR: $*" >&2; exit 1; }

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
mkdir -p "$TOOLS"
# keep everything here out of git even if the repository's .gitignore does not list .tools/
[ -f "$TOOLS/.gitignore" ] || printf '# written by scripts/analyzers/install.sh\n*\n' > "$TOOLS/.gitignore"

# ---- 1. ruff (PyPI) -------------------------------------------------------------
ruff_ok() { [ -x "$VENV/bin/ruff" ] && [ "$("$VENV/bin/ruff" --version 2>/dev/null)" = "ruff $RUFF_VERSION" ]; }
if ruff_ok; then
  say "ruff ok: .tools/venv/bin/ruff (ruff $RUFF_VERSION)"
else
  command -v "$PY" >/dev/null 2>&1 || die "$PY not found; install Python 3 (Debian: apt-get install python3 python3-venv)"
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    "$PY" -c 'import venv, ensurepip' 2>/dev/null \
      || die "the Python venv module (or ensurepip) is missing for $("$PY" --version 2>&1); install it (Debian/Ubuntu: apt-get install python3-venv) and rerun"
    rm -rf "$VENV"
    say "creating venv .tools/venv"
    "$PY" -m venv "$VENV" || die "'$PY -m venv $VENV' failed (Debian/Ubuntu: apt-get install python3-venv)"
  fi
  say "pip install ruff==$RUFF_VERSION"
  "$VENV/bin/python" -m pip install --quiet --only-binary=:all: "ruff==$RUFF_VERSION" \
    || die "pip install ruff==$RUFF_VERSION failed (it needs a prebuilt wheel for this platform and access to PyPI)"
  ruff_ok || die "ruff in .tools/venv does not say 'ruff $RUFF_VERSION' (it says: $("$VENV/bin/ruff" --version 2>&1 || true))"
  say "installed ruff $RUFF_VERSION into .tools/venv"
fi

# ---- 2. jshint (npm, from the committed lock file) ------------------------------------
JSHINT="$NODE_DIR/node_modules/.bin/jshint"
lock_sum() { "$PY" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }
command -v "$PY" >/dev/null 2>&1 || die "$PY not found; install Python 3"
LOCK_SUM="$(lock_sum "$SCRIPT_DIR/package-lock.json")"
jshint_ok() {
  [ -x "$JSHINT" ] && [ -f "$NODE_DIR/.lock.sha256" ] && [ "$(cat "$NODE_DIR/.lock.sha256")" = "$LOCK_SUM" ] \
    && [ "$("$JSHINT" --version 2>&1)" = "jshint v$JSHINT_VERSION" ]
}
if jshint_ok; then
  say "jshint ok: .tools/node/node_modules/.bin/jshint (jshint v$JSHINT_VERSION)"
else
  command -v node >/dev/null 2>&1 || die "node not found; install Node.js (Debian: apt-get install nodejs npm)"
  command -v npm >/dev/null 2>&1 || die "npm not found; install it (Debian: apt-get install npm)"
  mkdir -p "$NODE_DIR"
  cp "$SCRIPT_DIR/package.json" "$SCRIPT_DIR/package-lock.json" "$NODE_DIR/"
  say "npm ci --prefix .tools/node (jshint $JSHINT_VERSION, from scripts/analyzers/package-lock.json)"
  npm ci --prefix "$NODE_DIR" --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null \
    || die "npm ci --prefix $NODE_DIR failed (it needs access to the npm registry)"
  echo "$LOCK_SUM" > "$NODE_DIR/.lock.sha256"
  jshint_ok || die "jshint in .tools/node does not say 'jshint v$JSHINT_VERSION' (it says: $("$JSHINT" --version 2>&1 || true))"
  say "installed jshint $JSHINT_VERSION into .tools/node"
fi

# ---- 3. Rust: the machine's toolchain ------------------------------------------------
command -v rustc >/dev/null 2>&1 || die "rustc not found; install Rust (rustup, or Debian: apt-get install rustc)"
SYSROOT="$(rustc --print sysroot)"
if [ -x "$SYSROOT/bin/clippy-driver" ] && "$SYSROOT/bin/clippy-driver" --version >/dev/null 2>&1; then
  say "rust ok: clippy-driver ($("$SYSROOT/bin/clippy-driver" --version)) from $SYSROOT"
else
  say "rust ok: rustc warnings ($(rustc --version)); clippy-driver not found in $SYSROOT/bin (rustup component add clippy gives it)"
fi

say "done in $("$PY" -c 'import sys,time; print(f"{time.time()-float(sys.argv[1]):.1f}")' "$T0")s"
