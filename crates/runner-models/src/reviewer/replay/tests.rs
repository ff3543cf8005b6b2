//! The replay reviewer's formats, mappings, path confinement and cache keys, by hand.

use super::*;
use crate::finding::{Category, Severity};
use std::path::Path;

fn mapping() -> Mapping {
    Mapping::default()
}

// ---- CSV and JSONL ----

#[test]
fn csv_rows_group_by_subject_with_their_exact_bytes() {
    let text = "subject,file,line,message,severity,category\ncase-01,a.py,3,Division by zero,high,bug\ncase-02,,,The change lacks tests,,testing\ncase-01,b.py,,Whole-file remark,nit,\ncase-03,,,,,\n";
    let parts = table::parse_csv(text, &mapping()).expect("valid");
    assert_eq!(parts.len(), 3);
    let one = &parts[&("case-01".to_string(), None)];
    assert_eq!(one.raw, "subject,file,line,message,severity,category\ncase-01,a.py,3,Division by zero,high,bug\ncase-01,b.py,,Whole-file remark,nit,\n");
    let f = &one.replayed.findings;
    assert_eq!((f[0].file.as_str(), f[0].line, f[0].severity, f[0].category), ("a.py", 3, Severity::Error, Category::Bug));
    assert_eq!(f[0].id, crate::finding::stet_finding_id("a.py", 3, None, "Division by zero"));
    assert_eq!((f[1].file.as_str(), f[1].line, f[1].severity, f[1].category), ("b.py", 0, Severity::Nitpick, DEFAULT_CATEGORY));
    let two = &parts[&("case-02".to_string(), None)].replayed.findings;
    assert_eq!((two[0].file.as_str(), two[0].line, two[0].severity, two[0].category), ("", 0, DEFAULT_SEVERITY, Category::Testing));
    // A row with only its subject marks the subject as reviewed with no findings.
    assert!(parts[&("case-03".to_string(), None)].replayed.findings.is_empty());
}

#[test]
fn csv_errors_name_the_line_and_the_value() {
    let cases = [
        ("file,line,message,rule\n", "line 1: unknown column `rule`"),
        ("file,message\n", "line 1: the header has no `line` column"),
        ("file,line,message\na.py,3,ok\na.py,three,bad\n", "line 3: `line` `three` is not a line number"),
        ("file,line,message\na.py,0,bad\n", "line 2: `line` `0` is not a line number"),
        ("file,line,message,severity\na.py,1,m,blocking\n", "line 2: severity `blocking` is not one of"),
        ("file,line,message,category\na.py,1,m,typo\n", "line 2: category `typo` is not one of"),
        ("file,line,message\n,4,no file\n", "line 2: `line` 4 without a `file`"),
        ("file,line,message\na.py,4,\n", "line 2: `message` is empty"),
        ("file,line,message\na.py,4,m,extra\n", "line 2: not valid CSV"),
    ];
    for (text, expected) in cases {
        let e = table::parse_csv(text, &mapping()).expect_err(text);
        assert!(e.contains(expected), "{text:?}: {e}");
    }
}

#[test]
fn manifest_maps_extend_the_built_in_table() {
    let mut m = mapping();
    m.severity_map.insert("p1".into(), Severity::Error);
    m.category_map.insert("vuln".into(), Category::Security);
    let parts = table::parse_csv("file,line,message,severity,category\na.py,1,m,P1,Vuln\n", &m).expect("mapped");
    let f = &parts[&(String::new(), None)].replayed.findings[0];
    assert_eq!((f.severity, f.category), (Severity::Error, Category::Security));
}

#[test]
fn jsonl_reads_nulls_as_absent_and_locates_errors() {
    let text = "{\"subject\":\"case-01\",\"file\":\"a.py\",\"line\":2,\"end_line\":4,\"message\":\"m\",\"severity\":\"warning\",\"suggestion\":\"fix\"}\n\n{\"subject\":\"case-02\",\"file\":null,\"line\":null,\"message\":\"change-level\"}\n";
    let parts = table::parse_jsonl(text, &mapping()).expect("valid");
    let f = &parts[&("case-01".to_string(), None)].replayed.findings[0];
    assert_eq!((f.line, f.range, f.suggestion.as_deref()), (2, Some(crate::finding::LineRange { start: 2, end: 4 }), Some("fix")));
    assert_eq!(parts[&("case-01".to_string(), None)].raw, text.lines().next().map(|l| format!("{l}\n")).expect("line"));
    assert_eq!(parts[&("case-02".to_string(), None)].replayed.findings[0].file, "");
    for (text, expected) in [
        ("{\"message\":\"a\"}\n{oops\n", "line 2: not JSON"),
        ("{\"message\":\"a\",\"rule\":\"x\"}\n", "line 1: unknown key `rule`"),
        ("{\"message\":\"a\",\"file\":\"a.py\",\"line\":\"3\"}\n", "line 1: `line` must be a line number or null"),
        ("[1]\n", "line 1: expected an object"),
        ("{\"message\":\"a\",\"severity\":\"loud\"}\n", "line 1: severity `loud`"),
    ] {
        let e = table::parse_jsonl(text, &mapping()).expect_err(text);
        assert!(e.contains(expected), "{text:?}: {e}");
    }
}

// ---- SARIF ----

const SARIF: &str = r#"{
  "version": "2.1.0",
  "runs": [{
    "tool": {"driver": {"name": "lint", "rules": [
      {"id": "R1", "defaultConfiguration": {"level": "error"}, "properties": {"tags": ["external/cwe/cwe-369", "correctness"]}},
      {"id": "R2"}
    ]}},
    "originalUriBaseIds": {"SRCROOT": {"uri": "file:///work/repo/"}},
    "results": [
      {"ruleId": "R1", "message": {"text": "Division by zero"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "src/a%20b.py", "uriBaseId": "SRCROOT"}, "region": {"startLine": 3, "endLine": 5}}}]},
      {"ruleId": "R2", "level": "note", "message": {"text": "Style"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///work/repo/c.py"}, "region": {"startLine": 7}}}], "fixes": [{"description": {"text": "Rename it"}}]},
      {"ruleId": "R2", "message": {"text": "No location"}, "properties": {"category": "design"}},
      {"ruleId": "R2", "kind": "pass", "message": {"text": "passed"}},
      {"ruleId": "R2", "message": {"text": "suppressed"}, "suppressions": [{"kind": "inSource"}]},
      {"ruleId": "R2", "message": {"text": "elsewhere"}, "locations": [{"physicalLocation": {"artifactLocation": {"uri": "file:///other/d.py"}, "region": {"startLine": 1}}}]}
    ]
  }]
}"#;

#[test]
fn sarif_results_map_onto_findings() {
    let r = sarif::parse(SARIF, &mapping()).expect("valid");
    let f = &r.findings;
    assert_eq!(f.len(), 4, "{f:?}");
    assert_eq!((f[0].file.as_str(), f[0].line, f[0].range.map(|r| r.end)), ("src/a b.py", 3, Some(5)));
    assert_eq!((f[0].severity, f[0].category), (Severity::Error, Category::Correctness), "the rule's default level and first known tag");
    assert_eq!((f[1].file.as_str(), f[1].line, f[1].severity, f[1].suggestion.as_deref()), ("c.py", 7, Severity::Info, Some("Rename it")));
    assert_eq!((f[2].file.as_str(), f[2].line, f[2].severity, f[2].category), ("", 0, Severity::Warning, Category::Design));
    assert_eq!(f[3].file, "/other/d.py");
    assert_eq!(r.schema_problems.len(), 1, "{:?}", r.schema_problems);
    assert!(r.schema_problems[0].starts_with("runs[0].results[5]: `artifactLocation.uri` `file:///other/d.py` is absolute"), "{:?}", r.schema_problems);
    assert_eq!(r.counters.get("sarif_not_failures_skipped"), Some(&1));
    assert_eq!(r.counters.get("sarif_suppressed_skipped"), Some(&1));
}

#[test]
fn malformed_sarif_is_an_error_saying_where() {
    let e = sarif::parse("{\"version\": \"2.1.0\",\n \"runs\": [\n {\"tool\": 3}]}", &mapping()).expect_err("bad tool");
    assert!(e.contains("not a SARIF log") && e.contains("line 3"), "{e}");
    let e = sarif::parse(r#"{"version": "2.0.0", "runs": []}"#, &mapping()).expect_err("old");
    assert!(e.contains("SARIF version `2.0.0`"), "{e}");
    let bad_level = SARIF.replace("\"level\": \"note\"", "\"level\": \"severe\"");
    let e = sarif::parse(&bad_level, &mapping()).expect_err("level");
    assert!(e.starts_with("runs[0].results[1]: `level` `severe` is not a SARIF level"), "{e}");
    let bad_category = SARIF.replace("\"category\": \"design\"", "\"category\": \"vibes\"");
    let e = sarif::parse(&bad_category, &mapping()).expect_err("category");
    assert!(e.starts_with("runs[0].results[2]: category `vibes`"), "{e}");
}

// ---- stet ----

#[test]
fn stet_documents_and_streams_use_the_stet_parser() {
    let doc = r#"{"findings":[{"file":"a.go","line":3,"severity":"warning","category":"bug","confidence":0.5,"message":"m"}]}"#;
    let r = stet::parse_document(doc).expect("valid");
    assert_eq!(r.findings[0].id, crate::finding::stet_finding_id("a.go", 3, None, "m"));
    assert!(stet::parse_document("").expect("empty").findings.is_empty());
    let e = stet::parse_document(&doc.replace("\"warning\"", "\"fatal\"")).expect_err("severity");
    assert!(e.starts_with("findings[0]: severity \"fatal\" is not one of stet's"), "{e}");
    let e = stet::parse_document("{\"findings\": [\n}").expect_err("json");
    assert!(e.contains("not JSON") && e.contains("line 2"), "{e}");
    let stream = "{\"msg\":\"1 hunks\",\"type\":\"progress\"}\n{\"data\":{\"file\":\"a.go\",\"line\":3,\"severity\":\"info\",\"category\":\"style\",\"confidence\":1,\"message\":\"m\"},\"type\":\"finding\"}\n{\"type\":\"done\"}\n";
    assert_eq!(stet::parse_stream(stream).expect("stream").findings.len(), 1);
    let e = stet::parse_stream(&stream.replace("\"style\"", "\"vibes\"")).expect_err("category");
    assert!(e.starts_with("stream line 2: category \"vibes\""), "{e}");
    let e = stet::parse_stream("{\"type\":\"done\"}\nnot json\n").expect_err("line");
    assert!(e.contains("stream line 2: not JSON"), "{e}");
}

// ---- seed 002 ----

#[test]
fn seed002_runs_map_trials_onto_repeats() {
    let text = std::fs::read_to_string(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/seed002/docs-example.captured.json"))
        .expect("fixture");
    let file = seed002::parse(&text, None).expect("the documented example");
    assert_eq!(file.trials, 2);
    let part = &file.parts[&("case-01".to_string(), 1)];
    let f = &part.replayed.findings[0];
    assert_eq!((f.id.as_str(), f.file.as_str(), f.line, f.message.as_str()), ("F01", "", 0, "seed 002 claim F01 (verified)"));
    assert_eq!((part.replayed.latency_ms, part.replayed.prompt_tokens, part.replayed.completion_tokens), (Some(12400), Some(950), Some(260)));
    assert_eq!(part.replayed.provenance.get("replay_trial").map(String::as_str), Some("trial-01"));

    let two = DOCS_EXAMPLE.replace("\"trialId\": \"trial-01\"", "\"trialId\": \"trial-02\"");
    assert!(seed002::parse(&two, None).expect("trial 2").parts.contains_key(&("case-01".to_string(), 2)));
    let strategies = DOCS_EXAMPLE.replace("]\n    }\n  ]\n}", "]\n    },\n    {\"name\": \"other\", \"runs\": []}\n  ]\n}");
    let e = seed002::parse(&strategies, None).expect_err("two strategies");
    assert!(e.contains("choose one with `strategy`"), "{e}");
    assert!(seed002::parse(&strategies, Some("other")).expect("chosen").parts.is_empty());
    let e = seed002::parse(&strategies, Some("nope")).expect_err("unknown");
    assert!(e.contains("no strategy `nope`"), "{e}");
    let e = seed002::parse(&DOCS_EXAMPLE.replace("verified", "confirmed"), None).expect_err("disposition");
    assert!(e.contains("runs[0].findings[0]: disposition `confirmed`"), "{e}");
    let e = seed002::parse(&DOCS_EXAMPLE.replace("\"complete\"", "\"done\""), None).expect_err("unknown key");
    assert!(e.contains("unknown field `done`") && e.contains("line"), "{e}");
    let e = seed002::parse(&DOCS_EXAMPLE.replace("\"trialId\": \"trial-01\"", "\"trialId\": \"trial-09\""), None).expect_err("trial");
    assert!(e.contains("trial `trial-09` is not in `plan.trialIds`"), "{e}");
}

const DOCS_EXAMPLE: &str = r#"{
  "version": 1,
  "plan": {
    "caseIds": ["case-01", "case-02", "case-06"],
    "trialIds": ["trial-01", "trial-02"]
  },
  "strategies": [
    {
      "name": "two-reviewers-plus-synthesis",
      "runs": [
        {
          "caseId": "case-01",
          "trialId": "trial-01",
          "complete": true,
          "findings": [{ "id": "F01", "disposition": "verified" }],
          "metrics": { "latencyMs": 12400, "inputTokens": 950, "outputTokens": 260, "totalTokens": 1210 }
        }
      ]
    }
  ]
}"#;

// ---- the reviewer: paths, missing files, keys ----

/// A project directory (it holds `.git`) with the manifest's directory `experiments/`.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join(".git")).expect("git dir");
    std::fs::create_dir_all(dir.path().join("experiments")).expect("experiments");
    std::fs::create_dir_all(dir.path().join("captured")).expect("captured");
    dir
}

fn spec(dir: &Path, path: &str, format: ReplayFormat, missing: Missing) -> ReplaySpec {
    ReplaySpec {
        format,
        path: path.into(),
        missing,
        tool: Some("Tool 1".into()),
        strategy: None,
        mapping: Mapping::default(),
        base_dir: dir.join("experiments"),
    }
}

fn job(subject: &str, repeat: u32) -> ReviewJob {
    let subject = crate::subject::Subject {
        id: subject.into(),
        repo_dir: PathBuf::from("."),
        base_sha: String::new(),
        head_sha: String::new(),
        diff: String::new(),
        files: Vec::new(),
        stet_error: None,
        review_task: None,
        spec: None,
    };
    ReviewJob {
        cell: Cell { id: String::new(), values: Default::default() },
        repeat,
        subject: Arc::new(subject),
        timeout: std::time::Duration::from_secs(5),
        calls: None,
    }
}

fn review(reviewer: &ReplayReviewer, subject: &str) -> Result<ReviewOutput, ReviewError> {
    futures::executor::block_on(reviewer.review(&job(subject, 1)))
}

#[test]
fn per_subject_files_replay_with_provenance_and_missing_policies() {
    let dir = project();
    std::fs::write(dir.path().join("captured/case-01.csv"), "file,line,message\na.py,2,m\n").expect("write");
    let reviewer = ReplayReviewer::new(spec(dir.path(), "../captured/{subject}.csv", ReplayFormat::Csv, Missing::Error));
    let out = review(&reviewer, "case-01").expect("replayed");
    assert_eq!(out.findings.len(), 1);
    assert_eq!(out.raw, "file,line,message\na.py,2,m\n");
    assert_eq!(out.provenance["replay_source"], "captured/{subject}.csv");
    assert_eq!(out.provenance["replay_format"], "csv");
    assert_eq!(out.provenance["replay_tool"], "Tool 1");
    assert_eq!(out.provenance["replay_blake3"], &blake3::hash(b"file,line,message\na.py,2,m\n").to_hex().to_string()[..12]);
    let e = review(&reviewer, "case-02").expect_err("missing").to_string();
    assert!(e.contains("no captured file `../captured/case-02.csv` for subject `case-02`") && e.contains("missing = \"empty\""), "{e}");
    let lenient = ReplayReviewer::new(spec(dir.path(), "../captured/{subject}.csv", ReplayFormat::Csv, Missing::Empty));
    assert!(review(&lenient, "case-02").expect("empty").findings.is_empty());
    // A per-subject table that names another subject is refused.
    std::fs::write(dir.path().join("captured/case-03.csv"), "subject,file,line,message\ncase-04,a.py,2,m\n").expect("write");
    let e = review(&reviewer, "case-03").expect_err("other subject").to_string();
    assert!(e.contains("captured/case-03.csv") && e.contains("a row names subject `case-04`"), "{e}");
}

#[test]
fn hostile_subjects_paths_and_links_never_leave_the_project() {
    let dir = project();
    let outside = tempfile::tempdir().expect("outside");
    std::fs::write(outside.path().join("secret.sarif"), "{}").expect("write");
    let reviewer = ReplayReviewer::new(spec(dir.path(), "../captured/{subject}.sarif", ReplayFormat::Sarif, Missing::Empty));
    for subject in ["..", "../x", "a/b", ".hidden", ""] {
        let e = review(&reviewer, subject).expect_err(subject).to_string();
        assert!(e.contains("cannot name a captured file"), "{subject}: {e}");
    }
    std::os::unix::fs::symlink(outside.path().join("secret.sarif"), dir.path().join("captured/case-01.sarif")).expect("symlink");
    let e = review(&reviewer, "case-01").expect_err("link out").to_string();
    assert!(e.contains("is a symbolic link to") && e.contains("outside the project"), "{e}");
    let escaping = ReplayReviewer::new(spec(dir.path(), "../../{subject}.sarif", ReplayFormat::Sarif, Missing::Empty));
    let e = review(&escaping, "case-01").expect_err("escapes").to_string();
    assert!(e.contains("outside the project"), "{e}");
    std::fs::create_dir(dir.path().join("captured/case-02.sarif")).expect("dir");
    let e = review(&reviewer, "case-02").expect_err("directory").to_string();
    assert!(e.contains("is not a regular file"), "{e}");
}

#[test]
fn shared_tables_split_by_subject_and_report_missing_rows() {
    let dir = project();
    std::fs::write(
        dir.path().join("captured/all.jsonl"),
        "{\"subject\":\"case-01\",\"file\":\"a.py\",\"line\":1,\"message\":\"m\"}\n{\"subject\":\"case-02\"}\n",
    )
    .expect("write");
    let reviewer = ReplayReviewer::new(spec(dir.path(), "../captured/all.jsonl", ReplayFormat::Jsonl, Missing::Error));
    assert_eq!(review(&reviewer, "case-01").expect("one").findings.len(), 1);
    assert!(review(&reviewer, "case-02").expect("marked reviewed").findings.is_empty());
    let e = review(&reviewer, "case-03").expect_err("no rows").to_string();
    assert!(e.contains("captured file `captured/all.jsonl` has no row for subject `case-03`"), "{e}");
    std::fs::write(dir.path().join("captured/bad.jsonl"), "{\"subject\":\"case-01\",\"message\":\"m\"}\n{\"subject\":\"case-02\",\"message\":3}\n")
        .expect("write");
    let bad = ReplayReviewer::new(spec(dir.path(), "../captured/bad.jsonl", ReplayFormat::Jsonl, Missing::Error));
    let e = review(&bad, "case-01").expect_err("malformed").to_string();
    assert_eq!(e, "captured file `captured/bad.jsonl`: line 2: `message` must be a string or null, not 3");
}

#[test]
fn seed002_repeats_read_their_own_trials() {
    let dir = project();
    let text = DOCS_EXAMPLE.replace(
        "        }\n      ]",
        "        },\n        {\"caseId\": \"case-01\", \"trialId\": \"trial-02\", \"complete\": false, \"findings\": []}\n      ]",
    );
    std::fs::write(dir.path().join("captured/captured.json"), text).expect("write");
    let reviewer = ReplayReviewer::new(spec(dir.path(), "../captured/captured.json", ReplayFormat::Seed002, Missing::Error));
    let one = futures::executor::block_on(reviewer.review(&job("case-01", 1))).expect("trial 1");
    let two = futures::executor::block_on(reviewer.review(&job("case-01", 2))).expect("trial 2");
    assert_eq!((one.findings.len(), two.findings.len()), (1, 0));
    assert_eq!((one.cost.wall_ms, two.counters.get("seed002_incomplete")), (12400, Some(&1)));
    assert_ne!(reviewer.run_input(&job("x", 1).cell, "case-01", 1), reviewer.run_input(&job("x", 1).cell, "case-01", 2));
    let e = futures::executor::block_on(reviewer.review(&job("case-01", 3))).expect_err("trial 3").to_string();
    assert!(e.contains("declares 2 trials in `plan.trialIds`, so it has no trial for repeat 3"), "{e}");
    let e = review(&reviewer, "case-02").expect_err("no run").to_string();
    assert!(e.contains("no run of case `case-02` for trial 1"), "{e}");
}
