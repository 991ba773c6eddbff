//! Load test of a running `nmt serve` on 127.0.0.1 (issue "nmt serve"): `--clients` concurrent
//! clients each send `--requests` requests of 1–3 sentences (drawn in turn from `--sentences`),
//! then one client sends `--baseline` of the same sentences one at a time. Prints one JSON
//! line: requests, errors by kind, p50/p99 latency, sentences/s of both, and their ratio.
//!
//!     cargo run --release -p nmt-serve --example loadtest -- --port 8080 --sentences test.en \
//!         [--clients 64] [--requests 200] [--baseline 400] [--beam 5]
//!
//! Errors are counted by kind: `http` (a status other than 200), `refused` (no connection: the
//! server had stopped accepting), `broken` (a connection that closed or failed before a whole
//! response arrived: what a graceful stop must never cause). HTTP is spoken by hand over a
//! `TcpStream`, one connection per request.
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Ok,
    Http(u16),
    Refused,
    Broken,
}

async fn translate(addr: SocketAddr, texts: &[String], beam: usize) -> Outcome {
    let body = serde_json::json!({ "text": texts, "beam_size": beam }).to_string();
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else { return Outcome::Refused };
    let head = format!(
        "POST /api/v1/translate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if s.write_all(head.as_bytes()).await.is_err() || s.write_all(body.as_bytes()).await.is_err() {
        return Outcome::Broken;
    }
    let mut out = Vec::new();
    if s.read_to_end(&mut out).await.is_err() {
        return Outcome::Broken;
    }
    let text = String::from_utf8_lossy(&out);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return Outcome::Broken };
    let status: u16 = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    // A whole response: its declared length arrived.
    let declared =
        head.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").and_then(|v| v.trim().parse::<usize>().ok()));
    if declared.is_some_and(|n| n != body.len()) {
        return Outcome::Broken;
    }
    if status == 200 {
        Outcome::Ok
    } else {
        Outcome::Http(status)
    }
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = arg(&args, "--port", "8080").parse()?;
    let clients: usize = arg(&args, "--clients", "64").parse()?;
    let requests: usize = arg(&args, "--requests", "200").parse()?;
    let baseline: usize = arg(&args, "--baseline", "400").parse()?;
    let beam: usize = arg(&args, "--beam", "5").parse()?;
    let file = arg(&args, "--sentences", "");
    let sentences: Arc<Vec<String>> =
        Arc::new(std::fs::read_to_string(&file)?.lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect());
    if sentences.is_empty() {
        return Err(format!("no sentences in {file:?}").into());
    }
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let sentences = sentences.clone();
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(requests);
            for r in 0..requests {
                // 1–3 sentences, taken in turn so that clients send different ones.
                let k = 1 + (c + r) % 3;
                let start = (c * requests + r) * 2 % sentences.len();
                let texts: Vec<String> = (0..k).map(|i| sentences[(start + i) % sentences.len()].clone()).collect();
                let t = Instant::now();
                let o = translate(addr, &texts, beam).await;
                out.push((o, t.elapsed().as_secs_f64(), k));
            }
            out
        }));
    }
    let mut results = Vec::new();
    for t in tasks {
        results.extend(t.await?);
    }
    let wall = t0.elapsed().as_secs_f64();
    let count = |f: &dyn Fn(Outcome) -> bool| results.iter().filter(|r| f(r.0)).count();
    let ok_sentences: usize = results.iter().filter(|r| r.0 == Outcome::Ok).map(|r| r.2).sum();
    let mut lat: Vec<f64> = results.iter().filter(|r| r.0 == Outcome::Ok).map(|r| r.1 * 1000.0).collect();
    lat.sort_by(f64::total_cmp);
    // One client, one sentence per request, the same sentences.
    let t1 = Instant::now();
    let mut base_ok = 0usize;
    for i in 0..baseline {
        if translate(addr, std::slice::from_ref(&sentences[i * 2 % sentences.len()]), beam).await == Outcome::Ok {
            base_ok += 1;
        }
    }
    let base_wall = t1.elapsed().as_secs_f64().max(1e-9);
    let (rate, base_rate) = (ok_sentences as f64 / wall, base_ok as f64 / base_wall);
    let report = serde_json::json!({
        "clients": clients,
        "requests": results.len(),
        "ok": count(&|o| o == Outcome::Ok),
        "http_errors": count(&|o| matches!(o, Outcome::Http(_))),
        "refused": count(&|o| o == Outcome::Refused),
        "broken": count(&|o| o == Outcome::Broken),
        "sentences": ok_sentences,
        "wall_s": wall,
        "p50_ms": percentile(&lat, 0.5),
        "p99_ms": percentile(&lat, 0.99),
        "sentences_per_s": rate,
        "baseline_sentences": base_ok,
        "baseline_sentences_per_s": if baseline > 0 { base_rate } else { f64::NAN },
        "batching_speedup": if baseline > 0 { rate / base_rate } else { f64::NAN },
    });
    println!("{report}");
    Ok(())
}
