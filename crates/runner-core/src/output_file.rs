//! Files a command writes where its user said (`--out`, `--output`): written whole to a
//! temporary file beside the path and renamed into place, so a reader never sees half a file
//! and a link at the path is never written through. Before anything is written the path is
//! checked: it may not be a link, a directory or another non-regular file, nor one of the
//! command's own inputs (by device and inode, whatever the spelling), and a file that is there
//! is replaced only when it is what this command writes (the caller's `replaceable` says so
//! from its bytes) or the user passed `--force`.

use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The largest existing file read to decide whether it may be replaced.
const MAX_EXAMINED_BYTES: u64 = 64 * crate::bounded::MIB;

/// Why an output file was not written.
#[derive(Debug)]
pub enum OutputFileError {
    Link { path: PathBuf },
    NotAFile { path: PathBuf, what: &'static str },
    Input { path: PathBuf, input: PathBuf },
    Foreign { path: PathBuf, what: &'static str },
    Write { path: PathBuf, source: io::Error },
}

impl std::fmt::Display for OutputFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Link { path } => {
                write!(f, "`{}` is a symbolic link: runner does not write through links; remove it, or name the file it points at", path.display())
            }
            Self::NotAFile { path, what } => write!(f, "`{}` is {what}, not a file runner can write", path.display()),
            Self::Input { path, input } => {
                write!(f, "`{}` is the command's own input `{}`: writing there would destroy it; choose another path", path.display(), input.display())
            }
            Self::Foreign { path, what } => {
                write!(f, "`{}` is in the way: it is not {what} that runner wrote; move it, or pass --force to overwrite it", path.display())
            }
            Self::Write { path, source } => write!(f, "failed to write `{}`: {source}", path.display()),
        }
    }
}

impl std::error::Error for OutputFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What may be at an output path already.
#[derive(Clone, Copy)]
pub struct Replace<'a> {
    /// What the command writes, in words for the error (`an oracle`, `a report page`).
    pub what: &'static str,
    /// Whether an existing file's bytes are what this command writes.
    pub replaceable: &'a dyn Fn(&[u8]) -> bool,
    /// `--force`: any regular file that is not an input may be replaced.
    pub force: bool,
}

/// Writes `bytes` to `path` after [`check`], through a temporary file renamed into place
/// (the directory made when missing).
pub fn write(path: &Path, bytes: &[u8], inputs: &[&Path], replace: &Replace<'_>) -> Result<(), OutputFileError> {
    check(path, inputs, replace)?;
    let fail = |source: io::Error| OutputFileError::Write { path: path.to_path_buf(), source };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(fail)?;
    let mut temp = tempfile::Builder::new().prefix(".tmp").tempfile_in(dir).map_err(fail)?;
    temp.write_all(bytes).map_err(fail)?;
    temp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Checks that `path` may be written: not a link, not a non-regular file, none of `inputs`,
/// and, when a file is there, one `replace` allows to be replaced.
pub fn check(path: &Path, inputs: &[&Path], replace: &Replace<'_>) -> Result<(), OutputFileError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(OutputFileError::Write { path: path.to_path_buf(), source }),
    };
    if meta.file_type().is_symlink() {
        return Err(OutputFileError::Link { path: path.to_path_buf() });
    }
    if !meta.is_file() {
        let what = if meta.is_dir() { "a directory" } else { "a FIFO, socket or device" };
        return Err(OutputFileError::NotAFile { path: path.to_path_buf(), what });
    }
    for input in inputs {
        let same = std::fs::metadata(input).is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
        if same {
            return Err(OutputFileError::Input { path: path.to_path_buf(), input: input.to_path_buf() });
        }
    }
    if replace.force || meta.len() == 0 {
        return Ok(());
    }
    let ours = crate::bounded::read(path, MAX_EXAMINED_BYTES, crate::bounded::Links::Refuse, "output files").is_ok_and(|bytes| (replace.replaceable)(&bytes));
    if ours {
        Ok(())
    } else {
        Err(OutputFileError::Foreign { path: path.to_path_buf(), what: replace.what })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_object(bytes: &[u8]) -> bool {
        bytes.first() == Some(&b'{')
    }

    #[test]
    fn an_output_never_goes_through_a_link_over_an_input_or_over_a_foreign_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let replace = Replace { what: "an oracle", replaceable: &json_object, force: false };
        // A new file, its directory made.
        let out = d.join("new/oracle.json");
        write(&out, b"{}\n", &[], &replace).expect("write");
        assert_eq!(std::fs::read(&out).expect("read"), b"{}\n");
        // Its own earlier output is replaced.
        write(&out, b"{\"a\": 1}\n", &[], &replace).expect("replace");
        // Through a link: refused, the target untouched.
        let target = d.join("precious.txt");
        std::fs::write(&target, "keep").expect("write");
        std::os::unix::fs::symlink(&target, d.join("link.json")).expect("symlink");
        let e = write(&d.join("link.json"), b"{}", &[], &Replace { force: true, ..replace }).expect_err("a link");
        assert!(matches!(e, OutputFileError::Link { .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep");
        // Over an input, by another spelling: refused even with --force.
        let input = d.join("comments.json");
        std::fs::write(&input, "{\"input\": true}").expect("write");
        let spelled = d.join("new/../comments.json");
        let e = write(&spelled, b"{}", &[&input], &Replace { force: true, ..replace }).expect_err("an input");
        assert!(matches!(e, OutputFileError::Input { .. }) && e.to_string().contains("own input"), "{e}");
        assert_eq!(std::fs::read_to_string(&input).expect("read"), "{\"input\": true}");
        // A file that is not what the command writes: refused, then replaced with --force.
        std::fs::write(&target, "notes").expect("write");
        let e = write(&target, b"{}", &[], &replace).expect_err("foreign");
        assert!(e.to_string().contains("--force") && e.to_string().contains("an oracle"), "{e}");
        write(&target, b"{}", &[], &Replace { force: true, ..replace }).expect("--force");
        // A directory or a FIFO is never a file to write.
        let e = write(d, b"{}", &[], &Replace { force: true, ..replace }).expect_err("a directory");
        assert!(matches!(e, OutputFileError::NotAFile { .. }), "{e}");
    }
}
