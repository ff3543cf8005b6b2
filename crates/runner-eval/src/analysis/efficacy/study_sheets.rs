//! The `study` kind's place in the registry. A study is read from its filled sheets by the
//! study layer (`study::report`), which sits above the analyses; the experiment hands a study
//! there, so this result is what a caller that does not gets.

use crate::analysis::model::{AnalysisInput, AnalysisResult};
use crate::analysis::spec::AnalysisSpec;

pub fn compute(spec: &AnalysisSpec, _input: &AnalysisInput<'_>) -> AnalysisResult {
    let mut r = AnalysisResult::new(spec, "H", "Human study", "A human study read from its filled sheets.");
    r.notes.push("The study's sheets are read by the experiment, not by this function.".into());
    r
}
