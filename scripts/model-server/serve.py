#!/usr/bin/env python3
"""Serve one GGUF model with llama.cpp's own HTTP server (via the xllamacpp wheel).

Run it with the venv that install.sh creates:

    .models/venv/bin/python scripts/model-server/serve.py \
        --model .models/SmolLM2-135M-Instruct.Q4_1.gguf --port 8081 --alias smollm2-135m

It listens on 127.0.0.1:PORT (OpenAI-style /v1/chat/completions, /v1/models,
/health, /props, /metrics, ...) until it gets SIGTERM or SIGINT, then shuts the
server down and exits 0.

With --embedding (the default for a model whose .models/MODELS.json entry has
"kind": "embedding") it serves POST /v1/embeddings instead of chat, pooling the
token states as --pooling says (default: the entry's "pooling", else the GGUF's).

--ctx is the context each request (slot) gets; with --parallel N the server
allocates N * ctx tokens of KV cache in total.
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
MODELS_JSON = REPO_ROOT / ".models" / "MODELS.json"


def log(msg: str) -> None:
    print(f"serve.py: {msg}", file=sys.stderr, flush=True)


def manifest_entry(model_path: Path) -> dict:
    """This model's entry in .models/MODELS.json, or {} when the file is not one of ours."""
    try:
        manifest = json.loads(MODELS_JSON.read_text())
        for m in manifest.get("models", []):
            if (REPO_ROOT / m["file"]).resolve() == model_path.resolve():
                return m
    except (OSError, ValueError, KeyError):
        pass
    return {}


def llama_cpp_tag(xllamacpp_version: str) -> str:
    """xllamacpp versions are YYYY.M.N where N is the llama.cpp build number (its
    scripts/generate-release-version.sh); the wheel's own build_info says b0-unknown."""
    parts = xllamacpp_version.split(".")
    return f"b{parts[2]}" if len(parts) == 3 and parts[2].isdigit() else "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="path to a .gguf file")
    ap.add_argument("--port", required=True, type=int)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--ctx", type=int, default=4096, help="context tokens per slot (default 4096)")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads for generation and prompt (default 2)")
    ap.add_argument("--alias", default=None,
                    help="model name reported by /v1/models and in the 'model' field "
                         "(default: the short name from .models/MODELS.json, else the file stem)")
    ap.add_argument("--parallel", type=int, default=1, help="concurrent request slots (default 1)")
    ap.add_argument("--cache-prompt", action="store_true",
                    help="reuse cached prompt prefixes by default (faster repeats, but a cached and an "
                         "uncached evaluation of the same prompt can give different greedy output); "
                         "default off, so the same request gives the same output; a request can still "
                         "send \"cache_prompt\": true")
    ap.add_argument("--chat-template-file", default=None,
                    help="Jinja chat template to use instead of the one in the GGUF (default: the "
                         "chat_template_file from .models/MODELS.json for this model, if any)")
    ap.add_argument("--embedding", action="store_true",
                    help="serve /v1/embeddings (default: on when .models/MODELS.json says kind = embedding)")
    ap.add_argument("--pooling", choices=["mean", "cls", "last", "none"], default=None,
                    help="how token states become one vector, with --embedding (default: the entry's "
                         "\"pooling\" in .models/MODELS.json, else what the GGUF says)")
    args = ap.parse_args()

    model = Path(args.model)
    if not model.is_file():
        log(f"model file not found: {model}")
        return 2
    if args.ctx < 1 or args.threads < 1 or args.parallel < 1 or not (0 < args.port < 65536):
        log("--ctx, --threads, --parallel must be >= 1 and --port in 1..65535")
        return 2
    entry = manifest_entry(model)
    alias = args.alias or entry.get("name") or model.stem
    embedding = args.embedding or entry.get("kind") == "embedding"
    pooling = args.pooling or (entry.get("pooling") if embedding else None)
    if pooling and not embedding:
        log("--pooling needs --embedding")
        return 2
    template_file = args.chat_template_file
    if template_file is None and entry.get("chat_template_file"):
        template_file = str(REPO_ROOT / entry["chat_template_file"])

    import xllamacpp  # imported late so --help works without the venv

    p = xllamacpp.CommonParams()
    p.model.path = str(model)
    p.model_alias = {alias}          # /v1/models id, /props model_alias, response "model" field
    p.hostnames = [args.host]
    p.port = args.port
    p.n_parallel = args.parallel
    p.n_ctx = args.ctx * args.parallel  # llama.cpp splits n_ctx evenly across slots
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.endpoint_metrics = True        # GET /metrics (Prometheus text)
    p.ui = False                     # no bundled web UI
    p.cache_prompt = args.cache_prompt  # default for requests that do not send cache_prompt
    if not args.cache_prompt:
        p.cache_ram_mib = 0          # no host-memory prompt cache (llama.cpp default: 8192 MiB)
    if embedding:
        p.embedding = True           # /v1/embeddings; chat completions are refused
        if pooling:
            p.pooling_type = getattr(xllamacpp.llama_pooling_type, f"LLAMA_POOLING_TYPE_{pooling.upper()}")
        # An input is embedded in one batch: let a batch hold a whole context.
        p.n_batch = p.n_ubatch = args.ctx
    if template_file:
        # Must be Jinja text: with use_jinja on (the default) a built-in name such as
        # "gemma" is taken literally as the template, giving a 3-token prompt.
        p.chat_template = Path(template_file).read_text()

    stop = threading.Event()

    def on_signal(signum, _frame):
        log(f"got {signal.Signals(signum).name}, shutting down")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    log(f"xllamacpp {xllamacpp.__version__} = llama.cpp {llama_cpp_tag(xllamacpp.__version__)} "
        f"(the server's /props build_info and system_fingerprint say "
        f"b{xllamacpp.BUILD_INFO.get('build_number')}-{xllamacpp.BUILD_INFO.get('commit')}); "
        f"loading {model} as '{alias}' ctx={args.ctx}x{args.parallel} threads={args.threads} "
        f"cache_prompt={'on' if args.cache_prompt else 'off'}"
        + (f" embedding pooling={pooling or 'from the GGUF'}" if embedding else "")
        + (f" chat_template={template_file}" if template_file else ""))
    t0 = time.monotonic()
    try:
        server = xllamacpp.Server(p)  # returns once the model is loaded and the port is bound
    except RuntimeError as e:
        log(f"server failed to start ({e}); port {args.port} in use, or a bad model file?")
        return 1
    log(f"listening on {server.listening_address} model='{alias}' pid={os.getpid()} "
        f"ready in {time.monotonic() - t0:.2f}s")

    while not stop.wait(3600):
        pass
    del server  # the destructor stops the HTTP server and the main loop
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
