//! The request log both canaries keep: every request, in arrival order, as
//! the suite reads it through [`egress_model::Upstream`].

use egress_http::Request;
use egress_model::{UpstreamRequest, TRIPWIRE_PATH};
use std::sync::{Mutex, MutexGuard};

/// Poisoning only means a handler panicked mid-request; the data is still
/// consistent (every update is a single assignment or push).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Debug, Default)]
pub(crate) struct RequestLog(Mutex<Vec<UpstreamRequest>>);

impl RequestLog {
    /// Logs `req` (numbered from 1) and says whether it hit the tripwire.
    pub(crate) fn record(&self, req: &Request) -> bool {
        self.record_as(req, req.target.starts_with(TRIPWIRE_PATH))
    }

    /// Logs `req` as a tripwire hit when `tripwire`: a route that runs code
    /// on artifact bytes upstream (the Hub's dataset viewer).
    pub(crate) fn record_as(&self, req: &Request, tripwire: bool) -> bool {
        let mut log = lock(&self.0);
        let seq = log.len() as u64 + 1;
        log.push(UpstreamRequest {
            seq,
            method: req.method.clone(),
            target: req.target.clone(),
            tripwire,
            authorization: req.header("authorization").is_some(),
            body: (!req.body.is_empty()).then(|| egress_model::evidence::BodyRecord {
                bytes: req.body.len() as u64,
                sha256: egress_model::Sha256Digest::of(&req.body),
            }),
        });
        tripwire
    }

    pub(crate) fn mark(&self) -> u64 {
        lock(&self.0).len() as u64
    }

    pub(crate) fn since(&self, mark: u64) -> Vec<UpstreamRequest> {
        let log = lock(&self.0);
        let start = usize::try_from(mark).unwrap_or(usize::MAX).min(log.len());
        log[start..].to_vec()
    }
}
