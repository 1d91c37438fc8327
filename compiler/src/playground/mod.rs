//! `spmdc playground`: a local web page to write, compile, run, profile and step
//! through kernels, served with its JSON API from this binary.
//!
//! The HTTP layer is `tiny_http`: synchronous, a handful of small dependencies and
//! no async runtime, which is all a local tool answering one person's page needs.
//! Every asset is embedded at build time ([`assets`]), so the page works offline.
//!
//! Each request runs on a thread of its own, at most [`Config::max_workers`] at a
//! time (more are refused with 503 at once, so a burst cannot exhaust the machine);
//! the compile or run it asks for runs on a further worker thread that the request
//! waits for at most [`Config::timeout`] (then 504; the worker still stops at the
//! simulated-instruction limit). Bodies larger than [`Config::max_body`] are refused
//! with 413 before they are read, malformed JSON is 400, and a program that does not
//! compile or traps is an ordinary answer with its diagnostics or error: the server
//! never answers 500 for anything a page can send, and a panic in a worker is caught
//! and answered as an error.

pub mod api;
pub mod assets;
pub mod examples;

use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tiny_http::{Header, Method, Request, Response, StatusCode};

/// How the server bounds its work.
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: SocketAddr,
    /// The largest request body read, in bytes.
    pub max_body: usize,
    /// Requests handled at once.
    pub max_workers: usize,
    /// The longest a request waits for its compile or run.
    pub timeout: Duration,
    /// Simulated instructions of one run (gang or warp instructions, as
    /// `--max-steps`), and the most a request may ask for.
    pub max_steps: u64,
    /// Elements over every buffer argument of a run (what bounds a run's memory; the
    /// command line allows 2^28 per buffer).
    pub max_elements: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            max_body: 1 << 20,
            max_workers: 32,
            timeout: Duration::from_secs(20),
            max_steps: 50_000_000,
            max_elements: 1 << 24,
        }
    }
}

/// A running server.
pub struct Server {
    http: Arc<tiny_http::Server>,
    config: Arc<Config>,
}

impl Server {
    /// Binds `config.bind` (port 0 picks a free port).
    pub fn bind(config: Config) -> std::io::Result<Server> {
        let http = tiny_http::Server::http(config.bind).map_err(std::io::Error::other)?;
        Ok(Server {
            http: Arc::new(http),
            config: Arc::new(config),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> Option<SocketAddr> {
        self.http.server_addr().to_ip()
    }

    /// Answers requests until the process ends.
    pub fn serve(&self) {
        let busy = Arc::new(AtomicUsize::new(0));
        for request in self.http.incoming_requests() {
            if busy.fetch_add(1, Ordering::SeqCst) >= self.config.max_workers {
                busy.fetch_sub(1, Ordering::SeqCst);
                let _ = request.respond(error(503, "the server is busy; try again"));
                continue;
            }
            let config = Arc::clone(&self.config);
            let done = Arc::clone(&busy);
            let spawned = std::thread::Builder::new()
                .name("playground request".into())
                .spawn(move || {
                    handle(request, &config);
                    done.fetch_sub(1, Ordering::SeqCst);
                });
            if spawned.is_err() {
                busy.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Serves on a background thread (for tests).
    pub fn spawn(self) -> std::thread::JoinHandle<()> {
        std::thread::spawn(move || self.serve())
    }
}

/// A response: status, content type and body.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(status: u16, value: &serde_json::Value) -> Reply {
        Reply {
            status,
            content_type: "application/json",
            body: value.to_string().into_bytes(),
        }
    }
}

fn error(status: u16, message: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    respond(Reply::json(
        status,
        &serde_json::json!({ "error": { "kind": "request", "message": message } }),
    ))
}

fn respond(reply: Reply) -> Response<std::io::Cursor<Vec<u8>>> {
    // A length, never chunks: the page and simple clients read plain bodies.
    let length = reply.body.len();
    let mut r = Response::new(
        StatusCode(reply.status),
        Vec::new(),
        std::io::Cursor::new(reply.body),
        Some(length),
        None,
    )
    .with_chunked_threshold(usize::MAX);
    if let Ok(h) = Header::from_bytes("Content-Type", reply.content_type) {
        r.add_header(h);
    }
    if let Ok(h) = Header::from_bytes("Cache-Control", "no-store") {
        r.add_header(h);
    }
    r
}

/// Reads the body, at most `limit` bytes: `None` when it is larger.
fn read_body(request: &mut Request, limit: usize) -> Result<Option<Vec<u8>>, std::io::Error> {
    if request.body_length().is_some_and(|n| n > limit) {
        return Ok(None);
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)?;
    Ok((body.len() <= limit).then_some(body))
}

fn handle(mut request: Request, config: &Config) {
    let url = request.url().split('?').next().unwrap_or("").to_string();
    let method = request.method().clone();
    if method == Method::Get {
        let reply = assets::get(&url).unwrap_or_else(|| match url.as_str() {
            "/api/examples" => Reply::json(200, &examples::gallery_json()),
            _ => Reply::json(404, &serde_json::json!({"error": {"kind": "request", "message": format!("no page {url}")}})),
        });
        let _ = request.respond(respond(reply));
        return;
    }
    if method != Method::Post {
        let _ = request.respond(error(405, "only GET and POST are served"));
        return;
    }
    let body = match read_body(&mut request, config.max_body) {
        Ok(Some(b)) => b,
        Ok(None) => {
            let msg = format!("the request body is larger than {} bytes", config.max_body);
            let _ = request.respond(error(413, &msg));
            return;
        }
        Err(e) => {
            let _ = request.respond(error(400, &format!("cannot read the body: {e}")));
            return;
        }
    };
    let reply = match serde_json::from_slice::<serde_json::Value>(&body) {
        Err(e) => Reply::json(
            400,
            &serde_json::json!({"error": {"kind": "request", "message": format!("the body is not JSON: {e}")}}),
        ),
        Ok(json) => in_worker(config, move |c| api::dispatch(&url, &json, &c)),
    };
    let _ = request.respond(respond(reply));
}

/// Runs `work` on a worker thread with a large stack, waiting at most
/// `config.timeout`; a panic or a timeout becomes an error reply.
fn in_worker(config: &Config, work: impl FnOnce(Config) -> Reply + Send + 'static) -> Reply {
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = config.clone();
    let spawned = std::thread::Builder::new()
        .name("playground worker".into())
        .stack_size(256 << 20)
        .spawn(move || {
            let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(owned)));
            let _ = tx.send(reply);
        });
    if spawned.is_err() {
        return Reply::json(503, &request_error("no thread is free for the request"));
    }
    match rx.recv_timeout(config.timeout) {
        Ok(Ok(reply)) => reply,
        Ok(Err(_)) => Reply::json(
            200,
            &serde_json::json!({"error": {"kind": "internal", "message": "internal compiler error: the compiler panicked on this program"}}),
        ),
        Err(_) => Reply::json(
            504,
            &request_error(&format!(
                "the request took longer than {} seconds",
                config.timeout.as_secs()
            )),
        ),
    }
}

fn request_error(message: &str) -> serde_json::Value {
    serde_json::json!({ "error": { "kind": "request", "message": message } })
}
