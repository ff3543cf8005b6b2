//! Reading `replay` reviewer tables from a whole manifest, and the cache keys they plan.

use crate::finding::Severity;
use crate::reviewer::replay::ReplayFormat;
use std::collections::BTreeMap;
use std::path::Path;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join(".git")).expect("git dir");
    std::fs::create_dir_all(dir.path().join("experiments")).expect("experiments");
    std::fs::create_dir_all(dir.path().join("captured")).expect("captured");
    dir
}

/// The keys of every run of a manifest whose `ref` axis names the subjects `a` and `b`.
fn keys(dir: &Path) -> BTreeMap<String, String> {
    let manifest_path = dir.join("experiments/m.toml");
    let text = "version = 1\n[experiment]\nname = \"k\"\n[target]\nrepo = \"..\"\n[matrix]\nref = [\"a\", \"b\"]\nreviewer = [\"csv\", \"sarif\"]\n[reviewers.csv]\nkind = \"replay\"\npath = \"../captured/all.csv\"\n[reviewers.sarif]\nkind = \"replay\"\npath = \"../captured/{subject}.sarif\"\n[report]\noutput = \"out\"\n";
    let manifest = crate::manifest::parse(&manifest_path, text).map_err(|e| format!("{:?}", e.diagnostics)).expect("manifest");
    let subjects: BTreeMap<String, crate::subject::SubjectSpec> = ["a", "b"]
        .iter()
        .map(|r| {
            let source = crate::subject::SubjectSource::Git { repo: dir.to_path_buf(), base_sha: format!("{r}0"), head_sha: "h".into() };
            (r.to_string(), crate::subject::SubjectSpec { id: r.to_string(), identity: format!("id-{r}"), source, holdout: false })
        })
        .collect();
    let reviewers: crate::plan::ReviewerSet =
        manifest.reviewers.entries.iter().map(|e| (e.name.clone(), crate::reviewer::build::from_spec(&e.spec).expect("reviewer"))).collect();
    let plan = crate::plan::build(&manifest, subjects, &reviewers, &crate::plan::NoScoring).expect("plan");
    plan.runs.iter().map(|r| (r.label(), r.key.0.clone())).collect()
}

#[test]
fn editing_one_capture_changes_only_its_subjects_keys() {
    let dir = project();
    let sarif = |text: &str| format!(r#"{{"version":"2.1.0","runs":[{{"tool":{{"driver":{{"name":"t"}}}},"results":[{{"message":{{"text":"{text}"}}}}]}}]}}"#);
    std::fs::write(dir.path().join("captured/a.sarif"), sarif("one")).expect("write");
    std::fs::write(dir.path().join("captured/b.sarif"), sarif("two")).expect("write");
    std::fs::write(dir.path().join("captured/all.csv"), "subject,file,line,message\na,x.py,1,m\nb,y.py,2,n\n").expect("write");
    let before = keys(dir.path());
    assert_eq!(before.len(), 4);
    assert_eq!(keys(dir.path()), before, "stable");
    // One subject's SARIF file changes: only its run's key does.
    std::fs::write(dir.path().join("captured/b.sarif"), sarif("three")).expect("write");
    // One subject's rows of the shared table change: only its run's key does.
    std::fs::write(dir.path().join("captured/all.csv"), "subject,file,line,message\na,x.py,1,m\nb,y.py,2,changed\n").expect("write");
    let after = keys(dir.path());
    let changed: Vec<&String> = after.iter().filter(|(run, key)| before.get(*run) != Some(*key)).map(|(run, _)| run).collect();
    assert_eq!(changed, vec!["ref=b,reviewer=csv #1 @b", "ref=b,reviewer=sarif #1 @b"], "{after:?}");
}

#[test]
fn manifest_problems_are_reported_with_their_keys() {
    let base = "version = 1\n[experiment]\nname = \"m\"\n[target]\nrepo = \".\"\n[matrix]\nref = [\"HEAD~1\"]\n[reviewer]\nkind = \"replay\"\n";
    let cases = [
        ("path = \"/abs/{subject}.sarif\"\n", "must be a relative path"),
        ("path = \"c/{case}.sarif\"\n", "has a placeholder other than `{subject}`"),
        ("path = \"c/{subject}.txt\"\n", "cannot tell the format"),
        ("path = \"c/{subject}.json\"\nformat = \"sarfi\"\n", "did you mean `sarif`?"),
        ("path = \"c/all.sarif\"\n", "a sarif file holds one subject's findings, so `path` needs `{subject}`"),
        ("path = \"c/all.csv\"\nmissing = \"skip\"\n", "unknown `missing` policy `skip`"),
        ("path = \"c/all.csv\"\nstrategy = \"x\"\n", "`strategy` applies to seed 002"),
        ("path = \"c/all.csv\"\nseverity-map = { p1 = \"urgent\" }\n", "`severity-map` maps to `urgent`"),
        ("path = \"c/all.csv\"\ncategory-map = { v = \"vuln\" }\n", "`category-map` maps to `vuln`"),
        ("path = \"c/all.csv\"\nrule = 1\n", "unknown key"),
    ];
    for (keys, expected) in cases {
        let text = format!("{base}{keys}[report]\noutput = \"out\"\n");
        let e = crate::manifest::parse(Path::new("m.toml"), &text).expect_err(keys);
        let all = format!("{:?}", e.diagnostics);
        assert!(all.contains(expected), "{keys}: {all}");
    }
    let ok =
        format!("{base}path = \"c/{{subject}}.sarif.json\"\ntool = \"Semgrep 1.2\"\nseverity-map = {{ note = \"nitpick\" }}\n[report]\noutput = \"out\"\n");
    let m = crate::manifest::parse(Path::new("m.toml"), &ok).map_err(|e| format!("{:?}", e.diagnostics)).expect("valid");
    let crate::reviewer::spec::ReviewerKindSpec::Replay(r) = &m.reviewers.entries[0].spec.kind else { panic!("replay") };
    assert_eq!((r.format, r.tool.as_deref(), r.mapping.severity_map.get("note")), (ReplayFormat::Sarif, Some("Semgrep 1.2"), Some(&Severity::Nitpick)));
}
