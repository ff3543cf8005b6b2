//! Study analyses by hand: H5 over a hand-made jury and H1 sheet, and H1's table.

use super::*;
use crate::analysis::rqs::metric::{FindingVotes, JudgeInfo, RqsInput, RunScoring};
use crate::analysis::spec::{AnalysisKind, StudyOptions};
use crate::analysis::test_support::{finding, s, spec, Fixture};
use crate::study::findings::{StudyItem, KEY_VERSION};

fn key(items: &[(&str, &str, &str)]) -> StudyKey {
    StudyKey {
        version: KEY_VERSION,
        study: Study::H1,
        experiment: "x".into(),
        manifest: "x.toml".into(),
        seed: 1,
        sample: 40,
        eligible: items.len(),
        cells: vec!["m=a".into(), "m=b".into()],
        items: items
            .iter()
            .map(|(id, cell, fid)| {
                (id.to_string(), StudyItem { cell: cell.to_string(), case: "c1".into(), severity: "warning".into(), occurrences: vec![(1, fid.to_string())] })
            })
            .collect(),
        axis: None,
    }
}

fn write_study(dir: &Path, key: &StudyKey, labels: &[(&str, &str)]) -> StudyOptions {
    let key_path = dir.join("key.json");
    std::fs::write(&key_path, serde_json::to_string(key).expect("json")).expect("write");
    let rows: String = labels.iter().map(|(id, l)| format!("{id},c1,a.py,3,warning,correctness,m,,{l},,ann\n")).collect();
    let sheet = dir.join("sheet.csv");
    std::fs::write(&sheet, format!("item,case,file,line,severity,category,message,suggestion,label,note,rater\n{rows}")).expect("write");
    StudyOptions { study: "h5".into(), sheets: vec![sheet], key: key_path, base_dir: dir.to_path_buf() }
}

#[test]
fn paths_are_shown_from_the_project() {
    assert_eq!(lexical(Path::new("experiments/../results/studies/h1/sheet.csv")), "results/studies/h1/sheet.csv");
    assert_eq!(lexical(Path::new("./a/./b/../c.csv")), "a/c.csv");
    assert_eq!(lexical(Path::new("../x/y.csv")), "../x/y.csv");
    assert_eq!(lexical(Path::new("/home/me/runner/results/studies/h1/sheet.csv")), "results/studies/h1/sheet.csv");
}

fn rendered(t: &Table) -> Vec<String> {
    t.rows.iter().map(|r| r.iter().map(TableCell::render).collect::<Vec<_>>().join(" | ")).collect()
}

#[test]
fn h5_compares_each_judge_with_the_h1_labels_by_hand() {
    let (f1, f2, f3) = (finding("a.py", 3, "one"), finding("a.py", 9, "two"), finding("a.py", 20, "three"));
    let mut fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    fx.add("m=a", 1, "c1", vec![f1.clone(), f2.clone()]);
    fx.add("m=b", 1, "c1", vec![f3.clone()]);
    let key = key(&[("S001", "m=a", &f1.id), ("S002", "m=a", &f2.id), ("S003", "m=b", &f3.id), ("S004", "m=b", "not-reported")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let options = write_study(dir.path(), &key, &[("S001", "actionable"), ("S002", "false_positive"), ("S003", "wrong_suggestion"), ("S004", "actionable")]);
    let fv = |v: [Vote; 2], a: [Vote; 2]| FindingVotes { validity: v.to_vec(), actionability: a.to_vec(), ..Default::default() };
    let judge = |name: &str| JudgeInfo { name: name.into(), model: name.into(), family: name.into(), samples: 1 };
    let rqs = RqsInput {
        judges: vec![judge("j1"), judge("j2")],
        runs: BTreeMap::from([
            (
                RunId::new("m=a", 1, "c1"),
                RunScoring {
                    votes: vec![fv([Vote::Yes, Vote::No], [Vote::Yes, Vote::Yes]), fv([Vote::No, Vote::No], [Vote::No, Vote::Unparseable])],
                    ..Default::default()
                },
            ),
            (RunId::new("m=b", 1, "c1"), RunScoring { votes: vec![fv([Vote::Yes, Vote::Yes], [Vote::No, Vote::Absent])], ..Default::default() }),
        ]),
        ..Default::default()
    };
    let mut input = fx.input();
    input.extras = std::mem::take(&mut input.extras).with(Some(&rqs));
    let mut spec = spec(AnalysisKind::STUDY, None);
    spec.options = crate::analysis::spec::AnalysisOptions::Study(options);
    let r = compute(&spec, &input);
    // Human (validity, actionability): S001 y/y, S002 n/n, S003 y/n; S004 has no run.
    // j1 validity y n y: 3/3, κ 1. j2 validity n n y: 2/3; human y 2/3, j2 y 1/3:
    // p_e = 2/3·1/3 + 1/3·2/3 = 4/9, κ = (2/3 − 4/9)/(5/9) = 0.4.
    // j1 actionability y n n: 3/3. j2 actionability: S001 y (agrees); S002 unparseable and
    // S003 absent are unanswered: 1/1, κ undefined.
    let rows = rendered(&r.tables[0]);
    assert_eq!(
        rows,
        [
            "`j1` | validity | 3 | 0 | 1.000 | 1.000 | 2 | 0 | 0 | 1 | yes",
            "`j1` | actionability | 3 | 0 | 1.000 | 1.000 | 1 | 0 | 0 | 2 | yes",
            "`j2` | validity | 3 | 0 | 0.667 | 0.400 | 1 | 1 | 0 | 1 | **no** (below 85 %)",
            "`j2` | actionability | 1 | 2 | 1.000 | – | 1 | 0 | 0 | 0 | yes",
        ],
        "{r:#?}"
    );
    let per = rendered(&r.tables[1]);
    assert!(per.contains(&"`j2` | validity | `actionable` | 1 | 0 | 0.000".to_string()), "{per:#?}");
    assert!(per.contains(&"`j1` | actionability | `wrong_suggestion` | 1 | 1 | 1.000".to_string()), "{per:#?}");
    assert!(r.notes.iter().any(|n| n.starts_with("1 H1 findings have no run of this experiment")), "{:?}", r.notes);
    assert!(
        r.notes.iter().any(|n| n == "Judge `j2` agrees with people on 2 of 3 findings for validity (0.667): below 85 %, it may not be used alone."),
        "{:?}",
        r.notes
    );
    assert_eq!(r.data["findings"], 3);
    // People's labels are kept as judgements of the judges' type.
    let human: crate::judge::rubric::Judgement = serde_json::from_value(r.data["human_judgements"]["S003"]["actionability"].clone()).expect("a judgement");
    assert_eq!((human.verdict, human.raw.as_str()), (Verdict::No, "wrong_suggestion"));

    // Without a jury, H5 says what it needs.
    let r = compute(&spec, &fx.input());
    assert!(r.tables.is_empty() && r.notes.iter().any(|n| n.starts_with("No jury")), "{:?}", r.notes);
}

#[test]
fn an_h1_study_renders_its_table_and_a_wrong_key_is_said() {
    let f1 = finding("a.py", 3, "one");
    let fx = Fixture::new(&[("m", vec![s("a"), s("b")])], 1);
    let key = key(&[("S001", "m=a", &f1.id), ("S002", "m=b", "x")]);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut options = write_study(dir.path(), &key, &[("S001", "actionable"), ("S002", "out_of_scope")]);
    options.study = "h1".into();
    let mut spec = spec(AnalysisKind::STUDY, None);
    spec.options = crate::analysis::spec::AnalysisOptions::Study(options.clone());
    let r = compute(&spec, &fx.input());
    assert_eq!((r.test_id.as_str(), r.title.as_str()), ("H1", "Blind triage"));
    assert_eq!(
        rendered(&r.tables[0]),
        [
            "`m=a` | 1 | 1 | 0 | 0 | 0 | 1 (100.0%) | [0.207, 1.000]",
            "`m=b` | 1 | 0 | 0 | 0 | 1 | 0 | [0.000, 0.793]",
            "`all` | 2 | 1 | 0 | 0 | 1 | 1 (50.0%) | [0.095, 0.905]"
        ]
    );
    assert!(r.notes.iter().any(|n| n.starts_with("Aggregation: one sheet")), "{:?}", r.notes);
    options.study = "h8".into();
    spec.options = crate::analysis::spec::AnalysisOptions::Study(options);
    let r = compute(&spec, &fx.input());
    assert!(r.tables.is_empty());
    assert!(r.notes[0].ends_with("is the key of an h1 sheet; study `h8` reads h8 sheets."), "{:?}", r.notes);
}
