//! What runner wrote into a report directory, and only that: `.runner-outputs.json` there
//! lists the files (RESULTS.md, results.json, the charts, report.html) by path relative to
//! it. An execution replaces only files listed there, removes only listed charts no longer
//! drawn, and refuses to write over a file that is not listed (`--force` overwrites it), so
//! a directory shared with other files (a `plots/` holding a hand-made diagram) loses nothing.
//!
//! A directory without the list (written by an earlier runner) is read as runner's when its
//! results.json is a runner results.json: that file, RESULTS.md beside it, the charts that
//! results.json has, the charts about to be written and a report.html runner generated.

use super::model::Results;
use crate::bounded::{self, Links};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The list's file name, inside the report directory.
pub const RECORD: &str = ".runner-outputs.json";

/// The largest list read.
const MAX_RECORD_BYTES: u64 = 16 * bounded::MIB;

#[derive(Debug, thiserror::Error)]
pub enum OutputsError {
    #[error("`{path}` is in the way: runner did not write it ({why}); move it, or pass --force to overwrite it")]
    Foreign { path: PathBuf, why: &'static str },
    #[error("`{path}` is not a list of runner's outputs: {message}; remove it to have runner take the directory's reports as its own again")]
    Record { path: PathBuf, message: String },
    #[error("failed to write `{path}`: {message}")]
    Write { path: PathBuf, message: String },
    #[error("`{path}` is a symbolic link: runner writes and removes reports only inside the report directory itself, never through a link; replace it with a plain directory")]
    Link { path: PathBuf },
}

/// The list as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    /// Says what the file is to someone who finds it.
    #[serde(default)]
    written_by: String,
    files: Vec<String>,
}

/// The files of a report directory runner may replace.
#[derive(Debug)]
pub struct Outputs {
    dir: PathBuf,
    ours: BTreeSet<String>,
    /// Why a file not in `ours` is not runner's, for the error.
    why: &'static str,
    /// No list, but a runner results.json: the charts about to be written count as runner's.
    inferred: bool,
    force: bool,
}

impl Outputs {
    /// What runner wrote into `dir` before (nothing when it does not exist). `force`: every
    /// file may be overwritten.
    pub fn open(dir: &Path, force: bool) -> Result<Self, OutputsError> {
        let path = dir.join(RECORD);
        let (ours, why, inferred) = match bounded::read_text(&path, MAX_RECORD_BYTES, Links::Follow, "output lists") {
            Ok(text) => {
                let record: Record = serde_json::from_str(&text).map_err(|e| OutputsError::Record { path: path.clone(), message: e.to_string() })?;
                if let Some(bad) = record.files.iter().find(|f| !is_plain_relative(f)) {
                    return Err(OutputsError::Record { path, message: format!("`{bad}` is not a path inside the directory") });
                }
                (record.files.into_iter().collect(), "it is not in the directory's .runner-outputs.json", false)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let ours = inferred(dir);
                let inferred = !ours.is_empty();
                (ours, "the directory has no .runner-outputs.json, and no results.json of runner's", inferred)
            }
            Err(e) => return Err(OutputsError::Record { path, message: e.to_string() }),
        };
        inside(dir, &format!("{}/x", super::plots::PLOTS_DIR))?;
        Ok(Self { dir: dir.to_path_buf(), ours, why, inferred, force })
    }

    /// Refuses when one of `names` (paths relative to the directory) is there and is not
    /// runner's; the error names the first such file.
    pub fn check<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<(), OutputsError> {
        for name in names {
            inside(&self.dir, name)?;
            if self.force {
                continue;
            }
            let ours = self.ours.contains(name) || (self.inferred && is_chart(name));
            let path = self.dir.join(name);
            if !ours && std::fs::symlink_metadata(&path).is_ok() {
                return Err(OutputsError::Foreign { path, why: self.why });
            }
        }
        Ok(())
    }

    /// Records `written` (the files just written, relative) as runner's: charts runner wrote
    /// before and no longer draws are removed, other files it wrote before stay listed while
    /// they are there (report.html when this execution wrote none).
    pub fn commit(self, written: &[String]) -> Result<(), OutputsError> {
        let written_set: BTreeSet<&str> = written.iter().map(String::as_str).collect();
        let mut files: BTreeSet<String> = written.iter().cloned().collect();
        for name in self.ours.iter().filter(|n| !written_set.contains(n.as_str())) {
            inside(&self.dir, name)?;
            let path = self.dir.join(name);
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if is_chart(name) && meta.is_file() {
                std::fs::remove_file(&path).map_err(|e| OutputsError::Write { path: path.clone(), message: e.to_string() })?;
            } else {
                files.insert(name.clone());
            }
        }
        let record = Record { written_by: "runner: the files it wrote here; it replaces or removes no other".to_string(), files: files.into_iter().collect() };
        let mut text = serde_json::to_string_pretty(&record).map_err(|e| OutputsError::Write { path: self.dir.join(RECORD), message: e.to_string() })?;
        text.push('\n');
        let path = self.dir.join(RECORD);
        crate::cache::store::atomic_write(&path, text.as_bytes()).map_err(|e| OutputsError::Write { path, message: e.to_string() })
    }
}

/// Adds `file` to the list of the report directory it is in, when that directory has one
/// (`runner report` writing report.html beside results.json): a later execution then
/// replaces it as its own.
pub fn record_also(file: &Path) -> Result<(), OutputsError> {
    let (Some(dir), Some(name)) = (file.parent(), file.file_name().and_then(|n| n.to_str())) else { return Ok(()) };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    if !dir.join(RECORD).exists() {
        return Ok(());
    }
    let mut outputs = Outputs::open(dir, false)?;
    let mut files: Vec<String> = outputs.ours.iter().cloned().collect();
    if outputs.ours.insert(name.to_string()) {
        files.push(name.to_string());
        // Nothing is stale: every listed file stays listed.
        outputs.commit(&files)?;
    }
    Ok(())
}

/// Checks that `name`, a path relative to `dir`, stays inside it: none of the directories
/// between `dir` and the file is a link (`plots -> /elsewhere`), so nothing is written or
/// removed outside. A directory not there yet is fine (it is made as a directory). The file
/// itself may be a link: it is replaced, never written through, and never removed.
fn inside(dir: &Path, name: &str) -> Result<(), OutputsError> {
    let mut at = dir.to_path_buf();
    let mut parts: Vec<&str> = name.split('/').collect();
    parts.pop();
    for part in parts {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => return Err(OutputsError::Link { path: at }),
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// A chart's path: `plots/<name>.svg`.
fn is_chart(name: &str) -> bool {
    name.strip_prefix(&format!("{}/", super::plots::PLOTS_DIR)).is_some_and(|rest| is_plain_relative(rest) && !rest.contains('/') && rest.ends_with(".svg"))
}

/// A relative path of plain components (no `..`, no `.`, not absolute).
fn is_plain_relative(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('/') && name.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

/// The files of a directory without a list that runner wrote: its results.json when it is a
/// runner results.json, with RESULTS.md, the charts it has and a report.html runner generated.
fn inferred(dir: &Path) -> BTreeSet<String> {
    let Ok(results) = Results::read(&dir.join("results.json")) else { return BTreeSet::new() };
    let mut ours: BTreeSet<String> = ["RESULTS.md", "results.json"].map(String::from).into();
    ours.extend(super::plots::charts(&results).into_iter().filter(|c| c.chart.drawn()).map(|c| c.path));
    let generated = bounded::read(&dir.join("report.html"), 8 * bounded::MIB, Links::Follow, "reports").is_ok_and(|page| is_generated_page(&page));
    if generated {
        ours.insert("report.html".to_string());
    }
    ours
}

/// Whether a page is one `runner report` generated: its generator line near its top.
pub fn is_generated_page(page: &[u8]) -> bool {
    page.windows(GENERATOR.len()).take(4096).any(|w| w == GENERATOR)
}

/// What runner's report.html says of itself near its top.
const GENERATOR: &[u8] = b"<meta name=\"generator\" content=\"runner report\">";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_files_are_replaced_or_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("plots")).expect("mkdir");
        // Nothing there yet: every name is free.
        Outputs::open(d, false).expect("open").check(["RESULTS.md", "plots/a.svg"]).expect("nothing in the way");
        for f in ["RESULTS.md", "plots/a.svg", "plots/b.svg", "plots/arch.svg"] {
            std::fs::write(d.join(f), "x").expect("write");
        }
        // No list and no results.json of runner's: nothing there is runner's.
        let e = Outputs::open(d, false).expect("open").check(["RESULTS.md"]).expect_err("foreign");
        assert!(e.to_string().contains("RESULTS.md` is in the way") && e.to_string().contains("--force"), "{e}");
        Outputs::open(d, true).expect("open").check(["RESULTS.md"]).expect("--force");

        let outputs = Outputs::open(d, true).expect("open");
        outputs.commit(&["RESULTS.md".into(), "plots/a.svg".into(), "plots/b.svg".into()]).expect("commit");
        let outputs = Outputs::open(d, false).expect("open");
        outputs.check(["RESULTS.md", "plots/a.svg"]).expect("runner's own");
        let e = outputs.check(["plots/arch.svg"]).expect_err("not listed");
        assert!(e.to_string().contains("not in the directory's .runner-outputs.json"), "{e}");
        // b is no longer drawn: removed; arch.svg was never runner's: kept.
        outputs.commit(&["RESULTS.md".into(), "plots/a.svg".into()]).expect("commit");
        assert!(!d.join("plots/b.svg").exists());
        assert!(d.join("plots/arch.svg").exists() && d.join("plots/a.svg").exists());
        let text = std::fs::read_to_string(d.join(RECORD)).expect("record");
        let record: Record = serde_json::from_str(&text).expect("parse");
        assert_eq!(record.files, vec!["RESULTS.md".to_string(), "plots/a.svg".to_string()]);

        std::fs::write(d.join(RECORD), r#"{"files": ["../escape"]}"#).expect("write");
        let e = Outputs::open(d, false).expect_err("outside");
        assert!(e.to_string().contains("`../escape` is not a path inside the directory"), "{e}");
    }

    #[test]
    fn nothing_is_written_or_removed_through_a_linked_plots_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (d, elsewhere) = (dir.path().join("report"), dir.path().join("elsewhere"));
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::create_dir_all(&elsewhere).expect("mkdir");
        std::fs::write(elsewhere.join("precious.svg"), "keep").expect("write");
        std::fs::write(d.join(RECORD), r#"{"files": ["RESULTS.md", "plots/precious.svg"]}"#).expect("write");
        std::os::unix::fs::symlink(&elsewhere, d.join("plots")).expect("symlink");
        for force in [false, true] {
            let e = Outputs::open(&d, force).expect_err("a linked plots/");
            assert!(matches!(e, OutputsError::Link { .. }) && e.to_string().contains("symbolic link"), "{e}");
        }
        assert_eq!(std::fs::read_to_string(elsewhere.join("precious.svg")).expect("still there"), "keep");
        // A listed name whose directory is a link is refused by `check` and `commit` as well.
        std::fs::remove_file(d.join("plots")).expect("unlink");
        std::fs::create_dir_all(d.join("deep")).expect("mkdir");
        std::os::unix::fs::symlink(&elsewhere, d.join("deep/plots")).expect("symlink");
        let outputs = Outputs::open(&d, true).expect("open");
        assert!(matches!(outputs.check(["deep/plots/precious.svg"]), Err(OutputsError::Link { .. })));
    }

    #[test]
    fn a_directory_an_earlier_runner_wrote_is_taken_as_runners() {
        let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::create_dir_all(d.join("plots")).expect("mkdir");
        std::fs::copy(root.join("results/quickstart/results.json"), d.join("results.json")).expect("copy");
        for f in ["RESULTS.md", "plots/latency-seconds.svg", "plots/arch.svg", "report.html"] {
            std::fs::write(d.join(f), "x").expect("write");
        }
        let outputs = Outputs::open(d, false).expect("open");
        outputs.check(["RESULTS.md", "results.json", "plots/latency-seconds.svg", "plots/new-chart.svg"]).expect("runner's");
        // A report.html without runner's generator line is someone else's.
        assert!(outputs.check(["report.html"]).is_err());
        outputs.commit(&["RESULTS.md".into(), "results.json".into()]).expect("commit");
        assert!(!d.join("plots/latency-seconds.svg").exists(), "a chart the old results.json had, no longer drawn");
        assert!(d.join("plots/arch.svg").exists() && d.join("report.html").exists());
    }
}
