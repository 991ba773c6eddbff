//! `nmt serve -m [NAME=]MODEL[,MODEL…] …`: the translation server (`nmt_serve`).
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use nmt::translate::Translator;
use nmt_serve::{ApiKeys, AppState, Limits, ModelSet, ServedModel};

use super::common::ComputeArgs;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// A model to serve, as `[NAME=]PATH[,PATH…]`: several paths form an ensemble. NAME
    /// defaults to the model's directory name; `xx-yy` names declare the language pair
    /// LibreTranslate requests ask for. Repeat for several models; the first is the default.
    #[arg(short, long, required = true, value_name = "[NAME=]PATH")]
    pub model: Vec<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// 0 picks a free port (printed at start).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// Largest request body, in bytes.
    #[arg(long, default_value_t = Limits::default().max_body_bytes)]
    pub max_body_bytes: usize,
    /// Most sentences per request.
    #[arg(long, default_value_t = Limits::default().max_sentences)]
    pub max_sentences: usize,
    /// Most source tokens per sentence.
    #[arg(long, default_value_t = Limits::default().max_tokens)]
    pub max_tokens: usize,
    /// Largest beam (and n-best list) a request may ask for; at most 128 (`nmt::config::MAX_BEAM`).
    #[arg(long, default_value_t = Limits::default().max_beam, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=nmt::config::MAX_BEAM as u64))]
    pub max_beam: usize,
    /// Seconds a request may take, queueing included (at most a day).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = seconds)]
    pub timeout: Duration,
    /// Seconds a client may take to send a request's headers, or stay idle between requests;
    /// the connection is closed after it.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = seconds)]
    pub header_timeout: Duration,
    /// Seconds a client may take to send a request's body (408 after it).
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = seconds)]
    pub body_timeout: Duration,
    /// Largest response body, in bytes: a request whose answer would be larger gets 413.
    #[arg(long, default_value_t = Limits::default().max_response_bytes)]
    pub max_response_bytes: usize,
    /// Requests that may wait in the queue (beyond: 503 with Retry-After).
    #[arg(long, default_value_t = Limits::default().queue_capacity)]
    pub queue: usize,
    /// Sentences decoded together at most.
    #[arg(long, default_value_t = Limits::default().max_batch)]
    pub max_batch: usize,
    /// Require API keys, as LibreTranslate does: one key per line, optionally followed by its
    /// limit in requests per minute (`KEY 60`). Without it the server is open to everyone.
    #[arg(long, value_name = "FILE")]
    pub api_keys: Option<PathBuf>,
    /// Milliseconds a sentence waits for others to batch with (at most 10 000).
    #[arg(long, value_name = "MS", default_value = "5", value_parser = milliseconds)]
    pub max_wait_ms: Duration,
    /// Score only each model file's lexical shortlist (`nmt shortlist`; Marian's `--shortlist`).
    #[arg(long)]
    pub shortlist: bool,
    /// Multiply in int8 (Marian's `--gemm-type packed8`); int8 model files (`nmt quantize`)
    /// do by default.
    #[arg(long)]
    pub int8: bool,
    #[command(flatten)]
    pub compute: ComputeArgs,
}

/// `--timeout` and the other durations in seconds, checked when the flags are parsed: a value
/// too large for the clock (`1e300`) is an error, not a panic (issue 44, row 8).
fn seconds(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number of seconds"))?;
    nmt_serve::config::checked_duration(v, nmt_serve::config::MAX_TIMEOUT_S, false, "the time-out")
}

/// `--max-wait-ms`, checked as [`seconds`].
fn milliseconds(s: &str) -> std::result::Result<Duration, String> {
    let v: f64 = s.parse().map_err(|_| format!("{s:?} is not a number of milliseconds"))?;
    nmt_serve::config::checked_duration(v / 1000.0, nmt_serve::config::MAX_WAIT_MS / 1000.0, true, "the wait (in seconds)")
}

/// A model's name with its languages, for the start-up line (`en-es (English → Spanish)`).
fn describe(m: &ServedModel) -> String {
    let name = |c: &str| nmt::languages::english_name(c).unwrap_or(c).to_owned();
    match m.languages() {
        Some((s, t)) => format!("{} ({} → {})", m.name, name(s), name(t)),
        None => format!("{} (languages unknown: name it xx-yy=…)", m.name),
    }
}

/// `[NAME=]PATH[,PATH…]` → the name and the paths.
fn parse_model(spec: &str) -> Result<(String, Vec<PathBuf>)> {
    let (name, paths) = match spec.split_once('=') {
        Some((n, p)) => (Some(n.to_string()), p),
        None => (None, spec),
    };
    let paths: Vec<PathBuf> = paths.split(',').filter(|p| !p.is_empty()).map(PathBuf::from).collect();
    let Some(first) = paths.first() else { bail!("--model {spec:?} names no file") };
    let dir = first.parent().and_then(Path::file_name).map(|d| d.to_string_lossy().to_string());
    let stem = first.file_stem().map(|d| d.to_string_lossy().to_string()).unwrap_or_else(|| "model".into());
    Ok((name.or(dir).unwrap_or(stem), paths))
}

pub fn run(a: ServeArgs) -> Result<()> {
    let device = a.compute.setup()?;
    let mut served = Vec::new();
    for spec in &a.model {
        let (name, paths) = parse_model(spec)?;
        let refs: Vec<&Path> = paths.iter().map(|p| p.as_path()).collect();
        let mut translator = Translator::load_ensemble(&refs, &device).with_context(|| format!("cannot load model {name:?}"))?;
        if a.shortlist && !translator.searcher.has_shortlist() {
            bail!("--shortlist: model {name:?} has no lexical shortlist (add one with `nmt shortlist`)");
        }
        translator.meta.search.shortlist |= a.shortlist;
        translator.meta.search.int8 |= a.int8;
        served.push(ServedModel { name, translator });
    }
    let limits = Limits {
        max_body_bytes: a.max_body_bytes,
        max_sentences: a.max_sentences,
        max_tokens: a.max_tokens,
        max_beam: a.max_beam,
        timeout: a.timeout,
        queue_capacity: a.queue,
        max_batch: a.max_batch,
        max_wait: a.max_wait_ms,
        header_timeout: a.header_timeout,
        body_timeout: a.body_timeout,
        max_response_bytes: a.max_response_bytes,
    };
    let keys = match &a.api_keys {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            Some(ApiKeys::parse(&text, &path.display().to_string())?)
        }
        None => None,
    };
    let models = ModelSet::new(served)?;
    let names: Vec<String> = models.all().iter().map(describe).collect();
    let open = keys.is_none();
    let mut state = AppState::new(models, limits);
    if let Some(k) = keys {
        eprintln!("nmt serve: {} API keys; requests without a valid api_key get 403", k.len());
        state = state.with_api_keys(k);
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let addr = format!("{}:{}", a.host, a.port);
        let listener = tokio::net::TcpListener::bind(&addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        eprintln!("nmt serve: http://{local}/ (models: {})", names.join(", "));
        if open && !local.ip().is_loopback() {
            eprintln!("nmt serve: warning: listening on {} without --api-keys: anyone who can reach this port can translate", local.ip());
        }
        nmt_serve::serve(listener, state, nmt_serve::shutdown_signal()).await?;
        eprintln!("nmt serve: stopped");
        anyhow::Ok(())
    })
}
