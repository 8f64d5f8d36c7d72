//! A loopback TCP relay: listens on a free port no higher than a peer's
//! `max-port` and passes every connection's bytes, both ways and unchanged,
//! to the canary. For a peer that cannot reach a port as high as the ones
//! the kernel gives the canary (apt-cacher-ng 3.7.4 reads ports as signed
//! 16-bit numbers). It only ever connects to the one address it is given.

use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A running relay; stops accepting on drop (connections in flight end
/// when either side closes).
pub struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    /// Listens on `listener` and relays each connection to `target`.
    pub fn start(listener: TcpListener, target: SocketAddr) -> io::Result<Relay> {
        let port = listener.local_addr()?.port();
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("testbed-relay".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            let _ = client.set_nonblocking(false);
                            let _ = std::thread::Builder::new()
                                .name("testbed-relay-conn".into())
                                .spawn(move || pass(client, target));
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(10))
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            })?;
        Ok(Relay {
            port,
            stop,
            thread: Some(thread),
        })
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One connection: the client's bytes to the target and back, spliced as
/// the caching-proxy fixtures splice a CONNECT tunnel.
fn pass(client: TcpStream, target: SocketAddr) {
    match TcpStream::connect_timeout(&target, Duration::from_secs(5)) {
        Ok(upstream) => egress_references::splice(client, upstream),
        Err(_) => {
            let _ = client.shutdown(Shutdown::Both);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn passes_bytes_both_ways() {
        let server = TcpListener::bind("127.0.0.1:0").expect("bind");
        let target = server.local_addr().expect("addr");
        let echo = std::thread::spawn(move || {
            let (mut s, _) = server.accept().expect("accept");
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).expect("read");
            s.write_all(&buf).expect("write");
        });
        let relay =
            Relay::start(TcpListener::bind("127.0.0.1:0").expect("bind"), target).expect("relay");
        let mut c = TcpStream::connect(("127.0.0.1", relay.port())).expect("connect");
        c.write_all(b"hello relay").expect("write");
        c.shutdown(Shutdown::Write).expect("shutdown");
        let mut back = Vec::new();
        c.read_to_end(&mut back).expect("read");
        assert_eq!(back, b"hello relay");
        echo.join().expect("echo");
    }
}
