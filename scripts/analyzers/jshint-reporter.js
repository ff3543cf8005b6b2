"use strict";
// A JSHint reporter that prints every finding as one JSON array on stdout:
// [{"file", "line", "character", "code", "reason"}]. runner passes it with --reporter.
module.exports = {
  reporter: function (results) {
    var out = results.map(function (r) {
      var e = r.error || {};
      return { file: r.file, line: e.line, character: e.character, code: e.code, reason: e.reason };
    });
    process.stdout.write(JSON.stringify(out) + "\n");
  }
};
