//! The JSON shapes of both APIs and their validation.
//!
//! - `POST /translate`, LibreTranslate's: `{"q": "…" | ["…", …], "source": "en", "target":
//!   "es", "format"?, "api_key"?, "alternatives"?}` as JSON or as a form
//!   (`application/x-www-form-urlencoded`, what LibreTranslate's own Python client sends) →
//!   `{"translatedText": "…" | [...]}` (and `"alternatives"` when asked).
//! - `POST /api/v1/translate`, the full form: `{"text": [...], "model"?, "beam_size"?,
//!   "n_best"?, "normalize"?, "alignments"?}` → each sentence's hypotheses with scores, tokens
//!   and (with `alignments`) the attention matrix.
use nmt::config::{SearchConfig, SearchRequest};
use nmt::translate::Translation;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config::Limits;
use crate::error::ApiError;

/// One string or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// LibreTranslate's request.
#[derive(Debug, Deserialize)]
pub struct LibreRequest {
    pub q: OneOrMany,
    pub source: String,
    pub target: String,
    /// `text` or `html`; both are translated as text.
    #[serde(default)]
    pub format: Option<String>,
    /// Required when the server has API keys (`nmt serve --api-keys`).
    #[serde(default)]
    pub api_key: Option<String>,
    /// Extra translations per text (the n-best list after the first).
    #[serde(default)]
    pub alternatives: Option<usize>,
}

/// LibreTranslate's `POST /detect`.
#[derive(Debug, Deserialize)]
pub struct DetectRequest {
    pub q: OneOrMany,
    #[serde(default)]
    pub api_key: Option<String>,
}

/// The full request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FullRequest {
    pub text: Vec<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub beam_size: Option<usize>,
    #[serde(default)]
    pub n_best: Option<usize>,
    /// Length normalisation exponent α (rank by `log p / len^α`).
    #[serde(default)]
    pub normalize: Option<f64>,
    #[serde(default)]
    pub alignments: bool,
    /// Required when the server has API keys.
    #[serde(default)]
    pub api_key: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FullResponse {
    pub model: String,
    pub translations: Vec<SentenceOut>,
}

#[derive(Debug, Serialize)]
pub struct SentenceOut {
    pub source: String,
    /// The source as the model segmented it (with `</s>`): the alignment's columns.
    pub source_tokens: Vec<String>,
    pub hypotheses: Vec<HypothesisOut>,
}

#[derive(Debug, Serialize)]
pub struct HypothesisOut {
    pub text: String,
    /// What the list is ranked by: `log_prob / len^α`.
    pub score: f64,
    pub log_prob: f64,
    /// The target pieces (with `</s>` when finished): the alignment's rows.
    pub target_tokens: Vec<String>,
    /// `target_tokens × source_tokens` attention weights (with `"alignments": true`, attention
    /// models only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alignment: Option<Vec<Vec<f32>>>,
}

/// A request body: a form for `application/x-www-form-urlencoded`, JSON otherwise. The media
/// type is matched case-insensitively (RFC 9110: `Application/X-WWW-Form-Urlencoded` is a form);
/// a multipart body is refused with a message saying so, not parsed as JSON.
pub fn parse_body<T: DeserializeOwned>(content_type: &str, body: &[u8]) -> Result<T, ApiError> {
    let media = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match media.as_str() {
        "application/x-www-form-urlencoded" => {
            serde_urlencoded::from_bytes(body).map_err(|e| ApiError::bad_request(format!("malformed form: {e}")))
        }
        m if m.starts_with("multipart/") => Err(ApiError::bad_request(format!(
            "{m} bodies are not supported: send JSON (application/json) or a form (application/x-www-form-urlencoded)"
        ))),
        _ => serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}"))),
    }
}

/// A request's sentences, checked against the limits; `tokens` counts a sentence's source
/// tokens. Returns each sentence's count.
pub fn check_sentences(texts: &[String], limits: &Limits, tokens: impl Fn(&str) -> usize) -> Result<Vec<usize>, ApiError> {
    check_count(texts.len(), limits)?;
    let mut counts = Vec::with_capacity(texts.len());
    for (i, t) in texts.iter().enumerate() {
        let n = tokens(t);
        if n > limits.max_tokens {
            return Err(ApiError::bad_request(format!("sentence {} has {n} tokens; at most {}", i + 1, limits.max_tokens)));
        }
        counts.push(n);
    }
    Ok(counts)
}

/// At least one sentence and at most `--max-sentences` (`/detect` too).
pub fn check_count(n: usize, limits: &Limits) -> Result<(), ApiError> {
    if n == 0 {
        return Err(ApiError::bad_request("no text to translate"));
    }
    if n > limits.max_sentences {
        return Err(ApiError::bad_request(format!("{n} sentences; at most {} per request", limits.max_sentences)));
    }
    Ok(())
}

/// An upper bound of a response's size in bytes before translating: each hypothesis has at most
/// `max_len_ratio × source length + max_len_extra` tokens, each at most [`TOKEN_BYTES`] in its
/// text and token list, and with alignments a row of `source length + 1` weights of at most
/// [`WEIGHT_BYTES`] each. What a response can reach, not what it usually is: a request over
/// `max_response_bytes` by this bound is refused before it takes the translator's time.
pub fn response_bound(src_tokens: &[usize], source_bytes: usize, cfg: &SearchConfig, alignments: bool) -> usize {
    let per_sentence = |n: usize| {
        let out = (cfg.max_len_ratio * n as f64).ceil() as usize + cfg.max_len_extra + 1;
        let row = if alignments { (n + 1) * WEIGHT_BYTES + 2 } else { 0 };
        cfg.n_best.saturating_mul(out.saturating_mul(TOKEN_BYTES + row) + 64) + (n + 1) * TOKEN_BYTES
    };
    src_tokens.iter().map(|&n| per_sentence(n)).fold(2 * source_bytes, usize::saturating_add)
}

/// Bytes a target token may take in a response (its text, its piece, quotes and commas).
pub const TOKEN_BYTES: usize = 40;
/// Bytes an attention weight may take (`0.123456789,`, or `1e-10,`).
pub const WEIGHT_BYTES: usize = 16;

/// The search for a request: the model's defaults with the request's choices, within the
/// server's limits.
pub fn search_config(
    defaults: SearchConfig,
    beam: Option<usize>,
    n_best: Option<usize>,
    normalize: Option<f64>,
    limits: &Limits,
) -> Result<SearchConfig, ApiError> {
    if let Some(a) = normalize.filter(|a| !(0.0..=5.0).contains(a)) {
        return Err(ApiError::bad_request(format!("normalize must be between 0 and 5, not {a}")));
    }
    if let Some(n) = n_best.filter(|&n| n > limits.max_beam) {
        return Err(ApiError::bad_request(format!("n_best {n} (alternatives + 1) is above the limit {}", limits.max_beam)));
    }
    let req = SearchRequest { beam_size: beam, n_best, normalize, ..SearchRequest::default() };
    let s = req.apply(defaults).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if s.beam_size > limits.max_beam {
        return Err(ApiError::bad_request(format!("beam_size {} is above the limit {}", s.beam_size, limits.max_beam)));
    }
    Ok(s)
}

/// The full response's sentence.
pub fn sentence_out(source: &str, t: Translation, alignments: bool) -> SentenceOut {
    SentenceOut {
        source: source.to_string(),
        source_tokens: t.src_pieces,
        hypotheses: t
            .hyps
            .into_iter()
            .map(|h| HypothesisOut {
                text: h.text,
                score: h.hyp.score,
                log_prob: h.hyp.log_prob,
                target_tokens: h.pieces,
                alignment: if alignments { h.hyp.alignment } else { None },
            })
            .collect(),
    }
}
