//! CI-ready outputs: a compact Markdown summary of an execution (its verdict lines and cells),
//! fit for a pull-request comment or `$GITHUB_STEP_SUMMARY`, and JUnit XML for the gates of
//! `runner diff`, one test case per compared pair of cells.

use super::diff::DiffReport;
use super::gate::GateReport;
use super::model::Results;
use std::fmt::Write as _;

/// The compact summary of one execution.
pub fn summary_markdown(results: &Results, results_md: &str) -> String {
    let mut out = String::new();
    let t = &results.totals;
    let _ = writeln!(out, "### {}\n", results.experiment.name);
    let _ = writeln!(
        out,
        "{} of {} runs succeeded · {} findings · {} cell{} × {} subject{} × {} repeat{}{}\n",
        t.succeeded,
        t.planned,
        t.findings,
        results.matrix.cells,
        if results.matrix.cells == 1 { "" } else { "s" },
        results.matrix.subjects,
        if results.matrix.subjects == 1 { "" } else { "s" },
        results.matrix.repeat,
        if results.matrix.repeat == 1 { "" } else { "s" },
        if t.failed > 0 { format!(" · **{} without a result**", t.failed) } else { String::new() },
    );
    if results.summary.is_empty() {
        let _ = writeln!(out, "No comparison is declared (add `[[analysis]] kind = \"compare\"` for verdicts).\n");
    } else {
        for line in &results.summary {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "| Cell | Runs | Findings / run | Review s |\n|---|---:|---:|---:|");
    for c in &results.cells {
        let _ = writeln!(
            out,
            "| `{}` | {}/{} | {} | {} |",
            c.cell,
            c.runs,
            c.planned,
            crate::analysis::format_number(c.findings_per_run, Some(2)),
            crate::analysis::format_number(Some(c.seconds), Some(2))
        );
    }
    let _ = writeln!(out, "\nFull results: `{results_md}`");
    out
}

/// XML text and attribute escaping.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 admits no other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// One JUnit document: `cases` are (name, failure message when failed, details).
fn junit(suite: &str, cases: &[(String, Option<String>, String)]) -> String {
    let failures = cases.iter().filter(|c| c.1.is_some()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(out, "<testsuites name=\"runner\" tests=\"{}\" failures=\"{failures}\">", cases.len());
    let _ = writeln!(out, "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">", xml(suite), cases.len());
    for (name, failure, details) in cases {
        let _ = writeln!(out, "    <testcase classname=\"{}\" name=\"{}\">", xml(suite), xml(name));
        if let Some(message) = failure {
            let _ = writeln!(out, "      <failure message=\"{}\">{}</failure>", xml(message), xml(details));
        }
        let _ = writeln!(out, "      <system-out>{}</system-out>", xml(details));
        let _ = writeln!(out, "    </testcase>");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The statistical gate as JUnit XML.
pub fn junit_gate(report: &GateReport) -> String {
    let cases: Vec<(String, Option<String>, String)> = report
        .pairs
        .iter()
        .map(|row| {
            let c = &row.comparison;
            let mut line = crate::analysis::statistics::compare::verdict_line(c, 3).replace("**", "");
            let verdict = match row.judge_samples {
                Some(s) => {
                    let passes = format!("passes in {} of {} judge samples (needs {})", s.passed, s.of, s.needed);
                    line = format!("{line} {passes}");
                    passes
                }
                None => c.verdict(),
            };
            (format!("{} {} vs {}", report.metric.as_str(), c.b, c.a), row.fails.then(|| format!("{verdict}: {}", report.rule)), line)
        })
        .collect();
    junit(&format!("runner diff --metric {}", report.metric.as_str()), &cases)
}

/// Seed 003's keep rule as JUnit XML.
pub fn junit_keep(report: &DiffReport) -> String {
    let cases: Vec<(String, Option<String>, String)> = report
        .pairs
        .iter()
        .map(|p| {
            let regressions: Vec<String> = p.counted_regressions().map(|r| format!("{}/{}", r.case, r.finding)).collect();
            let details = format!(
                "{} oracle findings compared; regressions: {}; noise rose: {}",
                p.compared,
                if regressions.is_empty() { "none".to_string() } else { regressions.join(", ") },
                p.noise_rose
            );
            (format!("keep rule {} vs {}", p.cell_b, p.cell_a), (!p.kept).then(|| report.rule.clone()), details)
        })
        .collect();
    junit("runner diff (keep rule)", &cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_escapes_and_counts_failures() {
        let doc = junit("s<1>", &[("a & b".into(), Some("worse \"really\"".into()), "x < y".into()), ("c".into(), None, String::new())]);
        assert!(doc.contains("tests=\"2\" failures=\"1\""), "{doc}");
        assert!(doc.contains("name=\"a &amp; b\""), "{doc}");
        assert!(doc.contains("<failure message=\"worse &quot;really&quot;\">x &lt; y</failure>"), "{doc}");
        assert!(!doc.contains("s<1>"), "{doc}");
        assert_eq!(xml("\u{1}"), "\u{FFFD}");
    }
}
