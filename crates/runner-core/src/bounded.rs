//! Bounded, non-blocking reads of regular files: the one way runner reads a file it did not
//! just write (cache entries, corpus and oracle files, captures, sheets, reports). A FIFO, a
//! device, a socket or a directory is refused before anything blocks on it or reads it
//! without end, and a file over the caller's limit is refused rather than read into memory.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// One mebibyte, the unit limits are stated in.
pub const MIB: u64 = 1024 * 1024;

/// Whether the last component of a path may be a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Read what the link points at (it is checked the same way).
    Follow,
    /// A link is refused: files runner writes itself (cache entries) are never links.
    Refuse,
}

/// What a file is, in words, when it is not a regular file.
fn kind_of(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        None
    } else if kind.is_dir() {
        Some("a directory")
    } else if kind.is_fifo() {
        Some("a FIFO")
    } else if kind.is_char_device() || kind.is_block_device() {
        Some("a device")
    } else if kind.is_socket() {
        Some("a socket")
    } else if kind.is_symlink() {
        Some("a symbolic link")
    } else {
        Some("not a regular file")
    }
}

fn not_regular(what: &str, kind: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, format!("it is {kind}; {what} must be regular files"))
}

fn too_big(what: &str, size: u64, limit: u64) -> io::Error {
    let limit = if limit >= MIB { format!("{} MiB", limit / MIB) } else { format!("{limit}-byte") };
    io::Error::new(io::ErrorKind::InvalidData, format!("it is {size} bytes, over the {limit} limit for {what}"))
}

/// Opens `path` for reading, refusing anything but a regular file; returns it with its size.
/// `what` names such files in the error (`"cache entries"`). The type is checked before the
/// open (so a device is never opened) and again on the opened descriptor (so a file swapped
/// in between cannot slip through); the open itself is non-blocking (a FIFO swapped in would
/// not wait for a writer).
pub fn open_regular(path: &Path, links: Links, what: &str) -> io::Result<(File, u64)> {
    let before = match links {
        Links::Follow => std::fs::metadata(path)?,
        Links::Refuse => std::fs::symlink_metadata(path)?,
    };
    if let Some(kind) = kind_of(before.file_type()) {
        return Err(not_regular(what, kind));
    }
    let mut flags = libc::O_NONBLOCK | libc::O_CLOEXEC;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => not_regular(what, "a symbolic link"),
        Some(libc::ENXIO) => not_regular(what, "a socket"),
        _ => e,
    })?;
    let meta = file.metadata()?;
    if let Some(kind) = kind_of(meta.file_type()) {
        return Err(not_regular(what, kind));
    }
    Ok((file, meta.len()))
}

/// Reads `path` whole: a regular file (see [`open_regular`]) of at most `limit` bytes.
pub fn read(path: &Path, limit: u64, links: Links, what: &str) -> io::Result<Vec<u8>> {
    let (file, size) = open_regular(path, links, what)?;
    if size > limit {
        return Err(too_big(what, size, limit));
    }
    // The file may grow while it is read: one byte past the limit at most.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(what, bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, limit: u64, links: Links, what: &str) -> io::Result<String> {
    String::from_utf8(read(path, limit, links, what)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("it is not UTF-8 text: {e}")))
}

/// The largest input file read whole (a sheet, a key, a record, stet's history): far above any
/// real one, far below what would exhaust memory.
pub const MAX_INPUT_BYTES: u64 = 64 * MIB;

/// An input file's bytes (a sheet, its key, an adjudication record, stet's history): [`read`]
/// with [`MAX_INPUT_BYTES`], following links.
pub fn input(path: &Path) -> io::Result<Vec<u8>> {
    read(path, MAX_INPUT_BYTES, Links::Follow, "input files")
}

/// [`input`] as UTF-8 text.
pub fn input_text(path: &Path) -> io::Result<String> {
    read_text(path, MAX_INPUT_BYTES, Links::Follow, "input files")
}

/// Whether a read failed on what the file is (its type, its size, its bytes) rather than on
/// the system (too many open files, permissions, an I/O error). A missing file is neither:
/// the caller decides what absence means.
pub fn is_content_problem(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("entry");
        std::fs::write(&file, b"0123456789").expect("write");
        assert_eq!(read(&file, 10, Links::Refuse, "cache entries").expect("read"), b"0123456789");
        let e = read(&file, 9, Links::Refuse, "cache entries").expect_err("over");
        assert_eq!(e.to_string(), "it is 10 bytes, over the 9-byte limit for cache entries");
        assert!(is_content_problem(&e));

        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        // Nothing ever writes to it: a plain open would wait forever.
        for links in [Links::Follow, Links::Refuse] {
            let e = read(&fifo, 10, links, "cache entries").expect_err("a FIFO");
            assert_eq!(e.to_string(), "it is a FIFO; cache entries must be regular files");
            assert!(is_content_problem(&e));
        }
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        assert_eq!(read(&zero, 10, Links::Follow, "x").expect_err("device").to_string(), "it is a device; x must be regular files");
        assert_eq!(read(&zero, 10, Links::Refuse, "x").expect_err("link").to_string(), "it is a symbolic link; x must be regular files");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        assert_eq!(read(&link, 10, Links::Follow, "x").expect("a link to a regular file"), b"0123456789");
        assert!(read(&link, 10, Links::Refuse, "x").is_err());
        assert_eq!(read(dir.path(), 10, Links::Follow, "x").expect_err("dir").to_string(), "it is a directory; x must be regular files");
        let missing = read(&dir.path().join("none"), 10, Links::Follow, "x").expect_err("missing");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert!(!is_content_problem(&missing));
        std::fs::write(&file, [0xff, 0xfe]).expect("write");
        assert!(read_text(&file, 10, Links::Follow, "x").expect_err("not UTF-8").to_string().contains("not UTF-8"));
    }
}
