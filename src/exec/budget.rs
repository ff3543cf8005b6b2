//! The cost budget of one execution (`runner exec --max-cost`): tokens or review seconds.
//! Reviews are counted as they finish; once the incurred cost reaches the budget no new
//! review starts, so at most the reviews already in flight overshoot it. Cached runs incur
//! nothing: their recorded cost is what the cache saved.

use crate::reviewer::Cost;
use serde::Serialize;
use std::sync::Mutex;

/// A limit on what one execution may spend on reviews it actually runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "unit", content = "limit", rename_all = "snake_case")]
pub enum Budget {
    /// Prompt plus completion tokens, as the reviewers report them.
    Tokens(u64),
    /// Review wall time as runner measures it, summed over runs (not the execution's elapsed time).
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
pub const BUDGET_SYNTAX: &str = "a token count (`50000tokens`, `50k-tokens`, `2M tokens`) or review seconds (`600s`, `10m`, `1.5h`), greater than zero";

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
        match *budget {
            Budget::Tokens(n) => self.tokens >= n,
            Budget::Seconds(s) => self.review_ms as f64 >= s * 1000.0,
        }
    }
}

/// What one execution spent and what the cache saved it, with the budget it ran under.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CostReport {
    pub budget: Option<Budget>,
    /// Reviews this execution ran (failed ones count their wall time).
    pub incurred: Spent,
    /// The recorded cost of the runs the cache served.
    pub saved: Spent,
    /// Runs not started because the budget was reached.
    pub unrun: usize,
}

/// The incurred cost, shared by the reviews of one execution.
#[derive(Debug, Default)]
pub(super) struct Meter {
    pub budget: Option<Budget>,
    spent: Mutex<Spent>,
}

impl Meter {
    pub(super) fn new(budget: Option<Budget>) -> Self {
        Self { budget, spent: Mutex::new(Spent::default()) }
    }

    /// Whether a new review may start: no budget, or the incurred cost is still below it.
    pub(super) fn may_start(&self) -> bool {
        self.budget.is_none_or(|b| !self.spent().reaches(&b))
    }

    pub(super) fn add(&self, cost: &Cost) {
        self.spent.lock().unwrap_or_else(|p| p.into_inner()).add_cost(cost);
    }

    pub(super) fn spent(&self) -> Spent {
        *self.spent.lock().unwrap_or_else(|p| p.into_inner())
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
}
