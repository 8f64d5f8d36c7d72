//! **Test fixture.** A mirror as some labs deploy it: behind a forward
//! proxy that also accepts `CONNECT`. Plain requests go to the backend
//! mirror; `CONNECT host:port` opens a tunnel. `sandbox-scan` must name
//! that tunnel (`R.mirror-connect`); the network-namespace tests run it in
//! a lab namespace in front of the real `egress-mirror`.
//!
//! Like every server here it connects on someone's behalf only where no
//! real host can be: loopback, or the documentation ranges (RFC 5737
//! 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24; RFC 3849 2001:db8::/32),
//! which exist only inside namespaces a test made.

use crate::loopback::is_loopback;
use crate::relay::{limits, outbound, relay, splice, text};
use egress_http::{Limits, Method, Reply, Request, Response, Server, ServerHandle};
use egress_model::Url;
use egress_transcript::Client;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::Duration;

/// Whether `ip` is loopback or in a documentation range.
pub fn is_lab_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            is_loopback(ip) || matches!(o, [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _])
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            is_loopback(ip) || (s[0] == 0x2001 && s[1] == 0x0db8)
        }
    }
}

/// A running fixture; stops on drop.
pub struct TunnelingFront {
    server: ServerHandle,
}

impl TunnelingFront {
    /// Serves on `listen`, relaying plain requests to `backend` (a lab
    /// address) and tunnelling CONNECT to lab addresses.
    pub fn serve(listen: SocketAddr, backend: Url) -> io::Result<Self> {
        let ok = backend
            .host_unbracketed()
            .parse::<IpAddr>()
            .is_ok_and(is_lab_address);
        if !ok {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the backend must be a loopback or documentation address",
            ));
        }
        let client = Client::new(backend, limits(Duration::from_secs(15)), None)
            .map_err(|e| io::Error::other(e.to_string()))?;
        let server = Server::bind(
            listen,
            move |req: Request| -> Reply {
                if req.method == Method::Connect {
                    return tunnel(&req.target);
                }
                relay(client.send("tunnelling front: relay", &outbound(&req, &req.target)))
            },
            Limits::default(),
        )?;
        Ok(Self { server })
    }

    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }
}

fn tunnel(authority: &str) -> Reply {
    let Some(addr) = authority
        .parse::<SocketAddr>()
        .ok()
        .filter(|a| is_lab_address(a.ip()))
    else {
        return text(502, "this fixture tunnels to lab addresses only\n");
    };
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(upstream) => Reply::Takeover(
            Response::new(200),
            Box::new(move |client| splice(client, upstream)),
        ),
        Err(_) => text(502, "cannot connect\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_addresses() {
        for a in [
            "127.0.0.1",
            "192.0.2.9",
            "198.51.100.1",
            "203.0.113.200",
            "2001:db8::1",
            "::1",
        ] {
            assert!(is_lab_address(a.parse().unwrap()), "{a}");
        }
        for a in [
            "10.0.0.1",
            "8.8.8.8",
            "169.254.169.254",
            "fd00:ec2::254",
            "2001:db9::1",
        ] {
            assert!(!is_lab_address(a.parse().unwrap()), "{a}");
        }
    }
}
