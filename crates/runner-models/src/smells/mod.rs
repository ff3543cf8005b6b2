//! Smells: static-analysis findings on a subject's changed lines, the second half of
//! CRScore's pseudo-references (the first is a model's claims about the change).
//!
//! Real analyzers run on the changed files as they are at the reviewed commit — ruff for
//! Python, JSHint for JavaScript, clippy (or plain rustc when clippy is not installed) for
//! Rust — and a smell is kept only when its line is a line the change adds. The analyzers
//! are pinned and installed by `scripts/analyzers/install.sh` into `.tools/`; their exact
//! versions and runner's settings for them are [`AnalyzerSet::identity`], which goes into
//! cache keys and provenance.
//!
//! Hostile input: the files are read from git (a blob at the head commit, never the work
//! tree), only paths that stay inside the scratch directory are written, no configuration of
//! the repository is read (ruff `--isolated`, JSHint with runner's own config, rustc with
//! fixed flags and no dependencies), and each analyzer runs in its own session with a
//! cleared environment, CPU, file-size and output bounds ([`run`]).

mod parse;
pub mod run;

use crate::subject::diff::FileDiff;
use crate::subject::{corpus, git, Subject};
use run::{Ending, Limits};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};

/// The ruff version `scripts/analyzers/install.sh` installs (PyPI).
pub const RUFF_VERSION: &str = "0.17.5";
/// The JSHint version `scripts/analyzers/install.sh` installs (npm, from the committed lock).
pub const JSHINT_VERSION: &str = "2.13.6";
/// The command that installs the analyzers.
pub const INSTALL: &str = "scripts/analyzers/install.sh";

/// JSHint's configuration: runner's, never the repository's.
const JSHINTRC: &str = include_str!("../../../../scripts/analyzers/jshintrc.json");
/// A JSHint reporter printing JSON.
const JSHINT_REPORTER: &str = include_str!("../../../../scripts/analyzers/jshint-reporter.js");
/// `ruff check` arguments before the files.
const RUFF_ARGS: &[&str] = &["check", "--isolated", "--no-cache", "--output-format", "json"];
/// rustc/clippy-driver arguments before `--out-dir` and the file: each file is checked as a
/// crate of its own, so `dead_code` (an item used elsewhere in its crate) is not a smell.
const RUST_ARGS: &[&str] =
    &["--edition", "2021", "--crate-type=lib", "--crate-name", "smells", "--emit=metadata", "--error-format=json", "--cap-lints=warn", "-A", "dead_code"];
/// clippy's configuration: its defaults.
const CLIPPY_TOML: &str = "# runner's clippy configuration: clippy's defaults\n";
/// Larger head-side files are not analyzed.
pub const MAX_SOURCE_BYTES: u64 = 2 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SmellError {
    #[error("unknown analyzer `{0}`: expected one of ruff, jshint, clippy, rustc")]
    Unknown(String),
    #[error("{what} is not installed ({looked}): {install}")]
    Missing { what: String, looked: String, install: String },
    #[error("`{program} --version` did not give a version ({why}); reinstall it with `{INSTALL}`")]
    Version { program: String, why: String },
    /// The installed analyzer is not the one `[pseudo-references] analyzer-versions` pins.
    #[error("the manifest pins {pinned} (`analyzer-versions`), but the analyzer found is {found}: install the pinned one (`{INSTALL}`) or change the pin")]
    Pin { pinned: String, found: String },
    /// A set whose versions were pinned or read from the cache was asked to run.
    #[error("the analyzers were not looked up (their versions came from the manifest or the cache), so none can run: a smells call that is not cached needs an execution without --frozen")]
    NotInstalled,
    /// `why` is how it ended, with the tail of its stderr when it printed any.
    #[error("{analyzer} failed on {files}: {why}")]
    Failed { analyzer: String, files: String, why: String },
    #[error("{analyzer}'s output could not be read: {message}")]
    Output { analyzer: String, message: String },
    #[error("cannot read `{path}` at {sha}: {source}")]
    Git { path: String, sha: String, source: git::GitError },
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SmellError {
    let what = what.into();
    move |source| SmellError::Io { what, source }
}

/// An analyzer, by the language it checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum AnalyzerKind {
    /// ruff, for `.py`.
    Ruff,
    /// JSHint, for `.js`, `.mjs`, `.cjs`.
    Jshint,
    /// clippy-driver when the toolchain has it, else rustc's own warnings, for `.rs`.
    Rust,
}

impl AnalyzerKind {
    pub const ALL: [AnalyzerKind; 3] = [AnalyzerKind::Ruff, AnalyzerKind::Jshint, AnalyzerKind::Rust];

    /// `ruff`, `jshint`, `rust`.
    pub fn as_str(self) -> &'static str {
        match self {
            AnalyzerKind::Ruff => "ruff",
            AnalyzerKind::Jshint => "jshint",
            AnalyzerKind::Rust => "rust",
        }
    }

    /// The manifest's names: `ruff`, `jshint`, and `clippy`, `rustc` or `rust` for Rust
    /// (clippy-driver is used when installed, rustc otherwise; [`AnalyzerSet::identity`]
    /// says which ran).
    pub fn parse(name: &str) -> Result<Self, SmellError> {
        match name {
            "ruff" => Ok(AnalyzerKind::Ruff),
            "jshint" => Ok(AnalyzerKind::Jshint),
            "clippy" | "rustc" | "rust" => Ok(AnalyzerKind::Rust),
            other => Err(SmellError::Unknown(other.to_string())),
        }
    }

    /// The analyzer that checks a file, by its extension.
    pub fn for_path(path: &str) -> Option<Self> {
        match Path::new(path).extension()?.to_str()? {
            "py" => Some(AnalyzerKind::Ruff),
            "js" | "mjs" | "cjs" => Some(AnalyzerKind::Jshint),
            "rs" => Some(AnalyzerKind::Rust),
            _ => None,
        }
    }
}

/// One analyzer found and asked for its version (or, in a pinned set, only named and versioned).
#[derive(Debug, Clone)]
struct Analyzer {
    kind: AnalyzerKind,
    /// `ruff`, `jshint`, `clippy` or `rustc`: what [`Smell::analyzer`] says.
    name: &'static str,
    program: PathBuf,
    /// Arguments before runner's own (JSHint: its script, run by `node`).
    lead: Vec<OsString>,
    version: String,
}

/// The analyzers of an experiment, found and versioned — or only versioned, from the
/// manifest's pins or the cache ([`AnalyzerSet::pinned`]), for an execution that runs none.
#[derive(Debug, Clone)]
pub struct AnalyzerSet {
    analyzers: Vec<Analyzer>,
    limits: Limits,
    /// Versions only: nothing was looked up, and [`analyze`] refuses to run.
    pinned: bool,
}

impl AnalyzerSet {
    /// Finds each analyzer — under `tools_dir` (where `scripts/analyzers/install.sh` puts
    /// them: `venv/bin/ruff`, `node/node_modules/.bin/jshint`), else on `PATH`; Rust from
    /// the toolchain `rustc --print sysroot` names, clippy-driver first — and reads its
    /// exact version, running it the way [`analyze`] will (cleared environment). A missing
    /// one is an error naming what to install.
    pub fn resolve(kinds: &[AnalyzerKind], tools_dir: &Path) -> Result<AnalyzerSet, SmellError> {
        Self::resolve_in(kinds, tools_dir, std::env::var_os("PATH").as_deref())
    }

    /// [`resolve`](Self::resolve) with `search` as the `PATH` to look on.
    fn resolve_in(kinds: &[AnalyzerKind], tools_dir: &Path, search: Option<&OsStr>) -> Result<AnalyzerSet, SmellError> {
        let kinds: BTreeSet<AnalyzerKind> = kinds.iter().copied().collect();
        let sandbox = tempfile::tempdir().map_err(io("cannot create a temporary directory"))?;
        for d in ["home", "tmp"] {
            std::fs::create_dir_all(sandbox.path().join(d)).map_err(io("cannot create a temporary directory"))?;
        }
        let mut analyzers = Vec::new();
        for kind in kinds {
            analyzers.push(match kind {
                AnalyzerKind::Ruff => resolve_ruff(tools_dir, search, sandbox.path())?,
                AnalyzerKind::Jshint => resolve_jshint(tools_dir, search, sandbox.path())?,
                AnalyzerKind::Rust => resolve_rust(search, sandbox.path())?,
            });
        }
        Ok(AnalyzerSet { analyzers, limits: Limits::default(), pinned: false })
    }

    /// A set that names each analyzer and its exact version without looking for it: its
    /// [`identity`](Self::identity) is the one a set found with those versions has, so the keys
    /// of what they produced can be computed, but [`analyze`] refuses to run it. `versions` maps
    /// the name that runs (`ruff`, `jshint`, `clippy` or `rustc`) to the version as keys hold it;
    /// every kind needs one.
    pub fn pinned(kinds: &[AnalyzerKind], versions: &BTreeMap<String, String>) -> Result<AnalyzerSet, String> {
        let kinds: BTreeSet<AnalyzerKind> = kinds.iter().copied().collect();
        let mut analyzers = Vec::new();
        for kind in kinds {
            let names: &[&'static str] = match kind {
                AnalyzerKind::Ruff => &["ruff"],
                AnalyzerKind::Jshint => &["jshint"],
                AnalyzerKind::Rust => &["clippy", "rustc"],
            };
            let found: Vec<(&'static str, &String)> = names.iter().filter_map(|n| versions.get(*n).map(|v| (*n, v))).collect();
            let [(name, version)] = found.as_slice() else {
                return Err(format!("no single version of `{}` is given (names: {})", kind.as_str(), names.join(", ")));
            };
            analyzers.push(Analyzer { kind, name, program: PathBuf::new(), lead: Vec::new(), version: (*version).clone() });
        }
        Ok(AnalyzerSet { analyzers, limits: Limits::default(), pinned: true })
    }

    /// The pinned set whose [`identity`](Self::identity) is exactly `identity` (one written by
    /// these analyzers' keys, runner's settings for them included), if there is one.
    pub fn from_identity(kinds: &[AnalyzerKind], identity: &serde_json::Value) -> Option<AnalyzerSet> {
        let versions: BTreeMap<String, String> =
            identity.as_object()?.iter().filter(|(k, _)| *k != "settings").map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect::<Option<_>>()?;
        let set = Self::pinned(kinds, &versions).ok()?;
        (set.identity() == *identity).then_some(set)
    }

    /// Checks found analyzers against pinned versions (by the name that runs): each must be
    /// pinned, under its own name, with the version found.
    pub fn check_pins(&self, versions: &BTreeMap<String, String>) -> Result<(), SmellError> {
        for a in &self.analyzers {
            match versions.get(a.name) {
                Some(pinned) if *pinned == a.version => {}
                Some(pinned) => return Err(SmellError::Pin { pinned: format!("`{}` {pinned:?}", a.name), found: format!("{:?}", a.version) }),
                None => {
                    let pinned = versions
                        .iter()
                        .find(|(name, _)| AnalyzerKind::parse(name).ok() == Some(a.kind))
                        .map_or_else(|| "no version".to_string(), |(name, v)| format!("`{name}` {v:?}"));
                    return Err(SmellError::Pin { pinned, found: format!("`{}` {:?}", a.name, a.version) });
                }
            }
        }
        Ok(())
    }

    /// Whether the analyzers were only named and versioned, not found (see [`Self::pinned`]).
    pub fn is_pinned(&self) -> bool {
        self.pinned
    }

    /// The same analyzers under other bounds.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn kinds(&self) -> Vec<AnalyzerKind> {
        self.analyzers.iter().map(|a| a.kind).collect()
    }

    /// What the smells depend on, for cache keys and provenance: each analyzer's name and
    /// exact version (`{"ruff": "ruff 0.17.5", "jshint": "jshint v2.13.6 (node v20.20.2)",
    /// "clippy": "clippy 0.1.95 (…); rustc 1.95.0 (…)"}`), and `settings`: blake3 over
    /// runner's fixed arguments and configuration for those analyzers.
    pub fn identity(&self) -> serde_json::Value {
        let mut map = serde_json::Map::new();
        let mut settings = blake3::Hasher::new();
        for a in &self.analyzers {
            map.insert(a.name.to_string(), serde_json::Value::String(a.version.clone()));
            let fixed: Vec<&str> = match a.kind {
                AnalyzerKind::Ruff => RUFF_ARGS.to_vec(),
                AnalyzerKind::Jshint => vec![JSHINTRC, JSHINT_REPORTER],
                AnalyzerKind::Rust => RUST_ARGS.iter().copied().chain([CLIPPY_TOML]).collect(),
            };
            settings.update(a.name.as_bytes());
            for part in fixed {
                settings.update(&(part.len() as u64).to_le_bytes());
                settings.update(part.as_bytes());
            }
        }
        map.insert("settings".into(), serde_json::Value::String(settings.finalize().to_hex()[..16].to_string()));
        serde_json::Value::Object(map)
    }

    fn get(&self, kind: AnalyzerKind) -> Option<&Analyzer> {
        self.analyzers.iter().find(|a| a.kind == kind)
    }
}

fn missing(what: &str, looked: Vec<PathBuf>, install: String) -> SmellError {
    let looked = looked.iter().map(|p| format!("`{}`", p.display())).chain(std::iter::once("PATH".to_string())).collect::<Vec<_>>().join(", ");
    SmellError::Missing { what: what.to_string(), looked: format!("looked in {looked}"), install }
}

/// `program [lead…] --version`, hermetic and bounded: its first non-empty output line.
fn version_of(program: &Path, lead: &[OsString], sandbox: &Path) -> Result<String, SmellError> {
    let mut args = lead.to_vec();
    args.push("--version".into());
    let limits = Limits { cpu: std::time::Duration::from_secs(30), wall: std::time::Duration::from_secs(120), output_bytes: 64 * 1024, ..Limits::default() };
    let command = std::iter::once(program.as_os_str()).chain(lead.iter().map(OsString::as_os_str)).map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    let fail = |why: String| SmellError::Version { program: command.clone(), why };
    let done = run::run(program, &args, sandbox, &run::hermetic_env(sandbox), limits).map_err(fail)?;
    if done.ending != Ending::Exited(0) {
        return Err(fail(format!("{}: {}", done.ending, run::tail(&done.stderr, 300))));
    }
    [&done.stdout, &done.stderr]
        .iter()
        .flat_map(|out| String::from_utf8_lossy(out).lines().map(str::trim).map(String::from).collect::<Vec<_>>())
        .find(|l| !l.is_empty())
        .ok_or_else(|| fail("it printed nothing".into()))
}

fn resolve_ruff(tools: &Path, search: Option<&OsStr>, sandbox: &Path) -> Result<Analyzer, SmellError> {
    let local = tools.join("venv/bin/ruff");
    let program = Some(local.clone()).filter(|p| run::is_executable(p)).or_else(|| run::on_path("ruff", search)).ok_or_else(|| {
        missing("ruff", vec![local], format!("run `{INSTALL}` (it installs ruff=={RUFF_VERSION} from PyPI into .tools/venv), or put ruff on PATH"))
    })?;
    let version = version_of(&program, &[], sandbox)?;
    Ok(Analyzer { kind: AnalyzerKind::Ruff, name: "ruff", program, lead: Vec::new(), version })
}

fn resolve_jshint(tools: &Path, search: Option<&OsStr>, sandbox: &Path) -> Result<Analyzer, SmellError> {
    let local = tools.join("node/node_modules/.bin/jshint");
    let install = format!("run `{INSTALL}` (it installs jshint@{JSHINT_VERSION} from npm into .tools/node), or put jshint on PATH");
    let script = Some(local.clone())
        .filter(|p| run::is_executable(p))
        .or_else(|| run::on_path("jshint", search))
        .ok_or_else(|| missing("jshint", vec![local], install))?;
    // The script itself, run by node: the child's PATH then decides nothing.
    let script = std::fs::canonicalize(&script).map_err(io(format!("cannot resolve `{}`", script.display())))?;
    let node =
        run::on_path("node", search).ok_or_else(|| missing("node (for jshint)", Vec::new(), "install Node.js (Debian: apt-get install nodejs)".into()))?;
    let lead = vec![script.into_os_string()];
    let version = version_of(&node, &lead, sandbox)?;
    let node_version = version_of(&node, &[], sandbox)?;
    Ok(Analyzer { kind: AnalyzerKind::Jshint, name: "jshint", program: node, lead, version: format!("{version} (node {node_version})") })
}

fn resolve_rust(search: Option<&OsStr>, sandbox: &Path) -> Result<Analyzer, SmellError> {
    // The toolchain's own binaries, found in runner's environment: a rustup proxy needs a
    // HOME the analyzer does not get.
    let sysroot = run::on_path("rustc", search)
        .and_then(|rustc| {
            std::process::Command::new(rustc).args(["--print", "sysroot"]).stdin(std::process::Stdio::null()).stderr(std::process::Stdio::null()).output().ok()
        })
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let in_sysroot = |name: &str| sysroot.as_ref().map(|s| s.join("bin").join(name)).filter(|p| run::is_executable(p));
    let rustc = in_sysroot("rustc").or_else(|| run::on_path("rustc", search));
    let clippy = in_sysroot("clippy-driver").or_else(|| run::on_path("clippy-driver", search));
    if let Some(clippy) = clippy {
        if let Ok(version) = version_of(&clippy, &[], sandbox) {
            let rustc_version = rustc.as_deref().and_then(|r| version_of(r, &[], sandbox).ok());
            let version = rustc_version.map_or(version.clone(), |r| format!("{version}; {r}"));
            return Ok(Analyzer { kind: AnalyzerKind::Rust, name: "clippy", program: clippy, lead: Vec::new(), version });
        }
    }
    let rustc = rustc.ok_or_else(|| missing("rustc", Vec::new(), "install Rust with rustup (and `rustup component add clippy` for clippy's lints)".into()))?;
    let version = version_of(&rustc, &[], sandbox)?;
    Ok(Analyzer { kind: AnalyzerKind::Rust, name: "rustc", program: rustc, lead: Vec::new(), version })
}

/// A changed file and the new-side numbers of the lines the change adds to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    pub lines: BTreeSet<u32>,
}

/// Every changed file that still exists after the change, in path order, with its added
/// lines (empty when the change only removes lines), from the subject's parsed diff.
pub fn changed_files(subject: &Subject) -> Vec<ChangedFile> {
    files_of(&subject.files)
}

fn files_of(files: &[FileDiff]) -> Vec<ChangedFile> {
    let mut by_path: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for file in files {
        // A deleted file: every hunk ends at `+0,0`.
        if !file.hunks.is_empty() && file.hunks.iter().all(|h| h.new_start == 0 && h.new_len == 0) {
            continue;
        }
        by_path.entry(&file.path).or_default().extend(file.hunks.iter().flat_map(|h| h.added_lines()).map(|(line, _)| line));
    }
    by_path.into_iter().map(|(path, lines)| ChangedFile { path: path.to_string(), lines }).collect()
}

/// One analyzer finding on a changed line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Smell {
    /// `ruff`, `jshint`, `clippy` or `rustc`.
    pub analyzer: String,
    pub path: String,
    pub line: u32,
    /// The analyzer's rule: `F401`, `W033`, `unused_variables`, `clippy::map_clone`.
    pub code: String,
    pub message: String,
}

impl Smell {
    /// The pseudo-reference sentence, in CRScore's wording for analyzer issues
    /// (`line 73, UnnecessaryImport:\tUnused import 'x'` in its released study data):
    /// `line {line}, {code}:\t{message}`.
    pub fn text(&self) -> String {
        format!("line {}, {}:\t{}", self.line, self.code, self.message)
    }

    fn order_key(&self) -> (&str, u32, &str, &str, &str) {
        (&self.path, self.line, &self.analyzer, &self.code, &self.message)
    }
}

/// A repository path that stays inside whatever directory it is joined to and out of any
/// `.git`: one that [`corpus::normalize_relative_path`] leaves as it is (relative, no empty,
/// `.` or `..` part, no `\`).
fn safe_relative(path: &str) -> Option<PathBuf> {
    (corpus::normalize_relative_path(path).as_deref() == Some(path)).then(|| PathBuf::from(path))
}

/// The head-side content of `path`: a regular file's blob at `sha` of at most
/// [`MAX_SOURCE_BYTES`], else `None` (a symlink, a submodule, missing, too large).
fn head_blob(repo: &Path, sha: &str, path: &str) -> Result<Option<Vec<u8>>, SmellError> {
    let err = |source| SmellError::Git { path: path.to_string(), sha: sha.to_string(), source };
    let listing = git::git_bytes(repo, &["--literal-pathspecs", "ls-tree", "-l", "-z", sha, "--", path], &[]).map_err(err)?;
    let entry = String::from_utf8_lossy(&listing);
    let Some((meta, listed)) = entry.split('\0').next().and_then(|e| e.split_once('\t')) else { return Ok(None) };
    let fields: Vec<&str> = meta.split_whitespace().collect();
    let (mode, kind, oid, size) = match fields.as_slice() {
        [mode, kind, oid, size] => (*mode, *kind, *oid, size.parse::<u64>().unwrap_or(u64::MAX)),
        _ => return Ok(None),
    };
    if listed != path || kind != "blob" || !matches!(mode, "100644" | "100755") || size > MAX_SOURCE_BYTES {
        return Ok(None);
    }
    git::git_bytes(repo, &["cat-file", "blob", oid], &[]).map(Some).map_err(err)
}

/// Runs each analyzer of `set` on the subject's changed files it checks (by extension), as
/// they are at `subject.head_sha`, in a fresh directory under `scratch` (removed after), and
/// returns the smells on changed lines, sorted by path, line, analyzer, code and message.
/// Blocking. A file whose path would leave the directory, or that is not a regular file of
/// at most [`MAX_SOURCE_BYTES`] at the head, is skipped. An analyzer that finds nothing
/// gives no smells; one that crashes, runs out of its bounds or prints what does not parse
/// is an error naming it.
pub fn analyze(set: &AnalyzerSet, subject: &Subject, scratch: &Path) -> Result<Vec<Smell>, SmellError> {
    if set.pinned {
        return Err(SmellError::NotInstalled);
    }
    let mut todo: BTreeMap<AnalyzerKind, Vec<ChangedFile>> = BTreeMap::new();
    for file in changed_files(subject) {
        let Some(kind) = AnalyzerKind::for_path(&file.path) else { continue };
        if file.lines.is_empty() || set.get(kind).is_none() || safe_relative(&file.path).is_none() {
            continue;
        }
        todo.entry(kind).or_default().push(file);
    }
    if todo.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(scratch).map_err(io(format!("cannot create `{}`", scratch.display())))?;
    let dir = tempfile::Builder::new().prefix("smells-").tempdir_in(scratch).map_err(io(format!("cannot create a directory in `{}`", scratch.display())))?;
    let root = dir.path().join("files");
    for d in ["files", "home", "tmp", "runner", "out"] {
        std::fs::create_dir_all(dir.path().join(d)).map_err(io("cannot create the scratch directory"))?;
    }
    let mut smells = Vec::new();
    for (kind, files) in todo {
        let mut written = Vec::new();
        for file in files {
            let Some(rel) = safe_relative(&file.path) else { continue };
            let Some(bytes) = head_blob(&subject.repo_dir, &subject.head_sha, &file.path)? else { continue };
            let target = root.join(&rel);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).map_err(io(format!("cannot create the directory of `{}`", file.path)))?;
            }
            std::fs::write(&target, bytes).map_err(io(format!("cannot write `{}`", target.display())))?;
            written.push(file);
        }
        if written.is_empty() {
            continue;
        }
        let Some(analyzer) = set.get(kind) else { continue };
        smells.extend(run_analyzer(analyzer, &written, dir.path(), set.limits)?);
    }
    smells.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    smells.dedup();
    Ok(smells)
}

/// `./<path>`: a file argument no analyzer can take for an option.
fn argument(path: &str) -> OsString {
    format!("./{path}").into()
}

fn run_analyzer(analyzer: &Analyzer, files: &[ChangedFile], sandbox: &Path, limits: Limits) -> Result<Vec<Smell>, SmellError> {
    let root = sandbox.join("files");
    let mut env = run::hermetic_env(sandbox);
    if analyzer.kind == AnalyzerKind::Rust {
        // clippy looks for `clippy.toml` from CLIPPY_CONF_DIR (else the working directory)
        // upwards: runner's own, empty one is found first, so none above the scratch applies.
        std::fs::write(sandbox.join("runner/clippy.toml"), CLIPPY_TOML).map_err(io("cannot write clippy's configuration"))?;
        env.push(("CLIPPY_CONF_DIR".into(), sandbox.join("runner").into_os_string()));
    }
    let go = |args: Vec<OsString>, ok: &[i32], names: &str| -> Result<run::Finished, SmellError> {
        let mut all = analyzer.lead.clone();
        all.extend(args);
        let failed = |why: String| SmellError::Failed { analyzer: analyzer.name.into(), files: names.into(), why };
        let done = run::run(&analyzer.program, &all, &root, &env, limits).map_err(failed)?;
        match done.ending {
            Ending::Exited(code) if ok.contains(&code) => Ok(done),
            ref ending => {
                let stderr = run::tail(&done.stderr, 2000);
                Err(failed(if stderr.is_empty() { ending.to_string() } else { format!("{ending}: {stderr}") }))
            }
        }
    };
    let names = files.iter().map(|f| format!("`{}`", f.path)).collect::<Vec<_>>().join(", ");
    let bad = |message: String| SmellError::Output { analyzer: analyzer.name.into(), message };
    let reported = match analyzer.kind {
        AnalyzerKind::Ruff => {
            let mut args: Vec<OsString> = RUFF_ARGS.iter().map(OsString::from).collect();
            args.extend(files.iter().map(|f| argument(&f.path)));
            // 0: nothing found, 1: findings; 2: ruff itself failed.
            let done = go(args, &[0, 1], &names)?;
            parse::ruff(&done.stdout).map_err(bad)?
        }
        AnalyzerKind::Jshint => {
            let runner = sandbox.join("runner");
            let (config, reporter, ignore) = (runner.join("jshintrc.json"), runner.join("jshint-reporter.cjs"), runner.join("jshintignore"));
            std::fs::write(&config, JSHINTRC).map_err(io("cannot write JSHint's configuration"))?;
            std::fs::write(&reporter, JSHINT_REPORTER).map_err(io("cannot write JSHint's reporter"))?;
            // The reporter is `.cjs`, CommonJS whatever a `package.json` above says; the
            // ignore file is empty: JSHint otherwise looks for `.jshintignore` from its
            // directory upwards, and one above the scratch directory could silence it.
            std::fs::write(&ignore, "").map_err(io("cannot write JSHint's ignore file"))?;
            let mut args: Vec<OsString> = ["--config", "--reporter", "--exclude-path"]
                .into_iter()
                .map(OsString::from)
                .zip([config, reporter, ignore].map(PathBuf::into_os_string))
                .flat_map(|(flag, value)| [flag, value])
                .collect();
            args.extend(files.iter().map(|f| argument(&f.path)));
            // 0: nothing found, 2: findings; 1: a usage or configuration error.
            let done = go(args, &[0, 2], &names)?;
            parse::jshint(&done.stdout).map_err(bad)?
        }
        AnalyzerKind::Rust => {
            // One crate a file; 1 is "errors found" (a file checked outside its crate has
            // some); 101 is a compiler crash.
            let mut reported = Vec::new();
            for (i, file) in files.iter().enumerate() {
                let out = sandbox.join("out").join(i.to_string());
                std::fs::create_dir_all(&out).map_err(io("cannot create rustc's output directory"))?;
                let mut args: Vec<OsString> = RUST_ARGS.iter().map(OsString::from).collect();
                args.extend(["--out-dir".into(), out.into_os_string(), argument(&file.path)]);
                let done = go(args, &[0, 1], &format!("`{}`", file.path))?;
                reported.extend(parse::rustc(&done.stderr).map_err(bad)?);
            }
            reported
        }
    };
    let canonical_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
    let by_path: BTreeMap<&str, &ChangedFile> = files.iter().map(|f| (f.path.as_str(), f)).collect();
    Ok(reported
        .into_iter()
        .filter_map(|r| {
            let path = relative_to(&r.file, &root, &canonical_root)?;
            let file = by_path.get(path.as_str())?;
            file.lines.contains(&r.line).then(|| Smell { analyzer: analyzer.name.into(), path, line: r.line, code: r.code, message: r.message })
        })
        .collect())
}

/// The repository path of a file as an analyzer named it: relative to the files root
/// (`./a/b.py`), or absolute under it, either spelling of the root.
fn relative_to(reported: &str, root: &Path, canonical_root: &Path) -> Option<String> {
    let p = Path::new(reported);
    let rel = if p.is_absolute() { p.strip_prefix(root).or_else(|_| p.strip_prefix(canonical_root)).ok()? } else { p };
    let parts: Vec<&str> = rel.components().filter(|c| !matches!(c, Component::CurDir)).map(|c| c.as_os_str().to_str()).collect::<Option<_>>()?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests;
