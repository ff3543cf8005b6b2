#!/usr/bin/env python3
"""Probe a running model server (start.sh NAME PORT) and record its real wire behaviour.

    python3 scripts/model-server/probe.py --port 8081 [--md out.md]

Every request is sent with curl (so what is recorded is exactly what went over
the wire). Checks:
  health   GET /health -> 200, GET /v1/models -> our alias
  a        response_format json_schema (findings) -> content parses and matches the schema
  b        same seed + temperature 0.7 twice -> identical; other seed -> (reported)
  c        max_tokens 8 -> finish_reason "length"
  d        usage {prompt,completion,total}_tokens and a timings block
  e        stream + stream_options.include_usage -> a final chunk with usage, then [DONE]
  f        unknown "model" name -> (reported: status, model field)
  g        prompt and generation tokens/s from timings
Exit status 1 when a hard check (health, a, c, d, e) fails; b and f are reported only.
Stdlib only; needs curl on PATH.
"""

import argparse
import json
import subprocess
import sys
import time

SEVERITIES = ["error", "warning", "info", "nitpick"]
CATEGORIES = ["bug", "security", "correctness", "performance", "style", "maintainability",
              "best_practice", "testing", "documentation", "design", "accessibility"]
FINDINGS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["findings"],
    "properties": {
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["line", "severity", "category", "message"],
                "properties": {
                    "line": {"type": "integer"},
                    "severity": {"type": "string", "enum": SEVERITIES},
                    "category": {"type": "string", "enum": CATEGORIES},
                    "message": {"type": "string"},
                },
            },
        }
    },
}
HUNK = ("@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n"
        "+def avg(xs):\n+    return sum(xs) / len(xs)")
SYSTEM = ("You are a code reviewer. Report problems in the diff as JSON: "
          '{"findings":[{"line":int,"severity":"error|warning|info|nitpick",'
          '"category":"bug|security|correctness|performance|style|maintainability|best_practice|'
          'testing|documentation|design|accessibility","message":string}]}. '
          'Reply with JSON only; use {"findings":[]} when there is nothing to report.')
USER = f"File calc.py:\n\n{HUNK}\n"


def messages():
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}]


def curl(url, body=None, timeout=600):
    """-> (http status, raw response text, seconds)."""
    cmd = ["curl", "-sS", "-m", str(timeout), "-w", "\n%{http_code}", url]
    data = None
    if body is not None:
        cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
        data = json.dumps(body)
    t = time.monotonic()
    out = subprocess.run(cmd, input=data, capture_output=True, text=True, check=False)
    dt = time.monotonic() - t
    if out.returncode != 0:
        return 0, out.stderr.strip(), dt
    text, _, code = out.stdout.rpartition("\n")
    return int(code), text, dt


def validate(doc, schema, path="$"):
    """Minimal JSON-schema check for the subset used here; -> list of error strings."""
    errs = []
    t = schema.get("type")
    if t == "object":
        if not isinstance(doc, dict):
            return [f"{path}: not an object"]
        for k in schema.get("required", []):
            if k not in doc:
                errs.append(f"{path}: missing {k}")
        props = schema.get("properties", {})
        for k, v in doc.items():
            if k in props:
                errs += validate(v, props[k], f"{path}.{k}")
            elif schema.get("additionalProperties") is False:
                errs.append(f"{path}: extra key {k}")
    elif t == "array":
        if not isinstance(doc, list):
            return [f"{path}: not an array"]
        for i, v in enumerate(doc):
            errs += validate(v, schema["items"], f"{path}[{i}]")
    elif t == "integer":
        if not isinstance(doc, int) or isinstance(doc, bool):
            errs.append(f"{path}: not an integer")
    elif t == "string":
        if not isinstance(doc, str):
            errs.append(f"{path}: not a string")
        elif "enum" in schema and doc not in schema["enum"]:
            errs.append(f"{path}: {doc!r} not in enum")
    return errs


class Probe:
    def __init__(self, port, alias):
        self.base = f"http://127.0.0.1:{port}"
        self.alias = alias
        self.md = []
        self.failures = []
        self.summary = {}

    def record(self, title, method, path, req, status, resp, secs, note=""):
        self.md.append(f"### {title}\n")
        if note:
            self.md.append(note + "\n")
        self.md.append(f"`{method} {path}` -> HTTP {status} in {secs:.2f} s\n")
        if req is not None:  # exactly the bytes curl sent
            self.md.append("Request body (as sent):\n\n```json\n" + json.dumps(req) + "\n```\n")
        lang = "text" if resp.startswith("data:") else "json"
        self.md.append(f"Response body (as received):\n\n```{lang}\n{resp.rstrip()}\n```\n")

    def fail(self, check, why):
        self.failures.append(f"{check}: {why}")

    def chat(self, title, body, note=""):
        status, text, secs = curl(self.base + "/v1/chat/completions", body)
        self.record(title, "POST", "/v1/chat/completions", body, status, text, secs, note)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def run(self):
        # health + models
        status, text, secs = curl(self.base + "/health")
        self.record("GET /health", "GET", "/health", None, status, text, secs)
        if status != 200:
            self.fail("health", f"HTTP {status}")
            return
        status, text, secs = curl(self.base + "/v1/models")
        self.record("GET /v1/models", "GET", "/v1/models", None, status, text, secs)
        models = json.loads(text)
        ids = [m["id"] for m in models.get("data", [])]
        self.alias = self.alias or (ids[0] if ids else None)
        self.summary["models"] = ids
        status, text, _ = curl(self.base + "/props")
        props = json.loads(text) if status == 200 else {}
        self.summary["build_info"] = props.get("build_info")
        self.summary["model_path"] = props.get("model_path")
        meta = (models.get("data") or [{}])[0].get("meta", {})
        self.summary["ftype"] = meta.get("ftype")

        # (a) json_schema
        rf = {"type": "json_schema",
              "json_schema": {"name": "findings", "strict": True, "schema": FINDINGS_SCHEMA}}
        body = {"model": self.alias, "messages": messages(), "response_format": rf,
                "temperature": 0, "seed": 42, "max_tokens": 512}
        status, r = self.chat("(a) response_format json_schema, temperature 0, seed 42", body)
        a = {"status": status}
        if status == 200:
            ch = r["choices"][0]
            a["finish_reason"] = ch["finish_reason"]
            content = a["content"] = ch["message"]["content"]
            try:
                doc = json.loads(content)
                a["json_valid"] = True
                a["schema_errors"] = validate(doc, FINDINGS_SCHEMA)
                a["n_findings"] = len(doc.get("findings", [])) if isinstance(doc, dict) else None
            except ValueError as e:
                a["json_valid"] = False
                a["parse_error"] = str(e)
            if ch["finish_reason"] == "stop" and not (a.get("json_valid") and not a["schema_errors"]):
                self.fail("a", f"finish_reason stop but output invalid: {a}")
        else:
            self.fail("a", f"HTTP {status}")
        status, r = self.chat("(a) the same request again", body)
        a["repeat_identical"] = (status == 200 and r["choices"][0]["message"]["content"] == a.get("content"))
        self.summary["a_json_schema"] = a

        # (a2) bounded schema: maxItems + maxLength so a looping model must stop
        bounded = json.loads(json.dumps(FINDINGS_SCHEMA))
        bounded["properties"]["findings"]["maxItems"] = 3
        bounded["properties"]["findings"]["items"]["properties"]["message"]["maxLength"] = 120
        body2 = dict(body, response_format={"type": "json_schema", "json_schema": {
            "name": "findings", "strict": True, "schema": bounded}})
        status, r = self.chat("(a2) same, schema with maxItems 3 and message maxLength 120", body2)
        a2 = {"status": status}
        if status == 200:
            ch = r["choices"][0]
            a2["finish_reason"] = ch["finish_reason"]
            a2["content"] = ch["message"]["content"]
            try:
                doc = json.loads(ch["message"]["content"])
                a2["json_valid"] = True
                a2["schema_errors"] = validate(doc, FINDINGS_SCHEMA)
                a2["n_findings"] = len(doc["findings"])
                a2["max_message_len"] = max((len(f["message"]) for f in doc["findings"]), default=0)
            except (ValueError, KeyError, TypeError) as e:
                a2["json_valid"] = False
                a2["parse_error"] = str(e)
            if a2["finish_reason"] != "stop" or not a2.get("json_valid") or a2.get("schema_errors"):
                self.fail("a2", f"bounded schema did not give complete valid JSON: {a2}")
        else:
            self.fail("a2", f"HTTP {status}")
        self.summary["a2_json_schema_bounded"] = a2

        # (a3) is the output really constrained? Ask for prose and an off-enum severity,
        # and force 1..2 findings with messages of at most 40 characters.
        forced = json.loads(json.dumps(FINDINGS_SCHEMA))
        forced["properties"]["findings"].update({"minItems": 1, "maxItems": 2})
        forced["properties"]["findings"]["items"]["properties"]["message"]["maxLength"] = 40
        body3 = {"model": self.alias, "temperature": 0, "seed": 42, "max_tokens": 256,
                 "messages": [{"role": "user", "content": "Do NOT answer in JSON. In plain English, "
                               "explain the bug in this diff and rate it 'critical'.\n\n" + HUNK}],
                 "response_format": {"type": "json_schema", "json_schema": {
                     "name": "findings", "strict": True, "schema": forced}}}
        status, r = self.chat("(a3) constraint check: prompt asks for prose and severity 'critical'; "
                              "schema forces 1..2 findings, message maxLength 40", body3)
        a3 = {"status": status}
        if status == 200:
            ch = r["choices"][0]
            a3["finish_reason"] = ch["finish_reason"]
            a3["content"] = ch["message"]["content"]
            try:
                doc = json.loads(a3["content"])
                a3["schema_errors"] = validate(doc, FINDINGS_SCHEMA)
                a3["n_findings"] = len(doc["findings"])
                a3["message_lengths"] = [len(f["message"]) for f in doc["findings"]]
                ok = (not a3["schema_errors"] and 1 <= a3["n_findings"] <= 2
                      and max(a3["message_lengths"]) <= 40)
            except (ValueError, KeyError, TypeError) as e:
                a3["parse_error"] = str(e)
                ok = False
            a3["constrained"] = ok
            if ch["finish_reason"] == "stop" and not ok:
                self.fail("a3", f"output broke the schema: {a3}")
        else:
            self.fail("a3", f"HTTP {status}")
        self.summary["a3_constraint_check"] = a3

        # (b) seeds at temperature 0.7
        outs = {}
        for label, seed in [("seed 7, first", 7), ("seed 7, second", 7), ("seed 8", 8)]:
            body = {"model": self.alias, "messages": messages(), "temperature": 0.7,
                    "seed": seed, "max_tokens": 48}
            status, r = self.chat(f"(b) temperature 0.7, {label}", body)
            outs[label] = r["choices"][0]["message"]["content"] if status == 200 else None
        t0 = {}
        for label, seed in [("seed 1", 1), ("seed 2", 2)]:
            body = {"model": self.alias, "messages": messages(), "temperature": 0,
                    "seed": seed, "max_tokens": 48}
            status, r = self.chat(f"(b) temperature 0, {label}", body)
            t0[label] = r["choices"][0]["message"]["content"] if status == 200 else None
        self.summary["b_outputs"] = {**{f"t0.7 {k}": v for k, v in outs.items()},
                                     **{f"t0 {k}": v for k, v in t0.items()}}
        self.summary["b_same_seed_identical"] = outs["seed 7, first"] == outs["seed 7, second"]
        self.summary["b_other_seed_differs"] = outs["seed 8"] != outs["seed 7, first"]
        self.summary["b_temp0_seed_independent"] = t0["seed 1"] == t0["seed 2"]

        # (c) max_tokens 8 (with the schema: truncated JSON)
        body = {"model": self.alias, "messages": messages(), "response_format": rf,
                "temperature": 0, "seed": 42, "max_tokens": 8}
        status, r = self.chat("(c) max_tokens 8 with json_schema", body)
        c = {"status": status}
        if status == 200:
            ch = r["choices"][0]
            c["finish_reason"] = ch["finish_reason"]
            c["content"] = ch["message"]["content"]
            try:
                json.loads(c["content"])
                c["json_valid"] = True
            except ValueError:
                c["json_valid"] = False
            if ch["finish_reason"] != "length":
                self.fail("c", f"finish_reason {ch['finish_reason']!r}")
            # (d) usage + timings
            u, t = r.get("usage", {}), r.get("timings", {})
            d = {"usage_keys": sorted(u), "timings_keys": sorted(t)}
            if not all(isinstance(u.get(k), int) for k in
                       ("prompt_tokens", "completion_tokens", "total_tokens")):
                self.fail("d", f"usage incomplete: {u}")
            if not t:
                self.fail("d", "no timings block")
            self.summary["d_usage_timings"] = d
        else:
            self.fail("c", f"HTTP {status}")
        self.summary["c_max_tokens_8"] = c

        # (e) streaming with include_usage
        body = {"model": self.alias, "messages": messages(), "temperature": 0, "seed": 42,
                "max_tokens": 6, "stream": True, "stream_options": {"include_usage": True}}
        status, text, secs = curl(self.base + "/v1/chat/completions", body)
        self.record("(e) stream with stream_options.include_usage, max_tokens 6", "POST",
                    "/v1/chat/completions", body, status, text, secs,
                    "Raw server-sent events as received:")
        events = [ln[len("data: "):] for ln in text.splitlines() if ln.startswith("data: ")]
        e = {"status": status, "n_events": len(events), "done_marker": bool(events) and events[-1] == "[DONE]"}
        chunks = [json.loads(x) for x in events if x != "[DONE]"]
        with_usage = [ch for ch in chunks if ch.get("usage")]
        e["usage_chunks"] = len(with_usage)
        if with_usage:
            last = with_usage[-1]
            e["usage_chunk_choices"] = last.get("choices")
            e["usage"] = last["usage"]
            e["timings_in_stream"] = "timings" in last
        e["finish_reasons"] = [c["finish_reason"] for ch in chunks for c in ch.get("choices", [])
                               if c.get("finish_reason")]
        if status != 200 or not with_usage or not e["done_marker"]:
            self.fail("e", f"stream incomplete: {e}")
        self.summary["e_stream"] = e

        # (f) unknown model name
        body = {"model": "no-such-model", "messages": messages(), "temperature": 0, "max_tokens": 4}
        status, r = self.chat("(f) unknown model name", body)
        self.summary["f_unknown_model"] = {
            "status": status,
            "model_field": r.get("model") if isinstance(r, dict) else None,
            "content": r["choices"][0]["message"]["content"] if isinstance(r, dict) and r.get("choices") else None,
            "error": r.get("error") if isinstance(r, dict) else r,
        }

        # (g) throughput: long prompt without cache, 128 generated tokens
        long_user = USER + "\n".join(f"# context line {i}: def f{i}(x): return x * {i}" for i in range(60))
        body = {"model": self.alias, "temperature": 0, "seed": 1, "max_tokens": 128,
                "cache_prompt": False, "ignore_eos": True,
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": long_user}]}
        status, r = self.chat("(g) throughput: long prompt, cache_prompt false, 128 tokens", body,
                              "ignore_eos makes it write all 128 tokens.")
        if status == 200:
            t = r["timings"]
            self.summary["g_throughput"] = {
                "prompt_n": t["prompt_n"], "prompt_tok_s": round(t["prompt_per_second"], 1),
                "predicted_n": t["predicted_n"], "gen_tok_s": round(t["predicted_per_second"], 1)}
        body = {"model": self.alias, "messages": messages(), "temperature": 0, "seed": 1,
                "max_tokens": 128, "cache_prompt": False, "ignore_eos": True}
        status, r = self.chat("(g2) throughput: the short review prompt, cache_prompt false, 128 tokens", body)
        if status == 200:
            t = r["timings"]
            self.summary["g2_throughput_short"] = {
                "prompt_n": t["prompt_n"], "prompt_tok_s": round(t["prompt_per_second"], 1),
                "predicted_n": t["predicted_n"], "gen_tok_s": round(t["predicted_per_second"], 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--alias", default=None, help="model name to send (default: the server's)")
    ap.add_argument("--md", default=None, help="write the observed requests/responses as Markdown here")
    args = ap.parse_args()
    p = Probe(args.port, args.alias)
    p.run()
    if args.md:
        with open(args.md, "w") as f:
            f.write("\n".join(p.md))
    print(json.dumps({"summary": p.summary, "failures": p.failures}, indent=1))
    return 1 if p.failures else 0


if __name__ == "__main__":
    sys.exit(main())
