//! Reading corpus, oracle and results files with bounds: only regular files (a FIFO, a
//! device or a symlink to one is refused before anything blocks on it), at most
//! [`MAX_FILE_BYTES`] each, so a hostile corpus cannot hang or exhaust `corpus validate`,
//! `score` or `exec`.

use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The largest corpus file read: far above any real corpus (the bundled one is under
/// 100 KB), far below what would exhaust memory.
pub const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads `path` as UTF-8 text, refusing anything but a regular file of at most `limit`
/// bytes. The error says which and names the limit; the caller names the file.
pub fn read_text_limited(path: &Path, limit: u64) -> io::Result<String> {
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a
    // writer; it changes nothing for a regular file. The type is then checked on the
    // opened file itself, so a file swapped in after a check cannot slip through.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}; corpus files must be regular files")));
    }
    let too_big = |size: u64| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("it is {size} bytes, over the {} MiB limit for corpus files; split the corpus", limit / (1024 * 1024)),
        )
    };
    if meta.len() > limit {
        return Err(too_big(meta.len()));
    }
    // The file may grow while it is read: read one byte past the limit at most.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("it is not UTF-8 text: {e}")))
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
