//! Issue 44, rows 3, 7, 12, 13 and 14, against a server on a loopback port: slow clients are
//! closed within the header time-out while normal requests answer at once, stalled bodies get
//! 408, answers over the response limit get 413, every error is JSON (axum's 405 and the 414
//! and 431 of long request lines and headers included), a pair the server does not serve is
//! 404, and API-key quotas count tokens while rejected requests cost nothing.
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use candle_core::{DType, Device};
use nmt::config::{ModelConfig, SearchConfig};
use nmt::data::subword::{Segmenter, SubwordConfig, SubwordKind};
use nmt::languages::Languages;
use nmt::model::Seq2Seq;
use nmt::model_file::{save, ModelMeta};
use nmt::translate::Translator;
use nmt_serve::{ApiKeys, AppState, Limits, ModelSet, ServedModel};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WORDS: &str = "a b c d e f g h i j k l m n o p q r s t";

/// A fresh en→es model saved and loaded as `nmt serve` loads it.
fn served(dir: &std::path::Path) -> Vec<ServedModel> {
    let sub = SubwordConfig { kind: SubwordKind::Word, vocab_size: 100, min_frequency: 1, model: None };
    let seg = Segmenter::train(&[WORDS.to_string()], &sub).unwrap();
    let mut cfg = ModelConfig::preset("tiny").unwrap();
    (cfg.src_vocab, cfg.tgt_vocab) = (seg.vocab_size(), seg.vocab_size());
    (cfg.emb_dim, cfg.hidden_dim, cfg.maxout_dim) = (8, 8, 8);
    cfg.arch = nmt::config::Arch::rnnsearch(8);
    let model = Seq2Seq::fresh(&cfg, 5, DType::F32, &Device::Cpu).unwrap();
    let languages = Some(Languages { src: "en".into(), tgt: "es".into() });
    let meta = ModelMeta {
        config: cfg,
        search: SearchConfig::default(),
        src: seg.clone(),
        tgt: seg,
        step: 0,
        languages,
        shortlist: None,
        converted_from: None,
    };
    let path = dir.join("m.safetensors");
    save(&path, &model, &meta).unwrap();
    vec![ServedModel { name: "m".into(), translator: Translator::load(&path, &Device::Cpu).unwrap() }]
}

struct Server {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    done: tokio::task::JoinHandle<Result<(), nmt_serve::ServeError>>,
}

async fn start(state: AppState) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(nmt_serve::serve(listener, state, async move {
        let _ = rx.await;
    }));
    Server { addr, stop, done }
}

/// One exchange of raw bytes: status, lowercased head, body.
async fn raw(addr: SocketAddr, bytes: &[u8]) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let _ = s.write_all(bytes).await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_lowercase(), body.to_string())
}

async fn post(addr: SocketAddr, path: &str, ctype: &str, body: &str) -> (u16, Value) {
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (status, _, text) = raw(addr, head.as_bytes()).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Asserts `status` and a JSON error whose message contains `needle`.
fn is_error(got: (u16, Value), status: u16, needle: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    let msg = got.1["error"].as_str().unwrap_or_else(|| panic!("not a JSON error: {}", got.1));
    assert!(msg.contains(needle), "{needle:?} not in {msg:?}");
}

/// 200 connections that send half a request's headers are closed within the header time-out,
/// while `/health` keeps answering in under a second; a stop does not wait for such clients.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_closed_and_others_answered() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { header_timeout: Duration::from_secs(2), ..Limits::default() };
    let srv = start(AppState::new(ModelSet::new(served(dir.path())).unwrap(), limits)).await;
    let began = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut s = TcpStream::connect(srv.addr).await.unwrap();
        s.write_all(b"POST /translate HTTP/1.1\r\nHost: localhost\r\nContent-Ty").await.unwrap();
        slow.push(s);
    }
    let t = Instant::now();
    let (status, _, _) = raw(srv.addr, b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await;
    assert_eq!(status, 200);
    assert!(t.elapsed() < Duration::from_secs(1), "/health took {:?} beside 200 slow clients", t.elapsed());
    for mut s in slow {
        let mut buf = [0u8; 256];
        // Closed (EOF or a reset), possibly after hyper's 408, within the time-out and a margin.
        let left = Duration::from_secs(5).saturating_sub(began.elapsed());
        match tokio::time::timeout(left, async {
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => continue,
                }
            }
        })
        .await
        {
            Ok(()) => {}
            Err(_) => panic!("a slow connection was still open after {:?}", began.elapsed()),
        }
    }
    // A stop with a slow client connected ends within the time-outs, not when the client leaves.
    let mut s = TcpStream::connect(srv.addr).await.unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHo").await.unwrap();
    let t = Instant::now();
    srv.stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), srv.done).await.expect("the stop waited on a slow client").unwrap().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    drop(s);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_errors_are_json() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { body_timeout: Duration::from_secs(1), max_response_bytes: 4000, max_sentences: 3, ..Limits::default() };
    let srv = start(AppState::new(ModelSet::new(served(dir.path())).unwrap(), limits)).await;
    let a = srv.addr;
    let j = "application/json";
    // A stalled body: 408 within the body time-out.
    let t = Instant::now();
    let (status, _, body) =
        raw(a, b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"q\"").await;
    assert_eq!(status, 408, "{body}");
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string());
    // Row 7: an answer over the response limit is 413, naming the limit, before translating.
    let long = "a b c d e f g h i j ".repeat(5);
    let req = format!("{{\"text\": [\"{long}\"], \"n_best\": 8, \"beam_size\": 8, \"alignments\": true}}");
    is_error(post(a, "/api/v1/translate", j, &req).await, 413, "response limit");
    assert_eq!(post(a, "/api/v1/translate", j, r#"{"text": ["a b"]}"#).await.0, 200);
    // `/detect` honours --max-sentences.
    is_error(post(a, "/detect", j, r#"{"q": ["a", "b", "c", "d"]}"#).await, 400, "at most 3");
    // Row 13: a pair this en→es model does not serve.
    is_error(post(a, "/translate", j, r#"{"q": "a", "source": "xx", "target": "zz"}"#).await, 404, "xx to zz");
    is_error(post(a, "/translate", j, r#"{"q": "a", "source": "es", "target": "en"}"#).await, 404, "es to en");
    assert_eq!(post(a, "/translate", j, r#"{"q": "a", "source": "auto", "target": "es"}"#).await.0, 200);
    // Row 11: an empty or blank sentence is an empty translation.
    let (status, v) = post(a, "/translate", j, r#"{"q": ["", "  "], "source": "en", "target": "es"}"#).await;
    assert_eq!((status, v["translatedText"].clone()), (200, serde_json::json!(["", ""])), "{v}");
    // Row 12: clear messages.
    is_error(
        post(a, "/translate", j, r#"{"q": "a", "source": "en", "target": "es", "alternatives": 18446744073709551615}"#).await,
        400,
        "alternatives",
    );
    is_error(post(a, "/translate", "multipart/form-data; boundary=x", "--x--").await, 400, "multipart");
    let form = post(a, "/translate", "Application/X-WWW-Form-URLencoded", "q=a+b&source=en&target=es").await;
    assert_eq!(form.0, 200, "{}", form.1);
    // 405, 414, 431: JSON like every other error.
    let (status, head, body) = raw(a, b"GET /translate HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").await;
    assert_eq!(status, 405);
    assert!(head.contains("application/json") && serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(), "{body}");
    let uri = format!("GET /health?{} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "x".repeat(10_000));
    let (status, _, body) = raw(a, uri.as_bytes()).await;
    assert_eq!(status, 414);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(), "{body}");
    let big = format!("GET /health HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\nConnection: close\r\n\r\n", "y".repeat(40_000));
    let (status, _, body) = raw(a, big.as_bytes()).await;
    assert_eq!(status, 431);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string(), "{body}");
}

/// Row 14: a rejected request costs nothing, and a key's tokens per minute are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_count_tokens_and_rejected_requests_cost_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let keys = ApiKeys::parse("two 2\ntok 100 5\n", "keys.txt").unwrap();
    let srv = start(AppState::new(ModelSet::new(served(dir.path())).unwrap(), Limits::default()).with_api_keys(keys)).await;
    let (a, j) = (srv.addr, "application/json");
    for _ in 0..3 {
        is_error(post(a, "/api/v1/translate", j, r#"{"text": [], "api_key": "two"}"#).await, 400, "no text");
    }
    for _ in 0..2 {
        assert_eq!(post(a, "/api/v1/translate", j, r#"{"text": ["a"], "api_key": "two"}"#).await.0, 200);
    }
    is_error(post(a, "/api/v1/translate", j, r#"{"text": ["a"], "api_key": "two"}"#).await, 429, "2 requests");
    // Three tokens, then three more: over five a minute.
    assert_eq!(post(a, "/api/v1/translate", j, r#"{"text": ["a b c"], "api_key": "tok"}"#).await.0, 200);
    is_error(post(a, "/api/v1/translate", j, r#"{"text": ["a b c"], "api_key": "tok"}"#).await, 429, "5 tokens");
    assert_eq!(post(a, "/api/v1/translate", j, r#"{"text": ["a"], "api_key": "tok"}"#).await.0, 200);
}
