//! https: a TLS handshake (rustls, through tokio-rustls) on each accepted
//! connection, then HTTP/2 if the client chose `h2` by ALPN, else HTTP/1.1
//! with the same strict codec as plain connections.
//!
//! The handshake must finish within [`crate::Limits::head_timeout`]; a
//! client that does not finish it is disconnected, as one that does not
//! finish a request head is. Certificates and keys are the caller's
//! business (egress-mirror loads them from PEM files): this module takes a
//! ready [`rustls::ServerConfig`], whose ALPN list says what is offered.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::conn::{Service, Transport};
use crate::server::Acceptor;

/// The ALPN protocol id of HTTP/2.
pub const ALPN_H2: &[u8] = b"h2";
/// The ALPN protocol id of HTTP/1.1.
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

/// A TLS connection is served like any other; it is never handed over as a
/// raw socket (so `Reply::Takeover` and `Reply::Raw` close it), and sealed
/// bodies are copied through TLS rather than sent with `sendfile(2)`.
impl Transport for TlsStream<TcpStream> {}

/// An [`Acceptor`] for [`crate::Config::acceptor`] that serves https with
/// `config`: HTTP/2 when the client negotiated [`ALPN_H2`], HTTP/1.1
/// otherwise (ALPN `http/1.1`, or none).
pub fn tls_acceptor(config: Arc<rustls::ServerConfig>) -> Acceptor {
    let acceptor = TlsAcceptor::from(config);
    Arc::new(move |tcp: TcpStream, peer: SocketAddr, svc: Service| {
        let acceptor = acceptor.clone();
        Box::pin(async move {
            let limits = *svc.limits();
            let bound = limits.head_timeout.min(limits.read_timeout);
            let Ok(Ok(tls)) = timeout(bound, acceptor.accept(tcp)).await else {
                return;
            };
            if tls.get_ref().1.alpn_protocol() == Some(ALPN_H2) {
                svc.serve_http2(tls, peer).await;
            } else {
                svc.serve_http1(tls, peer).await;
            }
        })
    })
}
