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

/// A request body: a form for `application/x-www-form-urlencoded`, JSON otherwise.
pub fn parse_body<T: DeserializeOwned>(content_type: &str, body: &[u8]) -> Result<T, ApiError> {
    if content_type.starts_with("application/x-www-form-urlencoded") {
        serde_urlencoded::from_bytes(body).map_err(|e| ApiError::bad_request(format!("malformed form: {e}")))
    } else {
        serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("malformed JSON: {e}")))
    }
}

/// A request's sentences, checked against the limits; `tokens` counts a sentence's source
/// tokens.
pub fn check_sentences(texts: &[String], limits: &Limits, tokens: impl Fn(&str) -> usize) -> Result<(), ApiError> {
    if texts.is_empty() {
        return Err(ApiError::bad_request("no text to translate"));
    }
    if texts.len() > limits.max_sentences {
        return Err(ApiError::bad_request(format!("{} sentences; at most {} per request", texts.len(), limits.max_sentences)));
    }
    for (i, t) in texts.iter().enumerate() {
        let n = tokens(t);
        if n > limits.max_tokens {
            return Err(ApiError::bad_request(format!("sentence {} has {n} tokens; at most {}", i + 1, limits.max_tokens)));
        }
    }
    Ok(())
}

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
