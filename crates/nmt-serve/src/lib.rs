//! `nmt serve`: translation over HTTP, on axum and tokio.
//!
//! - `POST /translate`: LibreTranslate's API, so its existing clients work unchanged.
//! - `POST /api/v1/translate`: n-best lists, scores, tokens and attention matrices.
//! - `GET /health`, `GET /api/v1/models`, `GET /languages` (LibreTranslate's).
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
pub mod models;
pub mod routes;

use std::future::Future;
use std::sync::Arc;

pub use config::Limits;
pub use error::{ApiError, ServeError};
pub use models::{ModelSet, ServedModel};

use batcher::Batcher;

/// What the handlers share.
pub struct AppState {
    pub models: Arc<ModelSet>,
    pub batcher: Batcher,
    pub limits: Limits,
}

impl AppState {
    /// Starts the translator thread.
    pub fn new(models: ModelSet, limits: Limits) -> Self {
        let models = Arc::new(models);
        let batcher = Batcher::start(models.clone(), &limits);
        AppState { models, batcher, limits }
    }
}

/// Serves on `listener` until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let state = Arc::new(state);
    axum::serve(listener, routes::router(state.clone())).with_graceful_shutdown(shutdown).await?;
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
