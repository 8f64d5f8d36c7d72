//! The canary's DNS responder: answers every query it is asked (A with
//! its IPv4 answer, AAAA with its IPv6 one, anything else with no record)
//! and logs each name, so that a lookup carried out of a sandbox by its
//! resolver is seen arriving (`egress-conformance canary --dns ADDR`,
//! checked by `sandbox-scan --canary-zone`). The wire format is
//! `egress_sandbox::dns`.

use egress_sandbox::dns;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One query as the responder received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsQueryLog {
    pub from: SocketAddr,
    /// Lower case, no trailing dot.
    pub name: String,
    /// `A`, `AAAA`, `TYPE65`...
    pub qtype: String,
}

/// A running responder; stops on [`DnsResponder::stop`] or drop.
pub struct DnsResponder {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    log: Arc<Mutex<Vec<DnsQueryLog>>>,
}

impl DnsResponder {
    /// Binds `listen` (UDP) and answers with `answers` until stopped,
    /// calling `on_query` for every query it reads.
    pub fn serve(
        listen: SocketAddr,
        answers: Vec<IpAddr>,
        on_query: impl Fn(&DnsQueryLog) + Send + 'static,
    ) -> io::Result<Self> {
        let socket = UdpSocket::bind(listen)?;
        socket.set_read_timeout(Some(Duration::from_millis(200)))?;
        let addr = socket.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (stop2, log2) = (Arc::clone(&stop), Arc::clone(&log));
        let thread = std::thread::Builder::new()
            .name("canary-dns".into())
            .spawn(move || {
                let mut buf = [0u8; 1500];
                while !stop2.load(Ordering::Relaxed) {
                    let Ok((n, from)) = socket.recv_from(&mut buf) else {
                        continue;
                    };
                    let Ok(msg) = dns::parse(buf.get(..n).unwrap_or_default()) else {
                        continue;
                    };
                    if msg.is_response() || msg.opcode() != 0 {
                        continue;
                    }
                    if let Some(q) = msg.questions.first() {
                        let entry = DnsQueryLog {
                            from,
                            name: q.name.clone(),
                            qtype: dns::type_name(q.qtype),
                        };
                        on_query(&entry);
                        if let Ok(mut l) = log2.lock() {
                            l.push(entry);
                        }
                    }
                    let _ = socket.send_to(&dns::encode_reply(&msg, &answers, 60), from);
                }
            })?;
        Ok(Self {
            addr,
            stop,
            thread: Some(thread),
            log,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every query received so far.
    pub fn queries(&self) -> Vec<DnsQueryLog> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DnsResponder {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_and_logs_every_name() {
        let r = DnsResponder::serve(
            "127.0.0.1:0".parse().unwrap(),
            vec!["203.0.113.7".parse().unwrap()],
            |_| {},
        )
        .unwrap();
        // The scan's own client, aimed at the responder's port.
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(r.addr()).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let name = dns::Name::new("egress-scan-abc.canary.example").unwrap();
        socket
            .send(&dns::encode_query(9, &name, dns::TYPE_A))
            .unwrap();
        let mut buf = [0u8; 512];
        let n = socket.recv(&mut buf).unwrap();
        let reply = dns::parse(&buf[..n]).unwrap();
        assert_eq!(reply.id, 9);
        assert_eq!(reply.rcode(), 0);
        assert_eq!(
            reply.addresses(),
            vec!["203.0.113.7".parse::<IpAddr>().unwrap()]
        );
        // Garbage is ignored, and the responder goes on.
        socket.send(b"\x00").unwrap();
        socket
            .send(&dns::encode_query(10, &name, dns::TYPE_AAAA))
            .unwrap();
        let n = socket.recv(&mut buf).unwrap();
        let reply = dns::parse(&buf[..n]).unwrap();
        assert_eq!((reply.id, reply.answers.len()), (10, 0));
        let log = r.queries();
        assert_eq!(log.len(), 2);
        assert_eq!(log[0].name, "egress-scan-abc.canary.example");
        assert_eq!(log[1].qtype, "AAAA");
        r.stop();
    }
}
