//! The documentation checked as a reader would use it: every relative link of README.md and
//! the book under docs/ names a file that exists (and, into a Markdown page, a heading it
//! has); every TOML block parses; and every block that is a whole manifest (`version = 1`)
//! passes `runner validate`, placed beside the repository's corpora as the bundled
//! experiments are.

use super::*;
use std::collections::BTreeSet;

/// README.md and every Markdown page of the book.
fn pages() -> Vec<PathBuf> {
    let root = project_root();
    let mut out = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

/// The text outside fenced code blocks, and the fenced blocks with their info strings.
fn split(text: &str) -> (String, Vec<(String, String)>) {
    let (mut prose, mut blocks) = (String::new(), Vec::new());
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.trim_start().strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => blocks.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    (prose, blocks)
}

/// A heading's anchor as GitHub and mdBook make it: lower case, punctuation dropped, spaces
/// to hyphens.
fn slug(heading: &str) -> String {
    heading.trim().to_lowercase().chars().filter(|c| c.is_alphanumeric() || *c == '-' || *c == ' ' || *c == '_').collect::<String>().replace(' ', "-")
}

fn anchors(page: &Path) -> BTreeSet<String> {
    let (prose, _) = split(&std::fs::read_to_string(page).unwrap_or_default());
    prose.lines().filter(|l| l.starts_with('#')).map(|l| slug(l.trim_start_matches('#'))).collect()
}

#[test]
fn every_relative_link_of_the_readme_and_the_book_resolves() {
    let link = regex::Regex::new(r"\[[^\]]*\]\(([^)\s]+)\)").expect("regex");
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let (prose, _) = split(&std::fs::read_to_string(&page).expect("page"));
        for m in link.captures_iter(&prose) {
            let url = &m[1];
            if url.contains("://") || url.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = url.split_once('#').unwrap_or((url, ""));
            let dest = if path.is_empty() { page.clone() } else { page.parent().expect("dir").join(path) };
            if !dest.exists() {
                broken.push(format!("{}: {url} (no such file)", page.display()));
            } else if !anchor.is_empty() && dest.extension().is_some_and(|x| x == "md") && !anchors(&dest).contains(anchor) {
                broken.push(format!("{}: {url} (no such heading)", page.display()));
            }
        }
    }
    assert!(checked > 10, "the pages link somewhere: {checked}");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_toml_block_parses_and_every_whole_manifest_validates() {
    let root = project_root();
    let dir = tempfile::tempdir().expect("tempdir");
    // The manifests are written as the bundled ones are, in experiments/ beside the corpora.
    for shared in ["corpus", "templates", "scripts", "examples"] {
        std::os::unix::fs::symlink(root.join(shared), dir.path().join(shared)).expect("symlink");
    }
    std::fs::create_dir_all(dir.path().join("experiments")).expect("mkdir");
    let (mut blocks, mut manifests) = (0, 0);
    let mut problems = Vec::new();
    for page in pages() {
        let (_, fenced) = split(&std::fs::read_to_string(&page).expect("page"));
        for (n, (_, body)) in fenced.iter().filter(|(info, _)| info == "toml").enumerate() {
            blocks += 1;
            let label = format!("{} toml block {}", page.display(), n + 1);
            if let Err(e) = body.parse::<toml::Table>() {
                problems.push(format!("{label}: not TOML: {e}"));
                continue;
            }
            if !body.lines().any(|l| l.trim() == "version = 1") {
                continue;
            }
            manifests += 1;
            let path = dir.path().join("experiments").join(format!("doc-{manifests}.toml"));
            std::fs::write(&path, body).expect("write");
            let out = runner(dir.path()).args(["validate"]).arg(&path).output().expect("validate");
            if !out.status.success() {
                problems.push(format!("{label}: `runner validate` failed:\n{}", stderr_of(&out)));
            }
        }
    }
    assert!(blocks > 5 && manifests >= 1, "{blocks} blocks, {manifests} manifests");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
