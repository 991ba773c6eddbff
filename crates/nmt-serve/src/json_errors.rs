//! Every error response is JSON (issue 44, row 12): `{"error": "…"}`, LibreTranslate's shape.
//!
//! The handlers answer with [`ApiError`]; this middleware covers the rest. A response that
//! axum makes itself (405 for a wrong method) gets a JSON body naming its status. A URI or
//! headers too long for this server are answered here, in JSON, well below hyper's own limits
//! (whose 414 and 431 responses have no body): [`MAX_URI_BYTES`], [`MAX_HEADER_BYTES`],
//! [`MAX_HEADERS`].
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// Longest request target (path and query) answered; 414 beyond.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Most header bytes (names and values) answered; 431 beyond.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Most header fields answered; 431 beyond. hyper refuses more than [`HYPER_MAX_HEADERS`] itself.
pub const MAX_HEADERS: usize = 100;
/// hyper's limit, set above [`MAX_HEADERS`] so that this middleware answers first.
pub const HYPER_MAX_HEADERS: usize = 400;

/// The middleware (`axum::middleware::from_fn`).
pub async fn json_errors(req: Request, next: Next) -> Response {
    let uri = req.uri().to_string().len();
    if uri > MAX_URI_BYTES {
        let msg = format!("the request target is {uri} bytes, above the {MAX_URI_BYTES}-byte limit");
        return ApiError::with_status(StatusCode::URI_TOO_LONG, msg).into_response();
    }
    let headers = req.headers();
    let bytes: usize = headers.iter().map(|(k, v)| k.as_str().len() + v.len()).sum();
    if headers.len() > MAX_HEADERS || bytes > MAX_HEADER_BYTES {
        let msg = format!("{} header fields of {bytes} bytes: at most {MAX_HEADERS} fields and {MAX_HEADER_BYTES} bytes", headers.len());
        return ApiError::with_status(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE, msg).into_response();
    }
    let resp = next.run(req).await;
    let status = resp.status();
    let json = resp.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if (status.is_client_error() || status.is_server_error()) && !json {
        let (mut parts, _) = resp.into_parts();
        let reason = status.canonical_reason().unwrap_or("error").to_lowercase();
        let fresh = ApiError::with_status(status, reason).into_response();
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
        return Response::from_parts(parts, fresh.into_body());
    }
    resp
}
