//! The manifest's `[judges.NAME]` tables and the claims generator's model settings, read key
//! by key with every problem located (file, line, column), into [`JudgeSpec`] and
//! [`ClaimsSpec`].
//!
//! ```toml
//! [judges.smol]
//! provider = "openai"                  # openai | ollama
//! base-url = "http://127.0.0.1:8093/v1" # or base-urls = [...]; `${VAR:-default}` reads the environment
//! model = "smollm2-135m"
//! family = "smollm2"                   # required: flags self-preference, keeps juries cross-family
//! temperature = 0                      # default 0
//! seed = 0                             # default 0; a malformed answer's retry uses seed + 1, + 2, …
//! max-tokens = 256
//! malformed-retries = 2                # default 2
//! samples = 1                          # default 1; sample k asks with seed + k × (malformed-retries + 1)
//! # api-key-env, models-json, retries, request-timeout, max-concurrency, rubric-dir
//! ```
//!
//! The claims generator's table (`[pseudo-references]`) takes the same model keys except
//! `malformed-retries` and `rubric-dir`, plus `prompt` (a handlebars file replacing
//! `templates/prompts/claims.hbs`); [`read_claims`] reads them and leaves the table's other
//! keys and its unknown-key check to the table's owner.

use crate::config::{Problems, TableReader};
use crate::reviewer::llm::spec::{check_api_key_env, default_base_url};
use crate::reviewer::llm::{LlmSpec, PromptTemplate, Protocol};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// The built-in rubrics and claims prompt, embedded so a manifest needs none.
pub(crate) const DEFAULT_VALIDITY_RUBRIC: &str = include_str!("../../../../templates/rubrics/validity.hbs");
pub(crate) const DEFAULT_ACTIONABILITY_RUBRIC: &str = include_str!("../../../../templates/rubrics/actionability.hbs");
pub(crate) const DEFAULT_CLAIMS_PROMPT: &str = include_str!("../../../../templates/prompts/claims.hbs");

/// Default `max-tokens` of a judge: a verdict and a one-sentence reason.
pub(crate) const JUDGE_MAX_TOKENS: u32 = 256;
/// Default `max-tokens` of the claims generator: two numbered lists.
pub(crate) const CLAIMS_MAX_TOKENS: u32 = 1024;

/// Which model answers, how it samples, and how it is reached: what a judge and the claims
/// generator have in common.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    pub provider: Protocol,
    /// One or more base URLs (load is spread over them); may hold `${VAR}`.
    pub base_urls: Vec<String>,
    pub model: String,
    /// The model family (`smollm2`, `gemma`, `qwen`, …): lowercase letters, digits, `.`, `-`, `_`.
    pub family: String,
    pub temperature: f64,
    pub seed: u64,
    pub max_tokens: u32,
    pub api_key_env: Option<String>,
    /// `.models/MODELS.json` of the model-server scripts, for the provenance (as the LLM reviewer).
    pub models_json: Option<PathBuf>,
    /// Transport retries (connection errors, 429, 5xx), with backoff.
    pub retries: u32,
    pub retry_base_delay: Duration,
    pub request_timeout: Duration,
    /// At most this many requests at once per base URL.
    pub max_concurrency: usize,
}

impl ModelSettings {
    /// Settings with every default, for tests and programmatic use.
    pub fn new(provider: Protocol, base_url: &str, model: &str, family: &str) -> Self {
        Self {
            provider,
            base_urls: vec![base_url.to_string()],
            model: model.to_string(),
            family: family.to_string(),
            temperature: 0.0,
            seed: 0,
            max_tokens: JUDGE_MAX_TOKENS,
            api_key_env: None,
            models_json: None,
            retries: 3,
            retry_base_delay: Duration::from_millis(500),
            request_timeout: Duration::from_secs(300),
            max_concurrency: 1,
        }
    }

    /// The LLM reviewer configuration these settings run through: its transport (limits,
    /// retries, fail-fast checks), its wire protocols and its `models-json` provenance.
    pub fn llm_spec(&self) -> LlmSpec {
        let mut s = LlmSpec::new(self.provider, self.base_urls.first().map(String::as_str).unwrap_or(default_base_url(self.provider)));
        s.base_urls = self.base_urls.clone();
        s.model = Some(self.model.clone());
        s.api_key_env = self.api_key_env.clone();
        s.temperature = Some(self.temperature);
        s.seed = Some(self.seed);
        s.max_tokens = self.max_tokens;
        s.retries = self.retries;
        s.retry_base_delay = self.retry_base_delay;
        s.request_timeout = self.request_timeout;
        s.max_concurrency_per_endpoint = self.max_concurrency;
        s.models_json = self.models_json.clone();
        s
    }
}

/// One `[judges.NAME]` table.
#[derive(Debug, Clone)]
pub struct JudgeSpec {
    /// The table's name, for reports; not part of any cache key.
    pub name: String,
    pub settings: ModelSettings,
    /// How many more times a malformed answer (not JSON, wrong shape, cut at `max-tokens`) is
    /// asked again, each time with the seed advanced by one.
    pub malformed_retries: u32,
    /// How many times each question is asked (`samples`), each sample with seeds of its own
    /// ([`Self::sample_seed`]) and cached on its own; the judge's vote is its samples' majority.
    pub samples: u32,
    /// `rubric-dir` as resolved, when set.
    pub rubric_dir: Option<PathBuf>,
    pub validity: PromptTemplate,
    pub actionability: PromptTemplate,
    /// `kind = "replay"`: the judge asks no model; it replays the match decisions a judge
    /// recorded in this file (the code-review benchmark's judgements format), for a `jury`
    /// analysis. Its `settings` then hold only `model` (the file's judge by default) and
    /// `family`.
    pub replay: Option<PathBuf>,
}

impl JudgeSpec {
    /// A judge with the built-in rubrics and every default.
    pub fn new(name: &str, settings: ModelSettings) -> Self {
        Self {
            name: name.to_string(),
            settings,
            malformed_retries: 2,
            samples: 1,
            rubric_dir: None,
            validity: PromptTemplate { name: "default".into(), text: DEFAULT_VALIDITY_RUBRIC.into() },
            actionability: PromptTemplate { name: "default".into(), text: DEFAULT_ACTIONABILITY_RUBRIC.into() },
            replay: None,
        }
    }

    /// The first seed of sample `sample` (from 0): the judge's seed for the first, then each
    /// sample after the seeds the one before may use for its malformed retries, so no two
    /// samples share a seed. Sample 0 asks exactly as a judge without samples does.
    pub fn sample_seed(&self, sample: u32) -> u64 {
        self.settings.seed.saturating_add(u64::from(sample).saturating_mul(u64::from(self.malformed_retries) + 1))
    }
}

/// The claims generator of the pseudo-references.
#[derive(Debug, Clone)]
pub struct ClaimsSpec {
    pub settings: ModelSettings,
    pub prompt: PromptTemplate,
}

impl ClaimsSpec {
    pub fn new(mut settings: ModelSettings) -> Self {
        settings.max_tokens = CLAIMS_MAX_TOKENS;
        Self { settings, prompt: PromptTemplate { name: "default".into(), text: DEFAULT_CLAIMS_PROMPT.into() } }
    }
}

/// Checks that the model judges that sit on one jury come from different model families.
/// Replayed judges are left out: they score no review of runner's, and the `jury` analysis
/// that reads them names judges of one family in its notes.
pub fn check_cross_family(judges: &[&JudgeSpec]) -> Result<(), String> {
    let judges: Vec<&&JudgeSpec> = judges.iter().filter(|j| j.replay.is_none()).collect();
    for (i, a) in judges.iter().enumerate() {
        if let Some(b) = judges[i + 1..].iter().find(|b| b.settings.family == a.settings.family) {
            return Err(format!(
                "judges `{}` and `{}` are both of the `{}` family; a jury needs judges of different families",
                a.name, b.name, a.settings.family
            ));
        }
    }
    Ok(())
}

/// Reads `[judges]` (absent: no judges), each `[judges.NAME]` in name order, and
/// reports every problem at once. `None` when anything is wrong.
pub fn read_judges(root: &TableReader<'_, '_>, base_dir: &Path) -> Option<Vec<JudgeSpec>> {
    if !root.has("judges") {
        root.allow("judges");
        return Some(Vec::new());
    }
    let judges = root.table("judges")?;
    let problems = judges.problems();
    let mut out = Vec::new();
    let mut ok = true;
    for (name, key_span) in judges.keys() {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c)) {
            problems.push(key_span.clone(), format!("judge name `{name}` must use only letters, digits, `-` and `_`"));
            ok = false;
        }
        let Some(t) = judges.table(&name) else {
            ok = false;
            continue;
        };
        let t = t.with_name(format!("[judges.{name}]"));
        let spec = read_judge(&t, &name, base_dir);
        t.finish();
        match spec {
            Some(s) => out.push(s),
            None => ok = false,
        }
    }
    judges.finish();
    ok.then_some(out)
}

fn read_judge(t: &TableReader<'_, '_>, name: &str, base_dir: &Path) -> Option<JudgeSpec> {
    match t.string("kind") {
        Some(k) if k.get_ref() == "replay" => return read_replay_judge(t, name, base_dir),
        Some(k) if k.get_ref() == "model" => {}
        Some(k) => {
            t.problems().push_with_help(
                k.span(),
                format!("unknown judge kind `{}` in {}", k.get_ref(), t.name()),
                "kinds: model (the default: a model asked through `provider`), replay (decisions captured in a file)",
            );
            return None;
        }
        None => {}
    }
    let settings = read_settings(t, base_dir, JUDGE_MAX_TOKENS);
    let mut ok = true;
    let mut spec = JudgeSpec::new(name, settings.clone().unwrap_or_else(|| ModelSettings::new(Protocol::OpenAi, "http://x", "", "")));
    if let Some(v) = t.integer("malformed-retries", 0, 20) {
        spec.malformed_retries = *v.get_ref() as u32;
    }
    if let Some(v) = t.integer("samples", 1, 100) {
        spec.samples = *v.get_ref() as u32;
    }
    if let Some(dir) = t.string("rubric-dir") {
        let resolved = crate::config::resolve_path(base_dir, dir.get_ref());
        if !resolved.is_dir() {
            t.problems().push_with_help(
                dir.span(),
                format!("`rubric-dir` `{}` is not a directory", resolved.display()),
                "it holds `validity.hbs` and/or `actionability.hbs`, relative to the manifest",
            );
            ok = false;
        } else {
            let mut found = 0;
            for (file, slot) in [("validity.hbs", &mut spec.validity), ("actionability.hbs", &mut spec.actionability)] {
                let path = resolved.join(file);
                if !path.is_file() {
                    continue;
                }
                found += 1;
                match read_template(t.problems(), &dir, &path) {
                    Some(text) => *slot = PromptTemplate { name: format!("{}/{file}", dir.get_ref().trim_end_matches('/')), text },
                    None => ok = false,
                }
            }
            if found == 0 {
                t.problems().push_with_help(
                    dir.span(),
                    format!("`rubric-dir` `{}` holds neither `validity.hbs` nor `actionability.hbs`", resolved.display()),
                    "a rubric missing from the directory is the built-in one (templates/rubrics/)",
                );
                ok = false;
            }
            spec.rubric_dir = Some(resolved);
        }
    }
    spec.settings = settings?;
    ok.then_some(spec)
}

/// A model family's name: lowercase letters and digits first, then also `.`, `-` or `_`.
fn valid_family(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

/// `kind = "replay"`: `path` (a judgements file, relative to the manifest), `family`, and
/// optionally `model` (the name the report gives the judge; by default the file's `judge`).
/// The path is confined as a replay reviewer's captures are: relative, inside the manifest's
/// project once resolved (symbolic links followed), and a regular file (a FIFO, a device or a
/// directory is named for what it is, without waiting on it).
fn read_replay_judge(t: &TableReader<'_, '_>, name: &str, base_dir: &Path) -> Option<JudgeSpec> {
    let problems = t.problems();
    let path = t.required_string("path");
    let family = t.required_string("family");
    let model = t.string("model");
    let path = path.and_then(|p| {
        const FORMAT: &str = "`path` names a file in the code-review benchmark's judgements format, relative to the manifest";
        const INSIDE: &str = "paths are relative to the manifest's directory and must stay inside its project";
        let refuse = |message: String, help: &str| -> Option<PathBuf> {
            problems.push_with_help(p.span(), message, help);
            None
        };
        let written = p.get_ref();
        if written.trim().is_empty() || written.starts_with('/') || written.contains('\\') || written.contains('\0') {
            return refuse(format!("judgements `path` `{written}` must be a relative path"), INSIDE);
        }
        let base = if base_dir.as_os_str().is_empty() { Path::new(".") } else { base_dir };
        let root = crate::config::project_root(base);
        let root = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root };
        let (base, root) = match (base.canonicalize(), root.canonicalize()) {
            (Ok(base), Ok(root)) => (base, root),
            (Err(e), _) | (_, Err(e)) => return refuse(format!("cannot resolve the manifest's directory `{}`: {e}", base.display()), INSIDE),
        };
        let lexical = crate::config::resolve_path(&base, written);
        if !lexical.starts_with(&root) {
            return refuse(
                format!(
                    "judgements file `{written}` resolves to `{}`, outside the project `{}`: judgements files must lie inside it",
                    lexical.display(),
                    root.display()
                ),
                INSIDE,
            );
        }
        let real = match lexical.canonicalize() {
            Ok(real) => real,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return refuse(format!("judgements file `{}` does not exist", lexical.display()), FORMAT),
            Err(e) => return refuse(format!("judgements file `{}` cannot be read: {e}", lexical.display()), FORMAT),
        };
        if !real.starts_with(&root) {
            return refuse(
                format!(
                    "judgements file `{}` is a symbolic link to `{}`, outside the project `{}`: judgements files must lie inside it",
                    lexical.display(),
                    real.display(),
                    root.display()
                ),
                INSIDE,
            );
        }
        match runner_core::bounded::open_regular(&real, runner_core::bounded::Links::Follow, "judgements files") {
            Ok(_) => Some(real),
            Err(e) => refuse(format!("judgements file `{}` cannot be read: {e}", lexical.display()), FORMAT),
        }
    });
    let family = family.and_then(|f| {
        let valid = valid_family(f.get_ref());
        if !valid {
            problems.push(f.span(), format!("`family` `{}` must be lowercase letters, digits, `.`, `-` or `_`", f.get_ref()));
        }
        valid.then(|| f.into_inner())
    });
    let (path, family) = (path?, family?);
    let mut spec = JudgeSpec::new(name, ModelSettings::new(Protocol::OpenAi, "", model.map(Spanned::into_inner).as_deref().unwrap_or(""), &family));
    spec.settings.base_urls.clear();
    spec.replay = Some(path);
    Some(spec)
}

/// Reads the claims generator's model keys (and `prompt`) from `t`, typically
/// `[pseudo-references]`. It does not call [`TableReader::finish`]: the table's owner reads
/// its other keys and then reports the unknown ones.
pub fn read_claims(t: &TableReader<'_, '_>, base_dir: &Path) -> Option<ClaimsSpec> {
    let settings = read_settings(t, base_dir, CLAIMS_MAX_TOKENS);
    let mut prompt = PromptTemplate { name: "default".into(), text: DEFAULT_CLAIMS_PROMPT.into() };
    let mut ok = true;
    if let Some(p) = t.string("prompt") {
        match read_template(t.problems(), &p, &crate::config::resolve_path(base_dir, p.get_ref())) {
            Some(text) => prompt = PromptTemplate { name: p.get_ref().clone(), text },
            None => ok = false,
        }
    }
    let settings = settings?;
    ok.then_some(ClaimsSpec { settings, prompt })
}

fn read_template(problems: &Problems, key: &Spanned<String>, path: &Path) -> Option<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => match handlebars::Template::compile(&text) {
            Ok(_) => Some(text),
            Err(e) => {
                problems.push(key.span(), format!("template `{}` does not compile: {e}", path.display()));
                None
            }
        },
        Err(e) => {
            problems.push(key.span(), format!("failed to read template `{}`: {e}", path.display()));
            None
        }
    }
}

/// The model keys a judge and the claims generator share.
fn read_settings(t: &TableReader<'_, '_>, base_dir: &Path, max_tokens: u32) -> Option<ModelSettings> {
    let problems = t.problems();
    let mut ok = true;
    let provider = match t.required_string("provider") {
        Some(p) => match p.get_ref().as_str() {
            "openai" => Some(Protocol::OpenAi),
            "ollama" => Some(Protocol::Ollama),
            other => {
                let help = match crate::config::did_you_mean(other, ["openai", "ollama"]) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => "providers: openai (an OpenAI-compatible server: llama.cpp, vLLM, …), ollama".to_string(),
                };
                problems.push_with_help(p.span(), format!("unknown provider `{other}` in {}", t.name()), help);
                None
            }
        },
        None => None,
    };
    let protocol = provider.unwrap_or(Protocol::OpenAi);
    let base_urls = crate::reviewer::llm::spec::read_base_urls(t, &mut ok).unwrap_or_else(|| vec![default_base_url(protocol).to_string()]);
    let model = t.required_string("model");
    if let Some(m) = &model {
        if m.get_ref().trim().is_empty() {
            problems.push(m.span(), "`model` must not be empty");
            ok = false;
        }
    }
    let family = match t.string("family") {
        Some(f) => {
            if !valid_family(f.get_ref()) {
                problems.push_with_help(
                    f.span(),
                    format!("`family` `{}` must be lowercase letters, digits, `.`, `-` or `_`", f.get_ref()),
                    "the model family, e.g. \"smollm2\", \"gemma\", \"qwen\"",
                );
                ok = false;
            }
            Some(f.into_inner())
        }
        None => {
            t.allow("family");
            if !t.has("family") {
                problems.push_with_help(
                    t.span(),
                    format!("missing key `family` in {}", t.name()),
                    "name the model family, e.g. family = \"smollm2\": it flags a judge of the reviewer's own family (self-preference) and keeps a jury cross-family",
                );
            }
            None
        }
    };
    let mut s = ModelSettings::new(protocol, "", "", "");
    s.base_urls = base_urls;
    s.max_tokens = max_tokens;
    if let Some(v) = t.float("temperature", 0.0, 2.0) {
        s.temperature = *v.get_ref();
    }
    if let Some(v) = t.integer("seed", 0, u32::MAX as i64) {
        s.seed = *v.get_ref() as u64;
    }
    if let Some(v) = t.integer("max-tokens", 1, 1_000_000) {
        s.max_tokens = *v.get_ref() as u32;
    }
    if let Some(name) = t.string("api-key-env") {
        ok &= check_api_key_env(t, &name);
        s.api_key_env = Some(name.into_inner());
    }
    if let Some(p) = t.string("models-json") {
        s.models_json = Some(crate::config::resolve_path(base_dir, p.get_ref()));
    }
    if let Some(v) = t.integer("retries", 0, 20) {
        s.retries = *v.get_ref() as u32;
    }
    crate::config::read_durations(t, &mut [("request-timeout", &mut s.request_timeout)], &mut ok);
    if let Some(v) = t.integer("max-concurrency", 1, 1024) {
        s.max_concurrency = *v.get_ref() as usize;
    }
    s.provider = provider?;
    s.model = model?.into_inner();
    s.family = family?;
    ok.then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ManifestErrors, Problems};
    use toml::de::DeTable;

    /// Reads `[judges]` and `[pseudo-references]` of a TOML text the way the manifest does;
    /// `Err` is the problems as `path:line:col: message (help)` lines.
    fn read(text: &str) -> Result<(Vec<JudgeSpec>, Option<ClaimsSpec>), String> {
        let doc = DeTable::parse(text).expect("valid TOML");
        let problems = Problems::default();
        let root = TableReader::new(&problems, doc.get_ref(), 0..1, "the manifest");
        let judges = read_judges(&root, Path::new(""));
        let claims = root.table("pseudo-references").map(|t| {
            let c = read_claims(&t, Path::new(""));
            t.finish();
            c
        });
        root.finish();
        if problems.is_empty() {
            return Ok((judges.expect("judges"), claims.map(|c| c.expect("claims"))));
        }
        Err(ManifestErrors { path: "m.toml".into(), source: text.to_string(), diagnostics: problems.into_sorted() }.to_plain())
    }

    #[test]
    fn a_full_judge_table_reads_with_defaults() {
        let (judges, claims) = read(
            "[judges.smol]\nprovider = \"openai\"\nbase-url = \"http://127.0.0.1:8093/v1\"\nmodel = \"smollm2-135m\"\nfamily = \"smollm2\"\n\n[judges.gem]\nprovider = \"ollama\"\nbase-urls = [\"http://a:1\", \"${G_URL:-http://b:2}\"]\nmodel = \"gemma3:270m\"\nfamily = \"gemma\"\ntemperature = 0.5\nseed = 9\nmax-tokens = 100\nmalformed-retries = 4\napi-key-env = \"G_KEY\"\nretries = 1\nrequest-timeout = \"2m\"\nmax-concurrency = 2\n\n[pseudo-references]\nprovider = \"openai\"\nmodel = \"qwen2.5-coder\"\nfamily = \"qwen\"\n",
        )
        .expect("valid");
        assert_eq!(judges.iter().map(|j| j.name.as_str()).collect::<Vec<_>>(), ["gem", "smol"], "in name order");
        let smol = &judges[1];
        assert_eq!((smol.settings.provider, smol.settings.family.as_str()), (Protocol::OpenAi, "smollm2"));
        assert_eq!((smol.settings.temperature, smol.settings.seed, smol.settings.max_tokens, smol.malformed_retries), (0.0, 0, JUDGE_MAX_TOKENS, 2));
        assert_eq!(smol.validity.name, "default");
        let gem = &judges[0];
        assert_eq!(gem.settings.provider, Protocol::Ollama);
        assert_eq!(gem.settings.base_urls.len(), 2);
        assert_eq!((gem.settings.temperature, gem.settings.seed, gem.settings.max_tokens, gem.malformed_retries), (0.5, 9, 100, 4));
        assert_eq!((gem.settings.retries, gem.settings.max_concurrency), (1, 2));
        assert_eq!(gem.settings.request_timeout, Duration::from_secs(120));
        assert_eq!(gem.settings.api_key_env.as_deref(), Some("G_KEY"));
        let claims = claims.expect("claims");
        assert_eq!((claims.settings.model.as_str(), claims.settings.family.as_str()), ("qwen2.5-coder", "qwen"));
        assert_eq!(claims.settings.max_tokens, CLAIMS_MAX_TOKENS);
        assert_eq!(claims.settings.base_urls, vec!["http://127.0.0.1:8080/v1".to_string()], "the openai default, as the LLM reviewer's");
        assert!(claims.prompt.text.contains("Summary of changes:"));
        assert!(check_cross_family(&[&judges[0], &judges[1]]).is_ok());
    }

    #[test]
    fn every_problem_is_reported_at_once_with_its_location() {
        let err = read(
            "[judges.a]\nprovider = \"openia\"\nmodel = \"m\"\nbase-url = \"localhost:1\"\ntemprature = 0.2\napi-key-env = \"sk-123\"\nrequest-timeout = \"soon\"\n\n[judges.b]\nprovider = \"openai\"\nmodel = \"m\"\nfamily = \"Gemma 3\"\nmalformed-retries = 99\n\n[pseudo-references]\nmodel = \"q\"\nfamily = \"qwen\"\n",
        )
        .expect_err("invalid");
        for needle in [
            "m.toml:2:12: unknown provider `openia` in [judges.a] (did you mean `openai`?)",
            "missing key `family` in [judges.a] (name the model family",
            "`localhost:1` is not an http(s) URL",
            "m.toml:5:1: unknown key `temprature` in [judges.a] (did you mean `temperature`?)",
            "`api-key-env` must name an environment variable",
            "`request-timeout` must be a duration",
            "m.toml:12:10: `family` `Gemma 3` must be lowercase letters",
            "`malformed-retries` in [judges.b] must be between 0 and 20, found 99",
            "missing key `provider` in [pseudo-references]",
        ] {
            assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
        }
    }

    #[test]
    fn a_missing_family_is_an_error_naming_why_it_is_needed() {
        let err = read("[judges.a]\nprovider = \"openai\"\nmodel = \"m\"\n").expect_err("no family");
        assert!(err.contains("m.toml:1:1: missing key `family` in [judges.a]"), "{err}");
        assert!(err.contains("self-preference"), "{err}");
    }

    #[test]
    fn rubric_dir_overrides_the_rubrics_it_holds() {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("validity.hbs"), "Is {{message}} grounded in {{context}}?").expect("write");
        let text = format!("[judges.a]\nprovider = \"openai\"\nmodel = \"m\"\nfamily = \"f\"\nrubric-dir = \"{}\"\n", dir.path().display());
        let (judges, _) = read(&text).expect("valid");
        assert!(judges[0].validity.name.ends_with("/validity.hbs"));
        assert_eq!(judges[0].validity.text, "Is {{message}} grounded in {{context}}?");
        assert_eq!(judges[0].actionability.name, "default", "a rubric the directory lacks stays built-in");
        std::fs::write(dir.path().join("actionability.hbs"), "{{#if}").expect("write");
        assert!(read(&text).expect_err("bad template").contains("does not compile"));
        let empty = tempfile::tempdir().expect("tmp");
        let err = read(&format!("[judges.a]\nprovider = \"openai\"\nmodel = \"m\"\nfamily = \"f\"\nrubric-dir = \"{}\"\n", empty.path().display()))
            .expect_err("empty");
        assert!(err.contains("holds neither"), "{err}");
    }

    #[test]
    fn a_replayed_judges_file_stays_inside_the_project_and_is_a_regular_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join(".git")).expect("a project root");
        std::fs::create_dir_all(project.join("experiments")).expect("mkdir");
        std::fs::write(project.join("judge.json"), "{}").expect("write");
        std::fs::write(dir.path().join("outside.json"), "{}").expect("write");
        std::os::unix::fs::symlink(dir.path().join("outside.json"), project.join("link.json")).expect("symlink");
        let fifo = project.join("fifo.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let base = project.join("experiments");
        let read_at = |path: &str| -> Result<PathBuf, String> {
            let text = format!("[judges.r]\nkind = \"replay\"\npath = \"{path}\"\nfamily = \"claude\"\n");
            let doc = DeTable::parse(&text).expect("valid TOML");
            let problems = Problems::default();
            let root = TableReader::new(&problems, doc.get_ref(), 0..1, "the manifest");
            let judges = read_judges(&root, &base);
            root.finish();
            match judges {
                Some(j) if problems.is_empty() => Ok(j[0].replay.clone().expect("a replayed judge")),
                _ => Err(ManifestErrors { path: "m.toml".into(), source: text, diagnostics: problems.into_sorted() }.to_plain()),
            }
        };
        assert_eq!(read_at("../judge.json"), Ok(project.join("judge.json").canonicalize().expect("real")));
        let err = read_at("/etc/passwd").expect_err("absolute");
        assert!(err.contains("judgements `path` `/etc/passwd` must be a relative path"), "{err}");
        let err = read_at("../../outside.json").expect_err("outside");
        assert!(err.contains("outside the project") && err.contains("must lie inside it"), "{err}");
        let err = read_at("../../../../../../../../etc/passwd").expect_err("outside");
        assert!(err.contains("outside the project"), "{err}");
        let err = read_at("../link.json").expect_err("a link out");
        assert!(err.contains("is a symbolic link to") && err.contains("outside the project"), "{err}");
        let err = read_at("../fifo.json").expect_err("a FIFO");
        assert!(err.contains("it is a FIFO; judgements files must be regular files"), "{err}");
        assert!(!err.contains("does not exist"), "{err}");
        let err = read_at("../none.json").expect_err("missing");
        assert!(err.contains("none.json` does not exist"), "{err}");
        let err = read_at("..").expect_err("a directory");
        assert!(err.contains("it is a directory"), "{err}");
    }

    #[test]
    fn juries_must_be_cross_family() {
        let a = JudgeSpec::new("a", ModelSettings::new(Protocol::OpenAi, "http://x/v1", "m1", "smollm2"));
        let b = JudgeSpec::new("b", ModelSettings::new(Protocol::OpenAi, "http://x/v1", "m2", "gemma"));
        let c = JudgeSpec::new("c", ModelSettings::new(Protocol::OpenAi, "http://x/v1", "m3", "smollm2"));
        assert!(check_cross_family(&[&a, &b]).is_ok());
        let err = check_cross_family(&[&a, &b, &c]).expect_err("two smollm2");
        assert!(err.contains("`a` and `c`") && err.contains("`smollm2`"), "{err}");
    }
}
