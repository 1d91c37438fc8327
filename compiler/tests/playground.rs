//! The playground's HTTP API under bad input and load: malformed JSON, a body far
//! over the limit, a kernel that never ends, a program that does not compile, and
//! many requests at once; the server answers each and stays up.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};
use spmdc::playground::{Config, Server};

/// The instruction limit a runaway kernel's request asks for: small, so it stops soon.
const MAX_STEPS: u64 = 2_000_000;

/// One server for every test of this file.
fn server() -> SocketAddr {
    static ADDR: OnceLock<SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let config = Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            timeout: Duration::from_secs(120),
            ..Config::default()
        };
        let server = Server::bind(config).expect("bind a free port");
        let addr = server.addr().expect("an IP address");
        server.spawn();
        addr
    })
}

/// Sends one request; gives the status and the body.
fn http(method: &str, path: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(server()).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(300)))
        .unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send the head");
    // The server may refuse a large body before reading it: a failed write is fine.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn post(path: &str, body: &Value) -> (u16, Value) {
    let (status, text) = http("POST", path, body.to_string().as_bytes());
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, json)
}

const SAXPY: &str =
    "export void saxpy(uniform int n, uniform float a, uniform float x[], uniform float y[]) {
    foreach (i = 0 ... n) {
        y[i] = a * x[i] + y[i];
    }
}
";

#[test]
fn malformed_json_is_400_with_a_message() {
    let (status, text) = http("POST", "/api/compile", b"{\"source\": ");
    assert_eq!(status, 400);
    let body: Value = serde_json::from_str(&text).unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not JSON"));
    let (status, body) = post("/api/run", &json!({ "source": SAXPY, "target": "gpu" }));
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("unknown target"));
}

#[test]
fn a_ten_megabyte_body_is_refused_with_413() {
    let body = vec![b' '; 10 << 20];
    let (status, _) = http("POST", "/api/compile", &body);
    assert_eq!(status, 413);
    let (status, _) = http("GET", "/api/examples", b"");
    assert_eq!(status, 200, "the server still answers");
}

#[test]
fn an_endless_kernel_stops_at_the_limit_and_the_server_answers_on() {
    let endless = "export void spin(uniform int x[]) { while (true) { x[0] += 1; } }";
    for target in ["interp", "nyuzi", "dac-gpu"] {
        let (status, body) = post(
            "/api/run",
            &json!({
                "source": endless, "target": target, "entry": "spin", "args": ["x=zeros(1)"],
                "max_steps": MAX_STEPS,
                "trace": { "gang": 0, "limit": 10 },
            }),
        );
        assert_eq!(status, 200, "{target}: {body}");
        assert_eq!(body["error"]["kind"], "trap", "{target}: {body}");
        // The trace shows the path that led there.
        assert_eq!(
            body["trace"]["steps"].as_array().unwrap().len(),
            10,
            "{target}"
        );
        assert_eq!(body["trace"]["truncated"], true, "{target}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&MAX_STEPS.to_string()),
            "{target}: {message}"
        );
    }
    let (status, body) = post(
        "/api/run",
        &json!({ "source": SAXPY, "entry": "saxpy", "args": ["n=3", "a=2", "x=range(3)", "y=fill(3,1)"] }),
    );
    assert_eq!(status, 200);
    assert_eq!(body["result"]["buffers"]["y"], json!([1.0, 3.0, 5.0]));
}

#[test]
fn every_example_runs_as_its_header_says() {
    let (_, examples) = http("GET", "/api/examples", b"");
    let examples: Value = serde_json::from_str(&examples).unwrap();
    let mut ran = 0;
    for e in examples.as_array().unwrap() {
        for l in e["launches"].as_array().unwrap() {
            if l["needs_files"] == true {
                continue;
            }
            let mut request = l.clone();
            request["source"] = e["source"].clone();
            let (status, body) = post("/api/run", &request);
            assert_eq!(status, 200, "{}: {body}", e["name"]);
            assert!(
                body["error"].is_null(),
                "{} {}: {}",
                e["name"],
                l["entry"],
                body["error"]
            );
            ran += 1;
        }
    }
    assert!(ran >= 20, "{ran} launches ran");
}

#[test]
fn a_bad_program_gets_diagnostics_with_spans() {
    let broken = "export void f(uniform int x[]) { x[0] = 1 }";
    let (status, body) = post("/api/compile", &json!({ "source": broken }));
    assert_eq!(status, 200);
    let d = &body["diagnostics"][0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["file"], "playground.spmd");
    let span = d["span"].as_array().unwrap();
    assert_eq!(&broken[span[0].as_u64().unwrap() as usize..][..1], "}");
    let (status, body) = post(
        "/api/run",
        &json!({ "source": broken, "entry": "f", "args": ["x=zeros(1)"] }),
    );
    assert_eq!(status, 200);
    assert_eq!(body["error"]["kind"], "compile");
    assert!(!body["diagnostics"].as_array().unwrap().is_empty());
}

#[test]
fn file_arguments_are_refused() {
    let (status, body) = post(
        "/api/run",
        &json!({ "source": SAXPY, "entry": "saxpy", "args": ["n=3", "a=2", "x=@/etc/passwd", "y=zeros(3)"] }),
    );
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("reads a file"));
}

#[test]
fn buffers_past_the_element_limit_are_refused() {
    let (status, body) = post(
        "/api/run",
        &json!({ "source": SAXPY, "entry": "saxpy", "args": ["n=3", "a=2", "x=zeros(20000000)", "y=zeros(3)"] }),
    );
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("at most"));
}

#[test]
fn compile_gives_every_stage_with_source_lines() {
    let (status, body) = post(
        "/api/compile",
        &json!({ "source": SAXPY, "target": "nyuzi" }),
    );
    assert_eq!(status, 200);
    assert!(body["tokens"].as_array().unwrap().len() > 30);
    assert!(body["ast"].as_str().unwrap().contains("foreach"));
    let passes = body["passes"].as_array().unwrap();
    assert_eq!(passes[0]["name"], "lower");
    assert!(passes.len() > 3);
    for target in ["nyuzi", "dac-gpu"] {
        let rows = body["asm"][target]["rows"].as_array().unwrap();
        assert!(
            rows.iter().any(|r| r["line"] == 3),
            "{target}: an instruction of line 3"
        );
    }
}

/// `switches.shuffle` is `--shuffle all`: a neighbour's load becomes a warp shuffle.
#[test]
fn the_shuffle_switch_reaches_the_back_end() {
    let source = "task void k(uniform float a[], uniform float b[]) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[i] + a[i + 1];
}
";
    let shfl = |shuffle: bool| {
        let (status, body) = post(
            "/api/compile",
            &json!({ "source": source, "target": "dac-gpu", "no_dac": true,
                     "switches": { "shuffle": shuffle } }),
        );
        assert_eq!(status, 200, "{body}");
        body["asm"]["dac-gpu"]
            .to_string()
            .matches("shfl.down")
            .count()
    };
    assert_eq!(shfl(false), 0);
    assert!(shfl(true) > 0);
}

/// `switches.unroll` is `--unroll`: a counted loop leaves no branch behind.
#[test]
fn the_unroll_switch_reaches_the_pipeline() {
    let source = "export void k(uniform float a[]) {
    float s = 0;
    for (uniform int j = 0; j < 4; j++)
        s += a[programIndex + j];
    a[programIndex] = s;
}
";
    let branches = |unroll: bool| {
        let (status, body) = post(
            "/api/compile",
            &json!({ "source": source, "target": "nyuzi",
                     "switches": { "unroll": unroll } }),
        );
        assert_eq!(status, 200, "{body}");
        let passes = body["passes"].as_array().expect("the IR after each pass");
        let ran = passes.iter().any(|p| p["name"] == "unroll");
        assert_eq!(ran, unroll, "{body}");
        let last = passes.last().expect("a pass")["ir"].as_str().unwrap();
        last.matches("brif").count()
    };
    assert!(branches(false) > 0);
    assert_eq!(branches(true), 0);
}

#[test]
fn run_gives_outputs_profile_and_trace() {
    let (status, body) = post(
        "/api/run",
        &json!({
            "source": SAXPY, "target": "nyuzi", "timing": true, "entry": "saxpy",
            "args": ["n=20", "a=2", "x=range(20)", "y=fill(20,1)"],
            "profile": true, "trace": { "gang": 0, "limit": 50 },
        }),
    );
    assert_eq!(status, 200, "{body}");
    let stats = &body["result"]["stats"];
    assert_eq!(
        body["profile"]["totals"]["instructions"],
        stats["dynamic_instructions"]
    );
    assert!(stats["cycles"].as_u64().unwrap() > 0);
    // The readable report, with the per-core and per-function tables.
    let text = body["stats_text"].as_str().unwrap();
    for part in [
        "Instructions",
        "Stalls",
        "Per core",
        "Per function",
        "saxpy",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let steps = body["trace"]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 50);
    assert_eq!(body["trace"]["truncated"], true);
}

#[test]
fn twenty_requests_at_once_all_get_answers() {
    let threads: Vec<_> = (0..20)
        .map(|i| {
            std::thread::spawn(move || {
                let n = i + 1;
                let target = ["interp", "nyuzi", "dac-gpu"][i % 3];
                post(
                    "/api/run",
                    &json!({
                        "source": SAXPY, "entry": "saxpy",
                        "target": target,
                        "args": [format!("n={n}"), "a=1", format!("x=range({n})"), format!("y=zeros({n})")],
                    }),
                )
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        let (status, body) = t.join().expect("a request thread");
        assert_eq!(status, 200, "{body}");
        let y = body["result"]["buffers"]["y"].as_array().unwrap();
        assert_eq!(y.len(), i + 1);
        assert_eq!(y[i], json!(i as f64));
    }
}

#[test]
fn the_page_and_its_assets_are_served() {
    let (status, page) = http("GET", "/", b"");
    assert_eq!(status, 200);
    assert!(page.contains("<script src=\"/app.js\">"));
    for asset in ["/app.js", "/style.css"] {
        assert_eq!(http("GET", asset, b"").0, 200, "{asset}");
    }
    assert_eq!(http("GET", "/nothing", b"").0, 404);
    let (_, examples) = http("GET", "/api/examples", b"");
    let examples: Value = serde_json::from_str(&examples).unwrap();
    assert!(examples
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "saxpy.spmd"));
}
