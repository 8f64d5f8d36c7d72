//! Test fixtures for egress-conformance. **None of this is product code.**
//!
//! - [`canary`]: the canary upstream, a small PyPI-protocol server the suite
//!   controls. It logs every request, can change what it serves during a run
//!   and carries a tripwire that fires if an artifact's build code ever runs.
//! - [`proxy`]: fixture (B), a conventional pull-through caching proxy built the
//!   way labs deploy them. It is the *non-conformant* reference: it violates
//!   P1-P6 on purpose, so that the suite can show it tells the two apart.
//! - [`npm_proxy`]: fixture (B) for npm, a pull-through caching npm registry
//!   in front of [`npm_canary`], non-conformant in the same way.
//! - [`hostile`]: servers that misbehave at the HTTP or TCP level, for the
//!   suite's robustness tests.
//!
//! Every fixture binds to 127.0.0.1 only, and every connection a fixture makes
//! on someone's behalf is checked first to go to a loopback address
//! (127.0.0.0/8 or ::1); anything else is answered `502` without connecting.

#![forbid(unsafe_code)]

pub mod canary;
pub mod hostile;
pub mod npm_canary;
pub mod npm_client;
pub mod npm_proxy;
pub mod proxy;
mod relay;
mod request_log;

pub use canary::Canary;
pub use hostile::{Hostile, HostileServer};
pub use proxy::CachingProxy;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

/// Resolves `host:port` and returns its addresses only if every one of them is
/// a loopback address; `None` otherwise (or if it does not resolve). `host`
/// may carry IPv6 brackets.
pub(crate) fn loopback_addrs(host: &str, port: u16) -> Option<Vec<SocketAddr>> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        // Names are resolved here, and the answer must be loopback only.
        Err(_) if host.eq_ignore_ascii_case("localhost") => {
            (host, port).to_socket_addrs().ok()?.collect()
        }
        Err(_) => return None,
    };
    (!addrs.is_empty() && addrs.iter().all(|a| is_loopback(a.ip()))).then_some(addrs)
}

pub(crate) fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Whether `url` names a loopback host.
pub(crate) fn is_loopback_url(url: &egress_model::Url) -> bool {
    loopback_addrs(url.host(), url.port()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_check() {
        for host in [
            "127.0.0.1",
            "127.8.9.10",
            "[::1]",
            "::1",
            "localhost",
            "::ffff:127.0.0.1",
        ] {
            assert!(loopback_addrs(host, 80).is_some(), "{host}");
        }
        for host in [
            "10.0.0.1",
            "192.0.2.1",
            "0.0.0.0",
            "[::]",
            "example.com",
            "127.0.0.1.nip.io",
            "",
        ] {
            assert!(loopback_addrs(host, 80).is_none(), "{host}");
        }
    }
}
