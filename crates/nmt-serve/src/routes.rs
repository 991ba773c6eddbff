//! The HTTP handlers. Bodies are read here, under the size limit, and parsed by hand so that
//! every bad input gets a JSON error with the right status (axum's own extractors answer some
//! with plain text), and nothing a client sends can panic the server.
use std::sync::Arc;

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use nmt::languages::english_name;
use nmt::search::SearchOptions;
use nmt::translate::Translation;
use serde_json::json;
use tokio::sync::oneshot;

use crate::api::{
    check_count, check_sentences, parse_body, response_bound, search_config, sentence_out, DetectRequest, FullRequest, FullResponse,
    LibreRequest, OneOrMany,
};
use crate::batcher::Job;
use crate::error::ApiError;
use crate::AppState;

static PAGE: &str = include_str!("../assets/index.html");

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route("/health", get(health))
        .route("/languages", get(languages))
        .route("/api/v1/models", get(models))
        .route("/translate", post(libre_translate))
        .route("/detect", post(detect))
        .route("/api/v1/translate", post(full_translate))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .layer(axum::middleware::from_fn(crate::json_errors::json_errors))
        .with_state(state)
}

async fn health(State(s): State<Arc<AppState>>) -> Json<serde_json::Value> {
    use std::sync::atomic::Ordering::Relaxed;
    let st = &s.batcher.stats;
    Json(json!({
        "status": "ok",
        "models": s.models.all().iter().map(|m| m.name.clone()).collect::<Vec<_>>(),
        "requests": st.requests.load(Relaxed),
        "batches": st.batches.load(Relaxed),
        "sentences": st.sentences.load(Relaxed),
    }))
}

async fn models(State(s): State<Arc<AppState>>) -> Json<serde_json::Value> {
    Json(json!({ "models": s.models.info() }))
}

/// LibreTranslate's `GET /languages`: every language that is a source or a target, with its
/// English name and the languages it translates to.
async fn languages(State(s): State<Arc<AppState>>) -> Json<serde_json::Value> {
    let langs = s.models.language_targets().into_iter().map(|(code, targets)| {
        let name = english_name(&code).unwrap_or(code.as_str()).to_owned();
        json!({ "code": code, "name": name, "targets": targets })
    });
    Json(serde_json::Value::Array(langs.collect()))
}

/// LibreTranslate's `POST /detect`: this server detects nothing, but when its models share one
/// source language that is the answer (confidence 100), so clients that detect first work.
async fn detect(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    match detected(&s, &headers, body).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn detected(s: &AppState, headers: &HeaderMap, body: Body) -> Result<serde_json::Value, ApiError> {
    let bytes = read_body(body, &s.limits).await?;
    let req: DetectRequest = parse_body(content_type(headers), &bytes)?;
    s.authorize(req.api_key.as_deref())?;
    check_count(if let OneOrMany::Many(v) = &req.q { v.len() } else { 1 }, &s.limits)?;
    let one = match s.models.source_languages().as_slice() {
        [one] => json!([{ "confidence": 100.0, "language": one }]),
        [] => return Err(ApiError::bad_request("no served model declares its source language (serve it as xx-yy=MODEL)")),
        many => {
            return Err(ApiError::bad_request(format!("cannot detect among the source languages {}: name the source", many.join(", "))))
        }
    };
    s.charge(req.api_key.as_deref(), 0)?;
    Ok(match req.q {
        OneOrMany::One(_) => one,
        OneOrMany::Many(v) => json!(vec![one; v.len()]),
    })
}

/// The body, at most `max_body_bytes` (413 beyond), within `body_timeout` (408 after it).
async fn read_body(body: Body, limits: &crate::Limits) -> Result<Bytes, ApiError> {
    let limit = limits.max_body_bytes;
    let read = tokio::time::timeout(limits.body_timeout, to_bytes(body, limit));
    let read = read.await.map_err(|_| ApiError::body_timeout(limits.body_timeout.as_secs_f64()))?;
    read.map_err(|e| {
        let too_long = std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        if too_long {
            ApiError::too_large(limit)
        } else {
            ApiError::bad_request(format!("cannot read the request body: {e}"))
        }
    })
}

/// Counts the sentences' tokens against the limits on a blocking thread: segmenting a 1 MB
/// body takes long enough to hold up the request threads (and `/health`). Returns the texts
/// back with each one's count.
async fn count_tokens(s: &AppState, model: usize, texts: Vec<String>) -> Result<(Vec<String>, Vec<usize>), ApiError> {
    let (models, limits) = (s.models.clone(), s.limits.clone());
    let count = move || {
        let seg = &models.all()[model].translator.meta.src;
        check_sentences(&texts, &limits, |t| seg.encode(t).len()).map(|n| (texts, n))
    };
    tokio::task::spawn_blocking(count).await.map_err(|e| ApiError::internal(format!("counting tokens failed: {e}")))?
}

/// Refuses a request whose answer could exceed `max_response_bytes` (413) before translating.
fn check_response_bound(
    s: &AppState,
    counts: &[usize],
    texts: &[String],
    cfg: &nmt::config::SearchConfig,
    alignments: bool,
) -> Result<(), ApiError> {
    let bytes: usize = texts.iter().map(String::len).sum();
    let bound = response_bound(counts, bytes, cfg, alignments);
    match bound > s.limits.max_response_bytes {
        true => Err(ApiError::response_too_large(bound, s.limits.max_response_bytes)),
        false => Ok(()),
    }
}

/// A JSON response, or 413 when it is larger than `max_response_bytes` after all.
fn json_response(s: &AppState, v: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(v) {
        Ok(bytes) if bytes.len() > s.limits.max_response_bytes => {
            ApiError::response_too_large(bytes.len(), s.limits.max_response_bytes).into_response()
        }
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => ApiError::internal(format!("cannot serialise the response: {e}")).into_response(),
    }
}

/// Queues the sentences and waits for their translations (under the time limit).
async fn translate(s: &AppState, model: usize, opts: SearchOptions, sentences: Vec<String>) -> Result<Vec<Translation>, ApiError> {
    let (reply, rx) = oneshot::channel();
    s.batcher.submit(Job { model, opts, sentences, reply })?;
    match tokio::time::timeout(s.limits.timeout, rx).await {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(ApiError::shutting_down()),
        Err(_) => Err(ApiError::timeout(s.limits.timeout.as_secs_f64())),
    }
}

fn content_type(headers: &HeaderMap) -> &str {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("")
}

async fn libre_translate(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    match libre(&s, &headers, body).await {
        Ok(v) => json_response(&s, &v),
        Err(e) => e.into_response(),
    }
}

async fn libre(s: &AppState, headers: &HeaderMap, body: Body) -> Result<serde_json::Value, ApiError> {
    let bytes = read_body(body, &s.limits).await?;
    let req: LibreRequest = parse_body(content_type(headers), &bytes)?;
    s.authorize(req.api_key.as_deref())?;
    let idx = s
        .models
        .for_languages(&req.source, &req.target)
        .ok_or_else(|| ApiError::not_found(format!("no model translates {} to {}", req.source, req.target)))?;
    let m = &s.models.all()[idx];
    let (texts, many) = match req.q {
        OneOrMany::One(t) => (vec![t], false),
        OneOrMany::Many(v) => (v, true),
    };
    let (texts, counts) = count_tokens(s, idx, texts).await?;
    let alts = req.alternatives.unwrap_or(0);
    let n_best = alts.checked_add(1).ok_or_else(|| ApiError::bad_request(format!("alternatives {alts} is above the limit")))?;
    let cfg = search_config(m.translator.default_search(), None, Some(n_best), None, &s.limits)?;
    check_response_bound(s, &counts, &texts, &cfg, false)?;
    s.charge(req.api_key.as_deref(), counts.iter().sum())?;
    let out = translate(s, idx, SearchOptions { cfg, alignments: false, imp: Default::default() }, texts).await?;
    let best = |t: &Translation| t.hyps.first().map_or(String::new(), |h| h.text.clone());
    let rest = |t: &Translation| t.hyps.iter().skip(1).map(|h| h.text.clone()).collect::<Vec<_>>();
    let mut v = match (many, out.first()) {
        (false, Some(t)) => json!({ "translatedText": best(t) }),
        _ => json!({ "translatedText": out.iter().map(best).collect::<Vec<_>>() }),
    };
    if alts > 0 {
        v["alternatives"] = match (many, out.first()) {
            (false, Some(t)) => json!(rest(t)),
            _ => json!(out.iter().map(rest).collect::<Vec<_>>()),
        };
    }
    if req.source == "auto" {
        if let Some((src, _)) = m.languages() {
            v["detectedLanguage"] = json!({ "confidence": 100.0, "language": src });
        }
    }
    Ok(v)
}

async fn full_translate(State(s): State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    match full(&s, &headers, body).await {
        Ok(v) => json_response(&s, &v),
        Err(e) => e.into_response(),
    }
}

async fn full(s: &AppState, headers: &HeaderMap, body: Body) -> Result<FullResponse, ApiError> {
    let bytes = read_body(body, &s.limits).await?;
    let req: FullRequest = parse_body(content_type(headers), &bytes)?;
    s.authorize(req.api_key.as_deref())?;
    let idx = match &req.model {
        Some(name) => s.models.index_of(name).ok_or_else(|| ApiError::not_found(format!("no model named {name:?}")))?,
        None => 0,
    };
    let m = &s.models.all()[idx];
    if req.alignments && !m.translator.models().iter().any(|x| x.has_attention()) {
        return Err(ApiError::bad_request(format!("model {:?} has no attention, so no alignments", m.name)));
    }
    let (_, counts) = count_tokens(s, idx, req.text.clone()).await?;
    let cfg = search_config(m.translator.default_search(), req.beam_size, req.n_best, req.normalize, &s.limits)?;
    check_response_bound(s, &counts, &req.text, &cfg, req.alignments)?;
    s.charge(req.api_key.as_deref(), counts.iter().sum())?;
    let out = translate(s, idx, SearchOptions { cfg, alignments: req.alignments, imp: Default::default() }, req.text.clone()).await?;
    Ok(FullResponse {
        model: m.name.clone(),
        translations: req.text.iter().zip(out).map(|(src, t)| sentence_out(src, t, req.alignments)).collect(),
    })
}
