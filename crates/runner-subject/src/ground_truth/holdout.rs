//! The tuning/holdout split: oracle cases with `split = "holdout"` are sealed. An experiment
//! plans them only when its manifest says `[target] unseal-holdout = true`, and the report
//! records that it did. Only case ids leave this module: no other oracle content.

use super::oracle::{self, OracleError, Split};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// An experiment would run sealed holdout cases.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "failed to plan corpus `{}`: holdout cases are sealed: {}; plan only tuning cases with `[target] cases = [...]`, or, once prompts are selected, unseal the holdout with `[target] unseal-holdout = true`",
    dir.display(),
    cases.iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
)]
pub struct SealedHoldout {
    pub dir: PathBuf,
    pub cases: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum HoldoutError {
    #[error(transparent)]
    Oracle(#[from] OracleError),
    #[error(transparent)]
    Sealed(#[from] SealedHoldout),
}

/// The holdout case ids of the corpus in `dir` (none when it has no oracle).
pub fn holdout_ids(dir: &Path) -> Result<BTreeSet<String>, OracleError> {
    Ok(oracle::load(dir)?.map(|o| o.cases.into_iter().filter(|c| c.split == Some(Split::Holdout)).map(|c| c.id).collect()).unwrap_or_default())
}

/// Checks the cases an experiment selected against the seal. Returns the holdout cases among
/// them (empty unless `unseal` is set); fails, listing them, when they are sealed.
pub fn check<'a>(dir: &Path, selected: impl IntoIterator<Item = &'a str>, unseal: bool) -> Result<Vec<String>, HoldoutError> {
    let holdout = holdout_ids(dir)?;
    let chosen: Vec<String> = selected.into_iter().filter(|id| holdout.contains(*id)).map(str::to_string).collect();
    if chosen.is_empty() || unseal {
        Ok(chosen)
    } else {
        Err(SealedHoldout { dir: dir.to_path_buf(), cases: chosen }.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quickstart() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("corpus/quickstart")
    }

    #[test]
    fn holdout_cases_are_sealed_until_unsealed() {
        let dir = quickstart();
        assert_eq!(check(&dir, ["case-01", "case-02"], false).expect("tuning only"), Vec::<String>::new());
        let err = check(&dir, ["case-01", "case-03", "case-05"], false).expect_err("sealed");
        let text = err.to_string();
        assert!(text.contains("`case-03`, `case-05`") && text.contains("unseal-holdout = true"), "{text}");
        assert_eq!(check(&dir, ["case-01", "case-03"], true).expect("unsealed"), vec!["case-03".to_string()]);
    }

    #[test]
    fn a_corpus_without_an_oracle_has_no_holdout() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(holdout_ids(dir.path()).expect("no oracle").is_empty());
    }
}
