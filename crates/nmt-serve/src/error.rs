//! Errors: [`ServeError`] for starting the server, [`ApiError`] for a request (a status code
//! and a JSON body `{"error": "…"}`, LibreTranslate's error shape).
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("{0}")]
    Setup(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// A request's failure.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    /// Seconds for `Retry-After` (503 on a full queue).
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), retry_after: None }
    }

    /// Any status, for the responses the middleware makes JSON (`json_errors`).
    pub fn with_status(status: StatusCode, message: impl Into<String>) -> Self {
        Self::new(status, message)
    }

    /// 413: the answer would be larger than `--max-response-bytes`.
    pub fn response_too_large(bytes: usize, limit: usize) -> Self {
        let msg = format!(
            "the response would be {bytes} bytes, above the {limit}-byte response limit (--max-response-bytes): \
             ask for fewer sentences, a smaller n_best or beam, or no alignments"
        );
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, msg)
    }

    /// 408: the body did not arrive in time.
    pub fn body_timeout(secs: f64) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, format!("the request body did not arrive within the {secs} s limit"))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 403: no API key, or an unknown one (when the server has keys).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }

    /// 429: the key's requests or tokens per minute (`what`) are used up; retry in `secs`.
    pub fn rate_limited(what: &str, secs: u64) -> Self {
        let msg = format!("too many requests: this API key may use {what} per minute; retry in {secs} s");
        ApiError { retry_after: Some(secs), ..Self::new(StatusCode::TOO_MANY_REQUESTS, msg) }
    }

    pub fn too_large(limit: usize) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, format!("the request body is larger than the {limit}-byte limit"))
    }

    pub fn busy() -> Self {
        ApiError { retry_after: Some(1), ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "the translation queue is full; retry shortly") }
    }

    pub fn shutting_down() -> Self {
        ApiError { retry_after: Some(5), ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "the server is shutting down") }
    }

    pub fn timeout(secs: f64) -> Self {
        Self::new(StatusCode::GATEWAY_TIMEOUT, format!("the translation took longer than the {secs} s limit"))
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.message });
        let mut resp = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        resp
    }
}
