//! The server's APIs on a random loopback port: both endpoints (a LibreTranslate body as its
//! clients send it, JSON and form), every bad-input case with its status, a full queue, a
//! timeout, the server still answering afterwards, and a graceful stop with a request in
//! flight. HTTP is spoken by hand over a `TcpStream`, so the test needs no client library.
use std::net::SocketAddr;
use std::time::Duration;

use candle_core::{DType, Device};
use nmt::config::{ModelConfig, SearchConfig};
use nmt::data::subword::{Segmenter, SubwordConfig, SubwordKind};
use nmt::languages::Languages;
use nmt::model::Seq2Seq;
use nmt::model_file::{save, ModelMeta};
use nmt::translate::Translator;
use nmt_serve::{ApiKeys, AppState, Limits, ModelSet, ServedModel};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WORDS: &str = "a b c d e f g h i j k l m n o p q r s t";

/// A fresh model saved and loaded as `nmt serve` loads it; `size` sets its width (a wide one
/// with random weights decodes slowly: it rarely ends a hypothesis early).
fn translator(dir: &std::path::Path, name: &str, size: usize) -> Translator {
    translator_in(dir, name, size, None)
}

/// [`translator`] whose model file stores the language pair `langs`.
fn translator_in(dir: &std::path::Path, name: &str, size: usize, langs: Option<(&str, &str)>) -> Translator {
    let sub = SubwordConfig { kind: SubwordKind::Word, vocab_size: 100, min_frequency: 1, model: None };
    let seg = Segmenter::train(&[WORDS.to_string()], &sub).unwrap();
    let mut cfg = ModelConfig::preset("tiny").unwrap();
    (cfg.src_vocab, cfg.tgt_vocab) = (seg.vocab_size(), seg.vocab_size());
    (cfg.emb_dim, cfg.hidden_dim, cfg.maxout_dim) = (size, size, size);
    cfg.arch = nmt::config::Arch::rnnsearch(size);
    let model = Seq2Seq::fresh(&cfg, 5, DType::F32, &Device::Cpu).unwrap();
    let languages = langs.map(|(s, t)| Languages { src: s.into(), tgt: t.into() });
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
    let path = dir.join(format!("{name}.safetensors"));
    save(&path, &model, &meta).unwrap();
    Translator::load(&path, &Device::Cpu).unwrap()
}

struct Server {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<Result<(), nmt_serve::ServeError>>,
}

async fn start(models: Vec<ServedModel>, limits: Limits) -> Server {
    start_with(AppState::new(ModelSet::new(models).unwrap(), limits)).await
}

async fn start_with(state: AppState) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let done = tokio::spawn(nmt_serve::serve(listener, state, async move {
        let _ = rx.await;
    }));
    Server { addr, stop: Some(tx), done }
}

/// One HTTP/1.1 exchange: status, headers (lowercased names), body.
async fn request(addr: SocketAddr, method: &str, path: &str, ctype: &str, body: &[u8]) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    // A server may answer (413) before reading all of a large body.
    let _ = s.write_all(body).await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, head.to_lowercase(), body.to_string())
}

async fn post_json(addr: SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let (status, _, text) = request(addr, "POST", path, "application/json", body.to_string().as_bytes()).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Asserts `status` and a JSON `{"error": …}` body.
async fn bad(addr: SocketAddr, path: &str, ctype: &str, body: &[u8], want: u16) -> String {
    let (status, head, text) = request(addr, "POST", path, ctype, body).await;
    assert_eq!(status, want, "{path} {}: {text}", String::from_utf8_lossy(&body[..body.len().min(80)]));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text}"));
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{text}");
    head
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_apis_every_bad_input_and_a_clean_stop() {
    let dir = tempfile::tempdir().unwrap();
    let direct = translator(dir.path(), "direct", 8);
    let models = vec![
        ServedModel { name: "en-es".into(), translator: translator(dir.path(), "a", 8) },
        ServedModel { name: "fr-es".into(), translator: translator(dir.path(), "b", 8) },
    ];
    let limits = Limits { max_body_bytes: 4096, max_sentences: 4, max_tokens: 12, max_beam: 8, ..Limits::default() };
    let srv = start(models, limits).await;
    let a = srv.addr;

    let (status, _, health) = request(a, "GET", "/health", "text/plain", b"").await;
    assert_eq!(status, 200, "{health}");
    let (status, _, models) = request(a, "GET", "/api/v1/models", "text/plain", b"").await;
    let models: Value = serde_json::from_str(&models).unwrap();
    assert_eq!(
        (status, models["models"][0]["name"].as_str(), models["models"][0]["attention"].as_bool()),
        (200, Some("en-es"), Some(true))
    );
    let (_, _, langs) = request(a, "GET", "/languages", "text/plain", b"").await;
    assert!(langs.contains("\"code\":\"en\"") && langs.contains("\"targets\":[\"es\"]"), "{langs}");
    let (_, _, page) = request(a, "GET", "/", "text/plain", b"").await;
    assert!(page.contains("id=\"heatmap") || page.contains("heatmap-"), "the page");

    // LibreTranslate: JSON, a list, a form as libretranslate-py sends it, alternatives.
    let want = direct
        .translate(
            &["a b c".to_string()],
            &nmt::search::SearchOptions {
                cfg: SearchConfig { n_best: 1, ..SearchConfig::default() },
                alignments: false,
                imp: Default::default(),
            },
        )
        .unwrap();
    let (status, v) = post_json(a, "/translate", &json!({"q": "a b c", "source": "en", "target": "es"})).await;
    assert_eq!((status, v["translatedText"].as_str()), (200, Some(want[0].hyps[0].text.as_str())), "{v}");
    let (status, v) =
        post_json(a, "/translate", &json!({"q": ["a b", "c d e", ""], "source": "en", "target": "es", "format": "text"})).await;
    assert_eq!((status, v["translatedText"].as_array().map(Vec::len)), (200, Some(3)), "{v}");
    let (status, _, text) =
        request(a, "POST", "/translate", "application/x-www-form-urlencoded", b"q=a+b+c&source=en&target=es&api_key=").await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["translatedText"].as_str(), Some(want[0].hyps[0].text.as_str()));
    let (_, v) = post_json(a, "/translate", &json!({"q": "a b c", "source": "en", "target": "es", "alternatives": 2})).await;
    assert!(v["alternatives"].as_array().is_some_and(|x| x.len() <= 2), "{v}");

    // The full API: n-best lists, scores, tokens, alignments shaped target × source.
    let (status, v) = post_json(
        a,
        "/api/v1/translate",
        &json!({"text": ["a b c d", "e"], "model": "fr-es", "beam_size": 4, "n_best": 3, "alignments": true}),
    )
    .await;
    assert_eq!((status, v["model"].as_str()), (200, Some("fr-es")), "{v}");
    for s in v["translations"].as_array().unwrap() {
        let cols = s["source_tokens"].as_array().unwrap().len();
        let hyps = s["hypotheses"].as_array().unwrap();
        assert_eq!(hyps.len(), 3);
        for h in hyps {
            let al = h["alignment"].as_array().unwrap();
            assert_eq!(al.len(), h["target_tokens"].as_array().unwrap().len());
            assert!(al.iter().all(|r| r.as_array().unwrap().len() == cols));
            assert!(h["score"].as_f64().is_some() && h["log_prob"].as_f64().unwrap() < 0.0);
        }
    }

    // Bad input, each with its status and a JSON error.
    let j = "application/json";
    for (path, body, status) in [
        ("/api/v1/translate", &b"{\"text\": [\"a\""[..], 400),
        ("/api/v1/translate", b"{\"text\": 3}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a\"], \"beam\": 3}", 400),
        ("/api/v1/translate", b"{\"text\": []}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a b c d e f g h i j k l m n\"]}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a\"], \"beam_size\": 0}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a\"], \"beam_size\": 9}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a\"], \"normalize\": -1}", 400),
        ("/api/v1/translate", b"{\"text\": [\"a\"], \"model\": \"xx\"}", 404),
        ("/translate", b"{\"q\": \"a\", \"source\": \"de\", \"target\": \"es\"}", 404),
        ("/translate", b"{\"q\": 7, \"source\": \"en\", \"target\": \"es\"}", 400),
        ("/translate", b"\xff\xfe", 400),
        ("/nowhere", b"{}", 404),
    ] {
        bad(a, path, j, body, status).await;
    }
    bad(a, "/translate", "application/x-www-form-urlencoded", b"q=a&source=en", 400).await;
    let big = format!("{{\"text\": [\"{}\"]}}", "a ".repeat(5000));
    bad(a, "/api/v1/translate", j, big.as_bytes(), 413).await;
    // Still answering.
    let (status, _) = post_json(a, "/api/v1/translate", &json!({"text": ["a"]})).await;
    assert_eq!(status, 200);

    let _ = srv.stop.map(|s| s.send(()));
    srv.done.await.unwrap().unwrap();
    assert!(tokio::net::TcpStream::connect(a).await.is_err(), "stopped servers refuse connections");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn full_queue_timeout_and_stop_with_requests_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    // Wide random models decode to the length limit: a long sentence at beam 32 keeps the
    // translator busy for a while.
    let slow = || ServedModel { name: "en-es".into(), translator: translator(dir.path(), "slow", 96) };
    let long = vec![WORDS.repeat(4)];
    let slow_body = json!({"text": long, "beam_size": 32});
    let limits = Limits { queue_capacity: 1, max_batch: 1, max_wait: Duration::ZERO, max_tokens: 200, ..Limits::default() };
    let srv = start(vec![slow()], limits).await;
    let a = srv.addr;
    // Many at once against a queue of one: some are turned away with 503 and Retry-After.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let body = slow_body.to_string();
        tasks.push(tokio::spawn(async move { request(a, "POST", "/api/v1/translate", "application/json", body.as_bytes()).await }));
    }
    let mut codes = Vec::new();
    for t in tasks {
        let (status, head, _) = t.await.unwrap();
        if status == 503 {
            assert!(head.contains("retry-after: 1"), "{head}");
        }
        codes.push(status);
    }
    assert!(codes.contains(&200) && codes.contains(&503), "{codes:?}");
    // A stop while a request is in flight: it still gets its translation.
    let body = slow_body.to_string();
    let inflight = tokio::spawn(async move { request(a, "POST", "/api/v1/translate", "application/json", body.as_bytes()).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = srv.stop.map(|s| s.send(()));
    let (status, _, text) = inflight.await.unwrap();
    assert_eq!(status, 200, "{text}");
    srv.done.await.unwrap().unwrap();

    // A time limit shorter than the work: 504, and the server goes on. 1 ms: the work (about 190
    // steps at beam 32) took under 20 ms in 4 runs of 12 on a 2-core Zen 4 (2026-11-29), which
    // answered 200 to the 20 ms limit this test had.
    let limits = Limits { timeout: Duration::from_millis(1), max_tokens: 200, ..Limits::default() };
    let srv = start(vec![slow()], limits).await;
    let (status, v) = post_json(srv.addr, "/api/v1/translate", &slow_body).await;
    assert_eq!(status, 504, "{v}");
    let (status, _, _) = request(srv.addr, "GET", "/health", "text/plain", b"").await;
    assert_eq!(status, 200);
    let _ = srv.stop.map(|s| s.send(()));
    srv.done.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn languages_from_the_model_file_keys_limits_and_detect() {
    let dir = tempfile::tempdir().unwrap();
    // No name declares the pair: the model file does (as `nmt train` stores it).
    let models = vec![ServedModel { name: "q2-search".into(), translator: translator_in(dir.path(), "m", 8, Some(("en", "es"))) }];
    let keys = ApiKeys::parse("open\nlimited 2\n", "keys").unwrap();
    let srv = start_with(AppState::new(ModelSet::new(models).unwrap(), Limits::default()).with_api_keys(keys)).await;
    let a = srv.addr;
    let (status, _, langs) = request(a, "GET", "/languages", "text/plain", b"").await;
    let langs: Value = serde_json::from_str(&langs).unwrap();
    assert_eq!(status, 200);
    assert_eq!(langs, json!([{"code": "en", "name": "English", "targets": ["es"]}, {"code": "es", "name": "Spanish", "targets": []}]));
    let (_, _, models) = request(a, "GET", "/api/v1/models", "text/plain", b"").await;
    let models: Value = serde_json::from_str(&models).unwrap();
    assert_eq!(
        (models["models"][0]["source_language"].as_str(), models["models"][0]["target_language"].as_str()),
        (Some("en"), Some("es"))
    );

    // Keys: none, a wrong one, an unlimited one, a limited one past its limit.
    let j = "application/json";
    bad(a, "/translate", j, br#"{"q": "a", "source": "en", "target": "es"}"#, 403).await;
    bad(a, "/translate", j, br#"{"q": "a", "source": "en", "target": "es", "api_key": "wrong"}"#, 403).await;
    bad(a, "/api/v1/translate", j, br#"{"text": ["a"]}"#, 403).await;
    bad(a, "/detect", j, br#"{"q": "a"}"#, 403).await;
    for _ in 0..3 {
        let (status, v) = post_json(a, "/translate", &json!({"q": "a b", "source": "en", "target": "es", "api_key": "open"})).await;
        assert_eq!(status, 200, "{v}");
    }
    for _ in 0..2 {
        let (status, v) = post_json(a, "/api/v1/translate", &json!({"text": ["a"], "api_key": "limited"})).await;
        assert_eq!(status, 200, "{v}");
    }
    let head = bad(a, "/translate", j, br#"{"q": "a", "source": "en", "target": "es", "api_key": "limited"}"#, 429).await;
    let wait: u64 = head.split("retry-after: ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|n| n.parse().ok()).unwrap();
    assert!((1..=60).contains(&wait), "{head}");
    // A form, as LibreTranslate's clients send it, with its key.
    let (status, _, text) =
        request(a, "POST", "/translate", "application/x-www-form-urlencoded", b"q=a+b&source=auto&target=es&api_key=open").await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["detectedLanguage"]["language"].as_str(), Some("en"));

    // Detect: the one source language served.
    let (status, v) = post_json(a, "/detect", &json!({"q": "a b c", "api_key": "open"})).await;
    assert_eq!((status, v), (200, json!([{"confidence": 100.0, "language": "en"}])));
    let (status, v) = post_json(a, "/detect", &json!({"q": ["a", "b"], "api_key": "open"})).await;
    assert_eq!((status, v.as_array().map(Vec::len)), (200, Some(2)));
    let _ = srv.stop.map(|s| s.send(()));
    srv.done.await.unwrap().unwrap();

    // Two source languages: detection cannot choose, and says so; no keys, so open.
    let models = vec![
        ServedModel { name: "en-es".into(), translator: translator(dir.path(), "a", 8) },
        ServedModel { name: "fr-es".into(), translator: translator(dir.path(), "b", 8) },
    ];
    let srv = start(models, Limits::default()).await;
    let msg = bad(srv.addr, "/detect", j, br#"{"q": "a"}"#, 400).await;
    assert!(!msg.is_empty());
    let (status, _) = post_json(srv.addr, "/translate", &json!({"q": "a", "source": "fr", "target": "es"})).await;
    assert_eq!(status, 200);
    let _ = srv.stop.map(|s| s.send(()));
    srv.done.await.unwrap().unwrap();
}
