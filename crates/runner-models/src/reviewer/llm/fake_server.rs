//! A fake model server for tests: a real TCP listener on 127.0.0.1 speaking enough HTTP/1.1
//! (keep-alive, `Content-Length` request bodies) to answer each request as a handler says,
//! including with a body that never ends; and a job for it to review.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// How the fake answers one request.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A status and a JSON body with its `Content-Length`.
    Json(u16, Value),
    /// A status, then bytes without end (a MiB of spaces at a time) until the client hangs
    /// up: with `Content-Length: announce` when given, else chunked.
    Endless { status: u16, announce: Option<u64> },
}

type Handler = Arc<dyn Fn(&str, &Value) -> Reply + Send + Sync>;

/// A running fake; it stops accepting when dropped.
pub(crate) struct FakeServer {
    /// `http://127.0.0.1:<port>`.
    pub(crate) url: String,
    /// Requests received, by path.
    pub(crate) paths: Arc<Mutex<Vec<String>>>,
    /// Bytes of endless bodies written before their clients hung up.
    pub(crate) endless_written: Arc<AtomicU64>,
    /// Endless bodies whose client hung up.
    pub(crate) endless_closed: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    addr: std::net::SocketAddr,
}

impl FakeServer {
    /// Starts a fake whose `handler` answers each request from its path and JSON body.
    pub(crate) fn start(handler: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let handler: Handler = Arc::new(handler);
        let paths: Arc<Mutex<Vec<String>>> = Arc::default();
        let (endless_written, endless_closed, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let state = (paths.clone(), endless_written.clone(), endless_closed.clone(), stop.clone());
        std::thread::spawn(move || {
            let (paths, written, closed, stop) = state;
            for stream in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (handler, paths, written, closed) = (handler.clone(), paths.clone(), written.clone(), closed.clone());
                std::thread::spawn(move || serve(stream, &handler, &paths, &written, &closed));
            }
        });
        Self { url: format!("http://{addr}"), paths, endless_written, endless_closed, stop, addr }
    }

    /// The requests made to `path`.
    pub(crate) fn count(&self, path: &str) -> usize {
        self.paths.lock().expect("lock").iter().filter(|p| *p == path).count()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

/// Answers the requests of one connection until it closes.
fn serve(mut stream: TcpStream, handler: &Handler, paths: &Mutex<Vec<String>>, written: &AtomicU64, closed: &AtomicUsize) {
    let mut buf: Vec<u8> = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        let head_end = loop {
            if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break pos + 4;
            }
            match stream.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let path = head.lines().next().unwrap_or_default().split_whitespace().nth(1).unwrap_or_default().to_string();
        let length: usize = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match stream.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&tmp[..n]),
            }
        }
        let body: Value = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
        buf.drain(..head_end + length);
        paths.lock().expect("lock").push(path.clone());
        match handler(&path, &body) {
            Reply::Json(status, value) => {
                let text = value.to_string();
                let reply = format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}", text.len());
                if stream.write_all(reply.as_bytes()).is_err() {
                    return;
                }
            }
            Reply::Endless { status, announce } => {
                let framing = match announce {
                    Some(n) => format!("content-length: {n}"),
                    None => "transfer-encoding: chunked".to_string(),
                };
                if stream.write_all(format!("HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{framing}\r\n\r\n").as_bytes()).is_err() {
                    closed.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                let piece = vec![b' '; 1024 * 1024];
                let mut frame = Vec::new();
                if announce.is_none() {
                    frame.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
                }
                frame.extend_from_slice(&piece);
                if announce.is_none() {
                    frame.extend_from_slice(b"\r\n");
                }
                while stream.write_all(&frame).is_ok() {
                    written.fetch_add(piece.len() as u64, Ordering::SeqCst);
                }
                closed.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
    }
}

/// A one-hunk change of `calc.py`.
pub(crate) fn one_hunk_job(cell: crate::matrix::Cell) -> crate::reviewer::ReviewJob {
    const DIFF: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,1 +1,2 @@\n x = 1\n+y = 1 / 0\n";
    let subject = crate::subject::Subject {
        id: "case-01".into(),
        repo_dir: std::path::PathBuf::from("/nonexistent/repo"),
        base_sha: "a".into(),
        head_sha: "b".into(),
        diff: DIFF.into(),
        files: crate::subject::diff::parse_unified_diff(DIFF),
        stet_error: None,
        review_task: None,
        spec: None,
    };
    crate::reviewer::ReviewJob { cell, repeat: 1, subject: Arc::new(subject), timeout: std::time::Duration::from_secs(300), calls: None }
}
