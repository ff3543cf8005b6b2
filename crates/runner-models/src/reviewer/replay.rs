//! The `replay` reviewer: findings another tool (or an earlier process) produced, read from
//! captured files instead of running a reviewer.
//!
//! One file per subject (`path` with `{subject}`), or one file for all subjects whose rows
//! name their subject (CSV/JSONL's `subject` column, seed 002's `caseId`). Formats: stet's
//! `{"findings":[…]}` JSON and NDJSON stream (`stet.rs`, through the stet parser in
//! `parse.rs`), SARIF 2.1.0 (`sarif.rs`), CSV and JSONL tables (`table.rs`) and seed 002's
//! captured results (`seed002.rs`), and AACR-Bench's OCR-schema reviews (`ocr.rs`).
//!
//! Each run's key includes the blake3 of the bytes read for its subject (the whole file, or
//! that subject's rows of a shared file), so editing one capture re-runs only its subjects.
//! Paths never leave the manifest's project: a subject id is one plain file-name component,
//! and the resolved file (symbolic links followed) must lie inside the project root.

pub mod ocr;
pub(crate) mod sarif;
pub(crate) mod seed002;
pub(crate) mod stet;
pub(crate) mod table;

use super::{Cost, ReviewError, ReviewJob, ReviewOutput, Reviewer};
use crate::config::{project_root, resolve_path, TableReader};
use crate::finding::{Category, Finding, Severity};
use crate::matrix::Cell;
use futures::future::BoxFuture;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// The placeholder a per-subject `path` names its subject with.
pub(crate) const SUBJECT_PLACEHOLDER: &str = "{subject}";

/// Bumped when the same captured bytes would replay to different findings.
const REPLAY_VERSION: u32 = 1;

/// The formats a capture can be in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplayFormat {
    StetJson,
    StetNdjson,
    Sarif,
    Csv,
    Jsonl,
    Seed002,
    Ocr,
}

impl ReplayFormat {
    pub(crate) const NAMES: [&'static str; 7] = ["stet-json", "stet-ndjson", "sarif", "csv", "jsonl", "seed002", "ocr"];

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "stet-json" => Some(Self::StetJson),
            "stet-ndjson" => Some(Self::StetNdjson),
            "sarif" => Some(Self::Sarif),
            "csv" => Some(Self::Csv),
            "jsonl" => Some(Self::Jsonl),
            "seed002" => Some(Self::Seed002),
            "ocr" => Some(Self::Ocr),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::StetJson => "stet-json",
            Self::StetNdjson => "stet-ndjson",
            Self::Sarif => "sarif",
            Self::Csv => "csv",
            Self::Jsonl => "jsonl",
            Self::Seed002 => "seed002",
            Self::Ocr => "ocr",
        }
    }

    /// The format a file name implies: `.sarif`/`.sarif.json`, `.ndjson`, `.csv`, `.jsonl`,
    /// `.json` (stet's document). Seed 002's captured results are `.json` too: name them.
    pub(crate) fn infer(path: &str) -> Option<Self> {
        let lower = path.to_ascii_lowercase();
        [
            (".sarif.json", Self::Sarif),
            (".sarif", Self::Sarif),
            (".ndjson", Self::StetNdjson),
            (".csv", Self::Csv),
            (".jsonl", Self::Jsonl),
            (".json", Self::StetJson),
        ]
        .into_iter()
        .find(|(ext, _)| lower.ends_with(ext))
        .map(|(_, f)| f)
    }

    /// Whether a file of this format says which subject each finding belongs to, so one file
    /// can serve every subject.
    pub(crate) fn names_subjects(self) -> bool {
        matches!(self, Self::Csv | Self::Jsonl | Self::Seed002)
    }
}

/// What a subject without a capture means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Missing {
    /// The run fails, naming the file it looked for (the default).
    Error,
    /// The subject was reviewed and nothing was found.
    Empty,
}

/// How a capture's severities and categories become runner's: the manifest's own maps first
/// (`severity-map`, `category-map`, keys compared case-insensitively), then the built-in
/// table (see [`Mapping::severity`]); anything else is an error naming the value.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Mapping {
    pub severity_map: BTreeMap<String, Severity>,
    pub category_map: BTreeMap<String, Category>,
}

impl Mapping {
    /// runner's own names (`error`, `warning`, `info`, `nitpick`) and the synonyms of
    /// [`Severity::parse_lenient`]: `critical`/`high`/`blocker` → error, `warn`/`medium`/`major`
    /// → warning, `low`/`minor`/`note` → info, `nit`/`trivial` → nitpick.
    pub fn severity(&self, text: &str) -> Result<Severity, String> {
        let key = text.trim().to_ascii_lowercase();
        if let Some(s) = self.severity_map.get(&key) {
            return Ok(*s);
        }
        Severity::parse_lenient(&key).ok_or_else(|| {
            format!(
                "severity `{text}` is not one of error, warning, info, nitpick (or critical, high, blocker, warn, medium, major, low, minor, note, nit, trivial); map it with `severity-map = {{ \"{key}\" = \"warning\" }}`"
            )
        })
    }

    /// runner's categories (`bug`, `security`, … `best_practice`, spaces and hyphens read as
    /// `_`) and `best_practices`, `perf`, `docs`, `test`/`tests`.
    pub fn category(&self, text: &str) -> Result<Category, String> {
        let key = text.trim().to_ascii_lowercase();
        if let Some(c) = self.category_map.get(&key) {
            return Ok(*c);
        }
        Category::parse_lenient(&key).ok_or_else(|| {
            format!(
                "category `{text}` is not one of {}; map it with `category-map = {{ \"{key}\" = \"bug\" }}`",
                Category::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
            )
        })
    }

    /// A category only when the text maps to one (SARIF rule tags are free-form).
    pub fn category_if_known(&self, text: &str) -> Option<Category> {
        self.category(text).ok()
    }
}

/// The severity and category of a finding whose capture gives none.
pub const DEFAULT_SEVERITY: Severity = Severity::Info;
pub const DEFAULT_CATEGORY: Category = Category::Maintainability;

/// A `kind = "replay"` reviewer's configuration.
#[derive(Debug, Clone, Serialize)]
pub struct ReplaySpec {
    pub format: ReplayFormat,
    /// As written in the manifest, relative to its directory; may hold `{subject}`.
    pub path: String,
    pub missing: Missing,
    /// A label recorded as provenance (`tool = "Semgrep 1.2"`).
    pub tool: Option<String>,
    /// Seed 002: the strategy whose runs are replayed (optional when the file has one).
    pub strategy: Option<String>,
    pub mapping: Mapping,
    #[serde(skip)]
    pub base_dir: PathBuf,
}

impl ReplaySpec {
    pub fn per_subject(&self) -> bool {
        self.path.contains(SUBJECT_PLACEHOLDER)
    }
}

/// Reads a `kind = "replay"` reviewer table.
pub fn read_spec(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<ReplaySpec> {
    let problems = t.problems();
    let path = t.required_string("path")?;
    let mut ok = true;
    let written = path.get_ref();
    let rest = written.replace(SUBJECT_PLACEHOLDER, "");
    if written.trim().is_empty() || written.starts_with('/') || written.contains('\\') || written.contains('\0') {
        problems.push_with_help(
            path.span(),
            format!("replay `path` `{written}` must be a relative path"),
            "paths are relative to the manifest's directory and must stay inside its project",
        );
        ok = false;
    } else if rest.contains('{') || rest.contains('}') {
        problems.push_with_help(
            path.span(),
            format!("replay `path` `{written}` has a placeholder other than `{{subject}}`"),
            "only `{subject}` (the subject's id) is substituted",
        );
        ok = false;
    }
    let format = match t.string("format") {
        Some(f) => match ReplayFormat::parse(f.get_ref()) {
            Some(format) => Some(format),
            None => {
                let help = match crate::config::did_you_mean(f.get_ref(), ReplayFormat::NAMES) {
                    Some(best) => format!("did you mean `{best}`? (formats: {})", ReplayFormat::NAMES.join(", ")),
                    None => format!("formats: {}", ReplayFormat::NAMES.join(", ")),
                };
                problems.push_with_help(f.span(), format!("unknown replay format `{}`", f.get_ref()), help);
                None
            }
        },
        None => match ReplayFormat::infer(written) {
            Some(f) => Some(f),
            None => {
                problems.push_with_help(
                    path.span(),
                    format!("cannot tell the format of `{written}` from its extension"),
                    format!(
                        "set `format` ({}); extensions: .sarif, .sarif.json, .ndjson, .csv, .jsonl, .json (stet's document)",
                        ReplayFormat::NAMES.join(", ")
                    ),
                );
                None
            }
        },
    };
    if let Some(format) = format {
        if ok && !format.names_subjects() && !written.contains(SUBJECT_PLACEHOLDER) {
            problems.push_with_help(
                path.span(),
                format!("a {} file holds one subject's findings, so `path` needs `{{subject}}`", format.as_str()),
                "write one file per subject (`captured/{subject}.sarif`), or use a csv/jsonl file with a `subject` column",
            );
            ok = false;
        }
    }
    let missing = match t.string("missing") {
        None => Missing::Error,
        Some(m) => match m.get_ref().as_str() {
            "error" => Missing::Error,
            "empty" => Missing::Empty,
            other => {
                problems.push_with_help(
                    m.span(),
                    format!("unknown `missing` policy `{other}`"),
                    "`error` (a subject without a capture fails its run) or `empty` (reviewed, no findings)",
                );
                Missing::Error
            }
        },
    };
    let tool = t.string("tool").map(|s| s.into_inner()).filter(|s| !s.trim().is_empty());
    let strategy = t.string("strategy").map(|s| s.into_inner());
    if let (Some(_), Some(f)) = (&strategy, format) {
        if f != ReplayFormat::Seed002 {
            if let Some(span) = t.get("strategy").map(|v| v.span()) {
                problems.push(span, "`strategy` applies to seed 002's captured results only (`format = \"seed002\"`)");
                ok = false;
            }
        }
    }
    let mut mapping = Mapping::default();
    for (key, value) in t.string_map("severity-map").unwrap_or_default() {
        match Severity::parse_lenient(value.get_ref()).filter(|s| s.as_str() == value.get_ref().trim().to_ascii_lowercase()) {
            Some(s) => {
                mapping.severity_map.insert(key.get_ref().trim().to_ascii_lowercase(), s);
            }
            None => {
                problems.push_with_help(
                    value.span(),
                    format!("`severity-map` maps to `{}`, not a runner severity", value.get_ref()),
                    "severities: error, warning, info, nitpick",
                );
                ok = false;
            }
        }
    }
    for (key, value) in t.string_map("category-map").unwrap_or_default() {
        match Category::ALL.into_iter().find(|c| c.as_str() == value.get_ref().as_str()) {
            Some(c) => {
                mapping.category_map.insert(key.get_ref().trim().to_ascii_lowercase(), c);
            }
            None => {
                problems.push_with_help(
                    value.span(),
                    format!("`category-map` maps to `{}`, not a runner category", value.get_ref()),
                    format!("categories: {}", Category::ALL.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")),
                );
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    Some(ReplaySpec { format: format?, path: path.into_inner(), missing, tool, strategy, mapping, base_dir: base_dir.to_path_buf() })
}

/// What one format reader found for one subject (or one subject's rows of a shared file).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replayed {
    pub findings: Vec<Finding>,
    /// Deviations worth reporting that do not make the capture unusable (A7's schema table).
    pub schema_problems: Vec<String>,
    /// Counted things, e.g. SARIF results skipped as passes or suppressed.
    pub counters: BTreeMap<String, u64>,
    /// What the capture says the run cost (seed 002's provider-reported metrics).
    pub latency_ms: Option<u64>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// Provenance the format adds (seed 002's strategy and trial).
    pub provenance: BTreeMap<String, String>,
}

/// One subject's capture, read and parsed once per execution.
#[derive(Debug, Clone)]
enum Loaded {
    /// Read: the bytes (kept as the run's raw output), their blake3, and what they say.
    Read { raw: String, blake3: String, parsed: Result<Replayed, String> },
    /// No file, or no rows for the subject.
    Missing { what: String },
    /// Refused or unreadable: the run fails with this.
    Refused(String),
}

/// A shared file read once: per (subject, repeat) part, or why it cannot be used.
type SharedFile = Result<SharedParts, Box<Loaded>>;

/// The parts of a shared file: by subject (and, for seed 002, by repeat).
#[derive(Debug)]
struct SharedParts {
    file: String,
    parts: BTreeMap<(String, Option<u32>), Part>,
    /// Seed 002: how many trials the plan declares (repeats beyond it have no part).
    trials: Option<usize>,
}

/// The bytes of one subject's rows and what they replay to.
#[derive(Debug, Clone)]
pub struct Part {
    pub raw: String,
    pub replayed: Replayed,
}

pub struct ReplayReviewer {
    spec: ReplaySpec,
    /// The project root, canonical: no capture is read from outside it.
    root: Result<PathBuf, String>,
    per_subject: Mutex<BTreeMap<(String, u32), Arc<Loaded>>>,
    shared: OnceLock<SharedFile>,
}

impl ReplayReviewer {
    pub fn new(spec: ReplaySpec) -> Self {
        let base = if spec.base_dir.as_os_str().is_empty() { Path::new(".") } else { spec.base_dir.as_path() };
        let root = project_root(base);
        let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
        let root = root.canonicalize().map_err(|e| format!("cannot resolve the project directory `{}`: {e}", root.display()));
        Self { spec, root, per_subject: Mutex::new(BTreeMap::new()), shared: OnceLock::new() }
    }

    /// The capture a run replays, read on first use and kept for the execution, so the bytes
    /// hashed into the key are the bytes replayed.
    fn load(&self, subject: &str, repeat: u32) -> Arc<Loaded> {
        // Files per subject hold every repeat's findings alike; seed 002 keys by repeat.
        let repeat_key = if self.spec.format == ReplayFormat::Seed002 { repeat } else { 0 };
        let mut cache = self.per_subject.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(loaded) = cache.get(&(subject.to_string(), repeat_key)) {
            return loaded.clone();
        }
        let loaded = Arc::new(if self.spec.per_subject() { self.load_file(subject, repeat) } else { self.load_shared(subject, repeat) });
        cache.insert((subject.to_string(), repeat_key), loaded.clone());
        loaded
    }

    fn load_file(&self, subject: &str, repeat: u32) -> Loaded {
        let path = match self.resolve(Some(subject)) {
            Ok(Some(p)) => p,
            Ok(None) => {
                let written = self.spec.path.replace(SUBJECT_PLACEHOLDER, subject);
                return Loaded::Missing { what: format!("no captured file `{written}` for subject `{subject}`") };
            }
            Err(e) => return Loaded::Refused(e),
        };
        let file = self.display(&path);
        let raw = match read_capture(&path, &file) {
            Ok(raw) => raw,
            Err(e) => return Loaded::Refused(e),
        };
        let blake3 = blake3::hash(raw.as_bytes()).to_hex().to_string();
        let parsed = match self.spec.format {
            ReplayFormat::StetJson => stet::parse_document(&raw),
            ReplayFormat::StetNdjson => stet::parse_stream(&raw),
            ReplayFormat::Sarif => sarif::parse(&raw, &self.spec.mapping),
            ReplayFormat::Ocr => ocr::parse(&raw, subject),
            ReplayFormat::Csv | ReplayFormat::Jsonl | ReplayFormat::Seed002 => self.parse_shared(&raw).and_then(|parts| {
                // A per-subject table may still name its subject: it must be this one.
                let mut out = Replayed::default();
                let mut found = false;
                for ((s, r), part) in parts.parts {
                    if s != subject && !s.is_empty() {
                        return Err(format!("a row names subject `{s}`, but this file is `{subject}`'s"));
                    }
                    if self.spec.format == ReplayFormat::Seed002 && r != Some(repeat) {
                        continue;
                    }
                    found = true;
                    merge(&mut out, part.replayed);
                }
                if self.spec.format == ReplayFormat::Seed002 && !found {
                    return Err(format!("no run of case `{subject}` for repeat {repeat}"));
                }
                Ok(out)
            }),
        }
        .map_err(|e| format!("captured file `{file}`: {e}"));
        Loaded::Read { raw, blake3, parsed }
    }

    fn load_shared(&self, subject: &str, repeat: u32) -> Loaded {
        let shared = self.shared.get_or_init(|| {
            let refused = |e: String| Box::new(Loaded::Refused(e));
            let path =
                self.resolve(None).map_err(refused)?.ok_or_else(|| Box::new(Loaded::Missing { what: format!("no captured file `{}`", self.spec.path) }))?;
            let file = self.display(&path);
            let raw = read_capture(&path, &file).map_err(refused)?;
            let mut parts = self.parse_shared(&raw).map_err(|e| refused(format!("captured file `{file}`: {e}")))?;
            parts.file = file;
            Ok(parts)
        });
        let shared = match shared {
            Ok(s) => s,
            Err(e) => return (**e).clone(),
        };
        let key = (subject.to_string(), (self.spec.format == ReplayFormat::Seed002).then_some(repeat));
        match shared.parts.get(&key) {
            Some(part) => {
                Loaded::Read { raw: part.raw.clone(), blake3: blake3::hash(part.raw.as_bytes()).to_hex().to_string(), parsed: Ok(part.replayed.clone()) }
            }
            None => {
                let what = match shared.trials {
                    Some(n) if repeat as usize > n => format!(
                        "captured file `{}` declares {n} trial{} in `plan.trialIds`, so it has no trial for repeat {repeat}",
                        shared.file,
                        if n == 1 { "" } else { "s" }
                    ),
                    Some(_) => format!("captured file `{}` has no run of case `{subject}` for trial {repeat} of `plan.trialIds`", shared.file),
                    None => format!("captured file `{}` has no row for subject `{subject}`", shared.file),
                };
                Loaded::Missing { what }
            }
        }
    }

    /// Splits a file that can name its subjects into per-subject parts.
    fn parse_shared(&self, raw: &str) -> Result<SharedParts, String> {
        let (parts, trials) = match self.spec.format {
            ReplayFormat::Csv => (table::parse_csv(raw, &self.spec.mapping)?, None),
            ReplayFormat::Jsonl => (table::parse_jsonl(raw, &self.spec.mapping)?, None),
            ReplayFormat::Seed002 => {
                let file = seed002::parse(raw, self.spec.strategy.as_deref())?;
                (file.parts.into_iter().map(|((case, trial), part)| ((case, Some(trial)), part)).collect(), Some(file.trials))
            }
            other => return Err(format!("a {} file cannot hold several subjects", other.as_str())),
        };
        Ok(SharedParts { file: String::new(), parts, trials })
    }

    /// The capture's path for `subject` (`None`: the shared file), or `Ok(None)` when there
    /// is no such file. Refuses a subject id that is not one plain file name, a path that
    /// leaves the project, and a symbolic link that points out of it.
    fn resolve(&self, subject: Option<&str>) -> Result<Option<PathBuf>, String> {
        let root = self.root.as_ref().map_err(Clone::clone)?;
        let written = match subject {
            Some(s) => {
                if !is_plain_file_name(s) {
                    return Err(format!(
                        "subject `{s}` cannot name a captured file (`{}`): a subject id used in a path must be one plain file name, without `/`, `\\`, `..` or a leading `.`; use one csv/jsonl file with a `subject` column instead",
                        self.spec.path
                    ));
                }
                self.spec.path.replace(SUBJECT_PLACEHOLDER, s)
            }
            None => self.spec.path.clone(),
        };
        let base = self.base_dir().canonicalize().map_err(|e| format!("cannot resolve the manifest's directory `{}`: {e}", self.base_dir().display()))?;
        let lexical = resolve_path(&base, &written);
        if !lexical.starts_with(root) {
            return Err(format!(
                "captured file `{written}` resolves to `{}`, outside the project `{}`: captures must lie inside it",
                lexical.display(),
                root.display()
            ));
        }
        match std::fs::symlink_metadata(&lexical) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read captured file `{}`: {e}", self.display(&lexical))),
            Ok(_) => {}
        }
        let real = lexical.canonicalize().map_err(|e| format!("cannot resolve captured file `{}`: {e}", self.display(&lexical)))?;
        if !real.starts_with(root) {
            return Err(format!(
                "captured file `{}` is a symbolic link to `{}`, outside the project `{}`: captures must lie inside it",
                self.display(&lexical),
                real.display(),
                root.display()
            ));
        }
        Ok(Some(real))
    }

    /// Where the captures are, as reports show it: the manifest's `path` resolved and shown
    /// relative to the project root, `{subject}` kept.
    fn source_label(&self) -> String {
        match self.base_dir().canonicalize() {
            Ok(base) => self.display(&resolve_path(&base, &self.spec.path)),
            Err(_) => self.spec.path.clone(),
        }
    }

    /// The manifest's directory (`.` for a manifest named without one).
    fn base_dir(&self) -> &Path {
        if self.spec.base_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.spec.base_dir
        }
    }

    /// A path as reports show it: relative to the project root.
    fn display(&self, path: &Path) -> String {
        match &self.root {
            Ok(root) => path.strip_prefix(root).unwrap_or(path).display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

/// Adds one part's findings and counts to another's.
fn merge(into: &mut Replayed, part: Replayed) {
    into.findings.extend(part.findings);
    into.schema_problems.extend(part.schema_problems);
    for (k, v) in part.counters {
        *into.counters.entry(k).or_insert(0) += v;
    }
    into.latency_ms = into.latency_ms.or(part.latency_ms);
    into.prompt_tokens = into.prompt_tokens.or(part.prompt_tokens);
    into.completion_tokens = into.completion_tokens.or(part.completion_tokens);
    into.provenance.extend(part.provenance);
}

/// One path component that names a file in the directory it is joined to.
fn is_plain_file_name(text: &str) -> bool {
    !text.is_empty() && !text.starts_with('.') && !text.contains(['/', '\\', '\0'])
}

/// A capture's text: a regular file, bounded like corpus files.
fn read_capture(path: &Path, shown: &str) -> Result<String, String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(format!("captured file `{shown}` is not a regular file")),
        Err(e) => return Err(format!("cannot read captured file `{shown}`: {e}")),
    }
    crate::subject::files::read_text(path).map_err(|e| format!("cannot read captured file `{shown}`: {e}"))
}

impl Reviewer for ReplayReviewer {
    fn kind(&self) -> &'static str {
        "replay"
    }

    fn fingerprint(&self, _cell: &Cell) -> serde_json::Value {
        serde_json::json!({
            "replay": REPLAY_VERSION,
            "format": self.spec.format,
            "path": self.spec.path,
            "missing": self.spec.missing,
            "tool": self.spec.tool,
            "strategy": self.spec.strategy,
            "mapping": self.spec.mapping,
        })
    }

    fn run_input(&self, _cell: &Cell, subject: &str, repeat: u32) -> Option<serde_json::Value> {
        Some(match &*self.load(subject, repeat) {
            Loaded::Read { blake3, .. } => serde_json::json!({ "blake3": blake3 }),
            Loaded::Missing { .. } => serde_json::json!({ "missing": true }),
            Loaded::Refused(e) => serde_json::json!({ "refused": e }),
        })
    }

    fn input_problem(&self, _cell: &Cell, subject: &str, repeat: u32) -> Option<String> {
        match &*self.load(subject, repeat) {
            Loaded::Read { parsed: Err(e), .. } | Loaded::Refused(e) => Some(e.clone()),
            Loaded::Missing { what } if self.spec.missing == Missing::Error => Some(format!("{what} (`missing = \"error\"`)")),
            _ => None,
        }
    }

    fn review<'a>(&'a self, job: &'a ReviewJob) -> BoxFuture<'a, Result<ReviewOutput, ReviewError>> {
        Box::pin(async move {
            let hunks = crate::subject::diff::hunks(&job.subject.files).count() as u32;
            let loaded = self.load(&job.subject.id, job.repeat);
            let mut provenance: BTreeMap<String, serde_json::Value> = BTreeMap::new();
            provenance.insert("replay_format".into(), self.spec.format.as_str().into());
            provenance.insert("replay_source".into(), self.source_label().into());
            if let Some(tool) = &self.spec.tool {
                provenance.insert("replay_tool".into(), tool.clone().into());
            }
            let (raw, blake3, replayed) = match &*loaded {
                Loaded::Read { raw, blake3, parsed, .. } => (raw.clone(), blake3.clone(), parsed.clone().map_err(ReviewError::failed)?),
                Loaded::Missing { what } => match self.spec.missing {
                    Missing::Error => {
                        return Err(ReviewError::failed(format!("{what}; capture it, or set `missing = \"empty\"` to count it as reviewed with no findings")))
                    }
                    Missing::Empty => {
                        provenance.insert("replay_blake3".into(), "(no capture: `missing = \"empty\"`)".into());
                        return Ok(ReviewOutput { cost: Cost { hunks, ..Cost::default() }, provenance, ..ReviewOutput::default() });
                    }
                },
                Loaded::Refused(e) => return Err(ReviewError::failed(e.clone())),
            };
            // The full hash is in the run's key inputs (`reviewer.input.blake3`); provenance
            // names the source once per reviewer and each run's hash shortened, as run keys are.
            provenance.insert("replay_blake3".into(), blake3.get(..12).unwrap_or(&blake3).into());
            for (k, v) in &replayed.provenance {
                provenance.insert(k.clone(), v.clone().into());
            }
            let cost = Cost {
                wall_ms: replayed.latency_ms.unwrap_or(0),
                hunks,
                prompt_tokens: replayed.prompt_tokens,
                completion_tokens: replayed.completion_tokens,
                ..Cost::default()
            };
            Ok(ReviewOutput {
                findings: replayed.findings,
                raw,
                cost,
                provenance,
                schema_problems: replayed.schema_problems,
                counters: replayed.counters,
                attachments: BTreeMap::new(),
            })
        })
    }
}

/// A finding as a capture gives it, with stet's id computed from its location and message.
pub fn finding(file: String, line: u32, end_line: Option<u32>, message: String, severity: Severity, category: Category, suggestion: Option<String>) -> Finding {
    let range = end_line.filter(|e| *e > line && line >= 1).map(|end| crate::finding::LineRange { start: line, end });
    let mut f = Finding {
        id: String::new(),
        file,
        line,
        range,
        severity,
        category,
        confidence: 1.0,
        message,
        suggestion: suggestion.filter(|s| !s.trim().is_empty()),
        cursor_uri: None,
        evidence_lines: None,
    };
    f.assign_stet_id();
    f
}

#[cfg(test)]
mod tests;
