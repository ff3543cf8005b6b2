//! Reading corpus, oracle and results files with bounds: only regular files (a FIFO, a
//! device or a symlink to one is refused before anything blocks on it), at most
//! [`MAX_FILE_BYTES`] each, so a hostile corpus cannot hang or exhaust `corpus validate`,
//! `score` or `exec`.

use crate::bounded::Links;
use std::io;
use std::path::Path;

/// The largest corpus file read: far above any real corpus (the bundled one is under
/// 100 KB), far below what would exhaust memory.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads `path` as UTF-8 text, refusing anything but a regular file of at most `limit`
/// bytes ([`crate::bounded`]). The error says which and names the limit; the caller names the file.
pub fn read_text_limited(path: &Path, limit: u64) -> io::Result<String> {
    crate::bounded::read_text(path, limit, Links::Follow, "corpus files")
}

/// [`read_text_limited`] with [`MAX_FILE_BYTES`].
pub fn read_text(path: &Path) -> io::Result<String> {
    read_text_limited(path, MAX_FILE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        std::fs::write(&path, "{\"é\": 1}").expect("write");
        assert_eq!(read_text(&path).expect("read"), "{\"é\": 1}");
        let missing = read_text(&dir.path().join("none")).expect_err("missing");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound, "callers tell a missing file apart");
    }

    #[test]
    fn fifos_devices_and_directories_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Nothing ever writes to it: a plain read would wait forever.
        let e = read_text(&fifo).expect_err("a FIFO");
        assert!(e.to_string().contains("a FIFO") && e.to_string().contains("regular file"), "{e}");
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).expect("symlink");
        let e = read_text(&zero).expect_err("a device");
        assert!(e.to_string().contains("a device"), "{e}");
        let e = read_text(dir.path()).expect_err("a directory");
        assert!(e.to_string().contains("a directory"), "{e}");
    }

    #[test]
    fn files_over_the_limit_are_refused_with_the_limit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.json");
        // Sparse: the size is there, the bytes are not.
        std::fs::File::create(&path).expect("create").set_len(MAX_FILE_BYTES + 1).expect("set_len");
        let e = read_text(&path).expect_err("too big");
        assert!(e.to_string().contains("64 MiB limit"), "{e}");
        std::fs::write(&path, "x".repeat(3 * 1024 * 1024)).expect("write");
        let e = read_text_limited(&path, 2 * 1024 * 1024).expect_err("too big");
        assert!(e.to_string().contains("3145728 bytes, over the 2 MiB limit"), "{e}");
    }
}
