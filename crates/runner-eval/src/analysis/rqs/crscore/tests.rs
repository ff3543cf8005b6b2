//! Tests of the CRScore study loader and correlations against the released files in
//! `tests/fixtures/crscore/`.

use super::*;

fn fixtures() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/crscore")
}

fn all_languages() -> CrscoreData {
    CrscoreData::load(&fixtures()).expect("the study loads")
}

fn authors_values() -> BTreeMap<String, SystemScores> {
    load_scores(&fixtures().join("human_eval_rel_scores_thresh_0.7314.json")).expect("the authors' values load")
}

fn r3(v: Option<f64>) -> String {
    format!("{:.3}", v.expect("defined"))
}

fn r4(v: Option<f64>) -> String {
    format!("{:.4}", v.expect("defined"))
}

#[test]
fn loads_the_study_with_the_authors_merge_rule() {
    let data = all_languages();
    assert_eq!(data.languages, ["py", "java", "js"]);
    assert_eq!(data.claims.len(), 291);
    assert_eq!(data.items.len(), 2619);
    assert_eq!(data.references.len(), 300);
    let systems = data.systems();
    assert_eq!(systems, ["gpt3.5", "deepseekcoder", "codereviewer", "llama3", "stable_code", "lstm", "knn", "magicoder", "codellama_13b"]);
    for s in &systems {
        assert_eq!(data.items.iter().filter(|i| &i.system == s).count(), 291, "{s}");
        assert_eq!(data.items.iter().filter(|i| &i.system == s && i.lang != "js").count(), 196, "{s}");
    }
    // The first row of the Python sheet: index 7988, gpt3.5, scores 4 / 3 / 3, Marcus's.
    let first = &data.items[0];
    assert_eq!((first.lang.as_str(), first.row, first.index, first.system.as_str()), ("py", 0, 7988, "gpt3.5"));
    assert_eq!((first.con, first.comp, first.rel, first.annotator), (Some(4.0), Some(3.0), 3.0, FIRST_ANNOTATOR));
    assert_eq!(
        data.claims[&first.diff_id][0],
        "The function call `unbound_dimensions(plot.streams, plot.dimensions)` was modified to include an additional argument, specifically `False`, changing it to `unbound_dimensions(plot.streams, plot.dimensions, False)`."
    );
    // Rows up to 499 (503 for JavaScript) are the first annotator's, later ones the second's.
    for item in &data.items {
        let last_first = if item.lang == "js" { 503 } else { 499 };
        let expected = if item.row <= last_first { FIRST_ANNOTATOR } else { SECOND_ANNOTATOR };
        assert_eq!(item.annotator, expected, "{} row {}", item.lang, item.row);
    }
    assert!(data.items.iter().any(|i| i.lang == "py" && i.row == 499 && i.annotator == FIRST_ANNOTATOR));
    assert!(data.items.iter().any(|i| i.lang == "py" && i.row == 500 && i.annotator == SECOND_ANNOTATOR));
    // Empty reviews are kept (scored 0, as the authors' blank placeholder is).
    assert_eq!(data.items.iter().filter(|i| i.review.is_empty()).count(), 134);
    // 6,099 pieces by the authors' split, of which 95 are blank (dropped by runner).
    assert_eq!(data.items.iter().map(|i| review_sentences(&i.review).len()).sum::<usize>(), 6004);
}

#[test]
fn python_and_java_alone_when_javascript_is_absent() {
    let dir = tempfile::tempdir().expect("tempdir");
    for f in [
        "gpt-4o.jsonl",
        "py_marcus_review_qual_final.csv",
        "py_atharva_review_qual_final.csv",
        "java_marcus_review_qual_final.csv",
        "java_atharva_review_qual_final.csv",
    ] {
        std::fs::copy(fixtures().join(f), dir.path().join(f)).expect("fixture copied");
    }
    let data = CrscoreData::load(dir.path()).expect("the study loads");
    assert_eq!(data.languages, ["py", "java"]);
    assert_eq!(data.items.len(), 1764);
    assert_eq!(data, all_languages_restricted(&["py", "java"]));

    std::fs::copy(fixtures().join("js_marcus_review_qual_final.csv"), dir.path().join("js_marcus_review_qual_final.csv")).expect("fixture copied");
    let err = CrscoreData::load(dir.path()).unwrap_err();
    assert!(matches!(err, CrscoreError::HalfLanguage { .. }), "{err}");
    assert!(err.to_string().contains("js_atharva_review_qual_final.csv"), "{err}");

    let err = CrscoreData::load(&dir.path().join("nowhere")).unwrap_err();
    assert!(err.to_string().contains("gpt-4o.jsonl"), "{err}");
}

fn all_languages_restricted(langs: &[&str]) -> CrscoreData {
    CrscoreData::load_languages(&fixtures(), langs).expect("the study loads")
}

#[test]
fn authors_values_reproduce_the_recomputed_figures() {
    // The authors' own CRScore values (mxbai-embed-large, τ = 0.7314) against the human
    // scores, all three languages, each dimension against human Rel (F).
    let c = correlate_scores(&all_languages(), &authors_values()).expect("defined");
    assert_eq!((c.reviews, c.systems, c.unused_scores), (2619, 9, 0));
    let cl = &c.comment_level;
    assert_eq!((cl[0].dimension, cl[1].dimension, cl[2].dimension), ("conciseness", "comprehensiveness", "relevance"));
    assert_eq!(r3(cl[0].vs_human_relevance), format!("{:.3}", PUBLISHED.recomputed_conciseness)); // 0.492
    assert_eq!(r3(cl[1].vs_human_relevance), format!("{:.3}", PUBLISHED.recomputed_comprehensiveness)); // 0.531
    assert_eq!(r3(cl[2].vs_human_relevance), format!("{:.3}", PUBLISHED.recomputed_relevance)); // 0.531
    assert!(cl.iter().all(|d| d.items == 2619 && d.items_same == 2619));
    assert_eq!(r3(c.system_level[2].vs_human_relevance), format!("{:.3}", PUBLISHED.recomputed_system)); // 0.933
    assert_eq!(c.system_level[2].items, 9);
    // More digits, and the same-dimension figures, as computed independently with
    // scipy-equivalent average-rank Spearman over the same pairs.
    assert_eq!(r4(cl[0].vs_human_relevance), "0.4920");
    assert_eq!(r4(cl[1].vs_human_relevance), "0.5312");
    assert_eq!(r4(cl[2].vs_human_relevance), "0.5308");
    assert_eq!(r4(cl[0].vs_human_same), "0.4771");
    assert_eq!(r4(cl[1].vs_human_same), "0.5493");
    assert_eq!(r4(cl[2].vs_human_same), "0.5308");
    assert_eq!(r4(c.system_level[0].vs_human_relevance), "0.8833");
    assert_eq!(r4(c.system_level[1].vs_human_relevance), "0.8833");
    assert_eq!(r4(c.system_level[0].vs_human_same), "0.9500");
    assert_eq!(r4(c.system_level[1].vs_human_same), "0.9167");
}

#[test]
fn authors_values_on_python_and_java_only() {
    // The shared reference holds Python and Java only: the first 196 values per system are
    // theirs, the last 95 (JavaScript) are unused.
    let c = correlate_scores(&all_languages_restricted(&["py", "java"]), &authors_values()).expect("defined");
    assert_eq!((c.reviews, c.systems, c.unused_scores), (1764, 9, 9 * 95));
    let cl = &c.comment_level;
    assert_eq!(r4(cl[0].vs_human_relevance), "0.4686");
    assert_eq!(r4(cl[1].vs_human_relevance), "0.5142");
    assert_eq!(r4(cl[2].vs_human_relevance), "0.5105");
    assert_eq!(r4(cl[0].vs_human_same), "0.4503");
    assert_eq!(r4(cl[1].vs_human_same), "0.5318");
    assert_eq!(r4(c.system_level[2].vs_human_relevance), "0.9500");
    assert_eq!(r4(c.system_level[0].vs_human_same), "0.9333");
}

#[test]
fn scores_must_cover_every_system() {
    let data = all_languages();
    let mut values = authors_values();
    values.remove("lstm");
    assert!(matches!(correlate_scores(&data, &values), Err(CrscoreError::MissingSystem { system }) if system == "lstm"));
    let mut values = authors_values();
    values.get_mut("knn").expect("defined").comprehensiveness.truncate(10);
    let err = correlate_scores(&data, &values).unwrap_err();
    assert_eq!(err.to_string(), "scores: system `knn` has 10 `R` values, the study has 291 reviews of it");
}

#[test]
fn claims_of_every_response_are_numbered_points_without_headers() {
    let data = all_languages();
    let all: Vec<&String> = data.claims.values().flatten().collect();
    assert_eq!(all.len(), 1905);
    assert!(data.claims.values().all(|c| c.len() >= 2));
    let header = regex::Regex::new(r"(?i)^[#*\s]*(summary of changes|implications)\b").expect("valid regex");
    let numbered = regex::Regex::new(r"^\d+[.)] ").expect("valid regex");
    for c in &all {
        assert!(!header.is_match(c), "{c}");
        assert!(!numbered.is_match(c), "{c}");
        assert!(!c.trim().is_empty());
    }
}

/// A deterministic toy embedding for the plumbing only: hashed bag of lowercase words, 64
/// buckets. Its correlations mean nothing and are never reported.
fn toy(text: &str) -> Vec<f32> {
    let mut v = vec![0.0f32; 64];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut h: u32 = 2_166_136_261;
        for b in word.to_lowercase().bytes() {
            h = (h ^ u32::from(b)).wrapping_mul(16_777_619);
        }
        v[(h % 64) as usize] += 1.0;
    }
    v
}

fn toy_embeddings(data: &CrscoreData) -> HashMap<String, Vec<f32>> {
    texts(data)
        .into_iter()
        .map(|t| {
            let v = toy(&t);
            (t, v)
        })
        .collect()
}

#[test]
fn texts_are_every_sentence_and_claim_once() {
    let data = all_languages();
    let t = texts(&data);
    assert!(t.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
    let set: BTreeSet<&String> = t.iter().collect();
    for item in &data.items {
        for s in review_sentences(&item.review) {
            assert!(set.contains(&s));
        }
        for c in &data.claims[&item.diff_id] {
            assert!(set.contains(c));
        }
    }
    assert!(t.iter().all(|s| !s.is_empty()));
}

#[test]
fn evaluate_plumbs_embeddings_through_alignment_and_correlation() {
    let data = all_languages();
    let emb = toy_embeddings(&data);
    let report = evaluate(&data, &emb, None).expect("defined");
    let cal = report.calibration.clone().expect("defined");
    assert_eq!(report.tau, cal.tau);
    assert_eq!(cal.items + cal.skipped_items, data.references.iter().filter(|r| r.diff_id.is_some()).count());
    assert!(cal.tau > 0.0 && cal.tau < 1.0);
    // The report's correlations are those of its per-review scores.
    let alignments = score_reviews(&data, &emb, report.tau).expect("defined");
    let mut scores: BTreeMap<String, SystemScores> = BTreeMap::new();
    for (item, a) in data.items.iter().zip(&alignments) {
        let (p, r, f) = a.crscore_scores();
        let s = scores.entry(item.system.clone()).or_insert(SystemScores { conciseness: vec![], comprehensiveness: vec![], relevance: vec![] });
        s.conciseness.push(p);
        s.comprehensiveness.push(r);
        s.relevance.push(f);
    }
    assert_eq!(report.correlations, correlate_scores(&data, &scores).expect("defined"));
    assert_eq!(report.means.as_ref().expect("defined").reviews, 2619);
    // An empty review has no sentences and scores 0.
    let empty = data.items.iter().position(|i| i.review.is_empty()).expect("defined");
    assert_eq!(alignments[empty].sentences, 0);
    assert_eq!(alignments[empty].crscore_scores(), (0.0, 0.0, 0.0));
    // A given τ is used as is.
    let given = evaluate(&data, &emb, Some(0.5)).expect("defined");
    assert_eq!((given.tau, given.calibration.is_none()), (0.5, true));
    // Serializable and rendered.
    let json = serde_json::to_value(&report).expect("serializes");
    assert_eq!(json["published"]["recomputed_system"], 0.933);
    let md = report.to_markdown();
    assert!(md.contains("| Dimension | comment level vs human Rel |"), "{md}");
    assert!(md.contains("| relevance |") && md.contains("0.531 / 0.933"), "{md}");
    assert!(md.contains("calibrated on"), "{md}");
    assert_eq!(md.matches("\n| ").count(), 1 + 3 + 1 + 9, "{md}");
}

#[test]
fn evaluate_on_a_hand_made_study() {
    // Two systems, two diffs; claims along axes, reviews aimed at them.
    let mut data = CrscoreData { languages: vec!["py".into()], claims: BTreeMap::new(), items: Vec::new(), references: Vec::new() };
    data.claims.insert(0, vec!["c-x".into(), "c-y".into()]);
    data.claims.insert(1, vec!["c-z".into()]);
    let item = |system: &str, diff_id: u64, review: &str, rel: f64| HumanItem {
        lang: "py".into(),
        row: 0,
        annotator: FIRST_ANNOTATOR,
        index: diff_id,
        diff_id,
        system: system.into(),
        review: review.into(),
        con: Some(rel),
        comp: None,
        rel,
    };
    data.items = vec![item("good", 0, "s-x. s-y", 5.0), item("bad", 0, "s-off", 1.0), item("good", 1, "s-z", 4.0), item("bad", 1, "s-z. s-off", 3.0)];
    data.references = vec![ReferenceReview { lang: "py".into(), row: 0, index: 0, diff_id: Some(0), review: "s-x".into() }];
    let mut emb: HashMap<String, Vec<f32>> = HashMap::new();
    for (t, v) in [
        ("c-x", [1.0, 0.0, 0.0]),
        ("c-y", [0.0, 1.0, 0.0]),
        ("c-z", [0.0, 0.0, 1.0]),
        ("s-x", [1.0, 0.1, 0.0]),
        ("s-y", [0.1, 1.0, 0.0]),
        ("s-z", [0.0, 0.1, 1.0]),
        ("s-off", [1.0, 1.0, 1.0]),
    ] {
        emb.insert(t.to_string(), v.to_vec());
    }
    assert_eq!(texts(&data), ["c-x", "c-y", "c-z", "s-off", "s-x", "s-y", "s-z"]);
    // Calibration: the reference "s-x" best matches c-x at cos = 1/√1.01 = 0.99504 → τ 0.9950.
    let report = evaluate(&data, &emb, None).expect("defined");
    assert_eq!(report.tau, 0.995);
    // At τ 0.9: good/0 P 1 R 1; bad/0 (s-off: cos 1/√3 = .577) 0 0; good/1 1 1; bad/1 P 1/2 R 1 F 2/3.
    let a = score_reviews(&data, &emb, 0.9).expect("defined");
    let f: Vec<f64> = a.iter().map(|x| x.crscore_scores().2).collect();
    assert_eq!(&f[..3], &[1.0, 0.0, 1.0]);
    assert!((f[3] - 2.0 / 3.0).abs() < 1e-12);
    let report = evaluate(&data, &emb, Some(0.9)).expect("defined");
    let c = &report.correlations;
    // Relevance [1, 0, 1, 2/3] vs human Rel [5, 1, 4, 3]: ranks [3.5, 1, 3.5, 2] vs [4, 1, 3, 2];
    // means 2.5; d = [1, −1.5, 1, −.5] · [1.5, −1.5, .5, −.5] → Σ = 1.5 + 2.25 + .5 + .25 = 4.5;
    // Σdx² = 1 + 2.25 + 1 + .25 = 4.5, Σdy² = 2.25 + 2.25 + .25 + .25 = 5; ρ = 4.5/√22.5.
    assert!((c.comment_level[2].vs_human_relevance.expect("defined") - 4.5 / 22.5f64.sqrt()).abs() < 1e-12);
    // Comprehensiveness has no human score here: no same-dimension pairs.
    assert_eq!((c.comment_level[1].vs_human_same, c.comment_level[1].items_same), (None, 0));
    // Two systems: good (F 1, human 4.5) above bad (F 1/3, human 2): ρ = 1.
    assert!((c.system_level[2].vs_human_relevance.expect("defined") - 1.0).abs() < 1e-12);
    assert_eq!(c.per_system[0].system, "good");
    assert_eq!(c.per_system[1].human_rel, 2.0);

    // A missing text and a mixed dimension are errors naming what to do.
    emb.remove("s-off");
    let err = evaluate(&data, &emb, Some(0.9)).unwrap_err();
    assert_eq!(err.to_string(), "no embedding for the text \"s-off\": embed every text `crscore::texts` lists before evaluating");
    emb.insert("s-off".into(), vec![1.0, 1.0]);
    assert!(matches!(evaluate(&data, &emb, Some(0.9)), Err(CrscoreError::Dimension { first: 3, other: 2 })));
}
