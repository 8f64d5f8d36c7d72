//! A front that crashes: a byte-for-byte relay to the wrapped mirror that,
//! when a client sends a given sequence of bytes, drops every connection
//! and its listening socket at once, as a server killed by a signal would,
//! and listens again on the same port a moment later, as a supervisor
//! restarting it would. What `P3.request-smuggling` meets in apt-cacher-ng
//! 3.7.4 (docs/results.md), without the real peer.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// How long the front stays down after a crash.
const DOWN_FOR: Duration = Duration::from_millis(300);

struct Shared {
    backend: SocketAddr,
    trigger: Vec<u8>,
    /// Every open stream, both sides, so that a crash closes them all.
    open: Mutex<Vec<TcpStream>>,
    crash: AtomicBool,
    crashes: AtomicUsize,
    stop: AtomicBool,
}

/// A running front; stops when dropped.
pub(crate) struct CrashFront {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl CrashFront {
    /// Relays to `backend` and crashes whenever a client sends `trigger`.
    pub(crate) fn start(backend: SocketAddr, trigger: &[u8]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the crash front");
        let addr = listener.local_addr().expect("front address");
        let shared = Arc::new(Shared {
            backend,
            trigger: trigger.to_vec(),
            open: Mutex::new(Vec::new()),
            crash: AtomicBool::new(false),
            crashes: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let s = Arc::clone(&shared);
        thread::spawn(move || accept_loop(listener, addr, &s));
        Self { addr, shared }
    }

    /// `http://127.0.0.1:PORT`
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many times it has crashed.
    pub(crate) fn crashes(&self) -> usize {
        self.shared.crashes.load(Ordering::SeqCst)
    }
}

impl Drop for CrashFront {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
    }
}

fn accept_loop(mut listener: TcpListener, addr: SocketAddr, s: &Arc<Shared>) {
    listener
        .set_nonblocking(true)
        .expect("non-blocking listener");
    while !s.stop.load(Ordering::SeqCst) {
        if s.crash.swap(false, Ordering::SeqCst) {
            // Killed: the listening socket goes with the process.
            drop(listener);
            for stream in s.open.lock().expect("open streams").drain(..) {
                let _ = stream.shutdown(Shutdown::Both);
            }
            s.crashes.fetch_add(1, Ordering::SeqCst);
            thread::sleep(DOWN_FOR);
            listener = TcpListener::bind(addr).expect("listen again on the same port");
            listener
                .set_nonblocking(true)
                .expect("non-blocking listener");
            continue;
        }
        match listener.accept() {
            Ok((client, _)) => {
                let s = Arc::clone(s);
                thread::spawn(move || relay(client, &s));
            }
            // Nothing waiting (WouldBlock), or a failed accept: look again soon.
            Err(_) => thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn register(s: &Shared, stream: &TcpStream) {
    if let Ok(clone) = stream.try_clone() {
        s.open.lock().expect("open streams").push(clone);
    }
}

fn relay(client: TcpStream, s: &Arc<Shared>) {
    let _ = client.set_nonblocking(false);
    let Ok(backend) = TcpStream::connect(s.backend) else {
        return;
    };
    register(s, &client);
    register(s, &backend);
    let (Ok(mut from_client), Ok(mut to_client)) = (client.try_clone(), client.try_clone()) else {
        return;
    };
    let (Ok(mut to_backend), Ok(mut from_backend)) = (backend.try_clone(), backend.try_clone())
    else {
        return;
    };
    let back = thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        while let Ok(n @ 1..) = from_backend.read(&mut buf) {
            if to_client.write_all(&buf[..n]).is_err() {
                break;
            }
        }
        let _ = to_client.shutdown(Shutdown::Write);
    });
    let mut seen: Vec<u8> = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while let Ok(n @ 1..) = from_client.read(&mut buf) {
        seen.extend_from_slice(&buf[..n]);
        if seen
            .windows(s.trigger.len())
            .any(|w| w == s.trigger.as_slice())
        {
            s.crash.store(true, Ordering::SeqCst);
            break;
        }
        if to_backend.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to_backend.shutdown(Shutdown::Write);
    let _ = back.join();
}
