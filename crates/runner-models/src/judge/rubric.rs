//! Binary rubric judges: validity (is the finding grounded in the diff?) and actionability
//! (does it say what to change and where?), each a handlebars rubric over one [`BlindItem`]
//! with an answer constrained by a JSON schema, `{"verdict": "yes"|"no", "reason": string}`
//! (OpenAI-compatible: `response_format` `json_schema`; Ollama: `format`).
//!
//! A malformed answer (not JSON, not that shape, or cut at `max-tokens`) is asked again up to
//! `malformed-retries` times, the seed advanced by one each time; after that the judgement is
//! [`Verdict::Unparseable`], never a guess. Transport failures are retried by the transport;
//! a server that cannot be reached is a [`JudgeError`], not a verdict.
//!
//! The fingerprint ([`Judge::fingerprint`]) holds what changes the answer: protocol, model,
//! family, temperature, seed, max tokens, malformed retries, the rubric's text (hashed), the
//! schema (hashed), and the normalization and parsing rules' versions. As for the LLM
//! reviewer, base URLs, keys, transport retries, timeouts and concurrency stay out.

use super::blind::{BlindItem, BLIND_VERSION};
use super::client::{short_hash, JudgeError, ModelClient, Tokens};
use super::spec::JudgeSpec;
use crate::reviewer::llm::prompt::render_template;
use crate::reviewer::llm::wire::Message;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Version of the schema builder; the schema itself is hashed into the fingerprint too.
pub const VERDICT_SCHEMA_VERSION: &str = "verdict-schema-1";
/// Version of [`parse_verdict`]'s rules.
pub const PARSE_VERSION: &str = "verdict-parse-1";
/// The longest `reason` the schema allows.
pub const REASON_MAX_CHARS: u32 = 300;

/// The same-issue question's template (`templates/rubrics/same-issue.hbs`): two texts,
/// `first` and `second`, and nothing about where either came from.
pub const SAME_ISSUE_TEMPLATE: &str = include_str!("../../../../templates/rubrics/same-issue.hbs");

/// Two texts in the order a same-issue prompt shows them: whitespace collapsed, then sorted,
/// so the order says nothing about which text is which (and the prompt, like its key, is the
/// same whichever way the pair is given).
pub fn same_issue_order(a: &str, b: &str) -> (String, String) {
    let flat = |s: &str| crate::finding::collapse_whitespace(s).trim().to_string();
    let (a, b) = (flat(a), flat(b));
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Which question a judge answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rubric {
    /// Is the finding grounded in the diff?
    Validity,
    /// Does it say what to change and where?
    Actionability,
}

impl Rubric {
    pub const ALL: [Rubric; 2] = [Self::Validity, Self::Actionability];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Validity => "validity",
            Self::Actionability => "actionability",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Yes,
    No,
    /// No well-formed answer after every attempt.
    Unparseable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Yes => "yes",
            Self::No => "no",
            Self::Unparseable => "unparseable",
        }
    }
}

/// One judge's answer about one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    /// The model's reason; for [`Verdict::Unparseable`], what was wrong with the last answer.
    pub reason: String,
    /// Answers asked for: 1 + the malformed ones retried.
    pub attempts: u32,
    /// The seed of the last attempt (the judge's seed + attempts − 1).
    pub seed: u64,
    /// HTTP requests, transport retries included.
    pub requests: u32,
    pub tokens: Tokens,
    /// Seconds the requests took, waiting for a free endpoint excluded.
    pub seconds: f64,
    /// The last answer's text, as received.
    pub raw: String,
}

/// The schema a verdict must follow. Its keys serialize sorted, so a constrained decoder
/// writes `reason` before `verdict`.
pub fn verdict_schema() -> Value {
    json!({
        "title": "verdict",
        "type": "object",
        "additionalProperties": false,
        "required": ["verdict", "reason"],
        "properties": {
            "verdict": { "type": "string", "enum": ["yes", "no"] },
            "reason": { "type": "string", "maxLength": REASON_MAX_CHARS },
        }
    })
}

/// Reads an answer: one JSON object (a Markdown code fence around it is allowed) whose
/// `verdict` is `yes` or `no` (case and surrounding space ignored) and whose `reason` is a
/// string; other keys are ignored. `Err` says what is wrong.
pub fn parse_verdict(text: &str) -> Result<(Verdict, String), String> {
    let mut body = text.trim();
    if let Some(rest) = body.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        body = rest.strip_suffix("```").unwrap_or(rest).trim();
    }
    let v: Value = serde_json::from_str(body).map_err(|e| format!("the answer is not JSON ({e})"))?;
    let Value::Object(map) = v else { return Err("the answer is not a JSON object".into()) };
    let verdict = match map.get("verdict") {
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "yes" => Verdict::Yes,
            "no" => Verdict::No,
            _ => return Err(format!("`verdict` is {s:?}, not \"yes\" or \"no\"")),
        },
        Some(other) => return Err(format!("`verdict` is {other}, not \"yes\" or \"no\"")),
        None => return Err("the answer has no `verdict`".into()),
    };
    match map.get("reason") {
        Some(Value::String(r)) => Ok((verdict, r.trim().to_string())),
        Some(other) => Err(format!("`reason` is {other}, not a string")),
        None => Err("the answer has no `reason`".into()),
    }
}

/// A judge: one model with its rubrics.
pub struct Judge {
    spec: JudgeSpec,
    client: ModelClient,
    schema: Value,
}

impl Judge {
    pub fn new(spec: JudgeSpec) -> Result<Self, JudgeError> {
        Ok(Self { client: ModelClient::new(&spec.settings)?, spec, schema: verdict_schema() })
    }

    pub fn spec(&self) -> &JudgeSpec {
        &self.spec
    }

    fn rubric_text(&self, rubric: Rubric) -> &crate::reviewer::llm::PromptTemplate {
        match rubric {
            Rubric::Validity => &self.spec.validity,
            Rubric::Actionability => &self.spec.actionability,
        }
    }

    /// The prompt the judge sends for `item`: the rubric rendered over the item's `file`,
    /// `line`, `message`, `suggestion` (null when none) and `context`. The item's `id` is not
    /// a variable, so the prompt does not depend on the shuffle.
    pub fn prompt(&self, rubric: Rubric, item: &BlindItem) -> Result<String, JudgeError> {
        let vars = json!({
            "file": item.file,
            "line": item.line,
            "message": item.message,
            "suggestion": item.suggestion,
            "context": item.context,
        });
        let t = self.rubric_text(rubric);
        render_template(&format!("{} rubric `{}`", rubric.as_str(), t.name), &t.text, &vars).map_err(JudgeError::Failed)
    }

    /// Judges one item.
    pub async fn judge(&self, rubric: Rubric, item: &BlindItem) -> Result<Judgement, JudgeError> {
        self.judge_sample(rubric, item, 0).await
    }

    /// [`Self::judge`] as sample `sample` asks it (its seeds: `JudgeSpec::sample_seed`).
    pub async fn judge_sample(&self, rubric: Rubric, item: &BlindItem, sample: u32) -> Result<Judgement, JudgeError> {
        self.ask_verdict(self.prompt(rubric, item)?, self.spec.sample_seed(sample)).await
    }

    /// The prompt asking whether two texts describe the same issue: [`SAME_ISSUE_TEMPLATE`]
    /// over the two texts, whitespace collapsed, in a fixed order that does not depend on
    /// where either came from ([`same_issue_order`]).
    pub fn same_issue_prompt(&self, a: &str, b: &str) -> Result<String, JudgeError> {
        let (first, second) = same_issue_order(a, b);
        let vars = json!({ "first": first, "second": second });
        render_template("same-issue rubric `default`", SAME_ISSUE_TEMPLATE, &vars).map_err(JudgeError::Failed)
    }

    /// Asks whether two texts describe the same issue: `yes`, `no`, or unparseable.
    pub async fn same_issue(&self, a: &str, b: &str) -> Result<Judgement, JudgeError> {
        self.same_issue_sample(a, b, 0).await
    }

    /// [`Self::same_issue`] as sample `sample` asks it.
    pub async fn same_issue_sample(&self, a: &str, b: &str, sample: u32) -> Result<Judgement, JudgeError> {
        self.ask_verdict(self.same_issue_prompt(a, b)?, self.spec.sample_seed(sample)).await
    }

    /// Everything that changes this judge's same-issue answer: [`Self::fingerprint`]'s
    /// settings with the same-issue template's hash.
    pub fn same_issue_fingerprint(&self) -> Value {
        self.same_issue_fingerprint_sample(0)
    }

    /// [`Self::same_issue_fingerprint`] of sample `sample`: its first seed in place of the
    /// judge's (the same value for sample 0).
    pub fn same_issue_fingerprint_sample(&self, sample: u32) -> Value {
        let mut value = self.fingerprint_sample(Rubric::Validity, sample);
        if let Some(object) = value.as_object_mut() {
            object.insert("rubric".into(), json!("same-issue"));
            object.insert("rubric_text".into(), json!(short_hash(SAME_ISSUE_TEMPLATE)));
            object.remove("blind");
        }
        value
    }

    /// One prompt, asked until a well-formed verdict comes back or the retries are spent.
    async fn ask_verdict(&self, prompt: String, first_seed: u64) -> Result<Judgement, JudgeError> {
        let messages = [Message { role: "user", content: prompt }];
        let mut tokens = Tokens::default();
        let (mut seconds, mut requests) = (0.0, 0);
        let (mut raw, mut problem, mut seed) = (String::new(), String::new(), first_seed);
        for attempt in 0..=self.spec.malformed_retries {
            seed = first_seed.saturating_add(u64::from(attempt));
            let answer = self.client.ask(&messages, Some(&self.schema), seed).await?;
            tokens.prompt += answer.tokens.prompt;
            tokens.completion += answer.tokens.completion;
            seconds += answer.seconds;
            requests += answer.requests;
            raw = answer.completion.text.clone();
            let parsed = if answer.completion.truncated() {
                Err(format!("the answer was cut at max-tokens ({})", self.spec.settings.max_tokens))
            } else {
                parse_verdict(&raw)
            };
            match parsed {
                Ok((verdict, reason)) => return Ok(Judgement { verdict, reason, attempts: attempt + 1, seed, requests, tokens, seconds, raw }),
                Err(p) => problem = p,
            }
        }
        let attempts = self.spec.malformed_retries + 1;
        Ok(Judgement {
            verdict: Verdict::Unparseable,
            reason: format!("no well-formed answer in {attempts} attempt{}; the last: {problem}", if attempts == 1 { "" } else { "s" }),
            attempts,
            seed,
            requests,
            tokens,
            seconds,
            raw,
        })
    }

    /// Everything that changes this judge's answer to `rubric` (see the module doc).
    pub fn fingerprint(&self, rubric: Rubric) -> Value {
        self.fingerprint_sample(rubric, 0)
    }

    /// [`Self::fingerprint`] of sample `sample`: its first seed in place of the judge's, so
    /// each sample is cached on its own and sample 0 under the key a judge without samples has.
    pub fn fingerprint_sample(&self, rubric: Rubric, sample: u32) -> Value {
        let s = &self.spec.settings;
        json!({
            "stage": "judge",
            "rubric": rubric.as_str(),
            "protocol": s.provider.as_str(),
            "model": s.model,
            "family": s.family,
            "temperature": s.temperature,
            "seed": self.spec.sample_seed(sample),
            "max_tokens": s.max_tokens,
            "malformed_retries": self.spec.malformed_retries,
            "rubric_text": short_hash(&self.rubric_text(rubric).text),
            "schema": short_hash(&format!("{VERDICT_SCHEMA_VERSION}{}", self.schema)),
            "blind": BLIND_VERSION,
            "parse": PARSE_VERSION,
        })
    }

    /// The judge model's provenance (model file, sha256, server), checked against
    /// `models-json` where one is named; asks the server, so it fails when it is unreachable.
    pub async fn provenance(&self) -> Result<BTreeMap<String, Value>, JudgeError> {
        self.client.provenance().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::spec::ModelSettings;
    use crate::reviewer::llm::Protocol;

    fn judge(f: impl FnOnce(&mut JudgeSpec)) -> Judge {
        let mut spec = JudgeSpec::new("j", ModelSettings::new(Protocol::OpenAi, "http://127.0.0.1:9/v1", "m", "smollm2"));
        f(&mut spec);
        Judge::new(spec).expect("judge")
    }

    fn item() -> BlindItem {
        BlindItem {
            id: "item-3".into(),
            file: "calc.py".into(),
            line: 10,
            message: "avg divides by zero when xs is empty.".into(),
            suggestion: Some("Return 0 when xs is empty.".into()),
            context: "File `calc.py`:\n@@ -4,3 +4,7 @@\n   10 +     return sum(xs) / len(xs)".into(),
        }
    }

    #[test]
    fn verdicts_parse_strictly() {
        assert_eq!(parse_verdict(r#"{"reason":"len(xs) is 0 for []","verdict":"yes"}"#), Ok((Verdict::Yes, "len(xs) is 0 for []".into())));
        assert_eq!(parse_verdict("```json\n{\"verdict\": \" No \", \"reason\": \"vague\", \"extra\": 1}\n```"), Ok((Verdict::No, "vague".into())));
        for (text, why) in [
            ("yes", "not JSON"),
            ("[1]", "not a JSON object"),
            (r#"{"verdict":"maybe","reason":"x"}"#, "\"maybe\""),
            (r#"{"verdict":true,"reason":"x"}"#, "`verdict` is true"),
            (r#"{"reason":"x"}"#, "no `verdict`"),
            (r#"{"verdict":"yes"}"#, "no `reason`"),
            (r#"{"verdict":"yes","reason":3}"#, "`reason` is 3"),
            ("{\n  \"reason\": \"the code", "not JSON"),
        ] {
            let err = parse_verdict(text).expect_err(text);
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    #[test]
    fn prompts_carry_the_item_but_not_its_id() {
        let j = judge(|_| {});
        let p = j.prompt(Rubric::Validity, &item()).expect("renders");
        assert!(
            p.contains("VALID") && p.contains("avg divides by zero") && p.contains("Return 0 when xs is empty.") && p.contains("   10 +     return"),
            "{p}"
        );
        assert!(!p.contains("item-3"), "the id stays out of the prompt");
        let a = j.prompt(Rubric::Actionability, &BlindItem { suggestion: None, ..item() }).expect("renders");
        assert!(a.contains("ACTIONABLE") && !a.contains("Suggested change"), "{a}");
        assert!(!a.contains("&#x60;") && a.contains("`calc.py`"), "no HTML escaping: {a}");
    }

    #[test]
    fn each_sample_has_seeds_of_its_own_and_sample_0_is_the_judge_itself() {
        let j = judge(|s| {
            s.settings.seed = 5;
            s.malformed_retries = 2;
            s.samples = 3;
        });
        assert_eq!((0..3).map(|k| j.spec.sample_seed(k)).collect::<Vec<_>>(), [5, 8, 11], "room for each sample's two retries");
        assert_eq!(j.fingerprint_sample(Rubric::Validity, 0), j.fingerprint(Rubric::Validity));
        assert_eq!(j.same_issue_fingerprint_sample(0), j.same_issue_fingerprint());
        assert_ne!(j.fingerprint_sample(Rubric::Validity, 1), j.fingerprint(Rubric::Validity));
        assert_eq!(j.fingerprint_sample(Rubric::Validity, 2)["seed"], 11);
        // How many samples are asked changes no answer: it is in no key.
        let fewer = judge(|s| {
            s.settings.seed = 5;
            s.samples = 1;
        });
        assert_eq!(fewer.fingerprint_sample(Rubric::Actionability, 1), j.fingerprint_sample(Rubric::Actionability, 1));
    }

    #[test]
    fn fingerprint_holds_what_changes_the_answer_and_nothing_else() {
        let base = judge(|_| {}).fingerprint(Rubric::Validity);
        assert_eq!((base["model"].as_str(), base["family"].as_str(), base["rubric"].as_str()), (Some("m"), Some("smollm2"), Some("validity")));
        assert_ne!(judge(|_| {}).fingerprint(Rubric::Actionability), base);
        let text = base.to_string();
        assert!(!text.contains("127.0.0.1"), "URLs stay out: {text}");
        type Change = Box<dyn Fn(&mut JudgeSpec)>;
        let changes: Vec<Change> = vec![
            Box::new(|s| s.validity.text.push('!')),
            Box::new(|s| s.settings.seed = 1),
            Box::new(|s| s.settings.temperature = 0.7),
            Box::new(|s| s.settings.max_tokens = 64),
            Box::new(|s| s.settings.model = "m2".into()),
            Box::new(|s| s.settings.family = "gemma".into()),
            Box::new(|s| s.settings.provider = Protocol::Ollama),
            Box::new(|s| s.malformed_retries = 0),
        ];
        for (i, change) in changes.iter().enumerate() {
            assert_ne!(judge(|s| change(s)).fingerprint(Rubric::Validity), base, "change {i} must change the key");
        }
        let same = judge(|s| {
            s.name = "other".into();
            s.settings.base_urls = vec!["http://elsewhere:1/v1".into(), "http://b:2/v1".into()];
            s.settings.api_key_env = Some("KEY".into());
            s.settings.retries = 9;
            s.settings.max_concurrency = 4;
            s.settings.request_timeout = std::time::Duration::from_secs(1);
            s.actionability.text.push('!');
        });
        assert_eq!(same.fingerprint(Rubric::Validity), base);
    }

    #[test]
    fn the_same_issue_prompt_holds_the_two_texts_in_an_order_that_hides_their_source() {
        let j = judge(|_| {});
        let p = j.same_issue_prompt("the loop   skips the last element", "off by one at the end").expect("renders");
        assert_eq!(p, j.same_issue_prompt("off by one at the end", "the loop skips the last element").expect("renders"));
        let (a, b) = (p.find("Text A:\noff by one at the end"), p.find("Text B:\nthe loop skips the last element"));
        assert!(a.is_some() && b.is_some(), "{p}");
        assert!(!p.to_lowercase().contains("oracle") && !p.contains("{{"), "{p}");
        let f = j.same_issue_fingerprint();
        assert_eq!(f["rubric"], "same-issue");
        assert_ne!(f["rubric_text"], j.fingerprint(Rubric::Validity)["rubric_text"]);
        assert_eq!(f["model"], "m");
    }

    #[test]
    fn judgements_read_back_as_written() {
        let j = Judgement {
            verdict: Verdict::Unparseable,
            reason: "r".into(),
            attempts: 3,
            seed: 2,
            requests: 4,
            tokens: Tokens { prompt: 10, completion: 5 },
            seconds: 1.5,
            raw: "x".into(),
        };
        let text = serde_json::to_string(&j).expect("serializes");
        assert!(text.contains("\"verdict\":\"unparseable\""), "{text}");
        assert_eq!(serde_json::from_str::<Judgement>(&text).expect("reads back"), j);
    }

    #[test]
    fn the_schema_is_the_documented_shape() {
        let s = verdict_schema();
        assert_eq!(s["properties"]["verdict"]["enum"], json!(["yes", "no"]));
        assert_eq!(s["properties"]["reason"]["type"], "string");
        assert_eq!(s["required"], json!(["verdict", "reason"]));
        assert_eq!(s["additionalProperties"], false);
    }
}
