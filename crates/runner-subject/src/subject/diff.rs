//! Unified diffs as git prints them, split into files and hunks the way stet reviews them.

use serde::Serialize;

/// One hunk of a file's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// New-side path, repository-relative, as stet takes it (see [`parse`]); invalid UTF-8
    /// replaced.
    pub file: String,
    /// First line of the hunk on the new side (as in `+c,d`).
    pub new_start: u32,
    /// Number of new-side lines the hunk covers.
    pub new_len: u32,
    pub old_start: u32,
    pub old_len: u32,
    /// From the `@@` line to the hunk's last line, joined with `\n`, no trailing newline
    /// (invalid UTF-8 replaced).
    pub text: String,
    /// `file` as the bytes git printed: what stet hashes.
    #[serde(skip)]
    pub raw_file: Vec<u8>,
    /// `text` as the bytes git printed: what stet hashes.
    #[serde(skip)]
    pub raw_text: Vec<u8>,
}

impl Hunk {
    /// New-side line numbers of the lines this hunk adds.
    pub fn added_lines(&self) -> Vec<(u32, &str)> {
        let mut out = Vec::new();
        let mut new_line = self.new_start;
        for line in self.text.lines().skip(1) {
            if let Some(rest) = line.strip_prefix('+') {
                out.push((new_line, rest));
                new_line += 1;
            } else if line.starts_with('-') || line.starts_with('\\') {
                // removed line or "\ No newline at end of file": no new-side line
            } else {
                new_line += 1;
            }
        }
        out
    }

    /// The inclusive new-side line span this hunk covers (at least one line).
    pub fn new_span(&self) -> (u32, u32) {
        let start = self.new_start.max(1);
        (start, start + self.new_len.saturating_sub(1))
    }

    /// The line stet gives the hunk's dry-run finding: the new-side start, or 1 when the
    /// hunk has no new-side lines (`+0,0`, `+5,0`) or its header does not parse.
    pub fn stet_line(&self) -> u32 {
        if self.new_start > 0 && self.new_len > 0 {
            self.new_start
        } else {
            1
        }
    }
}

/// A changed file and its hunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    pub path: String,
    pub hunks: Vec<Hunk>,
}

/// stet reads a diff with Go's `bufio.Scanner`, whose default limit is 64 KiB a line
/// (`bufio.MaxScanTokenSize`): a line of this many bytes or more (not counting its `\n`)
/// makes it fail with "token too long".
pub const STET_MAX_LINE: usize = 64 * 1024;

/// stet's default excludes (`cli/internal/diff/diff.go`): generated and vendored files.
pub const STET_DEFAULT_EXCLUDES: [&str; 7] = ["*.pb.go", "*_generated.go", "*.min.js", "package-lock.json", "go.sum", "vendor/*", "coverage/*"];

/// A parsed diff: the hunks stet reviews, and why stet could not compute them, if it could not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParsedDiff {
    pub files: Vec<FileDiff>,
    /// Set when stet fails on this diff ("Could not compute hunks to review"): a line over
    /// [`STET_MAX_LINE`]. `files` still holds every hunk, the long line included.
    pub stet_error: Option<String>,
}

/// Parses `git diff --no-color --no-ext-diff` output (see [`parse`]); hunks only.
pub fn parse_unified_diff(text: impl AsRef<[u8]>) -> Vec<FileDiff> {
    parse(text.as_ref()).files
}

/// Splits a diff into file sections and hunks exactly as stet's `ParseUnifiedDiff` and
/// `Hunks` do (CONTRACTS.md, "How stet builds hunks"):
///
/// - sections start at every occurrence of `diff --git `; each is trimmed of surrounding
///   white space (Go's `strings.TrimSpace`), and one containing `Binary files ` anywhere is
///   skipped whole;
/// - lines are split at `\n` with one trailing `\r` dropped (Go's `bufio.ScanLines`);
/// - the path is the second white-space-separated field of the `diff --git` line, less its
///   `a/`/`b/` prefix (so `a/my file.txt b/my file.txt` gives `file.txt`, and a quoted name
///   keeps its quotes); the `+++` line (cut at a tab), then the `---` line, only when that
///   line has no two fields; a section with no path is `unknown`;
/// - lines starting with `--- ` or `+++ ` are headers wherever they appear; a line matching
///   `^@@ -N[,N] +N[,N] @@` starts a hunk; only empty lines and lines starting with ` `, `-`
///   or `+` join it (so `\ No newline at end of file` is dropped), other lines are skipped;
/// - deleted files are kept (their path is the `diff --git` line's); stet's default excludes
///   ([`STET_DEFAULT_EXCLUDES`]) are dropped; nothing is decoded: `raw_text` is the bytes.
pub fn parse(text: &[u8]) -> ParsedDiff {
    let mut out = ParsedDiff::default();
    if go_trim_space(text).is_empty() {
        return out;
    }
    for section in split_sections(text) {
        let section = go_trim_space(section);
        if section.is_empty() || contains(section, b"Binary files ") {
            continue;
        }
        let (path, blocks, long_line) = parse_file_section(section);
        if let (Some(len), None) = (long_line, &out.stet_error) {
            out.stet_error = Some(format!(
                "Could not compute hunks to review: a diff line of {len} bytes is longer than stet's limit of {} bytes (bufio.Scanner: token too long); stet fails on this change",
                STET_MAX_LINE - 1
            ));
        }
        if blocks.is_empty() || excluded(&path) {
            continue;
        }
        let raw_file = if path.is_empty() { b"unknown".to_vec() } else { path };
        let file = String::from_utf8_lossy(&raw_file).into_owned();
        let hunks = blocks
            .into_iter()
            .map(|raw_text| {
                let first = raw_text.split(|b| *b == b'\n').next().unwrap_or_default();
                let (old_start, old_len, new_start, new_len) = parse_hunk_header(first).unwrap_or_default();
                Hunk {
                    file: file.clone(),
                    new_start,
                    new_len,
                    old_start,
                    old_len,
                    text: String::from_utf8_lossy(&raw_text).into_owned(),
                    raw_file: raw_file.clone(),
                    raw_text,
                }
            })
            .collect();
        match out.files.last_mut() {
            Some(f) if f.path == file => f.hunks.extend(hunks),
            _ => out.files.push(FileDiff { path: file, hunks }),
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Go's `splitByFileSections`: a cut before every `diff --git ` (anywhere, not only at a
/// line start); a non-blank part before the first one is a section too.
fn split_sections(text: &[u8]) -> Vec<&[u8]> {
    const PREFIX: &[u8] = b"diff --git ";
    let mut cuts = Vec::new();
    let mut at = 0;
    while let Some(i) = find(&text[at..], PREFIX) {
        cuts.push(at + i);
        at += i + PREFIX.len();
    }
    let mut sections = Vec::new();
    let first = cuts.first().copied().unwrap_or(text.len());
    if !go_trim_space(&text[..first]).is_empty() {
        sections.push(&text[..first]);
    }
    for (k, &cut) in cuts.iter().enumerate() {
        let end = cuts.get(k + 1).copied().unwrap_or(text.len());
        sections.push(&text[cut..end]);
    }
    sections
}

/// One trimmed file section: (path bytes, hunk blocks, length of the first line over
/// stet's limit).
fn parse_file_section(section: &[u8]) -> (Vec<u8>, Vec<Vec<u8>>, Option<usize>) {
    let mut path_a: Vec<u8> = Vec::new();
    let mut path_b: Vec<u8> = Vec::new();
    let mut blocks: Vec<Vec<u8>> = Vec::new();
    let mut current: Option<Vec<&[u8]>> = None;
    let mut long_line = None;
    for mut line in section.split(|b| *b == b'\n') {
        if line.len() >= STET_MAX_LINE && long_line.is_none() {
            long_line = Some(line.len());
        }
        if let Some(rest) = line.strip_suffix(b"\r") {
            line = rest;
        }
        if let Some(rest) = line.strip_prefix(b"diff --git ") {
            let fields = go_fields(rest);
            (path_a, path_b) = match fields.as_slice() {
                [a, b, ..] => (trim_diff_path(a).to_vec(), trim_diff_path(b).to_vec()),
                _ => (Vec::new(), Vec::new()),
            };
            continue;
        }
        if let Some(rest) = line.strip_prefix(b"--- ") {
            if path_a.is_empty() && path_b.is_empty() {
                path_a = path_from_header(rest);
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix(b"+++ ") {
            if path_b.is_empty() {
                path_b = path_from_header(rest);
            }
            continue;
        }
        if hunk_header_matches(line) {
            if let Some(lines) = current.take() {
                blocks.push(lines.join(&b'\n'));
            }
            current = Some(vec![line]);
            continue;
        }
        if let Some(lines) = current.as_mut() {
            if line.is_empty() || matches!(line[0], b' ' | b'-' | b'+') {
                lines.push(line);
            }
        }
    }
    if let Some(lines) = current.take() {
        blocks.push(lines.join(&b'\n'));
    }
    let path = if path_b.is_empty() { path_a } else { path_b };
    (path, blocks, long_line)
}

fn trim_diff_path(s: &[u8]) -> &[u8] {
    match s {
        [b'a' | b'b', b'/', rest @ ..] => rest,
        _ => s,
    }
}

/// The path of a `---`/`+++` line: up to a tab, less its `a/`/`b/` prefix.
fn path_from_header(rest: &[u8]) -> Vec<u8> {
    let end = rest.iter().position(|b| *b == b'\t').unwrap_or(rest.len());
    trim_diff_path(&rest[..end]).to_vec()
}

/// stet's hunk header, `^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@`.
fn hunk_header_matches(line: &[u8]) -> bool {
    header_ranges(line).is_some()
}

/// One side of a hunk header as digit strings: its start, its count if written, and the rest.
type RangeDigits<'a> = (&'a [u8], Option<&'a [u8]>, &'a [u8]);

/// The digits of a hunk header's two ranges: (a, b, c, d) of `@@ -a[,b] +c[,d] @@`.
type HeaderDigits<'a> = (&'a [u8], Option<&'a [u8]>, &'a [u8], Option<&'a [u8]>);

/// The two ranges of a hunk header, as digit strings: (a, b, c, d) of `@@ -a[,b] +c[,d] @@`.
fn header_ranges(line: &[u8]) -> Option<HeaderDigits<'_>> {
    fn number(s: &[u8]) -> Option<(&[u8], &[u8])> {
        let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
        (n > 0).then(|| (&s[..n], &s[n..]))
    }
    fn range(s: &[u8]) -> Option<RangeDigits<'_>> {
        let (start, rest) = number(s)?;
        match rest.strip_prefix(b",") {
            Some(r) => number(r).map(|(count, rest)| (start, Some(count), rest)),
            None => Some((start, None, rest)),
        }
    }
    let (a, b, rest) = range(line.strip_prefix(b"@@ -")?)?;
    let (c, d, rest) = range(rest.strip_prefix(b" +")?)?;
    rest.starts_with(b" @@").then_some((a, b, c, d))
}

/// Parses `@@ -a,b +c,d @@ …` into (a, b, c, d); a missing count means 1, a number that
/// does not fit is 0. `None` when the line is not stet's hunk header.
fn parse_hunk_header(line: &[u8]) -> Option<(u32, u32, u32, u32)> {
    let (a, b, c, d) = header_ranges(line)?;
    let num = |s: &[u8]| std::str::from_utf8(s).ok().and_then(|t| t.parse::<u32>().ok()).unwrap_or(0);
    Some((num(a), b.map_or(1, num), num(c), d.map_or(1, num)))
}

/// Whether stet's default excludes drop `path` (its `filterByPatterns`): `vendor` and
/// `coverage` as directory prefixes (`coverage` at any depth), the others as
/// `filepath.Match` patterns against the whole path or its base name.
fn excluded(path: &[u8]) -> bool {
    if path == b"vendor" || path.starts_with(b"vendor/") {
        return true;
    }
    if path == b"coverage" || path.starts_with(b"coverage/") || contains(path, b"/coverage/") {
        return true;
    }
    let base = go_base(path);
    STET_DEFAULT_EXCLUDES.iter().filter(|p| !p.starts_with("vendor") && !p.starts_with("coverage")).any(|p| {
        let p = p.as_bytes();
        star_match(p, path) || star_match(p, &base)
    })
}

/// `filepath.Match` for patterns whose only metacharacter is `*` (which does not match `/`).
fn star_match(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.iter().position(|b| *b == b'*') {
        None => pattern == name,
        Some(i) => {
            let (head, tail) = (&pattern[..i], &pattern[i + 1..]);
            let Some(rest) = name.strip_prefix(head) else { return false };
            (0..=rest.len()).take_while(|k| *k == 0 || rest[k - 1] != b'/').any(|k| star_match(tail, &rest[k..]))
        }
    }
}

/// Go's `filepath.Base`.
fn go_base(path: &[u8]) -> Vec<u8> {
    let trimmed = {
        let n = path.iter().rev().take_while(|b| **b == b'/').count();
        &path[..path.len() - n]
    };
    if path.is_empty() {
        return b".".to_vec();
    }
    if trimmed.is_empty() {
        return b"/".to_vec();
    }
    match trimmed.iter().rposition(|b| *b == b'/') {
        Some(i) => trimmed[i + 1..].to_vec(),
        None => trimmed.to_vec(),
    }
}

/// The first character of `bytes` if it is valid UTF-8 (Go's `utf8.DecodeRune`, where an
/// invalid byte decodes as U+FFFD, which is not a space).
fn first_char(bytes: &[u8]) -> Option<(char, usize)> {
    let head = &bytes[..bytes.len().min(4)];
    let valid = match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    valid.chars().next().map(|c| (c, c.len_utf8()))
}

fn last_char(bytes: &[u8]) -> Option<(char, usize)> {
    (1..=bytes.len().min(4)).find_map(|k| {
        let s = std::str::from_utf8(&bytes[bytes.len() - k..]).ok()?;
        let mut chars = s.chars();
        let c = chars.next()?;
        chars.next().is_none().then_some((c, k))
    })
}

/// Go's `unicode.IsSpace` (the same set as Rust's `char::is_whitespace`).
fn go_is_space(c: char) -> bool {
    c.is_whitespace()
}

/// Go's `strings.TrimSpace` on bytes: leading and trailing Unicode white space removed.
pub fn go_trim_space(mut bytes: &[u8]) -> &[u8] {
    while let Some((c, n)) = first_char(bytes) {
        if !go_is_space(c) {
            break;
        }
        bytes = &bytes[n..];
    }
    while let Some((c, n)) = last_char(bytes) {
        if !go_is_space(c) {
            break;
        }
        bytes = &bytes[..bytes.len() - n];
    }
    bytes
}

/// Go's `strings.Fields` on bytes: split at runs of Unicode white space.
fn go_fields(bytes: &[u8]) -> Vec<&[u8]> {
    let mut fields = Vec::new();
    let mut start: Option<usize> = None;
    let mut i = 0;
    while i < bytes.len() {
        let (space, n) = match first_char(&bytes[i..]) {
            Some((c, n)) => (go_is_space(c), n),
            None => (false, 1),
        };
        match (space, start) {
            (true, Some(s)) => {
                fields.push(&bytes[s..i]);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
        i += n;
    }
    if let Some(s) = start {
        fields.push(&bytes[s..]);
    }
    fields
}

/// All hunks of a diff, in file then position order.
pub fn hunks(files: &[FileDiff]) -> impl Iterator<Item = &Hunk> {
    files.iter().flat_map(|f| f.hunks.iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const CALC_DIFF: &str = "diff --git a/calc.py b/calc.py\nindex 1111111..2222222 100644\n--- a/calc.py\n+++ b/calc.py\n@@ -4,3 +4,7 @@ def add(a, b):\n \n def div(a, b):\n     return a / b\n+\n+\n+def avg(xs):\n+    return sum(xs) / len(xs)\n";

    #[test]
    fn parses_the_contract_test_vector_hunk() {
        let files = parse_unified_diff(CALC_DIFF);
        assert_eq!(files.len(), 1);
        let h = &files[0].hunks[0];
        assert_eq!(h.file, "calc.py");
        assert_eq!((h.new_start, h.new_len), (4, 7));
        assert!(h.text.starts_with("@@ -4,3 +4,7 @@ def add(a, b):\n \n def div"));
        assert!(h.text.ends_with("+    return sum(xs) / len(xs)"));
        assert_eq!(h.added_lines().first().map(|(n, _)| *n), Some(7));
        assert_eq!(h.added_lines().last().copied(), Some((10, "    return sum(xs) / len(xs)")));
    }

    #[test]
    fn deleted_files_are_reviewed_and_multiple_hunks_kept() {
        let diff = "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\ndiff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-a\n+b\n@@ -10,2 +10,3 @@ fn f()\n c\n+d\n e\n";
        let files = parse_unified_diff(diff);
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].path, "gone.txt");
        assert_eq!(files[0].hunks[0].text, "@@ -1 +0,0 @@\n-x");
        assert_eq!(files[0].hunks[0].stet_line(), 1);
        assert_eq!(files[1].path, "a.rs");
        assert_eq!(files[1].hunks.len(), 2);
        assert_eq!(files[1].hunks[0].new_len, 1);
        assert_eq!(files[1].hunks[1].added_lines(), vec![(11, "d")]);
    }

    #[test]
    fn sections_are_trimmed_and_headers_win_inside_hunks() {
        // The trailing blank context line and the last line's trailing spaces leave the
        // hunk; `\ No newline` and a removed `-- x` line (printed `--- x`) are dropped.
        let diff = "diff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n@@ -1,4 +1,4 @@\n--- x\n+y\n\\ No newline at end of file\n+z  \n \n";
        let files = parse_unified_diff(diff);
        assert_eq!(files[0].hunks[0].text, "@@ -1,4 +1,4 @@\n+y\n+z");
    }

    #[test]
    fn binary_sections_are_skipped_whole_and_paths_come_from_the_diff_git_line() {
        let diff = "diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\ndiff --git a/t.txt b/t.txt\n--- a/t.txt\n+++ b/t.txt\n@@ -1 +1 @@\n-a\n+Binary files differ\ndiff --git a/my file.txt b/my file.txt\n--- a/my file.txt\t\n+++ b/my file.txt\t\n@@ -1 +1 @@\n-a\n+b\n";
        let files = parse_unified_diff(diff);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "file.txt");
    }

    #[test]
    fn default_excludes_follow_stet() {
        for path in [
            "api.pb.go",
            "x/api.pb.go",
            "a_generated.go",
            "web/app.min.js",
            "package-lock.json",
            "sub/package-lock.json",
            "go.sum",
            "vendor/x.go",
            "vendor/a/b.go",
            "coverage/index.html",
            "ext/coverage/lcov.html",
        ] {
            assert!(excluded(path.as_bytes()), "{path}");
        }
        for path in ["src/main.go", "vendored/x.go", "mycoverage/x", "app.js", "a/vendor/x.go"] {
            assert!(!excluded(path.as_bytes()), "{path}");
        }
    }

    #[test]
    fn raw_bytes_and_zero_length_hunks() {
        let diff = b"diff --git a/l.txt b/l.txt\n--- a/l.txt\n+++ b/l.txt\n@@ -1 +1 @@\n-caf\xe9\n+th\xe9\r\n@@ -5,2 +4,0 @@\n-x\n-y\n";
        let parsed = parse(diff);
        let h = &parsed.files[0].hunks;
        assert_eq!(h[0].raw_text, b"@@ -1 +1 @@\n-caf\xe9\n+th\xe9".to_vec());
        assert_eq!((h[0].stet_line(), h[1].stet_line()), (1, 1));
        assert!(parsed.stet_error.is_none());
    }

    #[test]
    fn a_line_of_64_kib_is_stets_error() {
        let long = |n: usize| format!("diff --git a/l.txt b/l.txt\n--- a/l.txt\n+++ b/l.txt\n@@ -0,0 +1 @@\n+{}\n", "x".repeat(n - 1));
        assert!(parse(long(STET_MAX_LINE - 1).as_bytes()).stet_error.is_none());
        let failed = parse(long(STET_MAX_LINE).as_bytes());
        assert!(failed.stet_error.as_deref().is_some_and(|e| e.contains("Could not compute hunks to review")), "{failed:?}");
        assert_eq!(failed.files[0].hunks.len(), 1);
    }

    #[test]
    fn go_string_helpers() {
        assert_eq!(go_trim_space("\u{a0} a b\t\n".as_bytes()), b"a b");
        assert_eq!(go_trim_space(b"\xff "), b"\xff");
        assert_eq!(go_fields(b"a/x  b/y\tz"), vec![&b"a/x"[..], b"b/y", b"z"]);
        assert_eq!(go_base(b"a/b/c.go"), b"c.go");
    }
}
