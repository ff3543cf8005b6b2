//! Glob patterns as `[target]`'s commit filters write them: `*` matches within one path
//! segment, `**` any number of whole segments, `?` one character; a pattern without a `/`
//! matches a name in any directory (as `.gitignore` does: `*.md` is every Markdown file). The
//! same patterns match author names and emails, where there are no segments.

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    /// No `/`: matched against each path's last segment (and the whole text).
    anywhere: bool,
}

impl Glob {
    pub fn new(pattern: &str) -> Self {
        let trimmed = pattern.trim_start_matches("./");
        Self { pattern: trimmed.to_string(), anywhere: !trimmed.contains('/') }
    }

    /// The pattern as written (less a leading `./`).
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether a repository-relative path (or an author) matches.
    pub fn matches(&self, text: &str) -> bool {
        if glob_match(self.pattern.as_bytes(), text.as_bytes()) {
            return true;
        }
        self.anywhere && text.rsplit('/').next().is_some_and(|name| name != text && glob_match(self.pattern.as_bytes(), name.as_bytes()))
    }

    /// Whether any of `globs` matches `text`.
    pub fn any(globs: &[Glob], text: &str) -> bool {
        globs.iter().any(|g| g.matches(text))
    }
}

/// Matches `pattern` against `text`: `**/` any leading segments (none included), `/**` any
/// trailing ones, `**` anything, `*` anything but `/`, `?` one byte but `/`. Each (pattern,
/// text) position is tried once, so the time is at most their product.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let mut failed = std::collections::HashSet::new();
    matches_from(pattern, text, 0, 0, &mut failed)
}

fn matches_from(pattern: &[u8], text: &[u8], p: usize, t: usize, failed: &mut std::collections::HashSet<(usize, usize)>) -> bool {
    if failed.contains(&(p, t)) {
        return false;
    }
    let result = if p == pattern.len() {
        t == text.len()
    } else if pattern[p..].starts_with(b"**") {
        let after = p + 2;
        if pattern.get(after) == Some(&b'/') {
            // `**/`: nothing, or any run of whole segments.
            matches_from(pattern, text, after + 1, t, failed)
                || (t..text.len()).any(|i| text[i] == b'/' && matches_from(pattern, text, after + 1, i + 1, failed))
        } else {
            (t..=text.len()).any(|i| matches_from(pattern, text, after, i, failed))
        }
    } else if pattern[p] == b'*' {
        (t..=text.len()).take_while(|i| *i == t || text[*i - 1] != b'/').any(|i| matches_from(pattern, text, p + 1, i, failed))
    } else if t < text.len() && (pattern[p] == text[t] || (pattern[p] == b'?' && text[t] != b'/')) {
        matches_from(pattern, text, p + 1, t + 1, failed)
    } else {
        false
    };
    if !result {
        failed.insert((p, t));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_stay_in_their_segment_and_double_stars_cross_them() {
        let g = |p: &str, t: &str| Glob::new(p).matches(t);
        assert!(g("src/**", "src/a/b.rs"));
        assert!(g("src/**", "src/b.rs"));
        assert!(!g("src/**", "tests/src/b.rs"));
        assert!(g("src/*.rs", "src/b.rs"));
        assert!(!g("src/*.rs", "src/a/b.rs"));
        assert!(g("**/test_*.py", "test_a.py") && g("**/test_*.py", "pkg/tests/test_a.py"));
        assert!(g("*.md", "README.md") && g("*.md", "docs/guide/intro.md"), "no slash: any directory");
        assert!(!g("*.md", "README.mdx"));
        assert!(g("docs/**/*.rst", "docs/a/b/c.rst"));
        assert!(g("a?c.txt", "abc.txt") && !g("a?c.txt", "a/c.txt"));
        assert!(g("*[bot]*", "dependabot[bot]"), "brackets are literal");
        assert!(g("renovate*", "renovate-bot") && !g("renovate*", "ci-renovate"));
        assert!(Glob::new("./src/**").matches("src/x.rs"));
    }
}
