//! Start-up and serving: what the `egress-mirror` binary does once its
//! flags and config file are read into [`Settings`] ([`crate::config`]).
//!
//! Start-up, in this order (each step can only narrow what the process can
//! do next):
//! 1. flags, then the TOML config file if `--config` is given (keys
//!    `snapshot`, `listen`, `require_confinement`, `log_requests`,
//!    `zero_copy_budget`, `max_connections_per_client`, `tls_cert`,
//!    `tls_key`; relative paths are relative to the file; flags override
//!    the file): the binary, with [`crate::config`];
//! 2. the listen address is resolved (no name lookups after confinement),
//!    and the TLS certificate and key, if any, are read and checked to
//!    belong together (see [`crate::tls`]): after confinement they
//!    could not be read;
//! 3. the snapshot is opened with [`StoredSnapshot::open`]: evidence
//!    documents checked, no blob read (blobs are verified as they are
//!    served); with `--instance-dir DIR`, the instance key is made (in
//!    memory only), its public half written to `DIR/instance.pub`, and the
//!    sha256 of `/proc/self/exe` computed; `DIR/instance.cert`, the lab's
//!    certificate of that key, is read whenever it changes (Landlock allows
//!    reading beneath DIR); with `--misses-log FILE` (config keys
//!    `misses_log`, `misses_max_entries`, `misses_max_per_client`,
//!    `misses_max_line`, `misses_summary_secs`), FILE is opened for appending: Landlock allows no
//!    write afterwards, and the open descriptor keeps working (see
//!    [`crate::misses`]);
//! 4. the process confines itself with Landlock where the kernel allows
//!    (see `confine.rs`); anything not enforced is said on one stderr line,
//!    and with `--require-confinement` the mirror refuses to start instead;
//! 5. zero-copy serving, when `--zero-copy-budget` turns it on, is probed
//!    from inside the confinement (a sealed memfd sent with `sendfile`; see
//!    [`Mirror::zero_copy_budget`]), and
//!    the soft limit on open files is raised to the hard one, since every
//!    connection and every cached sealed copy holds a descriptor (the
//!    connection limit is that limit minus a reserve for the files being
//!    sent, and minus the sealed copies' cap when zero-copy is on);
//! 6. the listener is bound and one line is printed on stdout: snapshot ID,
//!    blob count, confinement status, zero-copy status and the URL
//!    (`http://` or `https://`); with `--instance-dir`, a second line names
//!    the instance key, the binary's sha256 and how to certify the key;
//!    with `--admin-listen ADDR` (checked at step 2: an IP and port, and
//!    `--admin-allow CIDR` unless it is loopback), the admin listener is
//!    bound next, and a line names it (see [`crate::admin`]);
//! 7. from then on, a watcher thread swaps to the snapshot at SNAPSHOT_DIR
//!    again on SIGHUP and, when SNAPSHOT_DIR is a symlink, whenever it
//!    resolves to another directory (checked every second): verified
//!    first, by the start-up checks and against the signer keys fixed at
//!    start (`--allowed-signers FILE`, else the snapshot's own
//!    allowed_signers); refused with one stderr line otherwise, the old
//!    snapshot still serving (see [`SwappableMirror`] and `watch.rs`).
//!    Started on a symlink, Landlock also allows reading beneath the
//!    directory that holds it.
//!
//! Invariant: no thread of the process exists when it confines itself
//! (step 4): Landlock restricts the calling thread and the threads it
//! creates afterwards, so every thread started later (the misses log's
//! writer, the server's, the swap watcher) is confined. [`run`] must
//! therefore be called from the main thread before any other thread was
//! spawned, and nothing here may start one before it confines the process
//! (see `confine.rs`).
//!
//! Every failure is a [`Failure`]: an exit code (see [`crate::config`])
//! and one line; nothing panics.

use crate::admin::Cidr;
use crate::config::{
    say, Failure, Settings, EXIT_ADMIN, EXIT_CONFIG, EXIT_CONFINEMENT, EXIT_INSTANCE, EXIT_LISTEN,
    EXIT_MISSES_LOG, EXIT_SNAPSHOT, EXIT_TLS, EXIT_USAGE,
};
use crate::confine::confine;
use crate::misses::cli as misses_cli;
use crate::watch::{link_directory, swap_signers, watch_for_swaps};
use crate::{Mirror, SwappableMirror};
use egress_snapshot::StoredSnapshot;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// In `--instance-dir`: the instance's public key, written at start.
pub const INSTANCE_PUB: &str = "instance.pub";
/// In `--instance-dir`: the lab's certificate of that key, deployed by the
/// operator and read whenever it changes.
pub const INSTANCE_CERT: &str = "instance.cert";

/// The hidden self-tests (`--self-test-connect IP:PORT`,
/// `--self-test-read PATH`): run after confinement instead of serving, so
/// that tests can observe from outside what the confined process can and
/// cannot do.
#[derive(Debug, Clone, Default)]
pub struct SelfTests {
    pub connect: Vec<String>,
    pub read: Vec<PathBuf>,
}

impl SelfTests {
    fn is_empty(&self) -> bool {
        self.connect.is_empty() && self.read.is_empty()
    }
}

/// One line on stdout, through the one standard-output path.
fn say_out(line: &str) {
    egress_cli::outln!("{line}");
}

/// Starts the mirror as `s` says, in the order of the module documentation,
/// and serves until the process is killed: it returns only after the
/// self-tests (`Ok`), or with the [`Failure`] that stopped start-up. Call it
/// on the main thread, before any other thread exists (see the invariant
/// above).
pub fn run(s: &Settings, self_tests: &SelfTests) -> Result<(), Failure> {
    let mut instance_line = None;

    // Resolved now: after confinement no file (such as /etc/hosts) can be
    // read to look a name up.
    let addrs: Vec<SocketAddr> = match s.listen.to_socket_addrs() {
        Ok(a) if a.len() > 0 => a.collect(),
        _ => {
            let (code, source) = match &s.listen_from_file {
                Some(path) => (
                    EXIT_CONFIG,
                    format!("bad config file {}: listen", path.display()),
                ),
                None => (EXIT_USAGE, "--listen".to_string()),
            };
            return Err(Failure::new(
                code,
                format!(
                    "{source} {:?} is not an address to listen on (e.g. 127.0.0.1:8080)",
                    s.listen
                ),
            ));
        }
    };

    // Checked now, before anything starts: an IP literal (no lookups), and
    // a non-loopback address only with --admin-allow.
    let admin = crate::admin::cli::resolve(&s.admin)
        .map_err(|e| Failure::new(EXIT_ADMIN, e.to_string()))?;
    let metrics = Arc::new(crate::admin::Metrics::default());

    // Read now: after confinement only the snapshot can be read.
    let tls = match &s.tls {
        Some((cert, key)) => match crate::tls::load(cert, key) {
            Ok(config) => Some(config),
            Err(e) => {
                return Err(Failure::new(
                    EXIT_TLS,
                    format!("unusable TLS certificate or key: {e}"),
                ))
            }
        },
        None => None,
    };

    let store = match StoredSnapshot::open(&s.dir) {
        Ok(store) => store,
        Err(e) => {
            return Err(Failure::new(
                EXIT_SNAPSHOT,
                format!("snapshot {} is invalid: {e}", s.dir.display()),
            ))
        }
    };

    // Read now, as the TLS files are: the keys every snapshot swapped to
    // must be signed by, fixed for the life of the process.
    let signers = swap_signers(s.allowed_signers.as_deref(), &store)?;
    // Started on a symlink (`current -> v2`): it is watched, and the
    // directory holding it is where the snapshots swapped to live.
    let link_dir = link_directory(&s.dir);

    // Before confinement: the public key is written, the binary read.
    let instance = match &s.instance_dir {
        Some(dir) => match start_instance(dir, &store.id()) {
            Ok(instance) => Some(instance),
            Err(e) => {
                return Err(Failure::new(
                    EXIT_INSTANCE,
                    format!("--instance-dir {}: {e}", dir.display()),
                ))
            }
        },
        None => None,
    };

    // Opened before confinement, which allows no write anywhere; the open
    // descriptor keeps working inside it.
    let misses_log = match misses_cli::open(&s.misses) {
        Ok(log) => log,
        Err(e) => return Err(Failure::new(EXIT_MISSES_LOG, format!("--misses-log: {e}"))),
    };

    // Invariant: no thread has been spawned yet (see confine.rs).
    // The snapshot's directory (a layer holds its whole chain: its
    // parents' files are hard-linked into it, their evidence is its own
    // blobs), and the directory holding the `current` link, if started on
    // one.
    let mut read_roots: Vec<&Path> = vec![store.root()];
    read_roots.extend(link_dir.as_deref());
    let confinement = confine(&read_roots, s.instance_dir.as_deref());
    if let Some(missing) = &confinement.missing {
        if s.require_confinement {
            return Err(Failure::new(
                EXIT_CONFINEMENT,
                format!("--require-confinement: {missing}; refusing to start"),
            ));
        }
        say(
            std::io::stderr().lock(),
            &format!("egress-mirror: confinement incomplete: {missing}"),
        );
    }

    if !self_tests.is_empty() {
        return self_test(self_tests, &confinement.summary);
    }

    // Registered before the listener exists: from the startup line on, a
    // SIGHUP asks for a swap and never ends the process.
    let signals = match signal_hook::iterator::Signals::new([signal_hook::consts::SIGHUP]) {
        Ok(signals) => signals,
        Err(e) => {
            return Err(Failure::new(
                EXIT_LISTEN,
                format!("cannot handle SIGHUP: {e}"),
            ))
        }
    };

    // The misses log's writer is a thread: started inside the confinement.
    let misses = match misses_log {
        Some(log) => {
            let path = log.path().to_path_buf();
            let stderr: crate::LogSink = Arc::new(|line: &str| say(std::io::stderr().lock(), line));
            match log.start(store.id(), s.misses.limits, stderr) {
                Ok((recorder, _writer)) => Some(recorder),
                Err(e) => {
                    return Err(Failure::new(
                        EXIT_MISSES_LOG,
                        format!("--misses-log {}: {e}", path.display()),
                    ))
                }
            }
        }
        None => None,
    };

    let blobs = store.blob_count();
    let id = store.id();
    // What SNAPSHOT_DIR resolved to when it was opened: a link re-pointed
    // from then on, even before the watcher runs, is a change.
    let opened = store.root().to_path_buf();
    let mut mirror = Mirror::from_store(Arc::new(store))
        .log_requests(s.log_requests)
        .zero_copy_budget(s.zero_copy_budget);
    if admin.is_some() {
        mirror = mirror.count_into(Arc::clone(&metrics));
    }
    if let Some(recorder) = &misses {
        mirror = mirror.record_misses(recorder.clone());
    }
    // Before the limits are made: the connection limit follows it.
    raise_open_file_limit();
    let mut shared_attestor = None;
    if let (Some((key, binary, pub_path)), Some(dir)) = (instance, &s.instance_dir) {
        let attestor = crate::Attestor::new(key, binary, confinement.summary.clone())
            .certificate_file(dir.join(INSTANCE_CERT));
        instance_line = Some(format!(
            "egress-mirror: instance key {} written to {}; binary sha256 {}; {}; certify it with `egress-conformance instance certify --key LAB_KEY --instance-key {} --snapshot {} --out {}`",
            attestor.public().fingerprint(),
            pub_path.display(),
            attestor.binary().to_hex(),
            attestor.certificate_status(&id),
            pub_path.display(),
            s.dir.display(),
            dir.join(INSTANCE_CERT).display(),
        ));
        let attestor = Arc::new(attestor);
        shared_attestor = Some(Arc::clone(&attestor));
        mirror = mirror.attest_shared(attestor);
    }
    let zero_copy = if mirror.zero_copy() {
        // A TLS record cannot be written with sendfile: over https the
        // sealed copies (whose bytes still cannot change) are copied.
        let how = if tls.is_some() {
            "copied through TLS"
        } else {
            "sent with sendfile"
        };
        format!(
            "sealed copies {how}, budget {} MiB",
            s.zero_copy_budget >> 20
        )
    } else {
        "off (large blobs copied in chunks from their verified files)".to_string()
    };
    let paths = mirror.path_count();
    let limits = egress_http::Limits {
        max_connections_per_client: s.max_connections_per_client,
        max_connections: max_connections(mirror.zero_copy()),
        ..egress_http::Limits::default()
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Every generation after the first is made the same way.
    let log_requests = s.log_requests;
    let make: Box<crate::MakeMirror> = Box::new(move |store| {
        let mut next = Mirror::from_store(store).log_requests(log_requests);
        if let Some(recorder) = &misses {
            next = next.record_misses(recorder.clone());
        }
        match &shared_attestor {
            Some(attestor) => next.attest_shared(Arc::clone(attestor)),
            None => next,
        }
    });
    let budget = if mirror.zero_copy() {
        s.zero_copy_budget
    } else {
        0
    };
    let mirror = SwappableMirror::new(mirror, make, budget, signers);
    let server =
        match crate::serve_swappable_over(mirror.clone(), &addrs[..], limits, tls, s.proxy.clone())
        {
            Ok(server) => server,
            Err(e) => {
                return Err(Failure::new(
                    EXIT_LISTEN,
                    format!(
                        "cannot listen on {}: {e}; choose another --listen address",
                        s.listen
                    ),
                ))
            }
        };
    say_out(
        &format!(
            "egress-mirror: serving snapshot {} ({blobs} blobs, {paths} paths; confinement: {}; zero-copy: {zero_copy}) at {scheme}://{}/",
            id.to_hex(),
            confinement.summary,
            server.base_url().trim_start_matches("http://")
        ),
    );
    if let Some(line) = instance_line {
        say_out(&line);
    }
    // After the serving listener: ready means it accepts.
    let _admin = match admin {
        Some((addr, allow)) => {
            let handler =
                crate::admin::Admin::new(mirror.clone(), metrics, server.stats(), allow.clone());
            let admin = crate::admin::serve(addr, handler)
                .map_err(|e| Failure::new(EXIT_ADMIN, e.to_string()))?;
            say_out(&format!(
                "egress-mirror: admin listener (/livez, /readyz, /metrics) at http://{}/{}",
                admin.addr(),
                if allow.is_empty() {
                    String::new()
                } else {
                    let ranges: Vec<String> = allow.iter().map(Cidr::to_string).collect();
                    format!(" for {} and loopback", ranges.join(", "))
                }
            ));
            Some(admin)
        }
        None => None,
    };
    // The server runs on its own threads until the process is killed; this
    // one swaps snapshots when asked (nothing a request can do).
    watch_for_swaps(&mirror, &s.dir, opened, link_dir.is_some(), signals);
    loop {
        std::thread::park();
    }
}

/// Why attestation cannot be set up.
#[derive(Debug, thiserror::Error)]
enum InstanceError {
    #[error("{0}")]
    Key(#[from] egress_signing::SigningError),
    #[error("cannot write {}: {source}; give a directory the mirror may write to", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read this program's own executable to hash it: {0}")]
    Binary(#[source] std::io::Error),
}

/// Makes the instance key, writes its public half to `dir/instance.pub`
/// (atomically: a temporary file renamed over it) and hashes the running
/// executable. The private half never leaves memory.
fn start_instance(
    dir: &Path,
    snapshot: &egress_model::Sha256Digest,
) -> Result<
    (
        egress_signing::InstanceKey,
        egress_model::Sha256Digest,
        PathBuf,
    ),
    InstanceError,
> {
    let key = egress_signing::InstanceKey::generate()?;
    let path = dir.join(INSTANCE_PUB);
    let line = format!(
        "{}\n",
        key.public().to_openssh(&format!(
            "egress-mirror instance of snapshot {}",
            snapshot.to_hex()
        ))
    );
    let tmp = dir.join(format!(".{INSTANCE_PUB}.{}", std::process::id()));
    std::fs::write(&tmp, line.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            InstanceError::Write {
                path: path.clone(),
                source,
            }
        })?;
    let binary = crate::own_binary_sha256().map_err(InstanceError::Binary)?;
    Ok((key, binary, path))
}

/// Raises the soft limit on open files to the hard limit (at most 65,536):
/// every connection holds a descriptor, and another while it sends a file,
/// and every cached sealed copy holds one (at most
/// [`egress_snapshot::MAX_SEALED_COPIES`]). The connection limit is the
/// soft limit minus a reserve for file bodies in flight
/// ([`egress_http::default_max_connections`]), and minus
/// `MAX_SEALED_COPIES` when zero-copy is on ([`max_connections`]).
/// Best effort: if it cannot, copies that find no descriptor are served the
/// slower way.
#[cfg(target_os = "linux")]
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    // Plenty for MAX_SEALED_COPIES and every connection; `None` is
    // unlimited.
    const ENOUGH: u64 = 65_536;
    let mut limit = getrlimit(Resource::Nofile);
    let target = limit.maximum.map_or(ENOUGH, |max| max.min(ENOUGH));
    if limit.current.is_some_and(|current| current < target) {
        limit.current = Some(target);
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_open_file_limit() {}

/// The connection limit: egress-http's default (the open-file limit minus
/// a reserve for file bodies in flight), minus the descriptors the cache of
/// sealed copies may hold when zero-copy is on, so that those never eat the
/// reserve; at least 256, as the default.
fn max_connections(zero_copy: bool) -> usize {
    let sealed = if zero_copy {
        egress_snapshot::MAX_SEALED_COPIES
    } else {
        0
    };
    egress_http::default_max_connections()
        .saturating_sub(sealed)
        .max(256)
}

/// Runs the hidden self-tests from inside the (possibly) confined process:
/// one stdout line each, `blocked` or `allowed`, then exit 0.
fn self_test(tests: &SelfTests, summary: &str) -> Result<(), Failure> {
    say_out(&format!("egress-mirror: self-test confinement: {summary}"));
    for target in &tests.connect {
        let Ok(addr) = target.parse::<SocketAddr>() else {
            return Err(Failure::new(
                EXIT_USAGE,
                format!("--self-test-connect {target:?} is not IP:PORT"),
            ));
        };
        let outcome = match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(_) => "allowed".to_string(),
            Err(e) => format!("blocked ({e})"),
        };
        say_out(&format!(
            "egress-mirror: self-test connect {addr}: {outcome}"
        ));
    }
    for path in &tests.read {
        let outcome = match std::fs::read(path) {
            Ok(bytes) => format!("allowed ({} bytes)", bytes.len()),
            Err(e) => format!("blocked ({e})"),
        };
        say_out(&format!(
            "egress-mirror: self-test read {}: {outcome}",
            path.display()
        ));
    }
    Ok(())
}
