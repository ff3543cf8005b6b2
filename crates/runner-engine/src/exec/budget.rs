//! The cost budget of one execution (`runner exec --max-cost`): tokens or seconds. Reviews
//! and the scoring stages' model calls (judges, claims, embeddings) are counted as they
//! finish; once the incurred cost of both reaches the budget no new review or scoring call
//! starts, so at most the ones already in flight overshoot it. Cached runs and calls incur
//! nothing: a cached run's recorded cost is what the cache saved.

use crate::reviewer::Cost;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A limit on what one execution may spend on reviews it actually runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "unit", content = "limit", rename_all = "snake_case")]
pub enum Budget {
    /// Prompt plus completion tokens, as the reviewers report them.
    Tokens(u64),
    /// Review and scoring-call time as runner measures it, summed over runs and calls (not the
    /// execution's elapsed time).
    Seconds(f64),
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tokens(n) => write!(f, "{n} tokens"),
            Self::Seconds(s) => write!(f, "{s} s"),
        }
    }
}

/// What `--max-cost` accepts, for error messages.
pub(crate) const BUDGET_SYNTAX: &str = "a token count (`50000tokens`, `50k-tokens`, `2M tokens`) or review seconds (`600s`, `10m`, `1.5h`), greater than zero";

impl std::str::FromStr for Budget {
    type Err = String;

    /// `50000tokens`, `50k-tokens`, `50k tokens`, `2Mtokens` (`token` too); `600s`, `10m`, `1.5h`.
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let bad = || format!("`--max-cost` must be {BUDGET_SYNTAX}, not `{text}`");
        let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
        let (number, unit) = t.split_at(split);
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit = unit.trim();
        let (multiplier, rest) = match unit.chars().next() {
            Some('k') | Some('K') if unit.len() > 1 => (1e3, &unit[1..]),
            Some('M') if unit.len() > 1 => (1e6, &unit[1..]),
            _ => (1.0, unit),
        };
        let rest = rest.trim_start_matches(['-', ' ']);
        let budget = match (multiplier, rest) {
            (_, "tokens" | "token") => {
                let n = value * multiplier;
                if n.fract() != 0.0 || n > u64::MAX as f64 {
                    return Err(bad());
                }
                Budget::Tokens(n as u64)
            }
            (1.0, "s") => Budget::Seconds(value),
            (1.0, "m") => Budget::Seconds(value * 60.0),
            (1.0, "h") => Budget::Seconds(value * 3600.0),
            _ => return Err(bad()),
        };
        match budget {
            Budget::Tokens(0) => Err(bad()),
            Budget::Seconds(s) if !(s > 0.0 && s.is_finite()) => Err(bad()),
            b => Ok(b),
        }
    }
}

/// Tokens and review milliseconds, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Spent {
    pub tokens: u64,
    pub review_ms: u64,
    /// Runs counted.
    pub runs: usize,
}

impl Spent {
    /// A run's recorded cost: prompt + completion tokens (none reported: 0) and its wall time.
    pub fn add_cost(&mut self, cost: &Cost) {
        self.tokens += cost.prompt_tokens.unwrap_or(0) + cost.completion_tokens.unwrap_or(0);
        self.review_ms += cost.wall_ms;
        self.runs += 1;
    }

    /// Whether this much spending has reached `budget`.
    pub fn reaches(&self, budget: &Budget) -> bool {
        reached(budget, self.tokens, self.review_ms)
    }
}

fn reached(budget: &Budget, tokens: u64, ms: u64) -> bool {
    match *budget {
        Budget::Tokens(n) => tokens >= n,
        Budget::Seconds(s) => ms as f64 >= s * 1000.0,
    }
}

/// What the scoring calls of one stage spent: tokens (prompt + completion, as the servers
/// report them) and milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CallsSpent {
    pub tokens: u64,
    pub ms: u64,
    /// Calls counted.
    pub calls: usize,
}

/// What one scoring call spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCost {
    pub tokens: u64,
    pub ms: u64,
}

/// What one execution spent and what the cache saved it, with the budget it ran under.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CostReport {
    pub budget: Option<Budget>,
    /// Reviews this execution ran (failed ones count their wall time).
    pub incurred: Spent,
    /// The recorded cost of the runs the cache served.
    pub saved: Spent,
    /// Runs not started because the budget was reached.
    pub unrun: usize,
    /// Scoring calls this execution ran, per stage (`judge`, `claims`, `embed`), apart from
    /// the reviews; they count against the budget too.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub scoring: BTreeMap<String, CallsSpent>,
    /// Scoring calls not started because the budget was reached.
    #[serde(skip_serializing_if = "is_zero")]
    pub unrun_calls: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CostReport {
    /// Tokens and milliseconds of reviews and scoring calls together, as the budget counts them.
    pub fn total(&self) -> (u64, u64) {
        self.scoring.values().fold((self.incurred.tokens, self.incurred.review_ms), |(t, ms), c| (t + c.tokens, ms + c.ms))
    }
}

#[derive(Debug, Default)]
struct Ledger {
    reviews: Spent,
    calls: BTreeMap<String, CallsSpent>,
    unrun_calls: usize,
}

/// The incurred cost, shared by the reviews and scoring calls of one execution.
#[derive(Debug, Default)]
pub(super) struct Meter {
    pub budget: Option<Budget>,
    spent: Mutex<Ledger>,
}

impl Meter {
    pub(super) fn new(budget: Option<Budget>) -> Self {
        Self { budget, spent: Mutex::new(Ledger::default()) }
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a new review or scoring call may start: no budget, or what reviews and calls
    /// incurred together is still below it.
    pub(super) fn may_start(&self) -> bool {
        let Some(budget) = self.budget else { return true };
        let l = self.ledger();
        let (tokens, ms) = l.calls.values().fold((l.reviews.tokens, l.reviews.review_ms), |(t, ms), c| (t + c.tokens, ms + c.ms));
        !reached(&budget, tokens, ms)
    }

    pub(super) fn add(&self, cost: &Cost) {
        self.ledger().reviews.add_cost(cost);
    }

    /// Counts a scoring call of `stage` that ran (or failed after running).
    pub(super) fn add_call(&self, stage: &str, cost: CallCost) {
        let mut l = self.ledger();
        let entry = l.calls.entry(stage.to_string()).or_default();
        entry.tokens += cost.tokens;
        entry.ms += cost.ms;
        entry.calls += 1;
    }

    /// Counts a scoring call the budget kept from starting.
    pub(super) fn refuse_call(&self) {
        self.ledger().unrun_calls += 1;
    }

    /// The report of what reviews and calls incurred, with `saved` and `unrun` filled in.
    pub(super) fn report(&self, saved: Spent, unrun: usize) -> CostReport {
        let l = self.ledger();
        CostReport { budget: self.budget, incurred: l.reviews, saved, unrun, scoring: l.calls.clone(), unrun_calls: l.unrun_calls }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_tokens_and_seconds() {
        let ok = |s: &str| s.parse::<Budget>().unwrap_or_else(|e| panic!("{s}: {e}"));
        assert_eq!(ok("50000tokens"), Budget::Tokens(50_000));
        assert_eq!(ok("50k-tokens"), Budget::Tokens(50_000));
        assert_eq!(ok("50k tokens"), Budget::Tokens(50_000));
        assert_eq!(ok("1.5ktokens"), Budget::Tokens(1_500));
        assert_eq!(ok("2M-tokens"), Budget::Tokens(2_000_000));
        assert_eq!(ok("1token"), Budget::Tokens(1));
        assert_eq!(ok("600s"), Budget::Seconds(600.0));
        assert_eq!(ok("10m"), Budget::Seconds(600.0));
        assert_eq!(ok("1.5h"), Budget::Seconds(5400.0));
        assert_eq!(ok("0.5s"), Budget::Seconds(0.5));
        for bad in ["", "600", "tokens", "0tokens", "0s", "1.5tokens", "10x", "5ks", "-3s", "3 seconds", "k-tokens"] {
            let e = bad.parse::<Budget>().expect_err(bad);
            assert!(e.contains("--max-cost") && e.contains("50k-tokens") && e.contains("600s"), "{e}");
        }
    }

    #[test]
    fn spending_reaches_a_budget_at_its_limit() {
        let mut spent = Spent::default();
        spent.add_cost(&Cost { wall_ms: 1500, prompt_tokens: Some(70), completion_tokens: Some(30), ..Cost::default() });
        assert_eq!(spent, Spent { tokens: 100, review_ms: 1500, runs: 1 });
        assert!(spent.reaches(&Budget::Tokens(100)) && !spent.reaches(&Budget::Tokens(101)));
        assert!(spent.reaches(&Budget::Seconds(1.5)) && !spent.reaches(&Budget::Seconds(1.6)));
        spent.add_cost(&Cost { wall_ms: 10, ..Cost::default() });
        assert_eq!(spent.tokens, 100, "a run without token counts adds none");
        let meter = Meter::new(Some(Budget::Tokens(100)));
        assert!(meter.may_start());
        meter.add(&Cost { prompt_tokens: Some(100), ..Cost::default() });
        assert!(!meter.may_start());
        assert!(Meter::new(None).may_start());
    }

    #[test]
    fn scoring_calls_count_against_the_budget_and_are_reported_apart() {
        let meter = Meter::new(Some(Budget::Tokens(1_000)));
        meter.add(&Cost { wall_ms: 100, prompt_tokens: Some(400), ..Cost::default() });
        meter.add_call("judge", CallCost { tokens: 300, ms: 50 });
        assert!(meter.may_start(), "700 of 1000 tokens");
        meter.add_call("judge", CallCost { tokens: 200, ms: 50 });
        meter.add_call("embed", CallCost { tokens: 100, ms: 10 });
        assert!(!meter.may_start(), "reviews and calls together reach the budget");
        meter.refuse_call();
        let report = meter.report(Spent::default(), 2);
        assert_eq!(report.incurred, Spent { tokens: 400, review_ms: 100, runs: 1 });
        assert_eq!(report.scoring["judge"], CallsSpent { tokens: 500, ms: 100, calls: 2 });
        assert_eq!(report.scoring["embed"], CallsSpent { tokens: 100, ms: 10, calls: 1 });
        assert_eq!((report.unrun, report.unrun_calls, report.total()), (2, 1, (1_000, 210)));
        let json = serde_json::to_value(&report).expect("json");
        assert_eq!(json["scoring"]["judge"], serde_json::json!({"tokens": 500, "ms": 100, "calls": 2}));
        let seconds = Meter::new(Some(Budget::Seconds(0.1)));
        seconds.add_call("claims", CallCost { tokens: 0, ms: 100 });
        assert!(!seconds.may_start(), "call time counts against a budget in seconds");
        let plain = serde_json::to_value(Meter::new(None).report(Spent::default(), 0)).expect("json");
        assert!(plain.get("scoring").is_none() && plain.get("unrun_calls").is_none(), "no scoring, no new keys: {plain}");
    }
}
