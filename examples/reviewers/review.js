#!/usr/bin/env node
// A `command` reviewer in Node: prints an NDJSON stream (docs/reviewer-output.md), one event per
// line, and a `usage` event with the tokens it spent (none: it calls no model). runner starts it
// as `review.js BASE HEAD` in a checkout of the change. It flags the work markers (TODO, FIXME,
// XXX) on the lines the change added.
'use strict';
const { execFileSync } = require('node:child_process');

const MARKER = /\b(TODO|FIXME|XXX)\b/;

/** Every line the change from BASE to HEAD added, as [path, line number, text]. */
function addedLines(base, head) {
  const diff = execFileSync('git', ['diff', '--no-color', '--no-ext-diff', '--unified=0', base, head], {
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const out = [];
  let path = null;
  let line = 0;
  for (const text of diff.split('\n')) {
    if (text.startsWith('+++ ')) {
      path = text.startsWith('+++ b/') ? text.slice(6) : null;
    } else if (text.startsWith('@@')) {
      const match = /^@@ -\S+ \+(\d+)/.exec(text);
      line = match ? Number(match[1]) : 0;
    } else if (text.startsWith('+') && path !== null) {
      out.push([path, line, text.slice(1)]);
      line += 1;
    }
  }
  return out;
}

const [base, head] = process.argv.slice(2);
const emit = (event) => process.stdout.write(JSON.stringify(event) + '\n');
emit({ type: 'progress', msg: 'reading the diff' });
for (const [file, line, text] of addedLines(base, head)) {
  const marker = MARKER.exec(text);
  if (marker) {
    emit({
      type: 'finding',
      data: {
        file,
        line,
        severity: 'info',
        category: 'maintainability',
        confidence: 1,
        message: `Unfinished work: ${marker[1]} marker left in the change.`,
        suggestion: 'Finish it, or track it in an issue.',
      },
    });
  }
}
emit({ type: 'usage', data: { input_tokens: 0, output_tokens: 0 } });
emit({ type: 'done' });
