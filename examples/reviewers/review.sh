#!/bin/sh
# A `command` reviewer in POSIX shell: prints an NDJSON stream (docs/reviewer-output.md), one
# event per line. runner starts it as `review.sh BASE HEAD` in a checkout of the change. It flags
# the work markers (TODO, FIXME, XXX) on the lines the change added; it leaves `id` out, so
# runner makes stet's id from file, line and message.
set -eu
base=$1
head=$2
printf '{"type":"progress","msg":"reading the diff"}\n'
git diff --no-color --no-ext-diff --unified=0 "$base" "$head" | awk '
  # A JSON string: backslashes and double quotes escaped (paths with control characters are not expected).
  function js(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
  /^\+\+\+ / { path = (substr($0, 1, 6) == "+++ b/") ? substr($0, 7) : ""; next }
  /^@@/ { split($3, new, ","); line = substr(new[1], 2) + 0; next }
  /^\+/ {
    if (path != "" && match($0, /(^|[^A-Za-z0-9_])(TODO|FIXME|XXX)([^A-Za-z0-9_]|$)/)) {
      marker = substr($0, RSTART, RLENGTH); gsub(/[^A-Z]/, "", marker)
      printf "{\"type\":\"finding\",\"data\":{\"file\":%s,\"line\":%d,\"severity\":\"info\",\"category\":\"maintainability\",\"confidence\":1,\"message\":%s,\"suggestion\":\"Finish it, or track it in an issue.\"}}\n", js(path), line, js("Unfinished work: " marker " marker left in the change.")
    }
    line++
  }'
printf '{"type":"done"}\n'
