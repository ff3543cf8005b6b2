//! Unified diffs as git prints them, split into files and hunks the way stet reviews them.

use serde::Serialize;

/// One hunk of a file's diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// New-side path, repository-relative.
    pub file: String,
    /// First line of the hunk on the new side (as in `+c,d`).
    pub new_start: u32,
    /// Number of new-side lines the hunk covers.
    pub new_len: u32,
    pub old_start: u32,
    pub old_len: u32,
    /// From the `@@` line to the hunk's last line, joined with `\n`, no trailing newline.
    pub text: String,
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
}

/// A changed file and its hunks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDiff {
    pub path: String,
    pub hunks: Vec<Hunk>,
}

/// Parses `git diff --no-color --no-ext-diff` output. Deleted and binary files have no
/// new-side hunks and are left out, as stet leaves them out.
pub fn parse_unified_diff(text: &str) -> Vec<FileDiff> {
    let mut files: Vec<FileDiff> = Vec::new();
    let mut current_path: Option<String> = None;
    let mut hunk: Option<(Hunk, Vec<&str>)> = None;

    fn flush(files: &mut Vec<FileDiff>, hunk: &mut Option<(Hunk, Vec<&str>)>) {
        if let Some((mut h, lines)) = hunk.take() {
            h.text = lines.join("\n");
            match files.last_mut() {
                Some(f) if f.path == h.file => f.hunks.push(h),
                _ => files.push(FileDiff { path: h.file.clone(), hunks: vec![h] }),
            }
        }
    }

    for line in text.lines() {
        if line.starts_with("diff --git ") {
            flush(&mut files, &mut hunk);
            current_path = None;
            continue;
        }
        if hunk.is_none() {
            if let Some(path) = line.strip_prefix("+++ ") {
                current_path = if path == "/dev/null" {
                    None
                } else {
                    Some(path.strip_prefix("b/").unwrap_or(path).to_string())
                };
                continue;
            }
        }
        if line.starts_with("@@") {
            flush(&mut files, &mut hunk);
            if let (Some(path), Some((old_start, old_len, new_start, new_len))) = (&current_path, parse_hunk_header(line)) {
                hunk = Some((
                    Hunk { file: path.clone(), new_start, new_len, old_start, old_len, text: String::new() },
                    vec![line],
                ));
            }
            continue;
        }
        if let Some((_, lines)) = hunk.as_mut() {
            if line.starts_with(' ') || line.starts_with('+') || line.starts_with('-') || line.starts_with('\\') || line.is_empty() {
                lines.push(line);
            } else {
                flush(&mut files, &mut hunk);
            }
        }
    }
    flush(&mut files, &mut hunk);
    files
}

/// Parses `@@ -a,b +c,d @@ …` into (a, b, c, d); a missing count means 1.
fn parse_hunk_header(line: &str) -> Option<(u32, u32, u32, u32)> {
    let inner = line.strip_prefix("@@ ")?;
    let end = inner.find(" @@")?;
    let mut parts = inner[..end].split(' ');
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let split = |s: &str| -> Option<(u32, u32)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (a, b) = split(old)?;
    let (c, d) = split(new)?;
    Some((a, b, c, d))
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
    fn deleted_files_and_multiple_hunks() {
        let diff = "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\ndiff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-a\n+b\n@@ -10,2 +10,3 @@ fn f()\n c\n+d\n e\n";
        let files = parse_unified_diff(diff);
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "a.rs");
        assert_eq!(files[0].hunks.len(), 2);
        assert_eq!(files[0].hunks[0].new_len, 1);
        assert_eq!(files[0].hunks[1].added_lines(), vec![(11, "d")]);
    }
}
