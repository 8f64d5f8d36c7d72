//! The listener side: the runtime, accepting, the connection limits, the
//! log lines when a limit bites, and stopping.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags};
use tokio::sync::watch;

#[cfg(target_os = "linux")]
use crate::conn::AtOnce;
use crate::conn::{refuse_busy, Answered, Service};
use crate::proxy::ProxyConfig;
use crate::runtimes::{Runtimes, Spread};
use crate::shared::{lock, Counts, RateLog, Shared};
use crate::{Handler, Limits};

/// Takes an accepted connection over instead of serving plain HTTP/1.1 on
/// it: e.g. a TLS handshake, then [`Service::serve_http1`] on the TLS stream
/// or another protocol that answers through [`Service::respond`]. The
/// future runs as the connection's task; the connection counts against the
/// limits until it ends. Stopping the server drops it.
pub type Acceptor = Arc<
    dyn Fn(tokio::net::TcpStream, SocketAddr, Service) -> Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// How a [`Server`] runs. `Config::default()` is what [`Server::bind`]
/// uses, with its limits.
#[derive(Clone)]
pub struct Config {
    pub limits: Limits,
    /// The handler never blocks (it does not wait for the network, locks
    /// held long, or sleep; reading and statting files in the page cache is
    /// fine): call it inline on the runtime's workers instead of on the
    /// blocking pool, which saves a thread hand-off per request. A handler
    /// that does block while this is set stalls other connections.
    pub handler_never_blocks: bool,
    /// Serves each accepted connection instead of plain HTTP/1.1.
    pub acceptor: Option<Acceptor>,
    /// Peers whose connections begin with a PROXY protocol header naming
    /// the client (a load balancer's), and whether they must.
    pub proxy: ProxyConfig,
    /// What raises [`Limits::max_connections_per_client`], named in the log
    /// line when that limit refuses a connection.
    pub per_client_hint: String,
    /// What raises [`Limits::max_connections`], named in the log line when
    /// that limit refuses a connection.
    pub total_hint: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            limits: Limits::default(),
            handler_never_blocks: false,
            acceptor: None,
            proxy: ProxyConfig::default(),
            per_client_hint: "Limits::max_connections_per_client".to_string(),
            total_hint: "the open-file limit (ulimit -n), or Limits::max_connections".to_string(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("limits", &self.limits)
            .field("handler_never_blocks", &self.handler_never_blocks)
            .field("acceptor", &self.acceptor.is_some())
            .finish_non_exhaustive()
    }
}

/// Entry point; see [`Server::bind`].
pub struct Server;

impl Server {
    /// Binds `addr` and serves `handler` on a runtime of its own until the
    /// returned handle is stopped or dropped.
    pub fn bind(
        addr: impl ToSocketAddrs,
        handler: impl Handler,
        limits: Limits,
    ) -> io::Result<ServerHandle> {
        Server::bind_with(
            addr,
            handler,
            Config {
                limits,
                ..Config::default()
            },
        )
    }

    /// Binds `127.0.0.1:0` with default limits.
    pub fn bind_loopback(handler: impl Handler) -> io::Result<ServerHandle> {
        Server::bind((Ipv4Addr::LOCALHOST, 0), handler, Limits::default())
    }

    /// [`Server::bind`] with every setting.
    pub fn bind_with(
        addr: impl ToSocketAddrs,
        handler: impl Handler,
        config: Config,
    ) -> io::Result<ServerHandle> {
        if config.limits.read_timeout.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "read_timeout must be non-zero",
            ));
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let runtimes = Runtimes::start(cores * RUNTIMES_PER_CORE, "egress-http")?;
        let listener = listen(addr)?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            limits: config.limits,
            inline: config.handler_never_blocks,
            addr,
            stop: stop_rx,
            counts: Mutex::new(Counts::default()),
            taken: Mutex::new(HashMap::new()),
            next_taken: AtomicU64::new(0),
            refusing: AtomicUsize::new(0),
            per_client_log: RateLog::default(),
            total_log: RateLog::default(),
            accept_log: RateLog::default(),
            per_client_hint: config.per_client_hint,
            total_hint: config.total_hint,
            tally: crate::shared::Tally::default(),
            proxy: config.proxy,
            proxy_log: RateLog::default(),
        });
        let lobby = start_lobby(runtimes.spread(), &shared, config.acceptor.as_ref())?;
        let accepting = AcceptThread::start(
            listener,
            Accepting {
                runtimes: runtimes.spread(),
                shared: Arc::clone(&shared),
                acceptor: config.acceptor,
                lobby: lobby.clone(),
            },
        )?;
        Ok(ServerHandle {
            addr,
            shared,
            runtimes: Some(runtimes),
            stop: stop_tx,
            accepting,
            lobby,
        })
    }
}

/// Binds the first address of `addr` that can be bound, as
/// `std::net::TcpListener::bind` does, with a backlog for bursts of
/// thousands of connections; non-blocking, for the accept thread.
fn listen(addr: impl ToSocketAddrs) -> io::Result<std::net::TcpListener> {
    use rustix::net::{bind, listen as listen_on, socket_with, sockopt, AddressFamily};
    use rustix::net::{SocketFlags, SocketType};
    let mut last = None;
    for addr in addr.to_socket_addrs()? {
        let family = match addr {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        let bound = socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )
        .and_then(|socket| {
            sockopt::set_socket_reuseaddr(&socket, true)?;
            bind(&socket, &addr)?;
            listen_on(&socket, 4096)?;
            Ok(socket)
        });
        match bound {
            Ok(socket) => return Ok(std::net::TcpListener::from(socket)),
            Err(e) => last = Some(io::Error::from(e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any addresses",
        )
    }))
}

/// A running server. Stops on [`ServerHandle::stop`] or drop.
pub struct ServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    runtimes: Option<Runtimes>,
    stop: watch::Sender<bool>,
    accepting: AcceptThread,
    lobby: Option<Arc<ConnLobby>>,
}

impl ServerHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT`, with a loopback IP if bound to an unspecified address.
    pub fn base_url(&self) -> String {
        format!("http://{}", reachable(self.addr))
    }

    /// Its counts, readable for as long as it serves (an admin
    /// listener's metrics).
    pub fn stats(&self) -> crate::shared::Stats {
        crate::shared::Stats(Arc::downgrade(&self.shared))
    }

    /// Number of connections currently being served (taken-over streams
    /// included).
    pub fn connections(&self) -> usize {
        lock(&self.shared.counts).total
    }

    /// Stops accepting, closes the listener and shuts down every open
    /// connection (idle keep-alive ones and taken-over streams included).
    /// Handlers that are running finish on their own threads; their writes
    /// fail.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(mut runtimes) = self.runtimes.take() else {
            return;
        };
        let _ = self.stop.send(true);
        // Stops accepting and closes the listener.
        self.accepting.stop();
        // Connections that have sent nothing yet are closed here.
        #[cfg(target_os = "linux")]
        if let Some(lobby) = &self.lobby {
            lobby.stop();
        }
        for stream in lock(&self.shared.taken).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        // Every connection task ends on the flag, dropping its socket.
        // Taken-over streams are shut down above; their closures end when
        // they next touch the stream (one that sleeps is not waited for).
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.connections() > lock(&self.shared.taken).len() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Safe in any context, async included; blocking tasks still running
        // (a handler that sleeps) finish on their own.
        runtimes.stop();
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Serving runtimes per core (see `runtimes.rs`). A connection stays on
/// its runtime, so while that runtime's thread is preempted (by the
/// machine's other work) its connections wait; with two per core, each
/// holds half as many, and the other keeps the core busy.
/// docs/benchmarks.md, "Pages", has the measurements.
const RUNTIMES_PER_CORE: usize = 2;

/// Refusals (503) are answered on short-lived tasks so the accept loop
/// never waits; this caps those tasks. Past it, sockets are simply closed.
const MAX_REFUSING: usize = 1024;
/// Pause after an accept error that says the process or system is out of
/// file descriptors or memory.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Where accepted connections wait for their first byte: the lobby (see
/// `lobby.rs`), on Linux.
#[cfg(target_os = "linux")]
type ConnLobby = crate::lobby::Lobby<(SocketAddr, Admitted)>;
#[cfg(not(target_os = "linux"))]
type ConnLobby = ();

/// Starts the lobby of `shared`'s server: a connection that becomes
/// readable there is served on `runtime`, one that stays silent for the
/// idle timeout is closed (as a task waiting for its first byte would have
/// closed it).
#[cfg(target_os = "linux")]
fn start_lobby(
    runtimes: Arc<Spread>,
    shared: &Arc<Shared>,
    acceptor: Option<&Acceptor>,
) -> io::Result<Option<Arc<ConnLobby>>> {
    let limits = &shared.limits;
    let idle = limits.idle_timeout.min(limits.read_timeout);
    let served = Arc::clone(shared);
    let acceptor = acceptor.cloned();
    let lobby = crate::lobby::Lobby::start(idle, move |stream, (peer, admitted)| {
        // Its first bytes have just arrived: the fast lane, as on accepting.
        let mut first = [0u8; crate::conn::AT_ONCE_PEEK];
        let sent = peek(&stream, &mut first);
        let Ok(answered) = fast_lane(&stream, sent, &first, peer, &served, acceptor.is_none())
        else {
            return;
        };
        spawn_serving(
            runtimes.pick(),
            stream,
            peer,
            admitted,
            Arc::clone(&served),
            acceptor.clone(),
            answered,
        );
    })?;
    Ok(Some(lobby))
}

#[cfg(not(target_os = "linux"))]
fn start_lobby(
    _runtimes: Arc<Spread>,
    _shared: &Arc<Shared>,
    _acceptor: Option<&Acceptor>,
) -> io::Result<Option<Arc<ConnLobby>>> {
    Ok(None)
}

/// What a new connection has sent so far, peeked at without waiting: the
/// number of bytes of `buf` filled, `Some(0)` for a peer that already closed
/// (or an error, for the serving code to meet), `None` for nothing yet.
#[cfg(target_os = "linux")]
fn peek(stream: &std::net::TcpStream, buf: &mut [u8]) -> Option<usize> {
    use rustix::net::{recv, RecvFlags};
    let room = buf.len();
    match recv(stream, buf, RecvFlags::PEEK | RecvFlags::DONTWAIT) {
        Ok((n, _)) => Some(n.min(room)),
        Err(rustix::io::Errno::AGAIN) => None,
        Err(_) => Some(0),
    }
}

/// The socket failed while the fast lane took its request: close it.
#[cfg(target_os = "linux")]
struct Closed;

/// The fast lane (`conn::answer_at_once`) for a plain-HTTP connection whose
/// first bytes `first[..n]` have arrived (`sent` is [`peek`]'s answer).
#[cfg(target_os = "linux")]
fn fast_lane(
    stream: &std::net::TcpStream,
    sent: Option<usize>,
    first: &[u8],
    peer: SocketAddr,
    shared: &Shared,
    plain: bool,
) -> Result<Option<Answered>, Closed> {
    let Some(n) = sent.filter(|n| plain && *n > 0) else {
        return Ok(None);
    };
    let sent = first.get(..n).unwrap_or_default();
    match crate::conn::answer_at_once(stream, sent, peer, shared) {
        AtOnce::NotHere => Ok(None),
        AtOnce::Answered(a) => Ok(Some(a)),
        AtOnce::Failed => Err(Closed),
    }
}

/// Accepts one connection, non-blocking and close-on-exec from the start.
fn accept_one(listener: &std::net::TcpListener) -> io::Result<(std::net::TcpStream, SocketAddr)> {
    use rustix::net::{acceptfrom_with, SocketFlags};
    let (fd, addr) = acceptfrom_with(listener, SocketFlags::NONBLOCK | SocketFlags::CLOEXEC)?;
    let peer = addr
        .and_then(|a| SocketAddr::try_from(a).ok())
        .ok_or_else(|| io::Error::other("accepted a connection without an IP address"))?;
    Ok((std::net::TcpStream::from(fd), peer))
}

/// Serves an admitted connection until it ends or the server stops. The
/// connection's own future is boxed here, so the task holds little more
/// than a pointer to it.
fn serve(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    shared: Arc<Shared>,
    acceptor: Option<&Acceptor>,
    answered: Option<Answered>,
) -> impl Future<Output = ()> + Send + 'static {
    let mut stop = shared.stop.clone();
    let svc = Service { shared };
    let serving: Pin<Box<dyn Future<Output = ()> + Send>> = match (acceptor, answered) {
        (_, Some(answered)) => {
            Box::pin(async move { crate::conn::serve_answered(stream, peer, &svc, answered).await })
        }
        (Some(acceptor), None) => acceptor(stream, peer, svc),
        (None, None) => Box::pin(async move { svc.serve_http1(stream, peer).await }),
    };
    async move {
        let _admitted = admitted;
        tokio::select! {
            () = serving => {}
            _ = stop.wait_for(|s| *s) => {}
        }
    }
}

/// One open connection, counted against the limits until dropped: against
/// the per-client limit too once it is keyed on a client's address.
struct Admitted {
    ip: Option<IpAddr>,
    shared: Arc<Shared>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        let mut counts = lock(&self.shared.counts);
        counts.total = counts.total.saturating_sub(1);
        if let Some(ip) = self.ip {
            if let Some(n) = counts.per_client.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    counts.per_client.remove(&ip);
                }
            }
        }
    }
}

impl Admitted {
    /// Keys a connection admitted without a client (behind a trusted
    /// proxy, before its header was read) on `ip`, within the per-client
    /// limit.
    fn key_on(&mut self, ip: IpAddr) -> Result<(), Refused> {
        let limit = self.shared.limits.max_connections_per_client;
        let mut counts = lock(&self.shared.counts);
        let mine = counts.per_client.get(&ip).copied().unwrap_or(0);
        if limit > 0 && mine >= limit {
            return Err(Refused::PerClient(mine));
        }
        counts.per_client.insert(ip, mine + 1);
        self.ip = Some(ip);
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Refused {
    Total(usize),
    PerClient(usize),
}

/// Admits a connection within the limits: the server's, and `ip`'s when
/// given (`None`: a trusted proxy's, keyed later by [`Admitted::key_on`]).
fn admit(shared: &Arc<Shared>, ip: Option<IpAddr>) -> Result<Admitted, Refused> {
    let limits = &shared.limits;
    let mut counts = lock(&shared.counts);
    if counts.total >= limits.max_connections {
        return Err(Refused::Total(counts.total));
    }
    if let Some(ip) = ip {
        let mine = counts.per_client.get(&ip).copied().unwrap_or(0);
        if limits.max_connections_per_client > 0 && mine >= limits.max_connections_per_client {
            return Err(Refused::PerClient(mine));
        }
        counts.per_client.insert(ip, mine + 1);
    }
    counts.total += 1;
    Ok(Admitted {
        ip,
        shared: Arc::clone(shared),
    })
}

/// Counts and logs a refused connection (at most a line per interval).
fn note_refused(shared: &Shared, refused: Refused, ip: IpAddr) {
    let tally = match refused {
        Refused::Total(_) => &shared.tally.refused_connection_limit,
        Refused::PerClient(_) => &shared.tally.refused_per_client_limit,
    };
    tally.fetch_add(1, Ordering::Relaxed);
    match refused {
        Refused::Total(open) => shared.total_log.log(|| {
            format!(
                "egress-http {}: connection limit reached ({open} open, limit {}): connections get 503 and are closed; raise {}",
                shared.addr, shared.limits.max_connections, shared.total_hint,
            )
        }),
        Refused::PerClient(open) => shared.per_client_log.log(|| {
            format!(
                "egress-http {}: per-client connection limit reached for {ip} ({open} open, limit {}): its further connections get 503 and are closed; raise it with {}",
                shared.addr, shared.limits.max_connections_per_client, shared.per_client_hint,
            )
        }),
    }
}

/// A trusted proxy's connection: its PROXY header read (within the head
/// timeout), the connection keyed on the client it names, then served.
async fn behind_proxy(
    stream: tokio::net::TcpStream,
    proxy: SocketAddr,
    mut admitted: Admitted,
    shared: Arc<Shared>,
    acceptor: Option<Acceptor>,
) {
    use crate::proxy::{parse, Parsed, V2_MAX};
    let limits = shared.limits;
    let deadline = tokio::time::Instant::now() + limits.head_timeout.min(limits.read_timeout);
    let mut buf = vec![0u8; V2_MAX];
    let refuse = |why: String| {
        shared
            .tally
            .refused_proxy_header
            .fetch_add(1, Ordering::Relaxed);
        shared.proxy_log.log(|| {
            format!(
                "egress-http {}: connection from trusted proxy {proxy} closed: {why}",
                shared.addr
            )
        });
    };
    let header = loop {
        let n = match tokio::time::timeout_at(deadline, stream.peek(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => n,
            Ok(_) => return,
            Err(_) => return refuse("no whole PROXY header before the head timeout".into()),
        };
        match parse(buf.get(..n).unwrap_or_default()) {
            Ok(Parsed::Header(h)) => break Some(h),
            Ok(Parsed::Absent) => break None,
            // More is on its way: look again shortly (a peek returns at once
            // while unread bytes wait).
            Ok(Parsed::Incomplete) => {
                if tokio::time::timeout_at(deadline, tokio::time::sleep(Duration::from_millis(2)))
                    .await
                    .is_err()
                {
                    return refuse("no whole PROXY header before the head timeout".into());
                }
            }
            Err(e) => return refuse(e.to_string()),
        }
    };
    let mut stream = stream;
    let peer = match header {
        Some(h) => {
            use tokio::io::AsyncReadExt;
            let Some(head) = buf.get_mut(..h.len) else {
                return;
            };
            if stream.read_exact(head).await.is_err() {
                return;
            }
            h.source.unwrap_or(proxy)
        }
        None if shared.proxy.require_header => {
            return refuse("no PROXY header, and one is required".into())
        }
        None => proxy,
    };
    let ip = peer.ip().to_canonical();
    if let Err(refused) = admitted.key_on(ip) {
        note_refused(&shared, refused, ip);
        drop(admitted);
        refuse_busy(stream, &shared.limits).await;
        return;
    }
    serve(stream, peer, admitted, shared, acceptor.as_ref(), None).await;
}

fn reachable(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(a) if a.ip().is_unspecified() => (Ipv4Addr::LOCALHOST, a.port()).into(),
        SocketAddr::V6(a) if a.ip().is_unspecified() => (Ipv6Addr::LOCALHOST, a.port()).into(),
        a => a,
    }
}

/// Accept errors that mean "out of descriptors or memory": waiting helps,
/// retrying at once only spins.
fn is_resource_error(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(23 | 24 | 105 | 12))
}

/// What the accept thread hands accepted connections to.
struct Accepting {
    /// The serving runtimes.
    runtimes: Arc<Spread>,
    shared: Arc<Shared>,
    acceptor: Option<Acceptor>,
    lobby: Option<Arc<ConnLobby>>,
}

/// The accept thread: a plain thread that waits for the listener (or its
/// wake-up) with `poll` and accepts until the queue is empty. Accepting is
/// not a task of the serving runtime: a task would queue behind whatever the
/// workers have to do, and when thousands of held connections reach their
/// deadline at once the workers have thousands of tasks to run, so a client
/// connecting then would wait for all of them before even being accepted
/// (docs/benchmarks.md, held connections). Accepted sockets go to the lobby
/// or to the serving runtime; one whose first request arrived with it and
/// asks for a page is answered here first (the fast lane,
/// `conn::answer_at_once`).
struct AcceptThread {
    wake: OwnedFd,
    thread: Option<JoinHandle<()>>,
}

impl AcceptThread {
    fn start(listener: std::net::TcpListener, to: Accepting) -> io::Result<Self> {
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        let woken = wake.try_clone()?;
        let thread = std::thread::Builder::new()
            .name("egress-http-accept".into())
            .spawn(move || accept_loop(&listener, &woken, &to))?;
        Ok(Self {
            wake,
            thread: Some(thread),
        })
    }

    /// Ends the thread (the server's stop flag is already set) and closes
    /// the listener.
    fn stop(&mut self) {
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn accept_loop(listener: &std::net::TcpListener, wake: &OwnedFd, to: &Accepting) {
    let shared = &to.shared;
    let stopped = || *shared.stop.borrow();
    while !stopped() {
        let mut fds = [
            PollFd::new(listener, PollFlags::IN),
            PollFd::new(wake, PollFlags::IN),
        ];
        if let Err(e) = poll(&mut fds, None) {
            if e != rustix::io::Errno::INTR {
                std::thread::sleep(ACCEPT_BACKOFF);
            }
            continue;
        }
        loop {
            match accept_one(listener) {
                Ok((stream, peer)) => dispatch(stream, peer, to),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if is_resource_error(&e) => {
                    shared.accept_log.log(|| {
                        format!(
                            "egress-http {}: cannot accept connections: {e}; pausing {} ms before retrying; raise {}",
                            shared.addr,
                            ACCEPT_BACKOFF.as_millis(),
                            shared.total_hint,
                        )
                    });
                    std::thread::sleep(ACCEPT_BACKOFF);
                    break;
                }
                // A connection that failed before it was accepted
                // (ECONNABORTED and the like): nothing to wait for.
                Err(_) => {}
            }
            if stopped() {
                return;
            }
        }
    }
}

/// Serves `stream` on the serving runtime (registering it with that
/// runtime's reactor there), after finishing the first request if the fast
/// lane `answered` it.
fn spawn_serving(
    handle: &tokio::runtime::Handle,
    stream: std::net::TcpStream,
    peer: SocketAddr,
    admitted: Admitted,
    shared: Arc<Shared>,
    acceptor: Option<Acceptor>,
    answered: Option<Answered>,
) {
    handle.spawn(async move {
        let _ = stream.set_nodelay(true);
        if let Ok(stream) = tokio::net::TcpStream::from_std(stream) {
            serve(stream, peer, admitted, shared, acceptor.as_ref(), answered).await;
        }
    });
}

fn dispatch(stream: std::net::TcpStream, peer: SocketAddr, to: &Accepting) {
    let shared = &to.shared;
    let ip = peer.ip().to_canonical();
    if shared.proxy.trusts(ip) {
        // Keyed on the client once its PROXY header is read.
        match admit(shared, None) {
            Ok(admitted) => {
                let (shared, acceptor) = (Arc::clone(shared), to.acceptor.clone());
                to.runtimes.pick().spawn(async move {
                    let _ = stream.set_nodelay(true);
                    if let Ok(stream) = tokio::net::TcpStream::from_std(stream) {
                        behind_proxy(stream, peer, admitted, shared, acceptor).await;
                    }
                });
            }
            Err(refused) => refuse_connection(stream, refused, ip, to),
        }
        return;
    }
    match admit(shared, Some(ip)) {
        Ok(admitted) => {
            shared.tally.accepted.fetch_add(1, Ordering::Relaxed);
            // Until its first byte, a connection waits in the lobby, which
            // costs far less than a task (docs/architecture.md).
            // One that has already sent something (a client that connects
            // and asks at once, the usual case) skips it, and a page asked
            // for that way is answered at once by the fast lane.
            #[cfg(target_os = "linux")]
            let answered = {
                let mut first = [0u8; crate::conn::AT_ONCE_PEEK];
                let sent = peek(&stream, &mut first);
                if let (None, Some(lobby)) = (sent, to.lobby.as_deref()) {
                    lobby.park(stream, (peer, admitted));
                    return;
                }
                let plain = to.acceptor.is_none();
                match fast_lane(&stream, sent, &first, peer, shared, plain) {
                    Ok(answered) => answered,
                    Err(Closed) => return,
                }
            };
            #[cfg(not(target_os = "linux"))]
            let answered = None;
            spawn_serving(
                to.runtimes.pick(),
                stream,
                peer,
                admitted,
                Arc::clone(shared),
                to.acceptor.clone(),
                answered,
            );
        }
        Err(refused) => refuse_connection(stream, refused, ip, to),
    }
}

/// Answers 503 to a connection over a limit (bounded: at most
/// `MAX_REFUSING` at once, the rest closed), counted and logged.
fn refuse_connection(stream: std::net::TcpStream, refused: Refused, ip: IpAddr, to: &Accepting) {
    let shared = &to.shared;
    note_refused(shared, refused, ip);
    if shared.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let shared = Arc::clone(shared);
    to.runtimes.pick().spawn(async move {
        if let Ok(stream) = tokio::net::TcpStream::from_std(stream) {
            refuse_busy(stream, &shared.limits).await;
        }
        shared.refusing.fetch_sub(1, Ordering::SeqCst);
    });
}
