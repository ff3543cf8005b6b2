//! Reading RQS v2's scoring resources: `[judges.NAME]`, `[pseudo-references]` and
//! `[embedder]`, checked against the `rqs` analyses that read them.

use super::model::Scoring;
use crate::analysis::spec::{AnalysisKind, AnalysisSpec};
use crate::config::TableReader;
use std::path::Path;

/// The scoring tables, every problem reported at once. `analyses` are the manifest's
/// analyses as read (`None` where one had problems).
pub(super) fn read_scoring(root: &TableReader<'_, '_>, base_dir: &Path, analyses: &[Option<AnalysisSpec>]) -> Option<Scoring> {
    let problems = root.problems();
    let judges = crate::judge::spec::read_judges(root, base_dir);
    let mut claims = None;
    let mut analyzers = Vec::new();
    let mut analyzer_versions = std::collections::BTreeMap::new();
    let mut references_ok = true;
    if let Some(t) = root.table("pseudo-references") {
        if let Some(list) = t.strings("analyzers") {
            for name in &list {
                match crate::smells::AnalyzerKind::parse(name.get_ref()) {
                    Ok(kind) => analyzers.push(kind),
                    Err(e) => {
                        problems.push(name.span(), e.to_string());
                        references_ok = false;
                    }
                }
            }
        }
        if let Some(pins) = t.string_map("analyzer-versions") {
            match read_analyzer_versions(&t, &analyzers, pins) {
                Some(read) => analyzer_versions = read,
                None => references_ok = false,
            }
        }
        if t.has("provider") || t.has("model") {
            claims = crate::judge::spec::read_claims(&t, base_dir);
            references_ok &= claims.is_some();
        }
        t.finish();
    } else {
        root.allow("pseudo-references");
    }
    let embedder = match root.table("embedder") {
        Some(t) => {
            let spec = crate::judge::embed::read_embedder_spec(&t, base_dir);
            t.finish();
            Some(spec?)
        }
        None => {
            root.allow("embedder");
            None
        }
    };
    let judges = judges?;
    if let Err(e) = crate::judge::spec::check_cross_family(&judges.iter().collect::<Vec<_>>()) {
        problems.push(root.key_span("judges").unwrap_or(0..0), e);
    }
    if judges.is_empty() && analyses.iter().flatten().any(|a| a.kind == AnalysisKind::JURY) {
        problems.push_with_help(
            root.span(),
            "analysis `jury` measures the judges, but no judges are declared",
            "declare [judges.NAME] tables: models (`provider`, `model`, `family`) or recorded decisions (`kind = \"replay\"`, `path`, `family`)",
        );
    } else if judges.is_empty() && analyses.iter().flatten().any(|a| a.asks_judges_to_match()) {
        problems.push_with_help(
            root.span(),
            "`evidence = \"judge\"` asks the judges whether two findings describe the same issue, but no judges are declared",
            "declare [judges.NAME] tables (models of different families), or choose another `evidence`",
        );
    }
    // A replayed judge decided per oracle finding on its own reading of a review: it answers a
    // `jury` analysis, not a pair of texts or a rubric.
    let replayed: Vec<&str> = judges.iter().filter(|j| j.replay.is_some()).map(|j| j.name.as_str()).collect();
    if let Some(first) = replayed.first() {
        let model_uses = analyses.iter().flatten().find_map(|a| match a.kind {
            AnalysisKind::RQS => Some("analysis `rqs` has every judge apply its rubrics"),
            AnalysisKind::JURY => None,
            _ if a.oracle_rule.evidence == crate::analysis::matching::matcher::Evidence::Judge => {
                Some("`evidence = \"judge\"` asks every judge about pairs of texts")
            }
            _ => None,
        });
        if let Some(why) = model_uses {
            problems.push_with_help(
                root.key_span("judges").unwrap_or(0..0),
                format!("judge `{first}` replays recorded decisions, but {why}"),
                "a replayed judge (`kind = \"replay\"`) sits on a `jury` analysis only; declare model judges for the rest",
            );
        }
    }
    for spec in analyses.iter().flatten().filter(|a| a.kind == AnalysisKind::RQS) {
        if judges.is_empty() {
            problems.push_with_help(root.span(), "analysis `rqs` needs a jury", "declare [judges.NAME] tables (2–3 judges of different model families)");
        }
        let options = spec.rqs();
        let has_tau = options.is_some_and(|o| o.tau.is_some() || o.calibration.is_some());
        if embedder.is_some() && !has_tau {
            problems.push_with_help(
                root.span(),
                "analysis `rqs` aligns reviews with an embedder but names no threshold",
                "add `tau = …` or `calibration = \"…\"` (written by `runner crscore --calibrate`) to the analysis",
            );
        }
        if embedder.is_none() && (claims.is_some() || !analyzers.is_empty()) {
            problems.push_with_help(root.span(), "pseudo-references are declared but no [embedder] aligns reviews with them", "declare [embedder]");
        }
    }
    references_ok.then_some(Scoring { judges, claims, analyzers, analyzer_versions, embedder })
}

/// `analyzer-versions = { ruff = "ruff 0.17.5", … }`: each declared analyzer's exact version
/// as its key holds it, by the name that ran (`clippy` or `rustc` for Rust). `None`, with the
/// problems recorded, unless it names every declared analyzer and nothing else.
fn read_analyzer_versions(
    t: &TableReader<'_, '_>,
    analyzers: &[crate::smells::AnalyzerKind],
    pins: Vec<(toml::Spanned<String>, toml::Spanned<String>)>,
) -> Option<std::collections::BTreeMap<String, String>> {
    use crate::smells::AnalyzerKind;
    let problems = t.problems();
    let span = t.key_span("analyzer-versions").unwrap_or_else(|| t.span());
    let mut out = std::collections::BTreeMap::new();
    let mut ok = true;
    let mut pinned = Vec::new();
    for (name, version) in pins {
        let kind = match name.get_ref().as_str() {
            "ruff" => AnalyzerKind::Ruff,
            "jshint" => AnalyzerKind::Jshint,
            "clippy" | "rustc" => AnalyzerKind::Rust,
            other => {
                problems.push_with_help(name.span(), format!("unknown analyzer `{other}` in `analyzer-versions`"), "the names are ruff, jshint, clippy, rustc");
                ok = false;
                continue;
            }
        };
        if !analyzers.contains(&kind) {
            problems.push(name.span(), format!("`analyzer-versions` pins `{}`, which `analyzers` does not declare", name.get_ref()));
            ok = false;
        } else if pinned.contains(&kind) {
            problems.push(name.span(), "`analyzer-versions` pins Rust's analyzer twice: name the one that ran, `clippy` or `rustc`");
            ok = false;
        } else if version.get_ref().trim().is_empty() {
            problems.push(version.span(), format!("the version of `{}` is empty", name.get_ref()));
            ok = false;
        }
        pinned.push(kind);
        out.insert(name.get_ref().clone(), version.get_ref().clone());
    }
    for kind in analyzers.iter().filter(|k| !pinned.contains(k)) {
        let name = if *kind == AnalyzerKind::Rust { "clippy` or `rustc" } else { kind.as_str() };
        problems.push_with_help(
            span.clone(),
            format!("`analyzer-versions` does not pin `{name}`"),
            "pin every declared analyzer, with the version the `rqs` analysis reports (e.g. `ruff = \"ruff 0.17.5\"`)",
        );
        ok = false;
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const BASE: &str = r#"version = 1
[experiment]
name = "e"
[target]
repo = "."
[matrix]
ref = ["HEAD~1"]
[reviewer]
kind = "builtin"
name = "dry-run"
[report]
output = "out"
"#;

    fn problems(extra: &str) -> String {
        match crate::manifest::parse(Path::new("e.toml"), &format!("{BASE}{extra}")) {
            Ok(_) => String::new(),
            Err(e) => e.render(false),
        }
    }

    #[test]
    fn analyzer_versions_pin_every_declared_analyzer_and_nothing_else() {
        let refs = |pins: &str| format!("[pseudo-references]\nanalyzers = [\"ruff\", \"rustc\"]\nanalyzer-versions = {{ {pins} }}\n");
        let m = crate::manifest::parse(Path::new("e.toml"), &format!("{BASE}{}", refs(r#"ruff = "ruff 0.17.5", clippy = "clippy 0.1.95""#))).expect("valid");
        assert_eq!(m.scoring.analyzer_versions.get("clippy").map(String::as_str), Some("clippy 0.1.95"));
        assert_eq!(m.scoring.analyzer_versions.len(), 2);
        let text = problems(&refs(r#"ruff = "ruff 0.17.5""#));
        assert!(text.contains("does not pin `clippy` or `rustc`"), "{text}");
        let text = problems(&refs(r#"ruff = "ruff 0.17.5", rustc = "rustc 1", jshint = "jshint 2", pylint = "3""#));
        assert!(text.contains("pins `jshint`, which `analyzers` does not declare"), "{text}");
        assert!(text.contains("unknown analyzer `pylint`"), "{text}");
        let text = problems(&refs(r#"ruff = "ruff 0.17.5", rustc = "r", clippy = "c""#));
        assert!(text.contains("pins Rust's analyzer twice"), "{text}");
        assert!(problems(&refs(r#"ruff = "", rustc = "r""#)).contains("the version of `ruff` is empty"));
    }

    #[test]
    fn a_full_scoring_section_reads_with_its_jury_in_name_order() {
        let extra = r#"
[judges.b]
provider = "openai"
model = "m2"
family = "gemma"
[judges.a]
provider = "ollama"
model = "m1"
family = "smollm2"
[pseudo-references]
provider = "openai"
model = "m1"
family = "smollm2"
analyzers = ["ruff", "jshint", "rustc"]
[embedder]
provider = "openai"
model = "e"
[[analysis]]
kind = "rqs"
tau = 0.5
shuffle-seed = 3
"#;
        let manifest = crate::manifest::parse(Path::new("e.toml"), &format!("{BASE}{extra}")).map_err(|e| e.render(false)).expect("valid");
        let names: Vec<&str> = manifest.scoring.judges.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(manifest.scoring.analyzers.len(), 3);
        assert!(manifest.scoring.claims.is_some() && manifest.scoring.embedder.is_some());
        let options = manifest.analyses[0].rqs().expect("rqs options");
        assert_eq!((options.tau, options.shuffle_seed), (Some(0.5), 3));
    }

    #[test]
    fn every_scoring_problem_is_reported_at_once() {
        let extra = r#"
[judges.a]
provider = "openai"
model = "m1"
family = "gemma"
[judges.b]
provider = "openai"
model = "m2"
family = "gemma"
[pseudo-references]
analyzers = ["ruff", "pylint"]
[embedder]
provider = "openai"
model = "e"
[[analysis]]
kind = "rqs"
tau = 0.5
calibration = "c.json"
"#;
        let text = problems(extra);
        assert!(text.contains("unknown analyzer") || text.contains("pylint"), "{text}");
        assert!(text.contains("both of the `gemma` family"), "{text}");
        assert!(text.contains("`tau` or `calibration`, not both"), "{text}");
    }

    #[test]
    fn an_rqs_analysis_needs_a_jury_and_a_threshold_for_its_embedder() {
        let text = problems("[embedder]\nprovider = \"openai\"\nmodel = \"e\"\n[[analysis]]\nkind = \"rqs\"\n");
        assert!(text.contains("analysis `rqs` needs a jury"), "{text}");
        assert!(text.contains("names no threshold"), "{text}");
        let text = problems("[[analysis]]\nkind = \"cost\"\ntau = 0.5\n");
        assert!(text.contains("tau"), "a non-rqs analysis refuses `tau`: {text}");
    }
}
