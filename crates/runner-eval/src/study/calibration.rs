//! Seed 000's H5 judge calibration: each LLM judge's verdicts against people's H1 labels on
//! the same findings — agreement, Cohen's κ, the confusion matrix and the accuracy per H1
//! label — and whether the judge may be used alone (agreement of at least 85 %).
//!
//! People's labels become judgements of the judges' own type ([`Judgement`], one per rubric),
//! so the two sides compare verdict for verdict. H1's label answers both rubrics:
//!
//! | H1 label | validity (is it a real problem of this change?) | actionability (does acting on it fix the problem?) |
//! |---|---|---|
//! | `actionable` | yes | yes |
//! | `wrong_suggestion` | yes | no |
//! | `false_positive` | no | no |
//! | `out_of_scope` | no | no |
//!
//! A finding whose raters tie gives no judgement; a judge's unparseable or absent answer is
//! counted apart, never as agreement or disagreement.

use crate::agreement::cohen_kappa;
use crate::judge::client::Tokens;
use crate::judge::rubric::{Judgement, Rubric, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// Agreement below this share means a judge may not be used alone (seed 000 H5).
pub(crate) const STANDS_ALONE: f64 = 0.85;

/// The verdict an H1 label gives on `rubric`; `None` for a tie or an unknown label.
pub(crate) fn h1_verdict(label: &str, rubric: Rubric) -> Option<Verdict> {
    let yes = match (label, rubric) {
        ("actionable", _) => true,
        ("wrong_suggestion", Rubric::Validity) => true,
        ("wrong_suggestion", Rubric::Actionability) | ("false_positive" | "out_of_scope", _) => false,
        _ => return None,
    };
    Some(if yes { Verdict::Yes } else { Verdict::No })
}

/// A person's H1 label as a judgement of the judges' type: the verdict the label gives on
/// `rubric`, the label as the raw answer, the note (or the label) as the reason; no model
/// call, so no attempts, tokens or seconds.
pub(crate) fn human_judgement(label: &str, note: &str, rubric: Rubric) -> Option<Judgement> {
    let verdict = h1_verdict(label, rubric)?;
    let reason = if note.trim().is_empty() { format!("H1 label `{label}`") } else { note.trim().to_string() };
    Some(Judgement { verdict, reason, attempts: 0, seed: 0, requests: 0, tokens: Tokens::default(), seconds: 0.0, raw: label.to_string() })
}

/// One finding both sides saw: the H1 label, the person's judgements and each judge's
/// verdicts (`None` where the judge gave no answer), per rubric.
#[derive(Debug, Clone)]
pub struct Compared {
    pub item: String,
    pub label: String,
    /// Per judge (jury order): [validity, actionability].
    pub judges: Vec<[Option<Verdict>; 2]>,
}

/// A judge's calibration on one rubric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RubricCalibration {
    pub rubric: Rubric,
    /// Findings with a human verdict and a judge's yes or no.
    pub items: usize,
    /// Findings with a human verdict where the judge's answer was unparseable or absent.
    pub undecided: usize,
    pub agreement: Option<f64>,
    pub kappa: Option<f64>,
    /// human verdict → judge verdict → count (`yes`/`no`).
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
    /// H1 label → (findings, the judge agreeing with the person).
    pub per_label: BTreeMap<String, (usize, usize)>,
    /// At least [`STANDS_ALONE`] agreement; `None` without items.
    pub stands_alone: Option<bool>,
}

/// One judge's calibration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct JudgeCalibration {
    pub judge: String,
    pub rubrics: Vec<RubricCalibration>,
}

/// Calibrates each judge (`names`, jury order) over `compared`.
pub(crate) fn calibrate(names: &[String], compared: &[Compared]) -> Vec<JudgeCalibration> {
    names
        .iter()
        .enumerate()
        .map(|(j, name)| JudgeCalibration {
            judge: name.clone(),
            rubrics: [Rubric::Validity, Rubric::Actionability]
                .into_iter()
                .enumerate()
                .map(|(r, rubric)| {
                    let mut human = Vec::new();
                    let mut judge = Vec::new();
                    let mut undecided = 0;
                    let mut per_label: BTreeMap<String, (usize, usize)> = BTreeMap::new();
                    let mut confusion: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
                    for c in compared {
                        let Some(h) = human_judgement(&c.label, "", rubric) else { continue };
                        match c.judges.get(j).and_then(|v| v[r]) {
                            Some(v @ (Verdict::Yes | Verdict::No)) => {
                                let entry = per_label.entry(c.label.clone()).or_default();
                                entry.0 += 1;
                                if v == h.verdict {
                                    entry.1 += 1;
                                }
                                *confusion.entry(h.verdict.as_str().into()).or_default().entry(v.as_str().into()).or_default() += 1;
                                human.push(h.verdict.as_str());
                                judge.push(v.as_str());
                            }
                            _ => undecided += 1,
                        }
                    }
                    let items = human.len();
                    let same = human.iter().zip(&judge).filter(|(a, b)| a == b).count();
                    let agreement = (items > 0).then(|| same as f64 / items as f64);
                    RubricCalibration {
                        rubric,
                        items,
                        undecided,
                        agreement,
                        kappa: cohen_kappa(&human, &judge).map(|k| k.kappa),
                        confusion,
                        per_label,
                        stands_alone: agreement.map(|a| a >= STANDS_ALONE),
                    }
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(item: &str, label: &str, judges: &[[Option<Verdict>; 2]]) -> Compared {
        Compared { item: item.into(), label: label.into(), judges: judges.to_vec() }
    }
    const Y: Option<Verdict> = Some(Verdict::Yes);
    const N: Option<Verdict> = Some(Verdict::No);
    const U: Option<Verdict> = Some(Verdict::Unparseable);

    #[test]
    fn people_become_judgements_of_the_judges_type() {
        let h = human_judgement("wrong_suggestion", " the fix is wrong ", Rubric::Validity).expect("a judgement");
        assert_eq!(
            (h.verdict, h.reason.as_str(), h.raw.as_str(), h.attempts, h.tokens),
            (Verdict::Yes, "the fix is wrong", "wrong_suggestion", 0, Tokens::default())
        );
        assert_eq!(human_judgement("wrong_suggestion", "", Rubric::Actionability).map(|j| j.verdict), Some(Verdict::No));
        assert_eq!(human_judgement("out_of_scope", "", Rubric::Validity).map(|j| j.reason), Some("H1 label `out_of_scope`".to_string()));
        assert_eq!(human_judgement("tied", "", Rubric::Validity), None);
        let json = serde_json::to_value(human_judgement("actionable", "", Rubric::Actionability).expect("a judgement")).expect("json");
        assert_eq!(json["verdict"], "yes");
    }

    #[test]
    fn agreement_kappa_confusion_and_accuracy_per_label_by_hand() {
        // Six findings; judge j1 (validity, actionability) and j2 (validity only, one unparseable).
        //            human V/A   j1 V/A   j2 V/A
        // S1 actionable       y/y      y/y      y/–
        // S2 actionable       y/y      y/n      n/–
        // S3 false_positive   n/n      y/y      n/–
        // S4 false_positive   n/n      n/n      n/–
        // S5 wrong_suggestion y/n      y/n      unparseable/–
        // S6 tied             (no human judgement)
        let compared = [
            c("S1", "actionable", &[[Y, Y], [Y, None]]),
            c("S2", "actionable", &[[Y, N], [N, None]]),
            c("S3", "false_positive", &[[Y, Y], [N, None]]),
            c("S4", "false_positive", &[[N, N], [N, None]]),
            c("S5", "wrong_suggestion", &[[Y, N], [U, None]]),
            c("S6", "tied", &[[Y, Y], [Y, None]]),
        ];
        let out = calibrate(&["j1".into(), "j2".into()], &compared);
        let v1 = &out[0].rubrics[0];
        // j1 validity: human y y n n y vs judge y y y n y: 4/5 agree.
        // Marginals human y 3/5, n 2/5; judge y 4/5, n 1/5: p_e = .6·.8 + .4·.2 = .56;
        // κ = (.8 − .56)/(.44) = 0.545454…
        assert_eq!((v1.items, v1.undecided), (5, 0));
        assert!((v1.agreement.expect("agreement") - 0.8).abs() < 1e-12);
        assert!((v1.kappa.expect("κ") - 0.24 / 0.44).abs() < 1e-12);
        assert_eq!(v1.confusion["yes"]["yes"], 3);
        assert_eq!(v1.confusion["no"]["yes"], 1);
        assert_eq!(v1.confusion["no"]["no"], 1);
        assert_eq!(v1.per_label["false_positive"], (2, 1));
        assert_eq!(v1.stands_alone, Some(false));
        // j1 actionability: human y y n n n vs judge y n y n n: 3/5; human y 2/5, judge y 2/5:
        // p_e = .4·.4 + .6·.6 = .52; κ = (.6 − .52)/.48 = 1/6.
        let a1 = &out[0].rubrics[1];
        assert!((a1.agreement.expect("agreement") - 0.6).abs() < 1e-12);
        assert!((a1.kappa.expect("κ") - 0.08 / 0.48).abs() < 1e-12);
        assert_eq!((a1.per_label["actionable"], a1.per_label["wrong_suggestion"]), ((2, 1), (1, 1)));
        // j2 validity: S5 unparseable is set apart; y n n n vs human y y n n: 3/4 agree.
        let v2 = &out[1].rubrics[0];
        assert_eq!((v2.items, v2.undecided), (4, 1));
        assert!((v2.agreement.expect("agreement") - 0.75).abs() < 1e-12);
        // j2 never answered actionability.
        let a2 = &out[1].rubrics[1];
        assert_eq!((a2.items, a2.undecided, a2.agreement, a2.stands_alone), (0, 5, None, None));
        // Perfect agreement stands alone.
        let perfect = calibrate(&["j".into()], &[c("S1", "actionable", &[[Y, Y]]), c("S2", "false_positive", &[[N, N]])]);
        assert_eq!(perfect[0].rubrics[0].stands_alone, Some(true));
        assert_eq!(perfect[0].rubrics[0].kappa, Some(1.0));
    }
}
