//! Seed 000's H9 preference A/B: developers use two (or more) models in turn and log each
//! session; at the end they say which they preferred. From the session log and the survey:
//! per model the mean findings, dismissals, fixes applied, minutes and actionability per
//! session with 95 % bootstrap intervals (sessions resampled; seeded), the counterbalancing
//! check (which model each user had first), and the preference counts.
//!
//! Session log, CSV: `user,model,date,findings,dismissals,fixes_applied,minutes` (date
//! `YYYY-MM-DD`; counts are whole numbers, dismissals and fixes at most the findings; minutes
//! a number ≥ 0). Survey, CSV: `user,preferred,reason` (`preferred` a model of the log or
//! `none`). Lines starting with `#` are comments; those before either header are repeated at
//! the top of the result, so a file that says what it is (a format example, say) keeps saying it.
//! Every problem is reported at once, with its line and column.

use crate::stats::{bootstrap_mean_interval, mean, Interval, IntervalMethod};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

pub const SESSION_COLUMNS: [&str; 7] = ["user", "model", "date", "findings", "dismissals", "fixes_applied", "minutes"];
pub const SURVEY_COLUMNS: [&str; 3] = ["user", "preferred", "reason"];
/// The survey's answer for no preference.
pub const NO_PREFERENCE: &str = "none";
/// The per-session measures, in the report's order.
pub const MEASURES: [&str; 5] = ["findings", "dismissals", "fixes_applied", "minutes", "actionability"];
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// One logged session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    pub line: u64,
    pub user: String,
    pub model: String,
    pub date: String,
    pub findings: u64,
    pub dismissals: u64,
    pub fixes_applied: u64,
    pub minutes: f64,
}

impl Session {
    /// 1 − dismissals / findings; none for a session without findings.
    pub fn actionability(&self) -> Option<f64> {
        (self.findings > 0).then(|| 1.0 - self.dismissals as f64 / self.findings as f64)
    }
    fn measure(&self, name: &str) -> Option<f64> {
        match name {
            "findings" => Some(self.findings as f64),
            "dismissals" => Some(self.dismissals as f64),
            "fixes_applied" => Some(self.fixes_applied as f64),
            "minutes" => Some(self.minutes),
            _ => self.actionability(),
        }
    }
}

/// One survey answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    pub line: u64,
    pub user: String,
    pub preferred: String,
    pub reason: String,
}

/// A row: its line and its column → value map, or what is wrong with its shape.
type RawRow = (u64, Result<BTreeMap<String, String>, String>);

/// A CSV's rows in order, its leading `#` lines; header problems go to `problems`.
fn rows(label: &str, bytes: &[u8], columns: &[&str], problems: &mut Vec<String>) -> (Vec<RawRow>, Vec<String>) {
    let text = String::from_utf8_lossy(bytes);
    let comments: Vec<String> =
        text.lines().take_while(|l| l.trim_start().starts_with('#')).map(|l| l.trim_start().trim_start_matches('#').trim().to_string()).collect();
    let mut reader = csv::ReaderBuilder::new().comment(Some(b'#')).flexible(true).from_reader(bytes);
    let header: Vec<String> = match reader.headers() {
        Ok(h) => h.iter().map(|c| c.trim().to_string()).collect(),
        Err(e) => {
            problems.push(format!("{label}: cannot read the header: {e}"));
            return (Vec::new(), comments);
        }
    };
    let header_line = comments.len() as u64 + 1;
    for h in &header {
        if !columns.contains(&h.as_str()) {
            problems.push(format!("{label}:{header_line}: unknown column `{h}`; the columns are {}", columns.join(", ")));
        }
    }
    let missing: Vec<&&str> = columns.iter().filter(|c| !header.iter().any(|h| h == *c)).collect();
    for c in &missing {
        problems.push(format!("{label}:{header_line}: the header lacks column `{c}`"));
    }
    if !missing.is_empty() {
        return (Vec::new(), comments);
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                out.push((line, Err(format!("{label}:{line}: cannot read the row: {e}"))));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != header.len() {
            out.push((line, Err(format!("{label}:{line}: {} fields where the header has {}", record.len(), header.len()))));
            continue;
        }
        out.push((line, Ok(header.iter().cloned().zip(record.iter().map(|v| v.trim().to_string())).collect())));
    }
    (out, comments)
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r.clone()).is_some_and(|x| x.iter().all(u8::is_ascii_digit));
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) || !digits(5..7) || !digits(8..10) {
        return false;
    }
    let (m, d): (u32, u32) = (s[5..7].parse().unwrap_or(0), s[8..10].parse().unwrap_or(0));
    (1..=12).contains(&m) && (1..=31).contains(&d)
}

/// Reads a session log: the sessions that pass every check, the leading comments and the
/// models any row names; every problem is appended to `problems`.
pub fn read_sessions(label: &str, bytes: &[u8], problems: &mut Vec<String>) -> (Vec<Session>, Vec<String>, BTreeSet<String>) {
    let (rows, comments) = rows(label, bytes, &SESSION_COLUMNS, problems);
    let mut out = Vec::new();
    let mut named = BTreeSet::new();
    for (line, v) in rows {
        let v = match v {
            Ok(v) => v,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if !v["model"].is_empty() {
            named.insert(v["model"].clone());
        }
        let at = |c: &str, m: String| format!("{label}:{line}: column `{c}`: {m}");
        let before = problems.len();
        for c in ["user", "model"] {
            if v[c].is_empty() {
                problems.push(at(c, "empty".into()));
            }
        }
        if !is_date(&v["date"]) {
            problems.push(at("date", format!("`{}` is not a date YYYY-MM-DD", v["date"])));
        }
        let mut count = |c: &str| match v[c].parse::<u64>() {
            Ok(n) => n,
            Err(_) => {
                problems.push(at(c, format!("`{}` is not a whole number ≥ 0", v[c])));
                0
            }
        };
        let (findings, dismissals, fixes_applied) = (count("findings"), count("dismissals"), count("fixes_applied"));
        let minutes = match v["minutes"].parse::<f64>() {
            Ok(m) if m.is_finite() && m >= 0.0 => m,
            _ => {
                problems.push(at("minutes", format!("`{}` is not a number of minutes ≥ 0", v["minutes"])));
                0.0
            }
        };
        if problems.len() == before {
            for (c, n) in [("dismissals", dismissals), ("fixes_applied", fixes_applied)] {
                if n > findings {
                    problems.push(at(c, format!("{n} is more than the session's {findings} findings")));
                }
            }
        }
        if problems.len() == before {
            out.push(Session {
                line,
                user: v["user"].clone(),
                model: v["model"].clone(),
                date: v["date"].clone(),
                findings,
                dismissals,
                fixes_applied,
                minutes,
            });
        }
    }
    (out, comments, named)
}

/// Reads a survey against the models of the log; every problem is appended to `problems`.
pub fn read_survey(label: &str, bytes: &[u8], models: &BTreeSet<String>, problems: &mut Vec<String>) -> (Vec<Answer>, Vec<String>) {
    let (rows, comments) = rows(label, bytes, &SURVEY_COLUMNS, problems);
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    let mut out = Vec::new();
    for (line, v) in rows {
        let v = match v {
            Ok(v) => v,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let at = |c: &str, m: String| format!("{label}:{line}: column `{c}`: {m}");
        let user = v["user"].clone();
        if user.is_empty() {
            problems.push(at("user", "empty".into()));
            continue;
        }
        if let Some(first) = seen.insert(user.clone(), line) {
            problems.push(at("user", format!("`{user}` answered twice (first on line {first})")));
            continue;
        }
        let preferred = v["preferred"].clone();
        if preferred != NO_PREFERENCE && !models.contains(&preferred) {
            let known: Vec<String> = models.iter().map(|m| format!("`{m}`")).collect();
            problems.push(at("preferred", format!("`{preferred}` is not a model of the session log ({}) or `{NO_PREFERENCE}`", known.join(", "))));
            continue;
        }
        out.push(Answer { line, user, preferred, reason: v["reason"].clone() });
    }
    (out, comments)
}

/// A mean with its bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mean {
    pub n: usize,
    pub mean: Option<f64>,
    pub interval: Option<Interval>,
}

/// One model's sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelSummary {
    pub model: String,
    pub sessions: usize,
    pub users: usize,
    /// Measure → its mean per session (actionability over sessions with findings).
    pub means: BTreeMap<String, Mean>,
}

/// Which model each user had first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Counterbalance {
    /// Model → the users whose first session used it.
    pub first: BTreeMap<String, Vec<String>>,
    /// Users whose first day had sessions with two models (no first model).
    pub ambiguous: Vec<String>,
    /// Users who used fewer models than the log holds.
    pub incomplete: Vec<String>,
    /// Every model was first for as many users as every other, ±1, and no user is ambiguous or incomplete.
    pub balanced: bool,
}

/// The survey's counts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Preferences {
    /// Model (or `none`) → users.
    pub counts: BTreeMap<String, u64>,
    /// Users of the log with no answer.
    pub unanswered: Vec<String>,
    /// Answers from users not in the log.
    pub not_in_log: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct H9Result {
    pub notes: Vec<String>,
    pub sessions: usize,
    pub users: usize,
    pub models: Vec<ModelSummary>,
    pub counterbalance: Counterbalance,
    pub preferences: Preferences,
    pub resamples: usize,
    pub seed: u64,
}

/// The analysis of checked sessions and answers.
pub fn analyse(sessions: &[Session], answers: &[Answer], notes: Vec<String>, resamples: usize, seed: u64) -> H9Result {
    let models: BTreeSet<String> = sessions.iter().map(|s| s.model.clone()).collect();
    let users: BTreeSet<String> = sessions.iter().map(|s| s.user.clone()).collect();
    let summaries = models
        .iter()
        .map(|m| {
            let own: Vec<&Session> = sessions.iter().filter(|s| &s.model == m).collect();
            let means = MEASURES
                .iter()
                .map(|name| {
                    let xs: Vec<f64> = own.iter().filter_map(|s| s.measure(name)).collect();
                    let interval = bootstrap_mean_interval(&xs, resamples, seed, 0.95, IntervalMethod::Percentile);
                    (name.to_string(), Mean { n: xs.len(), mean: mean(&xs), interval })
                })
                .collect();
            ModelSummary { model: m.clone(), sessions: own.len(), users: own.iter().map(|s| &s.user).collect::<BTreeSet<_>>().len(), means }
        })
        .collect();
    let mut first: BTreeMap<String, Vec<String>> = models.iter().map(|m| (m.clone(), Vec::new())).collect();
    let (mut ambiguous, mut incomplete) = (Vec::new(), Vec::new());
    for u in &users {
        let own: Vec<&Session> = sessions.iter().filter(|s| &s.user == u).collect();
        if own.iter().map(|s| &s.model).collect::<BTreeSet<_>>().len() < models.len() {
            incomplete.push(u.clone());
        }
        let Some(day) = own.iter().map(|s| s.date.as_str()).min() else { continue };
        let on_day: BTreeSet<&String> = own.iter().filter(|s| s.date == day).map(|s| &s.model).collect();
        match on_day.into_iter().collect::<Vec<_>>()[..] {
            [m] => first.entry(m.clone()).or_default().push(u.clone()),
            _ => ambiguous.push(u.clone()),
        }
    }
    let sizes: Vec<usize> = first.values().map(Vec::len).collect();
    let spread = sizes.iter().max().unwrap_or(&0) - sizes.iter().min().unwrap_or(&0);
    let balanced = spread <= 1 && ambiguous.is_empty() && incomplete.is_empty();
    let mut counts: BTreeMap<String, u64> = models.iter().map(|m| (m.clone(), 0)).collect();
    counts.insert(NO_PREFERENCE.into(), 0);
    for a in answers.iter().filter(|a| users.contains(&a.user)) {
        *counts.entry(a.preferred.clone()).or_default() += 1;
    }
    let answered: BTreeSet<&String> = answers.iter().map(|a| &a.user).collect();
    let preferences = Preferences {
        counts,
        unanswered: users.iter().filter(|u| !answered.contains(u)).cloned().collect(),
        not_in_log: answers.iter().filter(|a| !users.contains(&a.user)).map(|a| a.user.clone()).collect(),
    };
    H9Result {
        notes,
        sessions: sessions.len(),
        users: users.len(),
        models: summaries,
        counterbalance: Counterbalance { first, ambiguous, incomplete, balanced },
        preferences,
        resamples,
        seed,
    }
}

/// Reads and checks both files and analyses them; `Err` lists every problem.
pub fn study(sessions_label: &str, sessions: &[u8], survey_label: &str, survey: &[u8], resamples: usize, seed: u64) -> Result<H9Result, Vec<String>> {
    let mut problems = Vec::new();
    let (log, mut notes, models) = read_sessions(sessions_label, sessions, &mut problems);
    let (answers, more) = read_survey(survey_label, survey, &models, &mut problems);
    notes.extend(more);
    if log.is_empty() && problems.is_empty() {
        problems.push(format!("{sessions_label}: no sessions"));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(analyse(&log, &answers, notes, resamples, seed))
}

fn num(x: Option<f64>, digits: usize) -> String {
    x.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "–".into())
}

impl H9Result {
    pub fn to_markdown(&self) -> String {
        let mut s = String::from("# H9 preference A/B\n\n");
        for n in &self.notes {
            let _ = writeln!(s, "> {n}");
        }
        if !self.notes.is_empty() {
            s.push('\n');
        }
        let _ = writeln!(
            s,
            "{} sessions of {} users. Means per session with 95 % bootstrap intervals (percentile, {} resamples of the sessions, seed {}); actionability = 1 − dismissals / findings over sessions with findings.\n",
            self.sessions, self.users, self.resamples, self.seed
        );
        let _ = writeln!(s, "| model | sessions | users | {} |", MEASURES.join(" | "));
        let _ = writeln!(s, "|---|---:|---:|{}", "---|".repeat(MEASURES.len()));
        for m in &self.models {
            let cells: Vec<String> = MEASURES
                .iter()
                .map(|name| match m.means.get(*name) {
                    Some(x) => match x.interval {
                        Some(i) => format!("{} [{}, {}]", num(x.mean, 2), num(Some(i.low), 2), num(Some(i.high), 2)),
                        None => num(x.mean, 2),
                    },
                    None => "–".into(),
                })
                .collect();
            let _ = writeln!(s, "| {} | {} | {} | {} |", m.model, m.sessions, m.users, cells.join(" | "));
        }
        let c = &self.counterbalance;
        let _ = writeln!(s, "\nCounterbalancing (the model of each user's first session): {}.\n", if c.balanced { "balanced" } else { "**not balanced**" });
        let _ = writeln!(s, "| first model | users |\n|---|---|");
        for (m, users) in &c.first {
            let _ = writeln!(s, "| {m} | {} ({}) |", users.len(), users.join(", "));
        }
        if !c.ambiguous.is_empty() {
            let _ = writeln!(s, "\nNo first model (two models on the first day): {}.", c.ambiguous.join(", "));
        }
        if !c.incomplete.is_empty() {
            let _ = writeln!(s, "\nUsed only some of the models: {}.", c.incomplete.join(", "));
        }
        let p = &self.preferences;
        let _ = writeln!(s, "\nPreferences (final survey):\n\n| preferred | users |\n|---|---:|");
        for (m, n) in &p.counts {
            let _ = writeln!(s, "| {m} | {n} |");
        }
        if !p.unanswered.is_empty() {
            let _ = writeln!(s, "\nNo answer from: {}.", p.unanswered.join(", "));
        }
        if !p.not_in_log.is_empty() {
            let _ = writeln!(s, "\nAnswers from users with no logged session (not counted): {}.", p.not_in_log.join(", "));
        }
        s
    }
}

#[cfg(test)]
mod tests;
