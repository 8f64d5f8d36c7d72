//! What the mirror counts, and the Prometheus text format (0.0.4) it is
//! read in at the admin listener's `/metrics`. Counting is a relaxed
//! atomic add on the request path; nothing is allocated there.

use std::sync::atomic::{AtomicU64, Ordering};

/// The route classes a request is counted under.
pub const ROUTES: [&str; 5] = ["page", "file", "evidence", "attest", "refused"];
/// The statuses the mirror answers with, and `other`.
pub const STATUSES: [u16; 7] = [200, 304, 400, 404, 405, 406, 500];
const OTHER: usize = STATUSES.len();

/// Why the mirror refused a request, by its status.
pub fn refusal_reason(status: u16) -> Option<&'static str> {
    Some(match status {
        400 => "target-form",
        404 => "not-in-snapshot",
        405 => "method",
        406 => "not-acceptable",
        500 => "blob-unverified",
        _ => return None,
    })
}

/// The route class of one request's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// An index page, a packument, an apt index.
    Page,
    /// A distribution file (a wheel, a tarball, a `.deb`).
    File,
    /// `MANIFEST`, `SNAPSHOT.json`, the signature, the chain.
    Evidence,
    /// The instance attestation route.
    Attest,
    /// Any answer that is not 2xx or 304.
    Refused,
}

/// The mirror's counters; one per process, shared by every generation.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: [[AtomicU64; STATUSES.len() + 1]; ROUTES.len()],
    body_bytes: AtomicU64,
    misses: AtomicU64,
    swaps: [AtomicU64; 3],
}

/// How a swap ended, for `egress_mirror_swaps_total{result}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapResult {
    Swapped = 0,
    Unchanged = 1,
    Refused = 2,
}

const SWAP_RESULTS: [&str; 3] = ["swapped", "unchanged", "refused"];

impl Metrics {
    /// Counts one answer of `body` bytes.
    pub fn request(&self, route: Route, status: u16, body: u64) {
        let s = STATUSES.iter().position(|&x| x == status).unwrap_or(OTHER);
        if let Some(cell) = self.requests.get(route as usize).and_then(|row| row.get(s)) {
            cell.fetch_add(1, Ordering::Relaxed);
        }
        self.body_bytes.fetch_add(body, Ordering::Relaxed);
    }

    /// Counts one ask for something the snapshot lacks.
    pub fn miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one swap attempt.
    pub fn swap(&self, result: SwapResult) {
        if let Some(c) = self.swaps.get(result as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn count(&self, route: usize, status: usize) -> u64 {
        self.requests
            .get(route)
            .and_then(|row| row.get(status))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Everything in the Prometheus text format, with the serving
    /// listener's counts (`None` once it has stopped) and the snapshot
    /// served now.
    pub fn render(&self, server: Option<&egress_http::ServerStats>, snapshot: &str) -> String {
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, samples: &[(String, u64)]| {
            out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
            for (labels, value) in samples {
                out.push_str(&format!("{name}{labels} {value}\n"));
            }
        };
        let mut requests = Vec::new();
        let mut refusals: Vec<(String, u64)> = Vec::new();
        for (r, route) in ROUTES.iter().enumerate() {
            for s in 0..=STATUSES.len() {
                let n = self.count(r, s);
                let status = STATUSES.get(s).map_or("other".to_string(), u16::to_string);
                if n > 0 || (*route != "refused" && s == 0) {
                    requests.push((format!("{{route=\"{route}\",status=\"{status}\"}}"), n));
                }
            }
        }
        for (s, status) in STATUSES.iter().enumerate() {
            if let Some(reason) = refusal_reason(*status) {
                let n: u64 = (0..ROUTES.len()).map(|r| self.count(r, s)).sum();
                refusals.push((format!("{{reason=\"{reason}\"}}"), n));
            }
        }
        let server = server.copied().unwrap_or_default();
        refusals.extend([
            (
                "{reason=\"connection-limit\"}".to_string(),
                server.refused_connection_limit,
            ),
            (
                "{reason=\"per-client-limit\"}".to_string(),
                server.refused_per_client_limit,
            ),
            (
                "{reason=\"unreadable-request\"}".to_string(),
                server.refused_unreadable,
            ),
        ]);
        family(
            "egress_mirror_requests_total",
            "counter",
            "Requests answered, by route class and status.",
            &requests,
        );
        family(
            "egress_mirror_response_body_bytes_total",
            "counter",
            "Bytes of response bodies answered (HEAD and 304 count none).",
            &[(String::new(), self.body_bytes.load(Ordering::Relaxed))],
        );
        family(
            "egress_mirror_open_connections",
            "gauge",
            "Connections the serving listener holds open now.",
            &[(String::new(), server.open_connections as u64)],
        );
        family(
            "egress_mirror_connections_accepted_total",
            "counter",
            "Connections the serving listener admitted.",
            &[(String::new(), server.accepted)],
        );
        family(
            "egress_mirror_refusals_total",
            "counter",
            "Requests and connections refused, by reason.",
            &refusals,
        );
        family(
            "egress_mirror_misses_total",
            "counter",
            "Asks for a project, version or file the snapshot does not hold.",
            &[(String::new(), self.misses.load(Ordering::Relaxed))],
        );
        let swaps: Vec<(String, u64)> = SWAP_RESULTS
            .iter()
            .zip(&self.swaps)
            .map(|(r, c)| (format!("{{result=\"{r}\"}}"), c.load(Ordering::Relaxed)))
            .collect();
        family(
            "egress_mirror_swaps_total",
            "counter",
            "Snapshot swaps asked for (SIGHUP, the current link), by how they ended.",
            &swaps,
        );
        family(
            "egress_mirror_snapshot_info",
            "gauge",
            "The snapshot served now, by its ID (the SHA-256 of its MANIFEST).",
            &[(format!("{{snapshot=\"{snapshot}\"}}"), 1)],
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_as_prometheus_text() {
        let m = Metrics::default();
        m.request(Route::Page, 200, 100);
        m.request(Route::File, 304, 0);
        m.request(Route::Refused, 404, 20);
        m.request(Route::Refused, 418, 5);
        m.miss();
        m.swap(SwapResult::Refused);
        let server = egress_http::ServerStats {
            open_connections: 3,
            refused_per_client_limit: 2,
            ..Default::default()
        };
        let text = m.render(Some(&server), "ab12");
        for line in [
            "egress_mirror_requests_total{route=\"page\",status=\"200\"} 1",
            "egress_mirror_requests_total{route=\"file\",status=\"304\"} 1",
            "egress_mirror_requests_total{route=\"refused\",status=\"404\"} 1",
            "egress_mirror_requests_total{route=\"refused\",status=\"other\"} 1",
            "egress_mirror_response_body_bytes_total 125",
            "egress_mirror_open_connections 3",
            "egress_mirror_refusals_total{reason=\"not-in-snapshot\"} 1",
            "egress_mirror_refusals_total{reason=\"per-client-limit\"} 2",
            "egress_mirror_misses_total 1",
            "egress_mirror_swaps_total{result=\"refused\"} 1",
            "egress_mirror_snapshot_info{snapshot=\"ab12\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
        }
        assert!(text.ends_with('\n'));
    }
}
