//! H9 on a hand-made log and survey: means, counterbalancing and preference counts by hand;
//! every mistake of a bad log located.

use super::*;

const LOG: &str = "# A hand-made test log.\nuser,model,date,findings,dismissals,fixes_applied,minutes\n\
ann,a,2026-11-02,10,2,5,30\nann,b,2026-11-09,8,4,2,20\nbob,b,2026-11-02,6,3,1,15\nbob,a,2026-11-09,4,0,3,25\ncy,a,2026-11-03,0,0,0,5\n";
const SURVEY: &str = "user,preferred,reason\nann,a,fewer dismissals\nbob,none,\ndan,b,never logged\n";

#[test]
fn means_counterbalancing_and_preferences_by_hand() {
    let r = study("log.csv", LOG.as_bytes(), "survey.csv", SURVEY.as_bytes(), 1000, 7).expect("reads");
    assert_eq!(r.notes, ["A hand-made test log."]);
    assert_eq!((r.sessions, r.users), (5, 3));
    let [a, b] = &r.models[..] else { panic!("two models: {:?}", r.models) };
    let m = |s: &ModelSummary, k: &str| s.means[k].mean.expect("a mean");
    // a: ann 10/2/5/30, bob 4/0/3/25, cy 0/0/0/5 → findings 14/3, dismissals 2/3, fixes 8/3,
    // minutes 20; actionability over ann 0.8 and bob 1.0 (cy had no findings) → 0.9.
    assert_eq!((a.model.as_str(), a.sessions, a.users), ("a", 3, 3));
    assert!((m(a, "findings") - 14.0 / 3.0).abs() < 1e-12 && (m(a, "dismissals") - 2.0 / 3.0).abs() < 1e-12);
    assert!((m(a, "fixes_applied") - 8.0 / 3.0).abs() < 1e-12 && (m(a, "minutes") - 20.0).abs() < 1e-12);
    assert!((m(a, "actionability") - 0.9).abs() < 1e-12);
    assert_eq!(a.means["actionability"].n, 2);
    // b: ann 8/4/2/20, bob 6/3/1/15 → 7, 3.5, 1.5, 17.5; actionability 0.5 and 0.5.
    assert_eq!((m(b, "findings"), m(b, "dismissals"), m(b, "fixes_applied"), m(b, "minutes"), m(b, "actionability")), (7.0, 3.5, 1.5, 17.5, 0.5));
    let flat = b.means["actionability"].interval.expect("an interval");
    assert_eq!((flat.low, flat.high), (0.5, 0.5), "every session the same: a zero-width interval");
    let i = a.means["minutes"].interval.expect("an interval");
    assert!(i.low <= 20.0 && 20.0 <= i.high && i.low >= 5.0 && i.high <= 30.0, "{i:?}");
    assert_eq!(study("log.csv", LOG.as_bytes(), "survey.csv", SURVEY.as_bytes(), 1000, 7).expect("reads"), r, "seeded");
    // ann had a first, bob b, cy a (and never b): not balanced.
    let c = &r.counterbalance;
    assert_eq!((c.first["a"].clone(), c.first["b"].clone()), (vec!["ann".to_string(), "cy".to_string()], vec!["bob".to_string()]));
    assert_eq!((c.incomplete.clone(), c.balanced), (vec!["cy".to_string()], false));
    // ann prefers a, bob none; dan is not in the log; cy did not answer.
    let p = &r.preferences;
    assert_eq!((p.counts["a"], p.counts["b"], p.counts["none"]), (1, 0, 1));
    assert_eq!((p.unanswered.clone(), p.not_in_log.clone()), (vec!["cy".to_string()], vec!["dan".to_string()]));
    let md = r.to_markdown();
    assert!(md.contains("> A hand-made test log."), "{md}");
    assert!(md.contains("| b | 2 | 2 | 7.00 ["), "{md}");
    assert!(md.contains("| a | 2 (ann, cy) |"), "{md}");
    assert!(md.contains("Counterbalancing (the model of each user's first session): **not balanced**."), "{md}");
}

#[test]
fn a_balanced_design_and_a_first_day_with_two_models() {
    let log = "user,model,date,findings,dismissals,fixes_applied,minutes\nann,a,2026-11-02,1,0,0,1\nann,b,2026-11-03,1,0,0,1\nbob,b,2026-11-02,1,0,0,1\nbob,a,2026-11-03,1,0,0,1\n";
    let r = study("l", log.as_bytes(), "s", b"user,preferred,reason\n", 10, 1).expect("reads");
    assert!(r.counterbalance.balanced, "{:?}", r.counterbalance);
    let log = "user,model,date,findings,dismissals,fixes_applied,minutes\nann,a,2026-11-02,1,0,0,1\nann,b,2026-11-02,1,0,0,1\n";
    let r = study("l", log.as_bytes(), "s", b"user,preferred,reason\n", 10, 1).expect("reads");
    assert_eq!((r.counterbalance.ambiguous.clone(), r.counterbalance.balanced), (vec!["ann".to_string()], false));
}

#[test]
fn every_mistake_is_located() {
    let log = "# comment\nuser,model,date,findings,dismissals,fixes_applied,minutes\n\
ann,a,2026-13-02,10,2,5,30\n\
ann,b,2026-11-09,eight,4,2,20\n\
bob,,2026-11-02,6,7,1,15\n\
bob,a,2026-11-09,4,0,3,-1\n\
cy,a,2026-11-03,3,0\n";
    let survey = "user,preferred,reason,extra\nann,c,x,y\n";
    let Err(problems) = study("log.csv", log.as_bytes(), "survey.csv", survey.as_bytes(), 10, 1) else { panic!("refused") };
    assert_eq!(
        problems,
        [
            "log.csv:3: column `date`: `2026-13-02` is not a date YYYY-MM-DD",
            "log.csv:4: column `findings`: `eight` is not a whole number ≥ 0",
            "log.csv:5: column `model`: empty",
            "log.csv:6: column `minutes`: `-1` is not a number of minutes ≥ 0",
            "log.csv:7: 5 fields where the header has 7",
            "survey.csv:1: unknown column `extra`; the columns are user, preferred, reason",
            "survey.csv:2: column `preferred`: `c` is not a model of the session log (`a`, `b`) or `none`",
        ]
    );
    // Dismissals above the findings, and an answer naming no model of the log.
    let log = "user,model,date,findings,dismissals,fixes_applied,minutes\nbob,a,2026-11-02,6,7,1,15\nann,a,2026-11-02,6,1,1,15\n";
    let Err(problems) = study("log.csv", log.as_bytes(), "survey.csv", b"user,preferred,reason\nann,c,x\nann,a,y\n", 10, 1) else { panic!("refused") };
    assert_eq!(
        problems,
        [
            "log.csv:2: column `dismissals`: 7 is more than the session's 6 findings",
            "survey.csv:2: column `preferred`: `c` is not a model of the session log (`a`) or `none`",
            "survey.csv:3: column `user`: `ann` answered twice (first on line 2)",
        ]
    );
}
