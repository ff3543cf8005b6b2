//! Configuration reading shared by every config reader: the spanned TOML walker
//! ([`TableReader`], collecting [`Problems`]), rendered diagnostics, and the helpers that
//! resolve paths, parse durations, suggest spellings and check template variables.

pub mod color;
pub mod diagnostics;
pub mod reader;
pub mod syntax;

pub use diagnostics::{Diagnostic, ManifestErrors};
pub use reader::{Problems, TableReader};
pub use syntax::syntax_diagnostic;

use regex::Regex;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use toml::Spanned;

/// Template variables every reviewer template may use besides the matrix axes.
pub const BUILTIN_TEMPLATE_VARS: [&str; 4] = ["repo", "base", "head", "repeat"];

/// The candidate closest to `text`, when close enough to be a likely typo.
pub fn did_you_mean<'a>(text: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates.into_iter().map(|c| (strsim::jaro_winkler(c, text), c)).filter(|(score, _)| *score > 0.8).max_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, c)| c)
}

pub fn template_var_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\{\{\{?\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}?\}\}").expect("static regex"))
}

/// Reports a template that does not parse, and template variables that are neither an axis nor
/// a built-in.
pub fn check_template(problems: &Problems, text: &Spanned<String>, axes: &BTreeSet<String>, extra: &[&str]) {
    if text.get_ref().contains("{{") {
        if let Err(e) = handlebars::Template::compile(text.get_ref()) {
            // The parser's reason, without the list of every token it expected.
            let reason = e.reason().to_string();
            let reason = reason.split(": expected").next().unwrap_or_default();
            let at = e
                .pos()
                .map(|(line, column)| if line > 1 { format!(" at line {line}, column {column}") } else { format!(" at column {column}") })
                .unwrap_or_default();
            problems.push_with_help(
                text.span(),
                format!("template `{}` does not parse{at}: {reason}", text.get_ref()),
                "templates are handlebars: `{{axis}}`, `{{#if axis}}…{{/if}}` (every block closed)",
            );
            return;
        }
    }
    for cap in template_var_regex().captures_iter(text.get_ref()) {
        let name = &cap[1];
        // `{{else}}` and `{{this}}` are handlebars keywords, not variables.
        if matches!(name, "else" | "this") {
            continue;
        }
        if !axes.contains(name) && !BUILTIN_TEMPLATE_VARS.contains(&name) && !extra.contains(&name) {
            let mut known: Vec<&str> = axes.iter().map(String::as_str).chain(BUILTIN_TEMPLATE_VARS).chain(extra.iter().copied()).collect();
            known.sort_unstable();
            problems.push_with_help(text.span(), format!("unknown template variable `{{{{{name}}}}}`"), format!("known variables: {}", known.join(", ")));
        }
    }
}

/// Joins a manifest-relative path onto the manifest's directory and removes `.`/`..`
/// lexically, so `experiments/../results` reads `results`.
/// Where a manifest's default cache (`cache/`) and work directory (`.runner/`) live: the
/// nearest ancestor of the manifest's directory that holds `.git` (a directory, or the file
/// of a worktree), else the manifest's directory — never the current directory as such.
/// Returned relative (empty) when it is the current directory, else absolute.
pub fn project_root(manifest_dir: &Path) -> PathBuf {
    let Some(root) = absolute_project_root(manifest_dir) else { return manifest_dir.to_path_buf() };
    match std::env::current_dir().and_then(|d| d.canonicalize()) {
        Ok(cwd) if cwd == root => PathBuf::new(),
        _ => root,
    }
}

/// [`project_root`] as a canonical absolute path; `None` when the manifest's directory cannot
/// be resolved.
fn absolute_project_root(manifest_dir: &Path) -> Option<PathBuf> {
    let dir = if manifest_dir.as_os_str().is_empty() { Path::new(".") } else { manifest_dir };
    let dir = dir.canonicalize().ok()?;
    Some(dir.ancestors().find(|a| a.join(".git").exists()).unwrap_or(&dir).to_path_buf())
}

/// A path the manifest names (a repository, a corpus, a changes file), as reports show it:
/// relative to the manifest's project root (`.` for the root itself), whatever directory
/// runner was started from, so a committed report is the same bytes from anywhere. A path
/// outside the project is shown absolute; one that cannot be resolved, as given.
pub fn project_relative(manifest_dir: &Path, path: &Path) -> String {
    let Some(root) = absolute_project_root(manifest_dir) else { return path.display().to_string() };
    let absolute = match path.canonicalize() {
        Ok(p) => p,
        Err(_) => match std::env::current_dir() {
            Ok(cwd) => resolve_path(&cwd, &path.to_string_lossy()),
            Err(_) => return path.display().to_string(),
        },
    };
    match absolute.strip_prefix(&root) {
        Ok(inside) if inside.as_os_str().is_empty() => ".".to_string(),
        Ok(inside) => inside.display().to_string(),
        Err(_) => absolute.display().to_string(),
    }
}

/// Whether files can be made in directory `dir` (or, while it does not exist, in the nearest
/// directory above it, where it would be made): a temporary file is created there and removed.
/// The error says which directory and why.
pub fn probe_writable(dir: &Path) -> Result<(), String> {
    let mut probe = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    loop {
        match std::fs::metadata(probe) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => return Err(format!("`{}` is not a directory", probe.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && probe != Path::new(".") => {
                probe = match probe.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => parent,
                    _ => Path::new("."),
                };
            }
            Err(e) => return Err(format!("`{}` cannot be read: {e}", probe.display())),
        }
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or_default();
    let file = probe.join(format!(".runner-probe-{}-{nanos}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&file) {
        Ok(_) => {
            let _ = std::fs::remove_file(&file);
            Ok(())
        }
        Err(e) => Err(format!("no file can be made in `{}`: {e}", probe.display())),
    }
}

pub fn resolve_path(base_dir: &Path, relative: &str) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in base_dir.join(relative).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// Reads duration keys (`500ms`, `30s`, `5m`) into their slots; a bad one is reported and
/// clears `ok`.
pub fn read_durations(t: &TableReader<'_, '_>, slots: &mut [(&str, &mut Duration)], ok: &mut bool) {
    for (key, slot) in slots.iter_mut() {
        if let Some(s) = t.string(key) {
            match parse_duration(s.get_ref()) {
                Some(d) => **slot = d,
                None => {
                    t.problems().push(s.span(), format!("`{key}` must be a duration such as `500ms`, `30s` or `5m`, found `{}`", s.get_ref()));
                    *ok = false;
                }
            }
        }
    }
}

pub fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(text.len()));
    let n: f64 = number.parse().ok()?;
    let secs = match unit.trim() {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    (secs.is_finite() && secs > 0.0).then(|| Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_paths_resolve_lexically() {
        assert_eq!(resolve_path(Path::new("experiments"), "../corpus/q"), PathBuf::from("corpus/q"));
        assert_eq!(resolve_path(Path::new(""), "../x"), PathBuf::from("../x"));
        assert_eq!(resolve_path(Path::new("/a/b"), "../../../c"), PathBuf::from("/c"));
        assert_eq!(resolve_path(Path::new("experiments"), ".."), PathBuf::from("."));
    }

    /// Whatever the current directory, a path is shown from the project root: the same
    /// repository named `..` from `experiments/` and `.` from the root reads `.` both ways.
    #[test]
    fn paths_are_shown_from_the_project_root_wherever_runner_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::create_dir_all(root.join("experiments")).expect("mkdir");
        std::fs::create_dir_all(root.join("corpus/q")).expect("mkdir");
        let experiments = root.join("experiments");
        // As the manifest reader resolves them, from the manifest's directory given two ways.
        for manifest_dir in [experiments.clone(), root.join("experiments/../experiments")] {
            assert_eq!(project_relative(&manifest_dir, &resolve_path(&manifest_dir, "..")), ".");
            assert_eq!(project_relative(&manifest_dir, &resolve_path(&manifest_dir, "../corpus/q")), "corpus/q");
            assert_eq!(project_relative(&manifest_dir, &resolve_path(&manifest_dir, "../corpus/missing")), "corpus/missing");
        }
        let outside = tempfile::tempdir().expect("tempdir");
        let outside = outside.path().canonicalize().expect("canonical");
        assert_eq!(project_relative(&experiments, &outside), outside.display().to_string());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("5m"), Some(Duration::from_secs(300)));
        assert_eq!(parse_duration("soon"), None);
    }
}
