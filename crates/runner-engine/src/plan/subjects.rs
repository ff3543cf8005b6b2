//! Subject resolution: the manifest's target turned into plan-time subject specs (resolved
//! SHAs, case content hashes). It reaches ground truth only through two narrow doors: the
//! holdout seal (case ids) and seed 003's eval-set reader (each case's id and range).

use crate::ground_truth::evalcase;
use crate::ground_truth::holdout::HoldoutError;
use crate::manifest::Manifest;
use crate::reviewer::command::Isolation;
use crate::reviewer::spec::{ReviewerKindSpec, SubjectNeeds};
use crate::subject::corpus::{self, CorpusError, PublicCase};
use crate::subject::external::{self, ExternalChange};
use crate::subject::history::{self, History, HistorySpec};
use crate::subject::{git, SubjectSource, SubjectSpec, TargetError, TargetSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the target's subjects could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error(transparent)]
    Holdout(#[from] HoldoutError),
    #[error(transparent)]
    EvalCase(#[from] evalcase::EvalCaseError),
}

impl From<CorpusError> for ResolveError {
    fn from(e: CorpusError) -> Self {
        Self::Target(e.into())
    }
}

/// The target's subjects, and for a history target which commits were selected, skipped and
/// sampled (in history order: the order the plan reviews them in).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub subjects: BTreeMap<String, SubjectSpec>,
    pub history: Option<History>,
}

impl From<BTreeMap<String, SubjectSpec>> for Resolved {
    fn from(subjects: BTreeMap<String, SubjectSpec>) -> Self {
        Self { subjects, history: None }
    }
}

/// Resolves the manifest's target into subject specs. For a git target there is one subject
/// per value of the `ref` axis (resolved to SHAs here, before anything is hashed); for a
/// history target one per selected commit (its full SHA); for a corpus target one per case.
pub fn resolve(manifest: &Manifest) -> Result<Resolved, ResolveError> {
    if let TargetSpec::History { repo, history, .. } = &manifest.target {
        return resolve_history(manifest, repo, history);
    }
    resolve_subjects(manifest).map(Resolved::from)
}

fn resolve_subjects(manifest: &Manifest) -> Result<BTreeMap<String, SubjectSpec>, ResolveError> {
    match &manifest.target {
        TargetSpec::History { .. } => Ok(BTreeMap::new()),
        TargetSpec::Git { repo, head, .. } => {
            let refs: Vec<String> = manifest.matrix.axis("ref").map(|a| a.values.iter().map(|v| v.render()).collect()).unwrap_or_default();
            let mut revs: Vec<&str> = refs.iter().map(String::as_str).collect();
            revs.push(head);
            // As the manifest check resolved them, else from git.
            let known: Option<Vec<String>> = revs.iter().map(|r| manifest.resolved_revisions.get(*r).cloned()).collect();
            let shas = match known {
                Some(shas) => shas,
                None => git::resolve_commits(repo, &revs).map_err(|e| TargetError::Resolve {
                    repo: repo.display().to_string(),
                    rev: revs.join(", "),
                    message: e.to_string(),
                })?,
            };
            let head_sha = shas.last().cloned().unwrap_or_default();
            let mut out = BTreeMap::new();
            for (r, base_sha) in refs.iter().zip(&shas) {
                let identity = blake3::hash(format!("git\0{base_sha}\0{head_sha}").as_bytes()).to_hex().to_string();
                out.insert(
                    r.clone(),
                    SubjectSpec {
                        id: r.clone(),
                        identity,
                        source: SubjectSource::Git { repo: repo.clone(), base_sha: base_sha.clone(), head_sha: head_sha.clone() },
                        holdout: false,
                    },
                );
            }
            Ok(out)
        }
        TargetSpec::Evals { repo, dir, cases: wanted, review_file } => resolve_evals(repo, dir, wanted.as_deref(), review_file.as_deref()),
        TargetSpec::External { changes, cases: wanted, .. } => resolve_external(manifest, changes, wanted.as_deref()),
        TargetSpec::Corpus { dir, cases: wanted, unseal_holdout } => {
            let cases = corpus::load_public_cases(dir)?;
            if let Some(wanted) = wanted {
                if let Some(missing) = wanted.iter().find(|w| !cases.iter().any(|c| &c.id == *w)) {
                    return Err(CorpusError::UnknownCase(missing.clone()).into());
                }
            }
            let selected: Vec<PublicCase> = cases.into_iter().filter(|c| wanted.as_ref().is_none_or(|w| w.contains(&c.id))).collect();
            // Only the ids of unsealed holdout cases come back from the oracle.
            let unsealed = crate::ground_truth::holdout::check(dir, selected.iter().map(|c| c.id.as_str()), *unseal_holdout)?;
            Ok(selected
                .into_iter()
                .map(|c| {
                    let identity = corpus::case_content_hash(&c);
                    let holdout = unsealed.contains(&c.id);
                    (c.id.clone(), SubjectSpec { id: c.id.clone(), identity, source: SubjectSource::Case(Box::new(c)), holdout })
                })
                .collect())
        }
    }
}

/// One subject per external change (sorted by id); every reviewer must be able to review them
/// as they are: a command reviewer needs a repository, which an external change lacks, and a
/// built-in or LLM reviewer needs each change's diff.
fn resolve_external(manifest: &Manifest, path: &Path, wanted: Option<&[String]>) -> Result<BTreeMap<String, SubjectSpec>, ResolveError> {
    let changes = external::load_changes(path)?;
    if let Some(missing) = wanted.and_then(|w| w.iter().find(|w| !changes.iter().any(|c| &c.id == *w))) {
        return Err(TargetError::External(format!("change `{missing}` is listed in the manifest's `cases` but not in `{}`", path.display())).into());
    }
    let selected: Vec<ExternalChange> = changes.into_iter().filter(|c| wanted.is_none_or(|w| w.contains(&c.id))).collect();
    let without_diff: Vec<&str> = selected.iter().filter(|c| c.diff.is_none()).map(|c| c.id.as_str()).collect();
    for named in &manifest.reviewers.entries {
        let kind = named.spec.kind.kind_name();
        match named.spec.kind.needs() {
            SubjectNeeds::Repository => {
                return Err(TargetError::External(format!(
                    "reviewer `{}` ({kind}) runs in the subject's repository, but the external target `{}` has none: review these changes with a `replay` reviewer (what a tool already said) or a built-in or LLM reviewer (each change needs a `diff`)",
                    named.name,
                    path.display()
                ))
                .into());
            }
            SubjectNeeds::Diff if !without_diff.is_empty() => {
                let shown: Vec<&str> = without_diff.iter().take(5).copied().collect();
                let more = if without_diff.len() > 5 { format!(" and {} more", without_diff.len() - 5) } else { String::new() };
                return Err(TargetError::External(format!(
                    "reviewer `{}` ({kind}) reviews a change's diff, but {} of the external changes in `{}` have no `diff` ({}{more}): give each a `diff` file, or compare what tools already said with a `replay` reviewer",
                    named.name,
                    without_diff.len(),
                    path.display(),
                    shown.join(", ")
                ))
                .into());
            }
            _ => {}
        }
    }
    Ok(selected
        .into_iter()
        .map(|c| {
            let identity = c.identity();
            (c.id.clone(), SubjectSpec { id: c.id.clone(), identity, source: SubjectSource::External(Box::new(c)), holdout: false })
        })
        .collect())
}

/// One subject per selected commit that can be reviewed, identified by its full SHA and
/// hashed exactly as a `ref` subject of the same base and head. A command reviewer reviews the
/// checked-out commit unless each run gets a worktree: with other commits to review, it must.
fn resolve_history(manifest: &Manifest, repo: &Path, spec: &HistorySpec) -> Result<Resolved, ResolveError> {
    let history = history::select(repo, spec)?;
    let checked_out = git::resolve_commits(repo, &["HEAD"]).ok().and_then(|shas| shas.into_iter().next());
    let elsewhere = history.planned.iter().filter(|c| checked_out.as_deref() != Some(c.sha.as_str())).count();
    for named in &manifest.reviewers.entries {
        let ReviewerKindSpec::Command(command) = &named.spec.kind else { continue };
        if command.isolation != Isolation::Worktree && elsewhere > 0 {
            return Err(TargetError::History(format!(
                "reviewer `{}` (command) reviews the checked-out commit, but {elsewhere} of the {} selected commits are not checked out in `{}`: set `isolation = \"worktree\"` so each commit is reviewed in a worktree of its own",
                named.name,
                history.planned.len(),
                repo.display()
            ))
            .into());
        }
    }
    let subjects = history
        .planned
        .iter()
        .map(|c| {
            let identity = blake3::hash(format!("git\0{}\0{}", c.base, c.sha).as_bytes()).to_hex().to_string();
            let source = SubjectSource::Git { repo: repo.to_path_buf(), base_sha: c.base.clone(), head_sha: c.sha.clone() };
            (c.sha.clone(), SubjectSpec { id: c.sha.clone(), identity, source, holdout: false })
        })
        .collect();
    Ok(Resolved { subjects, history: Some(history) })
}

/// Each finding of an eval case names a file of the case's tip and a line inside it: a bug at
/// a place the reviewed commit does not have could never be found.
fn check_finding_places(repo: &Path, dir: &Path, case: &evalcase::EvalCase, tip: &str) -> Result<(), ResolveError> {
    use crate::subject::trace::{FileAt, Tracer};
    let tracer = Tracer::new(repo);
    let path = dir.join(&case.id).join(evalcase::CASE_FILE);
    for f in &case.findings {
        let short = &tip[..tip.len().min(10)];
        let problem = match tracer.file_at(tip, &f.path) {
            Ok(FileAt::File { lines }) => {
                let last = f.end.unwrap_or(f.line);
                (u64::from(last) > lines)
                    .then(|| format!("finding `{}`: `{}` has {lines} lines at the case's tip {short}, and the finding is at line {last}", f.id, f.path))
            }
            Ok(FileAt::Missing) => Some(format!("finding `{}`: `{}` does not exist at the case's tip {short}", f.id, f.path)),
            Ok(FileAt::NotAFile(kind)) => Some(format!("finding `{}`: `{}` is a {kind}, not a file, at the case's tip {short}", f.id, f.path)),
            Err(e) => Some(format!("finding `{}`: `{}` could not be read at the case's tip {short}: {e}", f.id, f.path)),
        };
        if let Some(message) = problem {
            return Err(evalcase::EvalCaseError::Invalid { path, line: f.written_at, message }.into());
        }
    }
    Ok(())
}

/// The eval set's directory relative to the repository, when it lies inside it.
fn inside(repo: &Path, dir: &Path) -> Option<PathBuf> {
    let (repo, dir) = (repo.canonicalize().ok()?, dir.canonicalize().ok()?);
    dir.strip_prefix(&repo).ok().filter(|p| !p.as_os_str().is_empty()).map(Path::to_path_buf)
}

/// One subject per case (sorted by id), its commits checked to exist.
fn resolve_evals(repo: &Path, dir: &Path, wanted: Option<&[String]>, review_file: Option<&Path>) -> Result<BTreeMap<String, SubjectSpec>, ResolveError> {
    let cases = evalcase::load_dir(dir)?;
    let guide_path = review_file.map(Path::to_path_buf).unwrap_or_else(|| repo.join(evalcase::REVIEW_FILE));
    let guide = match std::fs::read_to_string(&guide_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && review_file.is_none() => None,
        Err(e) => {
            let message = format!("cannot read the review file `{}`: {e}", guide_path.display());
            return Err(TargetError::Resolve { repo: repo.display().to_string(), rev: "REVIEW.md".into(), message }.into());
        }
    };
    if let Some(missing) = wanted.and_then(|w| w.iter().find(|w| !cases.iter().any(|c| &c.id == *w))) {
        return Err(TargetError::UnknownEvalCase(missing.clone()).into());
    }
    let strip = inside(repo, dir);
    let mut out = BTreeMap::new();
    for case in cases.into_iter().filter(|c| wanted.is_none_or(|w| w.contains(&c.id))) {
        let shas = git::resolve_commits(repo, &[&case.base, &case.tip]).map_err(|e| TargetError::Resolve {
            repo: repo.display().to_string(),
            rev: format!("{}..{} (eval case `{}`)", case.base, case.tip, case.id),
            message: format!("{e}; keep a tag or branch on the tip so the case can be rerun"),
        })?;
        let (base_sha, head_sha) = match shas.as_slice() {
            [b, t] => (b.clone(), t.clone()),
            _ => {
                return Err(
                    TargetError::Resolve { repo: repo.display().to_string(), rev: case.tip.clone(), message: "unexpected rev-parse output".into() }.into()
                )
            }
        };
        check_finding_places(repo, dir, &case, &head_sha)?;
        let review = guide.as_deref().map(|g| evalcase::strip_tagged(g, &case));
        // The guide is reviewer input, so it is part of the identity (unchanged without one).
        let identity = match &review {
            None => blake3::hash(format!("eval\0{base_sha}\0{head_sha}").as_bytes()).to_hex().to_string(),
            Some(r) => blake3::hash(format!("eval\0{base_sha}\0{head_sha}\0review\0{r}").as_bytes()).to_hex().to_string(),
        };
        out.insert(
            case.id.clone(),
            SubjectSpec {
                id: case.id.clone(),
                identity,
                source: SubjectSource::Eval { repo: repo.to_path_buf(), base_sha, head_sha, strip: strip.clone(), review },
                holdout: false,
            },
        );
    }
    Ok(out)
}
