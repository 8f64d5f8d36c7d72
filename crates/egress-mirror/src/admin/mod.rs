//! The admin listener (`--admin-listen ADDR`, off by default): `/livez`,
//! `/readyz` and `/metrics` (Prometheus text), on a listener of its own.
//! None of these routes exists on the serving listener, where they are
//! unknown paths like any other (404). Bound to a loopback address it
//! answers loopback peers only; bound elsewhere it needs `--admin-allow
//! CIDR` and answers those ranges (and loopback) only, 403 to the rest.

pub mod cli;
pub mod metrics;

pub use egress_http::Cidr;
pub use metrics::{Metrics, Route, SwapResult};

use crate::SwappableMirror;
use egress_http::{Handler, Reply, Request, Response};
use egress_model::Method;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// The Prometheus text exposition format's content type.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The admin listener's handler.
pub struct Admin {
    mirror: SwappableMirror,
    metrics: Arc<Metrics>,
    serving: egress_http::Stats,
    allow: Vec<Cidr>,
}

impl Admin {
    /// Answers for `mirror`, counted in `metrics`, with the serving
    /// listener's counts from `serving`; peers in `allow` (and loopback).
    pub fn new(
        mirror: SwappableMirror,
        metrics: Arc<Metrics>,
        serving: egress_http::Stats,
        allow: Vec<Cidr>,
    ) -> Self {
        Self {
            mirror,
            metrics,
            serving,
            allow,
        }
    }

    fn allowed(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        ip.is_loopback() || self.allow.iter().any(|c| c.contains(ip))
    }

    fn answer(&self, req: &Request) -> Response {
        if !self.allowed(req.peer.ip()) {
            return Response::text(403, "forbidden: not an --admin-allow address\n");
        }
        if !matches!(req.method, Method::Get | Method::Head) {
            return Response::text(405, "method not allowed: GET and HEAD only\n")
                .with_header("Allow", "GET, HEAD");
        }
        let id = self.mirror.id().to_hex();
        match req.path() {
            "/livez" => Response::text(200, "ok\n"),
            // Ready only while the serving listener accepts: the snapshot it
            // serves was verified before it started, and every swap since.
            "/readyz" => match self.serving.read() {
                Some(_) => Response::text(200, &format!("ready: serving snapshot {id}\n")),
                None => Response::text(503, "not ready: the serving listener has stopped\n"),
            },
            "/metrics" => {
                let text = self.metrics.render(self.serving.read().as_ref(), &id);
                Response::new(200)
                    .with_header("Content-Type", METRICS_CONTENT_TYPE)
                    .with_body(egress_http::Body::Bytes(text.into_bytes()))
            }
            _ => Response::text(404, "not found: /livez, /readyz, /metrics\n"),
        }
    }
}

impl Handler for Admin {
    fn handle(&self, req: Request) -> Reply {
        self.answer(&req)
            .with_header("Cache-Control", "no-store")
            .with_header("X-Content-Type-Options", "nosniff")
            .into()
    }
}

/// Why the admin listener cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("--admin-listen {0}: give an IP address and port, such as 127.0.0.1:9090 (no names: they are not looked up)")]
    Address(String),
    #[error("--admin-listen {0} is not a loopback address: give --admin-allow CIDR for the addresses that may read it (e.g. the Prometheus server's)")]
    NotLoopback(SocketAddr),
    #[error("cannot listen on --admin-listen {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The admin address, checked before anything starts: an IP literal and
/// a port, and not a non-loopback address without `--admin-allow`.
pub fn address(listen: &str, allow: &[Cidr]) -> Result<SocketAddr, AdminError> {
    let addr: SocketAddr = listen
        .parse()
        .map_err(|_| AdminError::Address(listen.to_string()))?;
    if !addr.ip().is_loopback() && allow.is_empty() {
        return Err(AdminError::NotLoopback(addr));
    }
    Ok(addr)
}

/// Starts the admin listener on `addr`.
pub fn serve(addr: SocketAddr, admin: Admin) -> Result<egress_http::ServerHandle, AdminError> {
    let limits = egress_http::Limits {
        max_connections: 64,
        max_connections_per_client: 16,
        ..egress_http::Limits::default()
    };
    let config = egress_http::Config {
        limits,
        ..egress_http::Config::default()
    };
    egress_http::Server::bind_with(addr, admin, config)
        .map_err(|source| AdminError::Listen { addr, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_loopback_admin_address_needs_an_allow_list() {
        assert!(address("127.0.0.1:9090", &[]).is_ok());
        assert!(address("[::1]:9090", &[]).is_ok());
        assert!(matches!(
            address("0.0.0.0:9090", &[]),
            Err(AdminError::NotLoopback(_))
        ));
        let allow = ["10.0.0.0/8".parse().unwrap()];
        assert!(address("0.0.0.0:9090", &allow).is_ok());
        assert!(matches!(
            address("localhost:9090", &[]),
            Err(AdminError::Address(_))
        ));
    }
}
