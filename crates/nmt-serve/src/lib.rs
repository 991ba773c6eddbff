//! `nmt serve`: translation over HTTP, on axum and tokio.
//!
//! - `POST /translate`: LibreTranslate's API, so its existing clients work unchanged.
//! - `POST /api/v1/translate`: n-best lists, scores, tokens and attention matrices.
//! - `POST /detect`: LibreTranslate's; answers with the served source language.
//! - `GET /health`, `GET /api/v1/models`, `GET /languages` (LibreTranslate's: every source and
//!   target language with its English name and targets).
//! - API keys with per-key limits, as LibreTranslate's ([`keys`]), when configured.
//! - `GET /`: a page (embedded, no network) with a text box, a model picker, the n-best list
//!   and the attention heatmap of RNNsearch's Figure 3.
//!
//! Requests are decoded together by one translator thread ([`batcher`]); limits
//! ([`config::Limits`]) bound the body, the sentences, the tokens, the beam, the queue and the
//! wait. Stopping (SIGTERM, Ctrl-C: [`shutdown_signal`]) stops accepting connections, lets
//! the requests in flight finish, then drains the queue.
pub mod api;
pub mod batcher;
pub mod config;
pub mod error;
pub mod json_errors;
pub mod keys;
pub mod listen;
pub mod models;
pub mod routes;

use std::future::Future;
use std::sync::Arc;

pub use config::Limits;
pub use error::{ApiError, ServeError};
pub use keys::ApiKeys;
pub use models::{ModelSet, ServedModel};

use batcher::Batcher;

/// What the handlers share.
pub struct AppState {
    pub models: Arc<ModelSet>,
    pub batcher: Batcher,
    pub limits: Limits,
    /// `None`: the server is open to everyone.
    pub keys: Option<ApiKeys>,
}

impl AppState {
    /// Starts the translator thread.
    pub fn new(models: ModelSet, limits: Limits) -> Self {
        let models = Arc::new(models);
        let batcher = Batcher::start(models.clone(), &limits);
        AppState { models, batcher, limits, keys: None }
    }

    /// Requires API keys ([`keys`]) on the translation and detection endpoints.
    pub fn with_api_keys(mut self, keys: ApiKeys) -> Self {
        self.keys = Some(keys);
        self
    }

    /// Checks a request carrying `key` when it arrives (always fine without keys configured).
    pub fn authorize(&self, key: Option<&str>) -> Result<(), ApiError> {
        self.keys.as_ref().map_or(Ok(()), |k| k.authorize(key))
    }

    /// Charges a request found valid, of `tokens` source tokens, to `key`.
    pub fn charge(&self, key: Option<&str>, tokens: usize) -> Result<(), ApiError> {
        self.keys.as_ref().map_or(Ok(()), |k| k.charge(key, tokens))
    }
}

/// Serves on `listener` until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let state = Arc::new(state);
    listen::serve_connections(listener, routes::router(state.clone()), &state.limits, shutdown).await;
    // The translator thread answers what is still queued; joining it blocks, so not here.
    tokio::task::spawn_blocking(move || drop(state)).await.map_err(|e| ServeError::Setup(format!("translator thread: {e}")))?;
    Ok(())
}

/// Completes on SIGTERM or Ctrl-C (SIGINT).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
    tracing::info!("stopping: finishing the requests in flight");
}
