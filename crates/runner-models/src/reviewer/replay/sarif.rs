//! SARIF 2.1.0 logs (what CodeQL, Semgrep, ESLint and most analyzers write), read through
//! typed serde structs of the subset replay uses: `runs[].results[]` with `ruleId`/`ruleIndex`,
//! `kind`, `level`, `message.text`, `locations[0].physicalLocation` (`artifactLocation.uri`,
//! `region.startLine`/`endLine`), `suppressions`, `fixes[0].description`,
//! `properties.category`; each run's `tool.driver.rules[]` (`defaultConfiguration.level`,
//! `properties.tags`) and `originalUriBaseIds`. Every other member is ignored, so a log is
//! not refused over parts replay never reads.
//!
//! Mapping (SARIF §3.27.10, §3.27.9):
//! - `level` → severity: `error` → error, `warning` → warning, `note` → info, `none` →
//!   nitpick (the manifest's `severity-map` first). An absent level is the rule's
//!   `defaultConfiguration.level`, else `warning`; for a `kind` other than `fail`, `none`.
//! - category: the result's `properties.category` (mapped, an unknown one is an error), else
//!   the first of the rule's `properties.tags` that names a runner category, else
//!   `maintainability`.
//! - Results of `kind` `pass` or `notApplicable`, and suppressed results (a suppression
//!   whose `status` is absent or `accepted`), are not findings: skipped and counted.
//! - A result without a location is a finding about the whole change (file `""`, no line).

use super::{finding, Mapping, Replayed, DEFAULT_CATEGORY};
use crate::finding::Severity;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Log {
    version: Option<String>,
    runs: Vec<Run>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Run {
    tool: Tool,
    #[serde(default)]
    results: Option<Vec<SarifResult>>,
    #[serde(default)]
    original_uri_base_ids: BTreeMap<String, ArtifactLocation>,
}

#[derive(Deserialize)]
struct Tool {
    driver: Driver,
}

#[derive(Deserialize)]
struct Driver {
    #[serde(default)]
    rules: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: Option<String>,
    default_configuration: Option<Configuration>,
    properties: Option<Value>,
}

#[derive(Deserialize)]
struct Configuration {
    level: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult {
    rule_id: Option<String>,
    rule_index: Option<usize>,
    rule: Option<RuleReference>,
    kind: Option<String>,
    level: Option<String>,
    message: Message,
    #[serde(default)]
    locations: Vec<Location>,
    suppressions: Option<Vec<Suppression>>,
    #[serde(default)]
    fixes: Vec<Fix>,
    properties: Option<Value>,
}

#[derive(Deserialize)]
struct RuleReference {
    id: Option<String>,
    index: Option<usize>,
}

#[derive(Deserialize)]
struct Message {
    text: Option<String>,
    markdown: Option<String>,
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: Option<PhysicalLocation>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: Option<ArtifactLocation>,
    region: Option<Region>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: Option<u32>,
    end_line: Option<u32>,
}

#[derive(Deserialize)]
struct Suppression {
    status: Option<String>,
}

#[derive(Deserialize)]
struct Fix {
    description: Option<Message>,
}

/// Reads a SARIF 2.1.0 log into findings.
pub(crate) fn parse(text: &str, mapping: &Mapping) -> Result<Replayed, String> {
    let log: Log = serde_json::from_str(text).map_err(|e| format!("not a SARIF log: {e}"))?;
    match log.version.as_deref() {
        Some("2.1.0") => {}
        Some(other) => return Err(format!("SARIF version `{other}`: replay reads SARIF 2.1.0")),
        None => return Err("no `version`: replay reads SARIF 2.1.0 (`\"version\": \"2.1.0\"`)".into()),
    }
    let mut out = Replayed::default();
    for (r, run) in log.runs.iter().enumerate() {
        for (i, result) in run.results.iter().flatten().enumerate() {
            let at = format!("runs[{r}].results[{i}]");
            if let Some(problem) = read_result(run, result, mapping, &mut out).map_err(|e| format!("{at}: {e}"))? {
                out.schema_problems.push(format!("{at}: {problem}"));
            }
        }
    }
    Ok(out)
}

/// One result into `out`; `Ok(Some(problem))` for a finding kept with a schema problem.
fn read_result(run: &Run, result: &SarifResult, mapping: &Mapping, out: &mut Replayed) -> Result<Option<String>, String> {
    let kind = result.kind.as_deref().unwrap_or("fail");
    match kind {
        "pass" | "notApplicable" => {
            *out.counters.entry("sarif_not_failures_skipped".into()).or_insert(0) += 1;
            return Ok(None);
        }
        "fail" | "open" | "review" | "informational" => {}
        other => return Err(format!("`kind` `{other}` is not a SARIF result kind (fail, pass, open, review, informational, notApplicable)")),
    }
    if result.suppressions.as_ref().is_some_and(|s| s.iter().any(|s| matches!(s.status.as_deref(), None | Some("accepted")))) {
        *out.counters.entry("sarif_suppressed_skipped".into()).or_insert(0) += 1;
        return Ok(None);
    }
    let rule = rule_of(run, result);
    let level = match (&result.level, kind) {
        (Some(level), _) => level.clone(),
        (None, "fail") => rule.and_then(|r| r.default_configuration.as_ref()).and_then(|c| c.level.clone()).unwrap_or_else(|| "warning".into()),
        (None, _) => "none".into(),
    };
    let severity = match mapping.severity_map.get(&level.to_ascii_lowercase()) {
        Some(s) => *s,
        None => match level.as_str() {
            "error" => Severity::Error,
            "warning" => Severity::Warning,
            "note" => Severity::Info,
            "none" => Severity::Nitpick,
            other => return Err(format!("`level` `{other}` is not a SARIF level (error, warning, note, none); map it with `severity-map`")),
        },
    };
    let category = match result.properties.as_ref().and_then(|p| p.get("category")) {
        Some(Value::String(c)) => mapping.category(c)?,
        Some(other) => return Err(format!("`properties.category` must be a string, not {other}")),
        None => rule
            .and_then(|r| r.properties.as_ref())
            .and_then(|p| p.get("tags"))
            .and_then(Value::as_array)
            .and_then(|tags| tags.iter().filter_map(Value::as_str).find_map(|t| mapping.category_if_known(t)))
            .unwrap_or(DEFAULT_CATEGORY),
    };
    let message = match (&result.message.text, &result.message.markdown, &result.message.id) {
        (Some(t), _, _) if !t.trim().is_empty() => t.clone(),
        (_, Some(m), _) if !m.trim().is_empty() => m.clone(),
        (_, _, Some(id)) => return Err(format!("the message is given only by id (`{id}`); replay reads `message.text`")),
        _ => return Err("`message.text` is empty".into()),
    };
    let suggestion = result.fixes.first().and_then(|f| f.description.as_ref()).and_then(|d| d.text.clone());
    let physical = result.locations.first().and_then(|l| l.physical_location.as_ref());
    let (mut problem, mut file) = (None, String::new());
    if let Some(uri) = physical.and_then(|p| p.artifact_location.as_ref()) {
        let (path, p) = artifact_path(run, uri)?;
        file = path;
        problem = p;
    }
    let region = physical.and_then(|p| p.region.as_ref());
    let line = region.and_then(|r| r.start_line).unwrap_or(0);
    let end_line = region.and_then(|r| r.end_line);
    if line == 0 && region.is_some_and(|r| r.end_line.is_some()) {
        return Err("`region.endLine` without `startLine`".into());
    }
    if let (true, Some(end)) = (line > 0, end_line) {
        if end < line {
            return Err(format!("`region.endLine` {end} is before `startLine` {line}"));
        }
    }
    if file.is_empty() && line > 0 {
        return Err("a `region` without an `artifactLocation.uri`".into());
    }
    out.findings.push(finding(file, line, end_line, message, severity, category, suggestion));
    Ok(problem)
}

/// The rule a result names, by index or by id.
fn rule_of<'r>(run: &'r Run, result: &SarifResult) -> Option<&'r Rule> {
    let rules = &run.tool.driver.rules;
    let index = result.rule_index.or_else(|| result.rule.as_ref().and_then(|r| r.index));
    if let Some(rule) = index.and_then(|i| rules.get(i)) {
        return Some(rule);
    }
    let id = result.rule_id.as_deref().or_else(|| result.rule.as_ref().and_then(|r| r.id.as_deref()))?;
    rules.iter().find(|r| r.id.as_deref() == Some(id))
}

/// A repository-relative path from an artifact location: `uriBaseId`-relative URIs as they
/// are, `file://` URIs under one of the run's `originalUriBaseIds` made relative to it; an
/// absolute path under none is kept, with a schema problem saying it cannot match the diff.
fn artifact_path(run: &Run, location: &ArtifactLocation) -> Result<(String, Option<String>), String> {
    let Some(uri) = location.uri.as_deref().filter(|u| !u.is_empty()) else {
        return Ok((String::new(), None));
    };
    let decoded = percent_decode(uri).ok_or_else(|| format!("`artifactLocation.uri` `{uri}` has a bad %-escape"))?;
    let path = decoded.strip_prefix("file://").unwrap_or(&decoded).to_string();
    if !path.starts_with('/') {
        if decoded.contains("://") {
            return Err(format!("`artifactLocation.uri` `{uri}` is not a file path"));
        }
        return Ok((path.trim_start_matches("./").to_string(), None));
    }
    let bases = run.original_uri_base_ids.values().filter_map(|b| b.uri.as_deref()).filter_map(percent_decode);
    for base in bases {
        let base = base.strip_prefix("file://").unwrap_or(&base).trim_end_matches('/').to_string();
        if let Some(rest) = path.strip_prefix(&format!("{base}/")) {
            return Ok((rest.to_string(), None));
        }
    }
    let problem = format!(
        "`artifactLocation.uri` `{uri}` is absolute and under none of the run's `originalUriBaseIds`: it cannot match the diff's repository-relative paths"
    );
    Ok((path, Some(problem)))
}

/// `%XX` escapes decoded; `None` when one is malformed or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
