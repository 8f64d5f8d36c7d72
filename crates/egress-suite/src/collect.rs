//! Gathering evidence: the only place where the suite talks to the target or
//! to the controlled upstream. Nothing here decides a verdict.

use crate::plan::{Plan, Upstream};
use egress_model::{Exchange, Observation, Url};
use egress_transcript::{Client, Request};

/// Redirects the suite follows when it fetches content (never off-origin).
pub const MAX_REDIRECTS: usize = 5;

/// How long a target that stopped answering is waited for (a supervisor
/// restarting a crashed server takes a moment).
pub const COME_BACK_WITHIN: std::time::Duration = std::time::Duration::from_secs(10);

/// Evidence of one sub-probe.
#[derive(Debug, Default)]
pub struct Evidence {
    pub exchanges: Vec<Exchange>,
    pub observations: Vec<Observation>,
}

impl Evidence {
    pub fn push(&mut self, ex: Exchange) {
        self.exchanges.push(ex);
    }
}

/// Gathers evidence for a run of one protocol, whose packages are `P`.
pub struct Collector<'a, P> {
    pub client: &'a Client,
    pub plan: &'a Plan<P>,
    pub upstream: Option<&'a dyn Upstream>,
    /// Bytes of `--allowed-signers`, recorded as input by P5.signature.
    pub allowed_signers: Option<Vec<u8>>,
    /// A marker token fixed for the whole run: the name of a package that
    /// exists nowhere, which write attempts try to create.
    pub fresh: &'a str,
}

impl<P> Collector<'_, P> {
    /// Origin-form target for a URL on the target's origin.
    fn target_of(url: &Url) -> String {
        url.path_and_query().to_string()
    }

    pub fn get(&self, label: &str, url: &Url, accept: Option<&str>) -> Exchange {
        if !url.same_origin(self.client.base()) {
            return refused_locally(label, url);
        }
        self.client.get(label, &Self::target_of(url), accept)
    }

    /// Asks for `path` (origin-form) every 200 ms until it is answered 200,
    /// for at most [`COME_BACK_WITHIN`]: returns the exchange that showed it
    /// served, or the last one that did not. `label` names each attempt
    /// from the milliseconds waited so far.
    pub fn until_served(
        &self,
        path: &str,
        accept: Option<&str>,
        label: impl Fn(u128) -> String,
    ) -> Exchange {
        let start = std::time::Instant::now();
        loop {
            let ex = self
                .client
                .get(&label(start.elapsed().as_millis()), path, accept);
            if ex.status() == Some(200) || start.elapsed() >= COME_BACK_WITHIN {
                return ex;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    pub fn send(&self, label: &str, req: &Request) -> Exchange {
        self.client.send(label, req)
    }

    pub fn send_raw(&self, label: &str, raw: &[u8]) -> Exchange {
        self.client.send_raw(label, raw)
    }

    /// GET, following same-origin redirects up to [`MAX_REDIRECTS`]. Each hop
    /// is its own exchange labelled `"{label} (redirect)"`.
    pub fn get_following(&self, ev: &mut Evidence, label: &str, url: &Url, accept: Option<&str>) {
        let mut ex = self.get(label, url, accept);
        let mut current = url.clone();
        for _ in 0..MAX_REDIRECTS {
            let next = ex
                .response
                .as_ref()
                .filter(|r| r.is_redirect())
                .and_then(|r| r.header("location"))
                .and_then(|loc| current.join(loc).ok())
                .filter(|u| u.same_origin(self.client.base()));
            ev.push(ex);
            let Some(next) = next else { return };
            current = next;
            ex = self.get(&format!("{label} (redirect)"), &current, accept);
        }
        ev.push(ex);
    }

    /// A fresh marker token (see [`crate::classify::tokens_in`]).
    pub fn token(&self) -> String {
        token()
    }

    /// Runs `f` and, when the suite controls the upstream, records every
    /// request the upstream received meanwhile.
    pub fn window(&self, name: &str, ev: &mut Evidence, f: impl FnOnce(&mut Evidence)) {
        let mark = self.upstream.map(|u| u.mark());
        f(ev);
        if let (Some(u), Some(m)) = (self.upstream, mark) {
            ev.observations.push(Observation::UpstreamLog {
                window: name.to_string(),
                requests: u.requests_since(m),
            });
        }
    }
}

/// A fresh marker token (see [`crate::classify::tokens_in`]).
pub fn token() -> String {
    let mut b = [0u8; 8];
    // Tokens only need to be unlikely to collide; fall back to time.
    if getrandom::getrandom(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        b = (t as u64).to_le_bytes();
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("ecm{hex}")
}

/// The suite never sends a request to another origin than the target's; a
/// link that points elsewhere is recorded as not fetched.
fn refused_locally(label: &str, url: &Url) -> Exchange {
    Exchange {
        label: label.to_string(),
        peer: url.authority(),
        request: Default::default(),
        response: None,
        error: Some(format!(
            "not fetched: {url} is on another origin than the target"
        )),
        elapsed_ms: 0,
        after: None,
        h2: None,
    }
}
