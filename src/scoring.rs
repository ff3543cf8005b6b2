//! RQS v2's scoring stages for one experiment: the jury, the claims model, the static
//! analyzers and the embedder behind the engine's [`Scorers`], and what they produced, read
//! back as the RQS analysis's input ([`rqs_input`]).
//!
//! Keys never need a repository: a claims, smells or judge call is keyed by its producer's
//! fingerprint and the subject's content identity (plus, for a judge, the finding as shown),
//! an embedding by the embedder's fingerprint and the texts. The blind item a judge sees is
//! built from the finding and the subject's diff only when the call runs.

use crate::analysis::matching::judgements::{recorded_decisions, JudgementFile, RecordedDecision};
use crate::analysis::matching::matcher::MatchVotes;
use crate::analysis::matching::probability::pairs_to_judge;
use crate::analysis::rqs::metric::{EmbedderInfo, FindingVotes, JudgeInfo, RqsInput, RunScoring, SampledVotes, StageCost, SubjectReferences, Vote};
use crate::analysis::spec::OracleRule;
use crate::cache::Store;
use crate::exec::{Call, CallCost, CallFuture, NodeInputs, ScoredView, Scorers, WalkView};
use crate::finding::Finding;
use crate::ground_truth::oracle::Oracle;
use crate::judge::blind::blind_items;
use crate::judge::claims::ClaimsGenerator;
use crate::judge::embed::Embedder;
use crate::judge::rubric::same_issue_order;
use crate::judge::rubric::{Judge, Rubric, Verdict};
use crate::judge::spec::JudgeSpec;
use crate::manifest::Scoring;
use crate::plan::{Node, Plan, ScoreTarget};
use crate::smells::AnalyzerSet;
use crate::subject::Subject;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

mod payloads;
pub mod stages;

use payloads::{
    ClaimsAnswer, EmbedAnswer, EmbedCall, JudgeCall, MatchCall, Metered, NotReplayed, ReplayKey, ReplayedAnswer, SmellsAnswer, SmellsKey, TauCalibration,
    TextsKey, VerdictAnswer,
};
use stages::RqsStage;

/// The rubrics every judge applies to every finding, in call order.
pub(crate) const RUBRICS: [Rubric; 2] = [Rubric::Validity, Rubric::Actionability];

/// A judge of the experiment: a model asked through its rubrics, or one whose match decisions
/// are replayed from the file it recorded them in.
enum Juror {
    Model(Box<Judge>),
    Replay(Box<ReplayedJudge>),
}

/// `[judges.NAME] kind = "replay"`: a judge's recorded match decisions, answering each match
/// call at once, from memory (`Scorers::answer_now`): nothing is run, stored or metered.
struct ReplayedJudge {
    spec: JudgeSpec,
    /// blake3 of the file's bytes: what the answers depend on.
    digest: String,
    decisions: HashMap<(String, String), RecordedDecision>,
}

impl ReplayedJudge {
    fn read(mut spec: JudgeSpec) -> Result<Self, String> {
        let path = spec.replay.clone().ok_or("not a replayed judge")?;
        let file = JudgementFile::read(&path)?;
        if !file.labelled() {
            return Err(format!("judge `{}`: `{}` carries no match decisions (no golden comment has `matched_candidate`)", spec.name, path.display()));
        }
        if spec.settings.model.is_empty() {
            spec.settings.model = file.judge.clone();
        }
        Ok(Self { decisions: recorded_decisions(&file), digest: file.digest, spec })
    }

    fn fingerprint(&self) -> Value {
        json!({"stage": "match", "kind": "replay", "judge": self.spec.settings.model, "decisions": self.digest})
    }

    /// The recorded decision on `golden` in a review by `tool`: `verdict` yes or no, or null
    /// where the file has none.
    fn answer(&self, tool: &str, golden: &str) -> Result<Value, String> {
        let replayed = self.spec.settings.model.as_str();
        match self.decisions.get(&(tool.to_string(), golden.to_string())) {
            Some(d) => payloads::write(&ReplayedAnswer {
                verdict: d.found.map(|f| if f { Verdict::Yes.as_str() } else { Verdict::No.as_str() }),
                candidate: d.candidate.as_deref(),
                false_positives: d.false_positives,
                replayed,
            }),
            None => payloads::write(&NotReplayed { verdict: None, replayed }),
        }
    }
}

impl Juror {
    fn spec(&self) -> &JudgeSpec {
        match self {
            Self::Model(j) => j.spec(),
            Self::Replay(r) => &r.spec,
        }
    }

    fn model(&self) -> Result<&Judge, String> {
        match self {
            Self::Model(j) => Ok(j),
            Self::Replay(r) => Err(format!("judge `{}` replays recorded match decisions; only a model judge applies rubrics", r.spec.name)),
        }
    }
}

/// What the match nodes ask the judges about: a run's findings against `oracle`'s under
/// `rule`, only the pairs the rule leaves to them or, for a `jury` analysis, every pair.
struct MatchingAsk {
    oracle: Arc<Oracle>,
    rule: OracleRule,
    every_pair: bool,
}

/// The scoring resources of one experiment.
pub struct ExperimentScorers {
    judges: Vec<Juror>,
    claims: Option<ClaimsGenerator>,
    analyzers: Option<AnalyzerSet>,
    embedder: Option<Embedder>,
    shuffle_seed: u64,
    /// The oracle and the rule whose pairs the judges are asked about, when an analysis takes
    /// their word as evidence of a find or measures them (`jury`).
    matching: Option<MatchingAsk>,
}

/// The analyzers an execution keys (and, live, runs) smells with, when its plan has smells
/// (`smells_of`: the subjects' identities) and the manifest declares analyzers. Live: the
/// installed ones, found under `tools_dir` or on `PATH`, checked against the manifest's
/// `analyzer-versions` when it pins them. Frozen: never the installed ones — the pinned
/// versions, else the one analyzer identity the cache's smells of these subjects were stored
/// under (under runner's current settings for those analyzers).
pub(crate) fn analyzers_for(
    scoring: &Scoring,
    smells_of: &BTreeSet<&str>,
    tools_dir: &std::path::Path,
    frozen: bool,
    cache: &dyn Store,
) -> Result<Option<AnalyzerSet>, String> {
    let kinds = &scoring.analyzers;
    if smells_of.is_empty() || kinds.is_empty() {
        return Ok(None);
    }
    let pins = &scoring.analyzer_versions;
    if !frozen {
        let set = AnalyzerSet::resolve(kinds, tools_dir).map_err(|e| e.to_string())?;
        if !pins.is_empty() {
            set.check_pins(pins).map_err(|e| e.to_string())?;
        }
        return Ok(Some(set));
    }
    if !pins.is_empty() {
        return AnalyzerSet::pinned(kinds, pins).map(Some).map_err(|e| format!("[pseudo-references] analyzer-versions: {e}"));
    }
    let mut found: BTreeMap<String, AnalyzerSet> = BTreeMap::new();
    for record in cache.list_values().into_iter().flatten().filter(|r| r.stage == "smells") {
        let Some(SmellsKey { subject, analyzers: identity }) = payloads::read(&record.inputs) else { continue };
        if smells_of.contains(subject.as_str()) {
            if let Some(set) = AnalyzerSet::from_identity(kinds, &identity) {
                found.entry(identity.to_string()).or_insert(set);
            }
        }
    }
    let names = kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ");
    let mut sets = found.into_values();
    match (sets.next(), sets.next()) {
        (Some(set), None) => Ok(Some(set)),
        (None, _) => Err(format!(
            "--frozen reads the analyzers' versions ({names}) from the manifest or the cache, never from the installed tools, and the cache `{}` holds no smells of these subjects under runner's settings for them: pin them in [pseudo-references] `analyzer-versions`, or run without --frozen",
            cache.location()
        )),
        (Some(a), Some(b)) => Err(format!(
            "--frozen: the cache `{}` holds smells of these subjects from more than one analyzer version ({}; {}…): pin the ones to reproduce in [pseudo-references] `analyzer-versions`",
            cache.location(),
            versions_of(&a),
            versions_of(&b)
        )),
    }
}

/// An analyzer set's versions, as the report shows them: `…, ruff 0.17.5`.
fn versions_of(set: &AnalyzerSet) -> String {
    let identity = set.identity();
    let versions: Vec<&str> = identity.as_object().into_iter().flatten().filter(|(k, _)| *k != "settings").filter_map(|(_, v)| v.as_str()).collect();
    versions.join(", ")
}

impl ExperimentScorers {
    /// Builds the clients the manifest declares, with the analyzers [`analyzers_for`] gave
    /// (`None` when the plan has no smells, so an experiment without them needs none).
    pub fn new(scoring: &Scoring, shuffle_seed: u64, analyzers: Option<AnalyzerSet>) -> Result<Self, String> {
        let judges = scoring
            .judges
            .iter()
            .map(|spec| match spec.replay {
                Some(_) => ReplayedJudge::read(spec.clone()).map(|r| Juror::Replay(Box::new(r))),
                None => Judge::new(spec.clone()).map(|j| Juror::Model(Box::new(j))).map_err(|e| e.to_string()),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let claims = scoring.claims.clone().map(|spec| ClaimsGenerator::new(spec).map_err(|e| e.to_string())).transpose()?;
        let embedder = scoring.embedder.clone().map(|spec| Embedder::new(spec).map_err(|e| e.to_string())).transpose()?;
        Ok(Self { judges, claims, analyzers, embedder, shuffle_seed, matching: None })
    }

    /// Asks the judges, in match nodes, about the pairs of `oracle`'s findings and a run's
    /// findings that `rule` leaves to them, or with `every_pair` (a `jury` analysis) about
    /// every pair at the same place; a replayed judge is asked about each oracle finding.
    pub(crate) fn with_matching(mut self, oracle: Arc<Oracle>, rule: OracleRule, every_pair: bool) -> Self {
        self.matching = Some(MatchingAsk { oracle, rule, every_pair });
        self
    }

    /// The jury as the report names it.
    pub fn jury(&self) -> Vec<JudgeInfo> {
        self.judges
            .iter()
            .map(|j| JudgeInfo {
                name: j.spec().name.clone(),
                model: j.spec().settings.model.clone(),
                family: j.spec().settings.family.clone(),
                samples: j.spec().samples,
            })
            .collect()
    }

    /// The embedder's fingerprint, as hashed into its keys.
    pub(crate) fn embedder_fingerprint(&self) -> Option<Value> {
        self.embedder.as_ref().map(Embedder::fingerprint)
    }

    pub fn shuffle_seed(&self) -> u64 {
        self.shuffle_seed
    }

    /// The claims model's name, when one is declared.
    pub fn claims_model(&self) -> Option<String> {
        self.claims.as_ref().map(|c| c.spec().settings.model.clone())
    }

    /// The analyzers and their versions, as their keys hold them: `…, ruff 0.17.5`.
    pub fn analyzers(&self) -> Option<String> {
        self.analyzers.as_ref().map(versions_of)
    }
}

/// A finding as a judge's key sees it: what the blind item shows, before the diff context
/// (which the subject's identity determines).
fn shown(finding: &Finding) -> Value {
    let flat = |s: &str| crate::finding::collapse_whitespace(s).trim().to_string();
    json!({
        "file": finding.file.trim(),
        "line": finding.anchor_line(),
        "message": flat(&finding.message),
        "suggestion": finding.suggestion.as_deref().map(flat).filter(|s| !s.is_empty()),
    })
}

/// The sentences of a review: each finding's message, split the CRScore way.
pub(crate) fn review_sentences(findings: &[Finding]) -> Vec<String> {
    findings.iter().flat_map(|f| crate::text::review_sentences(&f.message)).collect()
}

/// The order a run's findings are shown in: a shuffle seeded by `seed`.
fn shuffled(n: usize, seed: u64) -> Vec<usize> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    order
}

impl Scorers for ExperimentScorers {
    fn calls(&self, node: &Node, inputs: &NodeInputs<'_>) -> Result<Vec<Call>, String> {
        let subject = inputs.subject_identity;
        let Node::Score { stage, member: judge, target } = node else { return Err(format!("{node:?} is not a scoring node")) };
        let Some(stage) = RqsStage::of(*stage) else { return Err(format!("{node:?} is not a stage of RQS v2")) };
        match stage {
            RqsStage::Claims => {
                let claims = self.claims.as_ref().ok_or("no claims model is declared")?;
                Ok(vec![Call {
                    stage: "claims",
                    inputs: json!({"generator": claims.fingerprint(), "subject": subject}),
                    endpoint: "claims".into(),
                    payload: Value::Null,
                }])
            }
            RqsStage::Smells => {
                let analyzers = self.analyzers.as_ref().ok_or("no analyzers are declared")?;
                Ok(vec![Call {
                    stage: "smells",
                    inputs: json!({"analyzers": analyzers.identity(), "subject": subject}),
                    endpoint: "analyzers".into(),
                    payload: Value::Null,
                }])
            }
            RqsStage::Judge => {
                let j = self.judges.get(*judge).ok_or_else(|| format!("no judge number {}", judge + 1))?.model()?;
                let findings = inputs.findings.ok_or("the run has no findings to judge")?;
                let mut calls = Vec::new();
                for index in shuffled(findings.len(), self.shuffle_seed) {
                    for rubric in RUBRICS {
                        // Each sample is a call of its own, keyed by its own seeds.
                        for sample in 0..j.spec().samples {
                            calls.push(Call {
                                stage: "judge",
                                inputs: json!({"judge": j.fingerprint_sample(rubric, sample), "subject": subject, "finding": shown(&findings[index])}),
                                endpoint: format!("judge:{}", j.spec().name),
                                payload: payloads::write(&JudgeCall {
                                    finding: index,
                                    rubric: rubric.as_str().to_string(),
                                    shown: findings[index].clone(),
                                    sample,
                                })?,
                            });
                        }
                    }
                }
                Ok(calls)
            }
            RqsStage::Match => {
                let juror = self.judges.get(*judge).ok_or_else(|| format!("no judge number {}", judge + 1))?;
                let ask = self.matching.as_ref().ok_or("no analysis asks the judges to match findings")?;
                let findings = inputs.findings.ok_or("the run has no findings to match")?;
                if ask.oracle.case(inputs.subject).is_none() {
                    return Ok(Vec::new());
                }
                let expected = ask.oracle.expected_for(inputs.subject);
                let j = match juror {
                    Juror::Model(j) => j,
                    // A replayed judge decided per oracle finding, on its own reading of the
                    // review: one call per oracle finding, for the run's reviewer.
                    Juror::Replay(r) => {
                        let fingerprint = r.fingerprint();
                        return expected
                            .iter()
                            .map(|o| {
                                Ok(Call {
                                    stage: "match",
                                    inputs: json!({"judge": fingerprint, "tool": inputs.reviewer, "golden": o.description}),
                                    endpoint: format!("judge:{}", r.spec.name),
                                    payload: payloads::write(&MatchCall { oracle: o.description.clone(), report: None, golden: true, sample: 0 })?,
                                })
                            })
                            .collect();
                    }
                };
                let fingerprints: Vec<Value> = (0..j.spec().samples).map(|sample| j.same_issue_fingerprint_sample(sample)).collect();
                let mut calls = Vec::new();
                for (description, report) in pairs_to_judge(findings, &expected, &ask.rule, ask.every_pair) {
                    // Blind: the two texts in an order that does not say which is which.
                    let (first, second) = same_issue_order(&description, &report);
                    for (sample, fingerprint) in (0..).zip(&fingerprints) {
                        calls.push(Call {
                            stage: "match",
                            inputs: json!({"judge": fingerprint, "texts": [first, second]}),
                            endpoint: format!("judge:{}", j.spec().name),
                            payload: payloads::write(&MatchCall { oracle: description.clone(), report: Some(report.clone()), golden: false, sample })?,
                        });
                    }
                }
                Ok(calls)
            }
            RqsStage::Embed => {
                let embedder = self.embedder.as_ref().ok_or("no embedder is declared")?;
                let (texts, payload) = match target {
                    ScoreTarget::Run(_) => (review_sentences(inputs.findings.ok_or("the run has no findings")?), payloads::write(&EmbedCall::Review)?),
                    ScoreTarget::Subject(_) => {
                        let first = |stage: RqsStage| inputs.scored_by(stage.stage()).and_then(|v| v.first());
                        let claims: Vec<String> = first(RqsStage::Claims).and_then(payloads::read::<ClaimsAnswer>).map(|a| a.claims).unwrap_or_default();
                        let smells: Vec<String> = first(RqsStage::Smells).and_then(payloads::read::<SmellsAnswer<Value>>).map(|a| a.texts).unwrap_or_default();
                        let payload = payloads::write(&EmbedCall::References { claims: claims.len(), smells: smells.len() })?;
                        (claims.into_iter().chain(smells).collect(), payload)
                    }
                };
                if texts.is_empty() {
                    return Ok(Vec::new());
                }
                Ok(vec![Call { stage: "embed", inputs: json!({"embedder": embedder.fingerprint(), "texts": texts}), endpoint: "embed".into(), payload }])
            }
        }
    }

    fn run(self: Arc<Self>, call: Call, subject: Option<Arc<Subject>>) -> CallFuture {
        Box::pin(async move {
            match call.stage {
                "claims" => {
                    let subject = subject.ok_or("claims need the subject's diff")?;
                    let generator = self.claims.as_ref().ok_or("no claims model is declared")?;
                    let answer = generator.generate(&subject.diff).await.map_err(|e| e.to_string())?;
                    let claims = crate::text::parse_claims(&answer.raw);
                    payloads::write(&ClaimsAnswer {
                        claims,
                        raw: answer.raw,
                        truncated: answer.truncated,
                        tokens: answer.tokens.prompt + answer.tokens.completion,
                        seconds: answer.seconds,
                    })
                }
                "smells" => {
                    let subject = subject.ok_or("smells need the subject's repository")?;
                    let me = self.clone();
                    tokio::task::spawn_blocking(move || {
                        let analyzers = me.analyzers.as_ref().ok_or("no analyzers are declared")?;
                        let scratch = crate::scratch::tempdir("runner-smells-").map_err(|e| format!("no scratch directory for the analyzers: {e}"))?;
                        let smells = crate::smells::analyze(analyzers, &subject, scratch.path()).map_err(|e| e.to_string())?;
                        let texts: Vec<String> = smells.iter().map(|s| s.text()).collect();
                        payloads::write(&SmellsAnswer { smells, texts, analyzers: analyzers.identity() })
                    })
                    .await
                    .map_err(|e| format!("the analyzers' task failed: {e}"))?
                }
                "judge" => {
                    let subject = subject.ok_or("a judge needs the subject's diff")?;
                    let JudgeCall { shown: finding, rubric, sample, .. } = payloads::read(&call.payload).ok_or("bad judge payload")?;
                    let rubric = RUBRICS.into_iter().find(|r| rubric == r.as_str()).ok_or("bad judge payload: rubric")?;
                    let name = call.endpoint.trim_start_matches("judge:");
                    let judge = self.judges.iter().find(|j| j.spec().name == name).ok_or_else(|| format!("no judge `{name}`"))?.model()?;
                    // One finding per call, always shown as `item-1`: the prompt depends on the
                    // finding and the subject only, as the key does.
                    let (_, item) = blind_items(std::slice::from_ref(&finding), &subject, 0).into_iter().next().ok_or("no blind item")?;
                    let judgement = judge.judge_sample(rubric, &item, sample).await.map_err(|e| e.to_string())?;
                    serde_json::to_value(&judgement).map_err(|e| e.to_string())
                }
                "match" => {
                    let name = call.endpoint.trim_start_matches("judge:");
                    let judge = self.judges.iter().find(|j| j.spec().name == name).ok_or_else(|| format!("no judge `{name}`"))?.model()?;
                    let TextsKey { texts } = payloads::read(&call.inputs).ok_or("bad match call: texts expected")?;
                    let [first, second] = texts.as_slice() else { return Err("bad match call: two texts expected".to_string()) };
                    let sample = payloads::read::<MatchCall>(&call.payload).map_or(0, |m| m.sample);
                    let judgement = judge.same_issue_sample(first, second, sample).await.map_err(|e| e.to_string())?;
                    serde_json::to_value(&judgement).map_err(|e| e.to_string())
                }
                "embed" => {
                    let embedder = self.embedder.as_ref().ok_or("no embedder is declared")?;
                    let TextsKey { texts } = payloads::read(&call.inputs).ok_or("bad embed call: texts expected")?;
                    let embedded = embedder.embed(&texts).await.map_err(|e| e.to_string())?;
                    payloads::write(&EmbedAnswer { vectors: encode_vectors(&embedded.vectors), tokens: embedded.tokens, seconds: embedded.seconds })
                }
                other => Err(format!("unknown scoring stage `{other}`")),
            }
        })
    }

    /// A replayed judge's match calls: its recorded decision.
    fn answer_now(&self, call: &Call) -> Option<Result<Value, String>> {
        // A model judge's match call has two texts, not a golden comment: it is run.
        let ReplayKey { tool, golden } = payloads::read(&call.inputs).filter(|_| call.stage == "match")?;
        let name = call.endpoint.trim_start_matches("judge:");
        let Some(Juror::Replay(r)) = self.judges.iter().find(|j| j.spec().name == name) else {
            return Some(Err(format!("no replayed judge `{name}`")));
        };
        Some(r.answer(&tool, &golden))
    }

    /// Judge, claims and embedding calls are model calls; the analyzers are local work.
    fn metered(&self, call: &Call) -> bool {
        call.stage != "smells"
    }

    /// The tokens and seconds the answer records (a judge's requests without waiting for a
    /// free endpoint); a failed call costs its time.
    fn cost(&self, _call: &Call, answer: Option<&Value>, elapsed: std::time::Duration) -> CallCost {
        match answer.map(cost) {
            Some(c) if c.seconds > 0.0 => CallCost { tokens: c.tokens, ms: (c.seconds * 1000.0).round() as u64 },
            Some(c) => CallCost { tokens: c.tokens, ms: elapsed.as_millis() as u64 },
            None => CallCost { tokens: 0, ms: elapsed.as_millis() as u64 },
        }
    }

    fn endpoint_limit(&self, endpoint: &str) -> usize {
        if let Some(name) = endpoint.strip_prefix("judge:") {
            return self.judges.iter().find(|j| j.spec().name == name).map_or(1, |j| j.spec().settings.max_concurrency);
        }
        match endpoint {
            "claims" => self.claims.as_ref().map_or(1, |c| c.spec().settings.max_concurrency),
            // One embedding request at a time: each already carries a batch of texts.
            "embed" => 1,
            // Analyzers are local processes: one per core the machine has.
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// The vectors an `embed` answer holds.
fn embedded_vectors(value: &Value) -> Option<Vec<Vec<f32>>> {
    vectors(&payloads::read::<EmbedAnswer>(value)?.vectors)
}

/// Embedding vectors as stored: each one the base64 of its f32s, little-endian — exact, and a
/// third the size of JSON numbers.
fn encode_vectors(vectors: &[Vec<f32>]) -> Value {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    Value::Array(vectors.iter().map(|v| Value::String(engine.encode(v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()))).collect())
}

/// Stored vectors back: base64 strings of little-endian f32s ([`encode_vectors`]), or arrays
/// of JSON numbers (older entries).
fn vectors(value: &Value) -> Option<Vec<Vec<f32>>> {
    use base64::Engine;
    let engine = base64::engine::general_purpose::STANDARD;
    value
        .as_array()?
        .iter()
        .map(|row| match row {
            Value::String(text) => {
                let bytes = engine.decode(text).ok()?;
                (bytes.len() % 4 == 0).then(|| bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
            }
            Value::Array(r) => r.iter().map(|x| x.as_f64().map(|f| f as f32)).collect(),
            _ => None,
        })
        .collect()
}

fn cost(value: &Value) -> StageCost {
    Metered::of(value).cost()
}

fn vote(value: &Value) -> Vote {
    VerdictAnswer::of(value).vote()
}

/// The judges' same-issue votes from the match nodes, as oracle matching reads them; `None`
/// when the plan has no match nodes.
pub fn match_votes<A, R>(plan: &Plan, view: &WalkView<'_, A, R>, scorers: &ExperimentScorers) -> Option<MatchVotes> {
    scorers.matching.as_ref()?;
    let names: Vec<String> = scorers.judges.iter().map(|j| j.spec().name.clone()).collect();
    let replayed = scorers.judges.iter().map(|j| matches!(j, Juror::Replay(_))).collect();
    let mut votes = MatchVotes { judges: names.clone(), replayed, ..Default::default() };
    for i in 0..plan.runs.len() {
        for (j, name) in names.iter().enumerate() {
            match view.scored(&stages::matching(i, j)) {
                ScoredView::Done(s) => {
                    // A judge asked several times votes its samples' majority on each pair.
                    let mut sampled: BTreeMap<(String, String), Vec<(u32, Vote)>> = BTreeMap::new();
                    for (value, payload) in s.values.iter().zip(&s.payloads) {
                        let Some(MatchCall { oracle, report, golden, sample }) = payloads::read(payload) else { continue };
                        let answer = VerdictAnswer::of(value);
                        if golden {
                            let label = plan.runs[i].label();
                            let slot = votes.findings.entry((label.clone(), oracle)).or_insert_with(|| vec![None; names.len()]);
                            slot[j] = answer.vote().as_bool();
                            let fp = votes.false_positives.entry(label).or_insert_with(|| vec![None; names.len()]);
                            fp[j] = answer.false_positives.map(|n| n as usize).or(fp[j]);
                            continue;
                        }
                        let Some(report) = report else { continue };
                        sampled.entry((oracle, report)).or_default().push((sample, answer.vote()));
                    }
                    for (pair, mut samples) in sampled {
                        samples.sort_by_key(|(sample, _)| *sample);
                        let samples: Vec<Vote> = samples.into_iter().map(|(_, vote)| vote).collect();
                        // A pair several runs share reads the same cached answers: kept once per judge.
                        let by_sample = votes.sampled.entry(pair.clone()).or_insert_with(|| vec![Vec::new(); names.len()]);
                        by_sample[j] = samples.iter().map(|v| v.as_bool()).collect();
                        let slot = votes.pairs.entry(pair).or_insert_with(|| vec![None; names.len()]);
                        slot[j] = Vote::of_samples(&samples).as_bool();
                    }
                }
                // A run that failed is reported as such; its match nodes were skipped with it.
                ScoredView::Failed(e) if view.run(i).and_then(|o| o.success()).is_some() => {
                    votes.problems.push(format!("judge `{name}` on run {}: {e}", plan.runs[i].label()))
                }
                ScoredView::Failed(_) | ScoredView::Absent => {}
            }
        }
    }
    Some(votes)
}

/// The calls of the plan's match nodes that the findings of reviews already known (`findings`,
/// by run index) determine, and how many of them the cache holds: what `runner plan` shows
/// before anything runs.
pub fn match_calls(
    plan: &Plan,
    scorers: &ExperimentScorers,
    store: &dyn crate::cache::Store,
    findings: &std::collections::BTreeMap<usize, Arc<[Finding]>>,
) -> (usize, usize) {
    let (mut calls, mut cached) = (0, 0);
    for n in plan.graph.node_weights() {
        let Node::Score { stage, target: ScoreTarget::Run(run), .. } = n else { continue };
        if RqsStage::of(*stage) != Some(RqsStage::Match) {
            continue;
        }
        let (Some(found), Some(subject)) = (findings.get(run), plan.subjects.get(&plan.runs[*run].subject_id)) else { continue };
        let inputs = NodeInputs {
            subject: &subject.id,
            subject_identity: &subject.identity,
            findings: Some(found),
            reviewer: &plan.runs[*run].reviewer,
            scored: Vec::new(),
        };
        for call in scorers.calls(n, &inputs).unwrap_or_default() {
            calls += 1;
            // A replayed decision needs no work: counted as cached.
            cached += usize::from(scorers.answer_now(&call).is_some() || matches!(store.lookup_value(&call.key()), crate::cache::ValueLookup::Hit(_)));
        }
    }
    (calls, cached)
}

/// What the scoring nodes produced, as the RQS analysis reads it.
pub fn rqs_input<A, R>(plan: &Plan, view: &WalkView<'_, A, R>, scorers: &ExperimentScorers, tau: Option<(f64, String)>) -> RqsInput {
    let jury = scorers.jury();
    let mut input = RqsInput {
        judges: jury.clone(),
        embedder: scorers.embedder_fingerprint().map(|f| f.to_string()).zip(tau).map(|(identity, (tau, tau_source))| EmbedderInfo {
            identity,
            tau,
            tau_source,
        }),
        shuffle_seed: scorers.shuffle_seed(),
        claims_model: scorers.claims_model(),
        analyzers: scorers.analyzers(),
        ..Default::default()
    };
    for subject in plan.subjects.keys() {
        let mut refs = SubjectReferences::default();
        match view.scored(&stages::claims(subject)) {
            ScoredView::Done(s) => {
                if let Some(v) = s.values.first() {
                    refs.claims = payloads::read::<ClaimsAnswer>(v).map_or(0, |a| a.claims.len());
                    refs.claims_cost = cost(v);
                }
            }
            ScoredView::Failed(e) => refs.problems.push(format!("claims: {e}")),
            ScoredView::Absent => {}
        }
        match view.scored(&stages::smells(subject)) {
            ScoredView::Done(s) => refs.smells = s.values.first().and_then(payloads::read::<SmellsAnswer<Value>>).map_or(0, |a| a.texts.len()),
            ScoredView::Failed(e) => refs.problems.push(format!("smells: {e}")),
            ScoredView::Absent => {}
        }
        match view.scored(&stages::reference_embeddings(subject)) {
            ScoredView::Done(s) => refs.vectors = Some(s.values.first().and_then(embedded_vectors).unwrap_or_default()),
            ScoredView::Failed(e) => refs.problems.push(format!("pseudo-reference embeddings: {e}")),
            ScoredView::Absent => {}
        }
        input.references.insert(subject.clone(), refs);
    }
    for (i, run) in plan.runs.iter().enumerate() {
        let Some((_, findings)) = view.run(i).and_then(|o| o.success()) else { continue };
        let mut scoring = RunScoring {
            votes: vec![
                FindingVotes { validity: vec![Vote::Absent; jury.len()], actionability: vec![Vote::Absent; jury.len()], ..Default::default() };
                findings.len()
            ],
            judge_cost: vec![StageCost::default(); jury.len()],
            ..Default::default()
        };
        for (j, judge) in jury.iter().enumerate() {
            match view.scored(&stages::judge(i, j)) {
                ScoredView::Done(s) => {
                    // Each question's samples in sample order; the judge votes their majority.
                    let mut sampled: BTreeMap<(usize, bool), Vec<(u32, Vote)>> = BTreeMap::new();
                    for (value, payload) in s.values.iter().zip(&s.payloads) {
                        let Some(call) = payloads::read::<JudgeCall>(payload) else { continue };
                        let validity = call.rubric == Rubric::Validity.as_str();
                        sampled.entry((call.finding, validity)).or_default().push((call.sample, vote(value)));
                        scoring.judge_cost[j].add(cost(value));
                    }
                    for ((finding, validity), mut samples) in sampled {
                        let Some(votes) = scoring.votes.get_mut(finding) else { continue };
                        samples.sort_by_key(|(sample, _)| *sample);
                        let samples: Vec<Vote> = samples.into_iter().map(|(_, v)| v).collect();
                        let share = &mut votes.shares[usize::from(!validity)];
                        share.0 += samples.iter().filter(|v| v.as_bool() == Some(true)).count() as u32;
                        share.1 += samples.iter().filter(|v| v.as_bool().is_some()).count() as u32;
                        let slot = if validity { &mut votes.validity } else { &mut votes.actionability };
                        slot[j] = Vote::of_samples(&samples);
                        if samples.len() > 1 {
                            scoring.sampled.push(SampledVotes { judge: j, votes: samples });
                        }
                    }
                }
                ScoredView::Failed(e) => scoring.problems.push(format!("judge `{}`: {e}", judge.name)),
                ScoredView::Absent => {}
            }
        }
        match view.scored(&stages::review_embeddings(i)) {
            ScoredView::Done(s) => {
                scoring.sentences = Some(s.values.first().and_then(embedded_vectors).unwrap_or_default());
                if let Some(v) = s.values.first() {
                    scoring.embed_cost = cost(v);
                }
            }
            ScoredView::Failed(e) => scoring.problems.push(format!("review embeddings: {e}")),
            ScoredView::Absent => {}
        }
        input.runs.insert(run.id(), scoring);
    }
    input
}

/// Reads a human anchor set: a CSV with a header naming `subject`, `file`, `line`,
/// `message`, and `valid` and/or `actionable` (`yes`/`no`, empty when not labelled). Every
/// problem is reported, with its row. The set's source is named relative to the project root
/// of the manifest in `manifest_dir`, so the report does not depend on where runner started.
pub(crate) fn read_anchor(path: &std::path::Path, manifest_dir: &std::path::Path) -> Result<crate::analysis::rqs::metric::Anchor, String> {
    let mut reader =
        csv::ReaderBuilder::new().comment(Some(b'#')).from_path(path).map_err(|e| format!("cannot read the anchor set `{}`: {e}", path.display()))?;
    let headers = reader.headers().map_err(|e| format!("`{}`: {e}", path.display()))?.clone();
    let column = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(subject), Some(file), Some(line), Some(message)) = (column("subject"), column("file"), column("line"), column("message")) else {
        return Err(format!("`{}`: the header must name subject, file, line and message (and valid and/or actionable)", path.display()));
    };
    let (valid, actionable) = (column("valid"), column("actionable"));
    if valid.is_none() && actionable.is_none() {
        return Err(format!("`{}`: the header names neither `valid` nor `actionable`", path.display()));
    }
    let mut items = Vec::new();
    let mut problems = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let row = row + 2;
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                problems.push(format!("row {row}: {e}"));
                continue;
            }
        };
        let get = |i: usize| record.get(i).unwrap_or("").trim().to_string();
        let label = |c: Option<usize>, name: &str, problems: &mut Vec<String>| -> Option<bool> {
            match c.map(get).as_deref() {
                Some("yes") => Some(true),
                Some("no") => Some(false),
                Some("") | None => None,
                Some(other) => {
                    problems.push(format!("row {row}, column `{name}`: `{other}` is not yes, no or empty"));
                    None
                }
            }
        };
        let line_value = match get(line).parse::<u32>() {
            Ok(n) => n,
            Err(_) => {
                problems.push(format!("row {row}, column `line`: `{}` is not a line number", get(line)));
                continue;
            }
        };
        let item = crate::analysis::rqs::metric::AnchorItem {
            subject: get(subject),
            file: get(file),
            line: line_value,
            message: get(message),
            valid: label(valid, "valid", &mut problems),
            actionable: label(actionable, "actionable", &mut problems),
        };
        items.push(item);
    }
    if !problems.is_empty() {
        return Err(format!("`{}`: {}", path.display(), problems.join("; ")));
    }
    Ok(crate::analysis::rqs::metric::Anchor { source: crate::config::project_relative(manifest_dir, path), items })
}

/// A calibration file (`runner crscore --calibrate` writes one): τ and what it was calibrated
/// with, the file named relative to the project root of the manifest in `manifest_dir`.
/// Refused when it was calibrated for another embedder.
pub(crate) fn read_calibration(path: &std::path::Path, manifest_dir: &std::path::Path, embedder: &Value) -> Result<(f64, String), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the calibration `{}`: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("`{}` is not JSON: {e}", path.display()))?;
    let doc: TauCalibration = payloads::read(&doc).unwrap_or_default();
    let tau = doc.tau.ok_or_else(|| format!("`{}` has no numeric `tau`", path.display()))?;
    if doc.embedder != *embedder {
        return Err(format!("`{}` calibrates τ for the embedder {}, not for this experiment's {}", path.display(), doc.embedder, embedder));
    }
    let source = doc.source.as_deref().unwrap_or("calibration file");
    Ok((tau, format!("calibrated: {source}, `{}`", crate::config::project_relative(manifest_dir, path))))
}

/// Texts embedded through the cache ([`embed_cached`]).
pub struct EmbeddedTexts {
    pub vectors: std::collections::HashMap<String, Vec<f32>>,
    /// Batches taken from the cache, and embedded now.
    pub cached: usize,
    pub fresh: usize,
}

/// Texts per cached embedding batch of [`embed_cached`].
pub const EMBED_BATCH: usize = 256;

/// Embeds `texts` in batches of [`EMBED_BATCH`], each batch a cached `embed` value keyed like
/// a scoring call's (the embedder's fingerprint and the texts), so a second run embeds
/// nothing and `frozen` embeds nothing at all (failing when a batch is missing).
pub async fn embed_cached(embedder: &Embedder, cache: &dyn Store, experiment: &str, texts: &[String], frozen: bool) -> Result<EmbeddedTexts, String> {
    let mut out = EmbeddedTexts { vectors: std::collections::HashMap::new(), cached: 0, fresh: 0 };
    let fingerprint = embedder.fingerprint();
    for batch in texts.chunks(EMBED_BATCH) {
        let inputs = json!({"embedder": fingerprint, "texts": batch});
        let key = crate::cache::key::stage_key("embed", &inputs);
        let value = match cache.lookup_value(&key) {
            crate::cache::ValueLookup::Hit(value) => {
                out.cached += 1;
                value
            }
            _ if frozen => return Err(format!("an embedding batch of {} texts is not in the cache `{}` (frozen)", batch.len(), cache.location())),
            _ => {
                let embedded = embedder.embed(batch).await.map_err(|e| e.to_string())?;
                let value = payloads::write(&EmbedAnswer { vectors: encode_vectors(&embedded.vectors), tokens: embedded.tokens, seconds: embedded.seconds })?;
                cache.store_value(experiment, "embed", &key, &inputs, &value).map_err(|e| e.to_string())?;
                out.fresh += 1;
                value
            }
        };
        let rows = embedded_vectors(&value).filter(|v| v.len() == batch.len()).ok_or("a cached embedding batch does not match its texts")?;
        out.vectors.extend(batch.iter().cloned().zip(rows));
    }
    Ok(out)
}

/// Writes `RESULTS.md`, `crscore.json` and `calibration.json` (τ with the embedder it was
/// calibrated for, which an `rqs` analysis's `calibration` reads) under `out`.
pub fn write_crscore(
    out: &std::path::Path,
    report: &crate::analysis::rqs::crscore::CrscoreReport,
    embedder: &Value,
) -> Result<Vec<std::path::PathBuf>, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create `{}`: {e}", out.display()))?;
    let mut written = Vec::new();
    let mut write = |name: &str, text: String| -> Result<(), String> {
        let path = out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write `{}`: {e}", path.display()))?;
        written.push(path);
        Ok(())
    };
    let reproduce = "Reproduce: `runner crscore --frozen` (from the committed cache), or live against the embedding server: `scripts/model-server/start.sh minilm-l6-v2 8094 && runner crscore`.";
    write("RESULTS.md", format!("# CRScore's human study, scored by runner\n\n{}\n{reproduce}\n", report.to_markdown()))?;
    write("crscore.json", serde_json::to_string_pretty(report).map_err(|e| e.to_string())? + "\n")?;
    let source = match &report.calibration {
        Some(c) => format!("CRScore human study, reference reviews (system `msg`): {} reviews, {} sentences", c.items, c.sentences),
        None => "given on the command line".to_string(),
    };
    let calibration = payloads::write(&TauCalibration {
        tau: Some(report.tau),
        embedder: embedder.clone(),
        source: Some(source),
        calibration: payloads::write(&report.calibration)?,
    })?;
    write("calibration.json", serde_json::to_string_pretty(&calibration).map_err(|e| e.to_string())? + "\n")?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_exactly_through_base64_and_old_entries_still_read() {
        let v = vec![vec![0.1f32, -2.5, f32::MIN_POSITIVE, 1.0 / 3.0], vec![]];
        assert_eq!(vectors(&encode_vectors(&v)), Some(v));
        assert_eq!(vectors(&json!([[0.5, 1.0]])), Some(vec![vec![0.5f32, 1.0]]));
        assert_eq!(vectors(&json!(["not base64!"])), None);
        assert_eq!(vectors(&json!([42])), None);
    }

    #[test]
    fn a_frozen_execution_keys_smells_with_pinned_or_cached_versions_never_the_tools() {
        use crate::smells::AnalyzerKind;
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = crate::cache::CacheStore::new(dir.path().join("cache"));
        let kinds = vec![AnalyzerKind::Ruff];
        let versions = |ruff: &str| -> BTreeMap<String, String> { [("ruff".to_string(), ruff.to_string())].into_iter().collect() };
        let mut scoring = Scoring { analyzers: kinds.clone(), ..Scoring::default() };
        let subjects: BTreeSet<&str> = ["s1"].into_iter().collect();
        // `tools_dir` and PATH are never consulted: a frozen execution would fail here if they were.
        let nowhere = dir.path().join("no-tools");
        let frozen = |scoring: &Scoring| analyzers_for(scoring, &subjects, &nowhere, true, &cache);
        let e = frozen(&scoring).map(|_| ()).expect_err("nothing pinned, nothing cached");
        assert!(e.contains("analyzer-versions") && e.contains("never from the installed tools"), "{e}");

        // The identity the cache's smells of this subject hold.
        let store = |ruff: &str, subject: &str| {
            let identity = AnalyzerSet::pinned(&kinds, &versions(ruff)).expect("pinned").identity();
            let inputs = json!({"analyzers": identity, "subject": subject});
            cache.store_value("e", "smells", &crate::cache::key::stage_key("smells", &inputs), &inputs, &json!({"smells": []})).expect("store");
            identity
        };
        let identity = store("ruff 0.17.5", "s1");
        store("ruff 9.9.9", "another subject");
        let read = frozen(&scoring).expect("read from the cache").expect("a set");
        assert_eq!(read.identity(), identity);
        assert!(read.is_pinned());
        store("ruff 0.18.0", "s1");
        let e = frozen(&scoring).map(|_| ()).expect_err("two versions for this subject");
        assert!(e.contains("more than one analyzer version"), "{e}");

        // Pinned in the manifest: those, whatever the cache holds.
        scoring.analyzer_versions = versions("ruff 0.17.5");
        assert_eq!(frozen(&scoring).expect("pinned").map(|s| s.identity()), Some(identity));
        // No smells in the plan: no analyzers at all.
        assert!(analyzers_for(&scoring, &BTreeSet::new(), &nowhere, false, &cache).expect("nothing to key").is_none());
    }
}
