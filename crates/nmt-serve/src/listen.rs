//! Accepting connections (issue 44, row 3): hyper's HTTP/1 server with a time-out on reading a
//! request's headers, instead of `axum::serve`, which has none. A connection that sends partial
//! headers, or stays idle between requests, is closed when [`Limits::header_timeout`] runs out,
//! so slow or idle clients cannot hold sockets (and file descriptors) indefinitely. Bodies have
//! their own time-out (`routes::read_body`). On shutdown the connections are asked to finish;
//! those still open after [`Limits::timeout`] are dropped, so SIGTERM never waits on a client.
use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;

use crate::config::Limits;

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve_connections(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: &Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let graceful = GracefulShutdown::new();
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout).max_headers(crate::json_errors::HYPER_MAX_HEADERS);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a moment rather than spin (as axum::serve does).
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let conn = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("connection closed: {e}");
            }
        });
    }
    drop(listener);
    let drain = limits.timeout.saturating_add(limits.header_timeout);
    if tokio::time::timeout(drain, graceful.shutdown()).await.is_err() {
        tracing::warn!("stopping: connections still open after {:.0} s are dropped", drain.as_secs_f64());
    }
}
