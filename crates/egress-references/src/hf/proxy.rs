//! The caching proxy (B) for the Hub: a small pull-through cache of the
//! Hub canary, as labs put olah or nginx's `proxy_cache` in front of
//! huggingface.co. **Test fixture.**
//!
//! Everything below `/hf/` goes to the canary as it came (method, body
//! and `Authorization` included), and the answer comes back with its
//! headers: the LFS redirect to the CDN origin, the Xet hand-off and the
//! tree's `Link` to its next page pass through untouched, as they do
//! through a proxy that does not read them. A file answered `200` under
//! `/resolve/` is kept and served again from the cache.

use crate::relay::{limits, outbound, relay, text};
use crate::request_log::lock;
use egress_http::{Reply, Request, Response, Server, ServerHandle};
use egress_model::Url;
use egress_transcript::Client;
use std::collections::BTreeMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where the proxy serves the Hub: `HF_ENDPOINT=<proxy>/hf`.
pub const PREFIX: &str = "/hf";

pub struct HfCachingProxy {
    server: ServerHandle,
}

impl HfCachingProxy {
    /// Starts the proxy in front of the Hub canary at `endpoint`
    /// (`http://host:port`).
    pub fn start(endpoint: &str) -> io::Result<Self> {
        let upstream = Url::parse(endpoint).map_err(|e| io::Error::other(e.to_string()))?;
        let client = Client::new(upstream, limits(Duration::from_secs(15)), None)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let cache: Arc<Mutex<BTreeMap<String, Vec<u8>>>> = Arc::default();
        let server = Server::bind_loopback(move |req: Request| -> Reply {
            let Some(target) = req
                .target
                .strip_prefix(PREFIX)
                .filter(|t| t.starts_with('/'))
            else {
                return text(404, "not found\n");
            };
            let cacheable = req.method == egress_model::Method::Get && target.contains("/resolve/");
            if let Some(bytes) = lock(&cache).get(target).filter(|_| cacheable) {
                return Response::new(200)
                    .with_header("Content-Type", "application/octet-stream")
                    .with_body(bytes.clone())
                    .into();
            }
            let ex = client.send("proxy: the Hub", &outbound(&req, target));
            if let Some(r) = ex.response.as_ref().filter(|r| r.status == Some(200)) {
                if cacheable {
                    lock(&cache).insert(target.to_string(), r.body_prefix.0.clone());
                }
            }
            relay(ex)
        })?;
        Ok(Self { server })
    }

    /// What a sandbox sets as `HF_ENDPOINT`.
    pub fn endpoint(&self) -> String {
        format!("{}{PREFIX}", self.server.base_url())
    }

    pub fn stop(self) {
        self.server.stop();
    }
}
