//! The `[reviewer]` table of an `ollama` or `openai` reviewer: read key by key with located
//! errors, into an [`LlmSpec`].

use crate::config::{check_template, TableReader};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::de::DeValue;
use toml::Spanned;

/// The default prompts, embedded so a manifest needs none.
pub(crate) const DEFAULT_SYSTEM_PROMPT: &str = include_str!("../../../../../templates/prompts/system.hbs");
pub(crate) const DEFAULT_PROMPT: &str = include_str!("../../../../../templates/prompts/review.hbs");

/// Which wire protocol a model server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Ollama's native `/api/chat`, streamed NDJSON.
    Ollama,
    /// OpenAI-compatible `{base}/chat/completions` (vLLM, llama.cpp, LM Studio, hosted).
    OpenAi,
}

impl Protocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ollama => "ollama",
            Self::OpenAi => "openai",
        }
    }
}

/// What one model request reviews.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    /// One request per hunk, as stet does.
    Hunk,
    /// One request per changed file, with all its hunks.
    File,
    /// One request for the whole change.
    Change,
}

impl UnitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hunk => "hunk",
            Self::File => "file",
            Self::Change => "change",
        }
    }
}

/// What to do when the model stops at the token limit (`length`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTruncation {
    /// Fail the run, naming the limit.
    Fail,
    /// Ask the model to continue its answer (up to `max_continuations` times), then fail.
    Continue,
}

impl OnTruncation {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "fail",
            Self::Continue => "continue",
        }
    }
}

/// A prompt template: where it came from and its text (the text is what is hashed).
#[derive(Debug, Clone)]
pub struct PromptTemplate {
    /// `default` or the path as written in the manifest.
    pub name: String,
    pub text: String,
}

/// A resolved `ollama` / `openai` reviewer configuration.
#[derive(Debug, Clone)]
pub struct LlmSpec {
    pub protocol: Protocol,
    /// Endpoints for every model without its own entry in `endpoints`; may hold `${VAR}`.
    pub base_urls: Vec<String>,
    /// Endpoints per model name.
    pub endpoints: BTreeMap<String, Vec<String>>,
    /// The model name; a template over the cell's axes. `None`: the `model` axis.
    pub model: Option<String>,
    /// Environment variable holding the API key (sent as a bearer token; never stored).
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub seed: Option<u64>,
    /// Add `repeat - 1` to the seed, so repeats differ but stay reproducible.
    pub seed_per_repeat: bool,
    pub max_tokens: u32,
    pub num_ctx: Option<u32>,
    pub unit: UnitKind,
    pub prompt: PromptTemplate,
    pub system_prompt: PromptTemplate,
    pub max_findings: u32,
    pub message_max_chars: u32,
    /// Longest `suggestion` the schema allows; 0 leaves suggestions out of schema and prompt.
    pub suggestion_max_chars: u32,
    /// The schema's `line` must be one of the unit's reviewed lines (an enum).
    pub constrain_lines: bool,
    /// Used when the matrix has no `rag_symbol_max_definitions` axis.
    pub rag_max_definitions: u32,
    pub rag_max_lines: u32,
    pub on_truncation: OnTruncation,
    pub max_continuations: u32,
    pub max_concurrency_per_endpoint: usize,
    pub retries: u32,
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    pub request_timeout: Duration,
    pub connect_timeout: Duration,
    /// `.models/MODELS.json` of the model-server scripts: model file, sha256, quantization.
    pub models_json: Option<PathBuf>,
    /// Provenance declared in the manifest, per model name.
    pub provenance: BTreeMap<String, BTreeMap<String, String>>,
}

impl LlmSpec {
    /// A spec with every default, for tests and programmatic use.
    pub fn new(protocol: Protocol, base_url: &str) -> Self {
        Self {
            protocol,
            base_urls: vec![base_url.to_string()],
            endpoints: BTreeMap::new(),
            model: None,
            api_key_env: None,
            temperature: None,
            seed: None,
            seed_per_repeat: false,
            max_tokens: 1024,
            num_ctx: None,
            unit: UnitKind::Hunk,
            prompt: PromptTemplate { name: "default".into(), text: DEFAULT_PROMPT.into() },
            system_prompt: PromptTemplate { name: "default".into(), text: DEFAULT_SYSTEM_PROMPT.into() },
            max_findings: 8,
            message_max_chars: 300,
            suggestion_max_chars: 300,
            constrain_lines: true,
            rag_max_definitions: 10,
            rag_max_lines: 30,
            on_truncation: OnTruncation::Fail,
            max_continuations: 2,
            max_concurrency_per_endpoint: 1,
            retries: 3,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            request_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(5),
            models_json: None,
            provenance: BTreeMap::new(),
        }
    }
}

/// Reads the prompt template file `key` names (relative to `base_dir`), compiled to check it:
/// `None` when the key is absent, `Some(None)` when the file is unreadable or does not compile
/// (reported at the key).
pub(crate) fn read_prompt(t: &TableReader<'_, '_>, key: &str, base_dir: &Path) -> Option<Option<PromptTemplate>> {
    let p = t.string(key)?;
    let path = base_dir.join(p.get_ref());
    Some(match std::fs::read_to_string(&path) {
        Ok(text) => match handlebars::Template::compile(&text) {
            Ok(_) => Some(PromptTemplate { name: p.get_ref().clone(), text }),
            Err(e) => {
                t.problems().push(p.span(), format!("`{key}` template `{}` does not compile: {e}", path.display()));
                None
            }
        },
        Err(e) => {
            t.problems().push(p.span(), format!("failed to read `{key}` template `{}`: {e}", path.display()));
            None
        }
    })
}

/// Where a server of `protocol` listens when the manifest names no URL.
pub(crate) fn default_base_url(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Ollama => "http://localhost:11434",
        Protocol::OpenAi => "http://127.0.0.1:8080/v1",
    }
}

/// Reads an `ollama` or `openai` `[reviewer]` table. Every problem is reported with its location.
/// `base-url` (one) or `base-urls` (several), each checked; `None` when neither is given.
/// Problems go to the table's list and clear `ok`.
pub(crate) fn read_base_urls(t: &TableReader<'_, '_>, ok: &mut bool) -> Option<Vec<String>> {
    let problems = t.problems();
    match (t.string("base-url"), t.strings("base-urls")) {
        (Some(one), None) => {
            *ok &= check_url(t, &one);
            Some(vec![one.into_inner()])
        }
        (None, Some(many)) => {
            if many.is_empty() {
                problems.push(t.get("base-urls").map(|v| v.span()).unwrap_or_else(|| t.span()), "`base-urls` needs at least one URL");
                *ok = false;
            }
            for u in &many {
                *ok &= check_url(t, u);
            }
            Some(many.into_iter().map(Spanned::into_inner).collect())
        }
        (Some(one), Some(_)) => {
            problems.push(one.span(), "give either `base-url` or `base-urls`, not both");
            *ok = false;
            None
        }
        (None, None) => None,
    }
}

pub fn read_spec(t: &TableReader<'_, '_>, kind: &str, axes: &BTreeSet<String>, base_dir: &Path) -> Option<LlmSpec> {
    let problems = t.problems();
    let protocol = if kind == "ollama" { Protocol::Ollama } else { Protocol::OpenAi };
    let mut spec = LlmSpec::new(protocol, default_base_url(protocol));
    let mut ok = true;

    if let Some(urls) = read_base_urls(t, &mut ok) {
        spec.base_urls = urls;
    }
    if let Some(table) = t.table("endpoints") {
        for (model, _) in table.keys() {
            let Some(value) = table.get(&model) else { continue };
            let urls: Vec<Spanned<String>> = match value.get_ref() {
                DeValue::String(s) => vec![Spanned::new(value.span(), s.to_string())],
                DeValue::Array(_) => table.strings(&model).unwrap_or_default(),
                _ => {
                    problems.push(value.span(), format!("`endpoints.{model}` must be a URL or an array of URLs"));
                    ok = false;
                    continue;
                }
            };
            if urls.is_empty() {
                problems.push(value.span(), format!("`endpoints.{model}` needs at least one URL"));
                ok = false;
            }
            for u in &urls {
                ok &= check_url(t, u);
            }
            spec.endpoints.insert(model, urls.into_iter().map(Spanned::into_inner).collect());
        }
        table.finish();
    }

    match t.string("model") {
        Some(m) => {
            check_template(problems, &m, axes, &[]);
            if m.get_ref().trim().is_empty() {
                problems.push(m.span(), "`model` must not be empty");
                ok = false;
            }
            spec.model = Some(m.into_inner());
        }
        None if !axes.contains("model") => {
            problems.push_with_help(t.span(), format!("an `{kind}` reviewer needs a model"), "add a `model` axis to [matrix] or `model = \"…\"` to [reviewer]");
            ok = false;
        }
        None => {}
    }
    if let Some(name) = t.string("api-key-env") {
        ok &= check_api_key_env(t, &name);
        spec.api_key_env = Some(name.into_inner());
    }
    if let Some(v) = t.float("temperature", 0.0, 2.0) {
        spec.temperature = Some(*v.get_ref());
    }
    if let Some(v) = t.integer("seed", 0, u32::MAX as i64) {
        spec.seed = Some(*v.get_ref() as u64);
    }
    spec.seed_per_repeat = t.boolean("seed-per-repeat").unwrap_or(false);
    if spec.seed_per_repeat && spec.seed.is_none() && !axes.contains("seed") {
        problems.push(t.key_span("seed-per-repeat").unwrap_or_else(|| t.span()), "`seed-per-repeat` needs `seed` (or a `seed` axis) to start from");
        ok = false;
    }
    if let Some(v) = t.integer("max-tokens", 1, 1_000_000) {
        spec.max_tokens = *v.get_ref() as u32;
    }
    if let Some(v) = t.integer("num-ctx", 1, 10_000_000) {
        if protocol == Protocol::OpenAi {
            problems.push_with_help(
                v.span(),
                "`num-ctx` applies to `ollama` reviewers only",
                "an OpenAI-compatible server's context size is set when it starts",
            );
            ok = false;
        }
        spec.num_ctx = Some(*v.get_ref() as u32);
    }
    if let Some(u) = t.string("unit") {
        spec.unit = match u.get_ref().as_str() {
            "hunk" => UnitKind::Hunk,
            "file" => UnitKind::File,
            "change" => UnitKind::Change,
            other => {
                problems.push_with_help(u.span(), format!("unknown unit `{other}`"), "units: hunk (one request per hunk, as stet), file, change");
                ok = false;
                UnitKind::Hunk
            }
        };
    }
    for (key, slot) in [("prompt", &mut spec.prompt), ("system-prompt", &mut spec.system_prompt)] {
        if let Some(read) = read_prompt(t, key, base_dir) {
            match read {
                Some(template) => *slot = template,
                None => ok = false,
            }
        }
    }
    if let Some(v) = t.integer("max-findings", 1, 100) {
        spec.max_findings = *v.get_ref() as u32;
    }
    if let Some(v) = t.integer("message-max-chars", 20, 10_000) {
        spec.message_max_chars = *v.get_ref() as u32;
    }
    if let Some(v) = t.integer("suggestion-max-chars", 0, 10_000) {
        spec.suggestion_max_chars = *v.get_ref() as u32;
    }
    if let Some(b) = t.boolean("constrain-lines") {
        spec.constrain_lines = b;
    }
    if let Some(v) = t.integer("rag-symbol-max-definitions", 0, 1000) {
        spec.rag_max_definitions = *v.get_ref() as u32;
    }
    if let Some(v) = t.integer("rag-max-lines", 1, 1000) {
        spec.rag_max_lines = *v.get_ref() as u32;
    }
    if let Some(s) = t.string("on-truncation") {
        spec.on_truncation = match s.get_ref().as_str() {
            "fail" => OnTruncation::Fail,
            "continue" => OnTruncation::Continue,
            other => {
                problems.push_with_help(
                    s.span(),
                    format!("unknown `on-truncation` value `{other}`"),
                    "fail (the run fails, naming the limit) or continue (ask the model to continue)",
                );
                ok = false;
                OnTruncation::Fail
            }
        };
    }
    if let Some(v) = t.integer("max-continuations", 1, 20) {
        spec.max_continuations = *v.get_ref() as u32;
    }
    if let Some(v) = t.integer("max-concurrency-per-endpoint", 1, 1024) {
        spec.max_concurrency_per_endpoint = *v.get_ref() as usize;
    }
    read_retries_and_timeouts(
        t,
        &mut spec.retries,
        [&mut spec.retry_base_delay, &mut spec.retry_max_delay, &mut spec.request_timeout, &mut spec.connect_timeout],
        &mut ok,
    );
    if let Some(path) = read_models_json(t, base_dir) {
        spec.models_json = Some(path);
    }
    if let Some(table) = t.table("provenance") {
        for (model, key_span) in table.keys() {
            match table.table(&model) {
                Some(entry) => {
                    let mut map = BTreeMap::new();
                    for (k, _) in entry.keys() {
                        if let Some(v) = entry.string(&k) {
                            map.insert(k, v.into_inner());
                        }
                    }
                    entry.finish();
                    spec.provenance.insert(model, map);
                }
                None => {
                    problems.push(key_span, format!("`provenance.{model}` must be a table of strings, e.g. `sha256 = \"…\"`"));
                    ok = false;
                }
            }
        }
        table.finish();
    }
    ok.then_some(spec)
}

/// `retries` and the four durations every model client reads (`retry-base-delay`,
/// `retry-max-delay`, `request-timeout`, `connect-timeout`, in that order): the one reading for
/// reviewers and the embedder.
pub(crate) fn read_retries_and_timeouts(t: &TableReader<'_, '_>, retries: &mut u32, [base, max, request, connect]: [&mut Duration; 4], ok: &mut bool) {
    if let Some(v) = t.integer("retries", 0, 20) {
        *retries = *v.get_ref() as u32;
    }
    crate::config::read_durations(
        t,
        &mut [("retry-base-delay", base), ("retry-max-delay", max), ("request-timeout", request), ("connect-timeout", connect)],
        ok,
    );
}

/// `models-json`, resolved against the manifest's directory: the one reading for reviewers,
/// judges and the embedder.
pub(crate) fn read_models_json(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<PathBuf> {
    t.string("models-json").map(|p| crate::config::resolve_path(base_dir, p.get_ref()))
}

/// The API key in the environment variable `var` names (`None` when none is named): the one
/// reading for reviewers, judges and the embedder; `named_by` says which key named it.
pub fn api_key_from_env(var: Option<&str>, named_by: &str) -> Result<Option<String>, String> {
    let Some(var) = var else { return Ok(None) };
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Ok(Some(v)),
        _ => Err(format!("environment variable `{var}` (named by {named_by}) is not set")),
    }
}

/// `api-key-env` must name an environment variable (never hold the key itself).
pub(crate) fn check_api_key_env(t: &TableReader<'_, '_>, name: &Spanned<String>) -> bool {
    let valid = !name.get_ref().is_empty()
        && name.get_ref().chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.get_ref().starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        t.problems().push_with_help(
            name.span(),
            "`api-key-env` must name an environment variable",
            "the manifest holds the variable's name, never the key itself",
        );
    }
    valid
}

/// A URL must be http(s); one holding `${VAR}` is checked after expansion, when used.
pub(crate) fn check_url(t: &TableReader<'_, '_>, url: &Spanned<String>) -> bool {
    let u = url.get_ref();
    if let Some(problem) = env_reference_problem(u) {
        t.problems().push_with_help(url.span(), format!("`{u}`: {problem}"), "write `${VAR}` or `${VAR:-default}`");
        return false;
    }
    if u.contains("${") || u.starts_with("http://") || u.starts_with("https://") {
        return true;
    }
    t.problems().push_with_help(
        url.span(),
        format!("`{u}` is not an http(s) URL"),
        "e.g. `http://127.0.0.1:8080/v1` (openai) or `http://localhost:11434` (ollama); `${VAR:-default}` reads the environment",
    );
    false
}

/// What is wrong with the `${…}` references of a text (unclosed, or not a variable name),
/// checked at validation so that expansion cannot fail on it when the reviewer starts.
fn env_reference_problem(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { return Some("unclosed `${`".to_string()) };
        let name = after[..end].split_once(":-").map_or(&after[..end], |(n, _)| n);
        let valid = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Some(format!("`${{{}}}` does not name an environment variable", &after[..end]));
        }
        rest = &after[end + 1..];
    }
    None
}

/// Expands `${VAR}` and `${VAR:-default}` from the environment.
pub fn expand_env(text: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| format!("unclosed `${{` in `{text}`"))?;
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (std::env::var(name).ok().filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("environment variable `{name}` (used in `{text}`) is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_expansion() {
        std::env::set_var("RUNNER_TEST_EXPAND_URL", "http://x:1");
        assert_eq!(expand_env("${RUNNER_TEST_EXPAND_URL}/v1").expect("set"), "http://x:1/v1");
        assert_eq!(expand_env("${RUNNER_TEST_UNSET_VAR_Q:-http://d:2}/v1").expect("default"), "http://d:2/v1");
        assert!(expand_env("${RUNNER_TEST_UNSET_VAR_Q}").expect_err("unset").contains("RUNNER_TEST_UNSET_VAR_Q"));
        assert_eq!(expand_env("http://plain").expect("plain"), "http://plain");
    }
}
