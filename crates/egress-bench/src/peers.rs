//! `egress-bench-peers [--duration SECS] [--peer NAME]... [--out FILE]`:
//! the testbed's peers against the reference mirror, in one run on this
//! machine, serving a cached project page and a cached file (PyPI), a
//! cached packument and a cached tarball (npm), or a `Packages` index and a
//! cached `.deb` (apt).
//!
//! One canary upstream per protocol is started in-process. Then, one
//! variant at a time (so that no peer's numbers depend on another's
//! background work): the variant is started in front of its protocol's
//! canary (the reference mirror exactly as `egress-conformance testbed`
//! starts it, a peer from `testbed/peers/NAME.conf` through
//! `egress-testbed`), its cache is warmed by fetching the present project's
//! page or packument and one of its files through it (apt: the dist's
//! `Packages` and the present package's `.deb`; the file is checked
//! against the canary's bytes), `wrk` measures the page and then the file,
//! and the variant is stopped again. A variant that does not start, or does
//! not serve the page or the file, is skipped with one line naming it; the
//! others still run. One table per protocol gives each measure as a ratio
//! against that protocol's reference mirror measured in the same run, and
//! is written to `--out` (default `target/bench/peers.md`) and printed.
//!
//! Every process started here is stopped by its id: a peer by its process
//! group when it is dropped (egress-testbed), `wrk` by its pid on a signal.
//! SIGINT, SIGTERM and SIGHUP make the run stop after the current step (a
//! peer that is still starting is waited for, then stopped).

use egress_artifacts::{BuiltDist, NpmTarball};
use egress_model::url::InvalidUrl;
use egress_model::{Upstream, Url};
use egress_references::apt::canary::{self as apt_canary, AptCanary};
use egress_references::npm::canary::{self as npm_canary, NpmCanary};
use egress_references::pypi::canary::{Canary, PRESENT};
use egress_testbed::suite::{
    apt_lab, npm_lab, start_apt_reference, start_npm_reference, start_reference, Paths, Variant,
    APT_REFERENCE, NPM_REFERENCE, REFERENCE,
};
use egress_testbed::{ConfigError, PeerConfig, PeerError, Protocol};
use egress_transcript::{Client, ClientError, Limits, Request};
use std::any::Any;
use std::io::{self, Read};
use std::path::PathBuf;
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The variants that serve the lab's projects from a cache or a directory.
const DEFAULT_PEERS: [&str; 9] = [
    REFERENCE,
    "devpi",
    "proxpi",
    "pypiserver-no-fallback",
    NPM_REFERENCE,
    "verdaccio",
    APT_REFERENCE,
    "apt-cacher-ng",
    "approx",
];
/// What npm sends when it asks for a packument to install from.
const NPM_ACCEPT: &str = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";
const THREADS: u32 = 2;
const CONNECTIONS: u32 = 16;
/// How long a freshly requested file may take to be served from the cache
/// (proxpi downloads in the background and may redirect meanwhile).
const WARM_WITHIN: Duration = Duration::from_secs(20);

const USAGE: &str =
    "usage: egress-bench-peers [--duration SECS] [--peer NAME]... [--out FILE]   (default peers: reference devpi proxpi pypiserver-no-fallback reference-npm verdaccio reference-apt apt-cacher-ng approx)";

#[derive(clap::Parser)]
#[command(
    name = "egress-bench-peers",
    about = "Measures the testbed's PyPI, npm and apt peers against the reference mirror with wrk and writes a Markdown table.",
    override_usage = "egress-bench-peers [--duration SECS] [--peer NAME]... [--out FILE]"
)]
struct Args {
    /// Seconds of load per measurement.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    duration: u64,
    /// A peer to measure; repeat for several [default: reference devpi
    /// proxpi pypiserver-no-fallback reference-npm verdaccio reference-apt
    /// apt-cacher-ng approx].
    #[arg(long = "peer", value_name = "NAME")]
    peers: Vec<String>,
    /// Where to write the Markdown table.
    #[arg(long, value_name = "FILE", default_value = "target/bench/peers.md")]
    out: PathBuf,
}

fn parse_args(args: &[String]) -> Result<Args, clap::Error> {
    let argv = std::iter::once("egress-bench-peers").chain(args.iter().map(String::as_str));
    let mut a: Args = clap::Parser::try_parse_from(argv)?;
    if a.peers.is_empty() {
        a.peers = DEFAULT_PEERS.iter().map(|s| s.to_string()).collect();
    }
    Ok(a)
}

/// Why a run, or the measuring of one variant, stopped. Each message is one
/// line that already says its cause: a variant's is written into the table.
#[derive(Debug, thiserror::Error)]
enum PeersError {
    /// A signal came: the run stops after the current step.
    #[error("interrupted")]
    Interrupted,
    /// A signal came before the table was written.
    #[error("interrupted; nothing written")]
    NothingWritten,
    #[error("cannot {what}: {source}")]
    Signals {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("cannot start the {what}: {source}")]
    Canary {
        what: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("the canary serves no wheel of {project}")]
    NoWheel { project: &'static str },
    #[error("the npm canary serves no {package}")]
    NoPackage { package: &'static str },
    #[error("the apt canary serves no .deb of {package}")]
    NoDeb { package: &'static str },
    /// A cargo peer: scripts/bench-cargo measures cargo against nginx.
    #[error("{name} is a cargo peer: scripts/bench-cargo measures cargo's registries")]
    CargoPeer { name: String },
    /// A Hub peer: scripts/bench-hf measures the Hub's large files.
    #[error("{name} is a Hub peer: scripts/bench-hf measures a Hub mirror's large files")]
    HfPeer { name: String },
    /// `wrk` is not installed or cannot be run.
    #[error("cannot run wrk: {error} (Debian: apt-get install wrk)")]
    WrkMissing { error: io::Error },
    #[error("wrk: {0}")]
    WrkWait(#[source] io::Error),
    #[error("reading wrk's output panicked")]
    WrkReaderPanicked,
    #[error("reading wrk's output: {0}")]
    WrkRead(#[source] io::Error),
    #[error("wrk {url} failed ({status}): {output}")]
    WrkFailed {
        url: Url,
        status: ExitStatus,
        output: String,
    },
    /// wrk's output lacks a rate or a latency; `tail` is its last line.
    #[error("wrk's output was not understood: {tail}")]
    WrkOutput { tail: String },
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error(transparent)]
    Url(#[from] InvalidUrl),
    /// The page or packument was not served as asked.
    #[error("{url} answered {answer}")]
    Answered { url: Url, answer: String },
    #[error("{url} does not list {filename}")]
    NotListed { url: Url, filename: String },
    #[error("{url} lists no tarball of {package}@{version}")]
    NoTarball {
        url: Url,
        package: &'static str,
        version: String,
    },
    /// The page links `what` at another origin (the canary's, say).
    #[error("{what} is served from {origin}, not from the peer")]
    Elsewhere { what: String, origin: String },
    #[error("{url} never served {filename} with the canary's bytes (last: {last})")]
    NeverServed {
        url: Url,
        filename: String,
        last: String,
    },
    #[error("{url} answered {answer} once warm")]
    NotWarm { url: Url, answer: String },
    /// A peer name with no config file.
    #[error("no {}", path.display())]
    NoConfig { path: PathBuf },
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A reference mirror did not start (as `egress-testbed` says why).
    #[error("{0}")]
    Reference(String),
    #[error(transparent)]
    Peer(#[from] PeerError),
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// SIGINT, SIGTERM and SIGHUP only set a flag (and a thread of our own,
/// woken by the handler, writes one line); the main thread notices it
/// between steps and while `wrk` runs, ends `wrk` by its pid, and returns,
/// so that every peer is stopped the ordinary way, by dropping it. A
/// handler (rather than a blocked mask) is what child processes do not
/// inherit: exec resets it.
mod signals {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::PeersError;

    static STOP: AtomicBool = AtomicBool::new(false);

    pub(crate) fn install() -> Result<(), PeersError> {
        let mut signals =
            Signals::new([SIGINT, SIGTERM, SIGHUP]).map_err(|source| PeersError::Signals {
                what: "handle signals",
                source,
            })?;
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for _ in signals.forever() {
                    STOP.store(true, Ordering::SeqCst);
                    eprintln!(
                        "bench-peers: signal: stopping after the current step; every process started is stopped"
                    );
                }
            })
            .map_err(|source| PeersError::Signals {
                what: "watch for signals",
                source,
            })?;
        Ok(())
    }

    pub(crate) fn stopping() -> bool {
        STOP.load(Ordering::SeqCst)
    }
}

/// What one `wrk` run reports.
#[derive(Debug, Clone, PartialEq)]
struct Wrk {
    requests_per_s: f64,
    p50_us: f64,
    p99_us: f64,
    /// wrk's `Transfer/sec` (response heads included), in MB/s.
    transfer_mbs: f64,
    requests: u64,
    /// Responses of 400 and above, plus socket errors and timeouts.
    errors: u64,
}

/// `123.45us`, `1.20ms`, `2.00s`, `1.00m` in microseconds.
fn duration_us(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("us") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e6)
    } else if let Some(n) = v.strip_suffix('m') {
        (n, 60e6)
    } else if let Some(n) = v.strip_suffix('h') {
        (n, 3600e6)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().ok().map(|n| n * scale)
}

/// `1.23GB`, `4.56MB`, `789.00KB`, `12B` in MB (wrk's units are binary).
fn size_mb(v: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = v.strip_suffix("GB") {
        (n, 1024.0)
    } else if let Some(n) = v.strip_suffix("MB") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("KB") {
        (n, 1.0 / 1024.0)
    } else if let Some(n) = v.strip_suffix('B') {
        (n, 1.0 / 1_048_576.0)
    } else {
        (v, 1.0)
    };
    num.parse::<f64>().ok().map(|n| n * scale)
}

fn parse_wrk(out: &str) -> Result<Wrk, PeersError> {
    let mut w = Wrk {
        requests_per_s: f64::NAN,
        p50_us: f64::NAN,
        p99_us: f64::NAN,
        transfer_mbs: f64::NAN,
        requests: 0,
        errors: 0,
    };
    for line in out.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", v] => w.requests_per_s = v.parse().unwrap_or(f64::NAN),
            ["Transfer/sec:", v] => w.transfer_mbs = size_mb(v).unwrap_or(f64::NAN),
            ["50%", v] => w.p50_us = duration_us(v).unwrap_or(f64::NAN),
            ["99%", v] => w.p99_us = duration_us(v).unwrap_or(f64::NAN),
            [n, "requests", "in", ..] => w.requests = n.parse().unwrap_or(0),
            ["Non-2xx", "or", "3xx", "responses:", n] => w.errors += n.parse().unwrap_or(0),
            ["Socket", "errors:", rest @ ..] => {
                // connect 0, read 0, write 0, timeout 0
                w.errors += rest
                    .iter()
                    .filter_map(|s| s.trim_end_matches(',').parse::<u64>().ok())
                    .sum::<u64>()
            }
            _ => {}
        }
    }
    if w.requests_per_s.is_nan() || w.p50_us.is_nan() || w.p99_us.is_nan() {
        let tail: String = out
            .lines()
            .last()
            .unwrap_or("no output")
            .chars()
            .take(200)
            .collect();
        return Err(PeersError::WrkOutput { tail });
    }
    Ok(w)
}

/// Runs `wrk -t2 -c16 --latency` on `url` with `Accept: accept`.
fn wrk(url: &Url, accept: &str, duration: u64) -> Result<Wrk, PeersError> {
    if signals::stopping() {
        return Err(PeersError::Interrupted);
    }
    let mut child = Command::new("wrk")
        .args([
            &format!("-t{THREADS}"),
            &format!("-c{CONNECTIONS}"),
            &format!("-d{duration}s"),
            "--timeout",
            "5s",
            "--latency",
            "-H",
            &format!("Accept: {accept}"),
            &url.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| PeersError::WrkMissing { error })?;
    // The output is read on its own thread so that this one can watch for
    // a signal and end wrk (its pid is ours until it is reaped below).
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout
            .map(|mut s| s.read_to_string(&mut out))
            .transpose()
            .map(|_| out)
    });
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if signals::stopping() => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return Err(PeersError::Interrupted);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(PeersError::WrkWait(e));
            }
        }
    };
    let out = reader
        .join()
        .map_err(|_| PeersError::WrkReaderPanicked)?
        .map_err(PeersError::WrkRead)?;
    if signals::stopping() {
        return Err(PeersError::Interrupted);
    }
    if !status.success() {
        return Err(PeersError::WrkFailed {
            url: url.clone(),
            status,
            output: out.trim().to_string(),
        });
    }
    parse_wrk(&out)
}

fn client(url: &Url) -> Result<Client, PeersError> {
    let limits = Limits {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(20),
        deadline: Duration::from_secs(30),
        ..Limits::default()
    };
    Ok(Client::new(url.with_path("/"), limits, None)?)
}

fn answer(ex: &egress_model::Exchange) -> String {
    match (&ex.response, &ex.error) {
        (Some(r), _) => r.status_line.clone(),
        (None, Some(e)) => e.clone(),
        (None, None) => "no answer".into(),
    }
}

/// Fetches the present project's page and `want` through the variant until
/// both are served (the file with the canary's bytes) from the variant
/// itself, then once more; returns the page's and the file's URLs.
fn warm(index: &Url, want: &BuiltDist) -> Result<(Url, Url), PeersError> {
    let c = client(index)?;
    let page_url = index.join(&format!("{PRESENT}/"))?;
    let ex = c.get("page", page_url.path_and_query(), Some("text/html"));
    let page = ex
        .response
        .as_ref()
        .filter(|r| r.status == Some(200))
        .and_then(|r| r.full_body())
        .and_then(|b| egress_simple::parse_project_html(b).ok())
        .ok_or_else(|| PeersError::Answered {
            url: page_url.clone(),
            answer: answer(&ex),
        })?;
    let entry = page
        .files
        .iter()
        .find(|f| f.filename == want.filename)
        .ok_or_else(|| PeersError::NotListed {
            url: page_url.clone(),
            filename: want.filename.clone(),
        })?;
    let file_url = page_url.join(&entry.url)?;
    if !file_url.same_origin(index) {
        return Err(PeersError::Elsewhere {
            what: want.filename.clone(),
            origin: file_url.origin().to_string(),
        });
    }
    let get_file = || {
        c.send(
            "file",
            &Request::get(file_url.path_and_query()).header("Accept", "*/*"),
        )
    };
    let right = |ex: &egress_model::Exchange| {
        ex.response
            .as_ref()
            .is_some_and(|r| r.status == Some(200) && r.body_sha256 == want.sha256)
    };
    let started = Instant::now();
    loop {
        let ex = get_file();
        if right(&ex) {
            break;
        }
        if started.elapsed() > WARM_WITHIN || signals::stopping() {
            return Err(PeersError::NeverServed {
                url: file_url,
                filename: want.filename.clone(),
                last: answer(&ex),
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    // Served from the cache now: the same answers again.
    let ex = c.get("page again", page_url.path_and_query(), Some("text/html"));
    if ex.status() != Some(200) {
        return Err(PeersError::NotWarm {
            url: page_url,
            answer: answer(&ex),
        });
    }
    let ex = get_file();
    if !right(&ex) {
        return Err(PeersError::NotWarm {
            url: file_url,
            answer: answer(&ex),
        });
    }
    Ok((page_url, file_url))
}

/// [`warm`] for an npm registry: `ec-present`'s packument (asked for as
/// npm asks) and the tarball `want` of `version`, until the tarball comes
/// back from the registry itself with the canary's bytes; returns the
/// packument's and the tarball's URLs.
fn warm_npm(registry: &Url, version: &str, want: &NpmTarball) -> Result<(Url, Url), PeersError> {
    let c = client(registry)?;
    let name = npm_canary::PRESENT;
    let doc_url = registry.join(name)?;
    let ex = c.get("packument", doc_url.path_and_query(), Some(NPM_ACCEPT));
    let doc: serde_json::Value = ex
        .response
        .as_ref()
        .filter(|r| r.status == Some(200))
        .and_then(|r| r.full_body())
        .and_then(|b| serde_json::from_slice(b).ok())
        .ok_or_else(|| PeersError::Answered {
            url: doc_url.clone(),
            answer: answer(&ex),
        })?;
    let tarball = doc["versions"][version]["dist"]["tarball"]
        .as_str()
        .ok_or_else(|| PeersError::NoTarball {
            url: doc_url.clone(),
            package: name,
            version: version.to_string(),
        })?;
    let file_url = registry.join(tarball)?;
    if !file_url.same_origin(registry) {
        return Err(PeersError::Elsewhere {
            what: format!("{name}@{version}"),
            origin: file_url.origin().to_string(),
        });
    }
    let sha256 = egress_model::Sha256Digest::of(&want.bytes);
    let get_file = || {
        c.send(
            "tarball",
            &Request::get(file_url.path_and_query()).header("Accept", "*/*"),
        )
    };
    let right = |ex: &egress_model::Exchange| {
        ex.response
            .as_ref()
            .is_some_and(|r| r.status == Some(200) && r.body_sha256 == sha256)
    };
    let started = Instant::now();
    loop {
        let ex = get_file();
        if right(&ex) {
            break;
        }
        if started.elapsed() > WARM_WITHIN || signals::stopping() {
            return Err(PeersError::NeverServed {
                url: file_url,
                filename: want.filename.clone(),
                last: answer(&ex),
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let ex = c.get(
        "packument again",
        doc_url.path_and_query(),
        Some(NPM_ACCEPT),
    );
    if ex.status() != Some(200) {
        return Err(PeersError::NotWarm {
            url: doc_url,
            answer: answer(&ex),
        });
    }
    let ex = get_file();
    if !right(&ex) {
        return Err(PeersError::NotWarm {
            url: file_url,
            answer: answer(&ex),
        });
    }
    Ok((doc_url, file_url))
}

/// [`warm`] for an apt archive: the dist's `Packages` index and the
/// present package's `.deb`, until the `.deb` comes back from the peer
/// itself with the canary's bytes; returns both URLs.
fn warm_apt(archive: &Url, deb: &AptDeb) -> Result<(Url, Url), PeersError> {
    let c = client(archive)?;
    let index_url = archive.join(&format!(
        "dists/{}/{}/binary-{}/Packages",
        apt_canary::DIST,
        apt_canary::COMPONENT,
        apt_canary::ARCH
    ))?;
    let file_url = archive.join(&deb.path)?;
    let get = |what: &str, url: &Url| {
        c.send(
            what,
            &Request::get(url.path_and_query()).header("Accept", "*/*"),
        )
    };
    let ex = get("Packages", &index_url);
    if ex.status() != Some(200) {
        return Err(PeersError::Answered {
            url: index_url,
            answer: answer(&ex),
        });
    }
    let right = |ex: &egress_model::Exchange| {
        ex.response
            .as_ref()
            .is_some_and(|r| r.status == Some(200) && r.body_sha256 == deb.sha256)
    };
    let started = Instant::now();
    loop {
        let ex = get(".deb", &file_url);
        if right(&ex) {
            break;
        }
        if started.elapsed() > WARM_WITHIN || signals::stopping() {
            return Err(PeersError::NeverServed {
                url: file_url,
                filename: deb.filename.clone(),
                last: answer(&ex),
            });
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let ex = get("Packages again", &index_url);
    if ex.status() != Some(200) {
        return Err(PeersError::NotWarm {
            url: index_url,
            answer: answer(&ex),
        });
    }
    let ex = get(".deb again", &file_url);
    if !right(&ex) {
        return Err(PeersError::NotWarm {
            url: file_url,
            answer: answer(&ex),
        });
    }
    Ok((index_url, file_url))
}

struct Measured {
    protocol: Protocol,
    name: String,
    about: String,
    page_url: Url,
    file_url: Url,
    page: Wrk,
    file: Wrk,
    /// Requests the canary saw during both wrk runs.
    upstream: usize,
}

struct Lab {
    canary: Canary,
    packages: Vec<(String, Vec<u8>)>,
    projects: Vec<String>,
    /// The file measured: the present project's first wheel.
    file: BuiltDist,
    npm: NpmLab,
    apt: AptLab,
    paths: Paths,
}

/// The `.deb` measured: the present package's.
struct AptDeb {
    /// Below the archive root: `pool/main/e/ec-present/...`.
    path: String,
    filename: String,
    size: usize,
    sha256: egress_model::Sha256Digest,
}

/// The apt third: the apt canary and what an apt peer is given.
struct AptLab {
    canary: AptCanary,
    packages: Vec<(String, Vec<u8>)>,
    paths: Vec<String>,
    placeholders: Vec<(String, String)>,
    keyring: Vec<u8>,
    deb: AptDeb,
}

impl AptLab {
    fn start() -> Result<Self, PeersError> {
        let canary = AptCanary::start().map_err(|source| PeersError::Canary {
            what: "apt canary upstream",
            source,
        })?;
        let (packages, paths, placeholders) = apt_lab(&canary);
        let (pool, bytes, sha256) = canary
            .deb(apt_canary::PRESENT, apt_canary::FIRST_VERSION)
            .ok_or(PeersError::NoDeb {
                package: apt_canary::PRESENT,
            })?;
        let deb = AptDeb {
            path: pool.as_str().to_string(),
            filename: pool.file_name().to_string(),
            size: bytes.len(),
            sha256,
        };
        let keyring = canary.keyring();
        Ok(AptLab {
            canary,
            packages,
            paths,
            placeholders,
            keyring,
            deb,
        })
    }
}

/// The npm half: the npm canary and what an npm peer is given.
struct NpmLab {
    canary: NpmCanary,
    packages: Vec<(String, Vec<u8>)>,
    names: Vec<String>,
    /// The tarball measured: the present package's first version's.
    version: String,
    tarball: NpmTarball,
}

impl NpmLab {
    fn start() -> Result<Self, PeersError> {
        let canary = NpmCanary::start().map_err(|source| PeersError::Canary {
            what: "npm canary upstream",
            source,
        })?;
        let (packages, names) = npm_lab(&canary);
        let (_, version, tarball) = canary
            .tarballs(false)
            .into_iter()
            .find(|(n, _, _)| n == npm_canary::PRESENT)
            .ok_or(PeersError::NoPackage {
                package: npm_canary::PRESENT,
            })?;
        Ok(NpmLab {
            canary,
            packages,
            names,
            version,
            tarball,
        })
    }
}

/// The protocol of a variant: the references' by name, a peer's from its config.
fn protocol_of(lab: &Lab, name: &str) -> Result<(Protocol, Option<PeerConfig>), PeersError> {
    match name {
        REFERENCE => Ok((Protocol::Pypi, None)),
        NPM_REFERENCE => Ok((Protocol::Npm, None)),
        APT_REFERENCE => Ok((Protocol::Apt, None)),
        _ => {
            let path = lab.paths.configs.join(format!("{name}.conf"));
            if !path.is_file() {
                return Err(PeersError::NoConfig { path });
            }
            let cfg = PeerConfig::load(&path)?;
            match cfg.protocol {
                Protocol::Cargo => return Err(PeersError::CargoPeer { name: cfg.name }),
                Protocol::Hf => return Err(PeersError::HfPeer { name: cfg.name }),
                _ => {}
            }
            Ok((cfg.protocol, Some(cfg)))
        }
    }
}

/// Starts the variant; the guard stops it (and removes its files) on drop.
fn start(
    lab: &Lab,
    name: &str,
    cfg: Option<PeerConfig>,
) -> Result<(Url, String, Box<dyn Any>), PeersError> {
    let Some(cfg) = cfg else {
        if name == NPM_REFERENCE {
            let (registry, guard) =
                start_npm_reference(&lab.npm.canary).map_err(PeersError::Reference)?;
            return Ok((registry, Variant::Reference(Protocol::Npm).about(), guard));
        }
        if name == APT_REFERENCE {
            let (archive, _, _, guard) =
                start_apt_reference(&lab.apt.canary).map_err(PeersError::Reference)?;
            return Ok((archive, Variant::Reference(Protocol::Apt).about(), guard));
        }
        let (index, guard) = start_reference(&lab.canary).map_err(PeersError::Reference)?;
        return Ok((index, Variant::Reference(Protocol::Pypi).about(), guard));
    };
    let (canary_index, canary_url, packages, projects) = match cfg.protocol {
        Protocol::Pypi => (
            lab.canary.index_url(),
            lab.canary.base_url(),
            &lab.packages,
            &lab.projects,
        ),
        Protocol::Npm => (
            lab.npm.canary.registry_url(),
            lab.npm.canary.base_url(),
            &lab.npm.packages,
            &lab.npm.names,
        ),
        Protocol::Apt => (
            format!("{}/", lab.apt.canary.archive_url()),
            lab.apt.canary.base_url(),
            &lab.apt.packages,
            &lab.apt.paths,
        ),
        Protocol::Cargo => return Err(PeersError::CargoPeer { name: cfg.name }),
        Protocol::Hf => return Err(PeersError::HfPeer { name: cfg.name }),
    };
    let apt = cfg.protocol == Protocol::Apt;
    let ctx = egress_testbed::Context {
        peers_dir: &lab.paths.peers,
        canary_index: &canary_index,
        canary_url: &canary_url,
        packages,
        projects,
        placeholders: if apt { &lab.apt.placeholders } else { &[] },
        keyring: apt.then_some(lab.apt.keyring.as_slice()),
    };
    let peer = egress_testbed::start(&cfg, &ctx)?;
    eprintln!("bench-peers: {name}: started, pid {}", peer.pid());
    Ok((peer.index_url.clone(), cfg.about, Box::new(peer)))
}

fn measure(lab: &Lab, name: &str, duration: u64) -> Result<Measured, PeersError> {
    let (protocol, cfg) = protocol_of(lab, name)?;
    let (index, about, guard) = start(lab, name, cfg)?;
    if signals::stopping() {
        return Err(PeersError::Interrupted);
    }
    let (canary, (page_url, file_url), accept): (&dyn Upstream, _, _) = match protocol {
        Protocol::Pypi => (&lab.canary, warm(&index, &lab.file)?, "text/html"),
        Protocol::Npm => (
            &lab.npm.canary,
            warm_npm(&index, &lab.npm.version, &lab.npm.tarball)?,
            NPM_ACCEPT,
        ),
        Protocol::Apt => (&lab.apt.canary, warm_apt(&index, &lab.apt.deb)?, "*/*"),
        Protocol::Cargo => {
            return Err(PeersError::CargoPeer {
                name: name.to_string(),
            })
        }
        Protocol::Hf => {
            return Err(PeersError::HfPeer {
                name: name.to_string(),
            })
        }
    };
    eprintln!("bench-peers: {name} {index} {page_url} {file_url}");
    let mark = canary.mark();
    let page = wrk(&page_url, accept, duration)?;
    let file = wrk(&file_url, "*/*", duration)?;
    let upstream = canary.requests_since(mark).len();
    drop(guard);
    Ok(Measured {
        protocol,
        name: name.to_string(),
        about,
        page_url,
        file_url,
        page,
        file,
        upstream,
    })
}

/// `12345.6` as `12,346`; below 10 with two decimals.
fn number(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    if v.abs() < 10.0 {
        return format!("{v:.2}");
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// A ratio with two significant digits below 1 (`0.012`), two decimals
/// up to 10, whole numbers above.
fn ratio(r: f64) -> String {
    match r {
        r if !r.is_finite() => "—".into(),
        r if r >= 10.0 => number(r),
        r if r >= 0.1 => format!("{r:.2}"),
        r => format!("{r:.1e}")
            .parse::<f64>()
            .map_or("—".into(), |v| v.to_string()),
    }
}

/// `YYYY-MM-DD` (UTC) of now.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Howard Hinnant's civil_from_days.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// What one protocol's table calls its page and its file, and what it
/// says about them below the table.
struct Table<'a> {
    protocol: Protocol,
    reference: &'a str,
    page: &'a str,
    file: &'a str,
    /// The two runs, for the errors row.
    both: &'a str,
    note: String,
}

fn render(
    results: &[Measured],
    skipped: &[(String, String)],
    duration: u64,
    file: &BuiltDist,
    npm: &NpmLab,
    deb: &AptDeb,
) -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mut md = format!(
        "## Peers ({}, {cores} cores, {duration} s per wrk run, wrk -t{THREADS} -c{CONNECTIONS} --latency)\n\n",
        today()
    );
    let tables = [
        Table {
            protocol: Protocol::Pypi,
            reference: REFERENCE,
            page: "project page",
            file: "cached file",
            both: "page + file",
            note: format!(
                "The page is `{PRESENT}`'s project page; the file is `{}` ({} bytes), fetched once through each peer before measuring and checked against the canary's bytes.",
                file.filename,
                file.bytes.len()
            ),
        },
        Table {
            protocol: Protocol::Npm,
            reference: NPM_REFERENCE,
            page: "packument",
            file: "cached tarball",
            both: "packument + tarball",
            note: format!(
                "The packument is `{}`'s, asked for as npm asks (`Accept: {NPM_ACCEPT}`); the tarball is `{}` ({} bytes), fetched once through each peer before measuring and checked against the npm canary's bytes.",
                npm_canary::PRESENT,
                npm.tarball.filename,
                npm.tarball.bytes.len()
            ),
        },
        Table {
            protocol: Protocol::Apt,
            reference: APT_REFERENCE,
            page: "Packages index",
            file: "cached .deb",
            both: "index + .deb",
            note: format!(
                "The index is the dist `{}`'s `{}/binary-{}/Packages`; the `.deb` is `{}` ({} bytes), fetched once through each peer before measuring and checked against the apt canary's bytes.",
                apt_canary::DIST,
                apt_canary::COMPONENT,
                apt_canary::ARCH,
                deb.filename,
                deb.size
            ),
        },
    ];
    let mut tables: Vec<(Table, Vec<&Measured>)> = tables
        .into_iter()
        .map(|t| {
            let of: Vec<&Measured> = results
                .iter()
                .filter(|m| m.protocol == t.protocol)
                .collect();
            (t, of)
        })
        .filter(|(_, of)| !of.is_empty())
        .collect();
    let titled = tables.len() > 1;
    for (t, of) in &mut tables {
        if titled {
            md.push_str(&format!(
                "### {}\n\n",
                match t.protocol {
                    Protocol::Pypi => "PyPI",
                    Protocol::Npm => "npm",
                    Protocol::Apt => "apt",
                    Protocol::Cargo => "cargo",
                    Protocol::Hf => "hf",
                }
            ));
        }
        table(&mut md, t, of);
    }
    for (n, why) in skipped {
        md.push_str(&format!(
            "- **not measured**: `{n}`: {}\n",
            why.replace('|', "\\|")
        ));
    }
    md
}

/// One protocol's table, its notes and the legend of its columns.
fn table(md: &mut String, t: &Table, results: &[&Measured]) {
    let reference = results.iter().find(|m| m.name == t.reference);
    type Get = fn(&Measured) -> f64;
    let rows: [(&str, &str, Get, bool); 7] = [
        (t.page, "requests/s", |m| m.page.requests_per_s, false),
        (t.page, "p50 latency, µs", |m| m.page.p50_us, true),
        (t.page, "p99 latency, µs", |m| m.page.p99_us, true),
        (t.file, "requests/s", |m| m.file.requests_per_s, false),
        (
            t.file,
            "MB/s (wrk Transfer/sec)",
            |m| m.file.transfer_mbs,
            false,
        ),
        (t.file, "p50 latency, µs", |m| m.file.p50_us, true),
        (t.file, "p99 latency, µs", |m| m.file.p99_us, true),
    ];
    md.push_str("| measure |");
    for m in results {
        md.push_str(&format!(" {} |", m.name));
    }
    md.push_str("\n|---|");
    md.push_str(&"---|".repeat(results.len()));
    md.push('\n');
    for (what, label, get, lower_better) in rows {
        let sep = if label.starts_with('p') { " " } else { ", " };
        md.push_str(&format!(
            "| {what}{sep}{label}{} |",
            if lower_better {
                " (lower is better)"
            } else {
                ""
            }
        ));
        for m in results {
            let v = get(m);
            match reference {
                Some(r) if r.name != m.name => {
                    md.push_str(&format!(" {} ({}x) |", number(v), ratio(v / get(r))))
                }
                _ => md.push_str(&format!(" {} |", number(v))),
            }
        }
        md.push('\n');
    }
    md.push_str("| requests to the canary during the wrk runs |");
    for m in results {
        md.push_str(&format!(" {} |", m.upstream));
    }
    md.push_str(&format!(
        "\n| error responses and socket errors ({}) |",
        t.both
    ));
    for m in results {
        md.push_str(&format!(
            " {} of {} |",
            m.page.errors + m.file.errors,
            number((m.page.requests + m.file.requests) as f64)
        ));
    }
    md.push_str("\n\n");
    if reference.is_none() && !results.is_empty() {
        md.push_str(&format!(
            "No ratios: the reference mirror (`{}`) was not measured in this run.\n\n",
            t.reference
        ));
    } else {
        md.push_str("In brackets: the ratio to the reference mirror in the same run.\n\n");
    }
    md.push_str(&t.note);
    md.push_str("\n\n");
    for m in results {
        md.push_str(&format!(
            "- `{}`: {}; {} `{}`, file `{}`\n",
            m.name,
            m.about,
            match m.protocol {
                Protocol::Pypi => "page",
                Protocol::Npm => "packument",
                Protocol::Apt | Protocol::Cargo | Protocol::Hf => "index",
            },
            m.page_url.path_and_query(),
            m.file_url.path_and_query()
        ));
    }
    md.push('\n');
}

fn run(args: &Args) -> Result<bool, PeersError> {
    let canary = Canary::start().map_err(|source| PeersError::Canary {
        what: "canary upstream",
        source,
    })?;
    let dists = canary.dists(false);
    let packages = dists
        .iter()
        .map(|(_, d)| (d.filename.clone(), d.bytes.clone()))
        .collect();
    let mut projects: Vec<String> = dists.iter().map(|(n, _)| n.to_string()).collect();
    projects.dedup();
    let file = dists
        .iter()
        .find(|(n, d)| n.as_str() == PRESENT && d.filename.ends_with(".whl"))
        .map(|(_, d)| d.clone())
        .ok_or(PeersError::NoWheel { project: PRESENT })?;
    let lab = Lab {
        canary,
        packages,
        projects,
        file,
        npm: NpmLab::start()?,
        apt: AptLab::start()?,
        paths: Paths::find(),
    };
    let mut results = Vec::new();
    let mut skipped = Vec::new();
    for name in &args.peers {
        if signals::stopping() {
            skipped.push((name.clone(), "interrupted".to_string()));
            continue;
        }
        eprintln!("bench-peers: {name}: starting");
        match measure(&lab, name, args.duration) {
            Ok(m) => {
                eprintln!(
                    "bench-peers: {name}: page {} req/s, file {} req/s",
                    number(m.page.requests_per_s),
                    number(m.file.requests_per_s)
                );
                results.push(m);
            }
            Err(e) => {
                eprintln!("bench-peers: {name}: skipped: {e}");
                skipped.push((name.clone(), e.to_string()));
            }
        }
    }
    let md = render(
        &results,
        &skipped,
        args.duration,
        &lab.file,
        &lab.npm,
        &lab.apt.deb,
    );
    lab.canary.stop();
    lab.npm.canary.stop();
    lab.apt.canary.stop();
    if signals::stopping() {
        return Err(PeersError::NothingWritten);
    }
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| PeersError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(&args.out, &md).map_err(|source| PeersError::Write {
        path: args.out.clone(),
        source,
    })?;
    print!("{md}");
    eprintln!("bench-peers: written to {}", args.out.display());
    Ok(skipped.is_empty())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args) {
        Ok(a) => a,
        Err(e) if egress_cli::is_help(&e) => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "egress-bench-peers: {}; {USAGE}",
                egress_cli::usage_line(&e)
            );
            return ExitCode::from(2);
        }
    };
    if let Err(e) = signals::install() {
        egress_cli::say_error("egress-bench-peers", &e);
        return ExitCode::from(2);
    }
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        // Written, but some variant was skipped.
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            egress_cli::say_error("egress-bench-peers", &e);
            ExitCode::from(if signals::stopping() { 130 } else { 2 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "Running 1s test @ http://127.0.0.1:18777/x
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.54ms    2.81ms  34.49ms   96.48%
    Req/Sec     0.89k   124.63     1.02k    85.00%
  Latency Distribution
     50%  812.00us
     75%    2.51ms
     90%    3.15ms
     99%   19.40ms
  1773 requests in 1.00s, 0.88MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:   1770.98
Transfer/sec:      1.50GB
";

    #[test]
    fn reads_wrk_output() {
        let w = parse_wrk(OUTPUT).expect("parses");
        assert_eq!(w.requests_per_s, 1770.98);
        assert_eq!(w.p50_us, 812.0);
        assert!((w.p99_us - 19_400.0).abs() < 1e-6);
        assert_eq!(w.transfer_mbs, 1536.0);
        assert_eq!(w.requests, 1773);
        assert_eq!(w.errors, 7);
        assert!(parse_wrk("unable to connect to 127.0.0.1:1 Connection refused").is_err());
    }

    #[test]
    fn formats_numbers_and_arguments() {
        assert_eq!(number(51_861.4), "51,861");
        assert_eq!(number(1_234_567.0), "1,234,567");
        assert_eq!(number(335.0), "335");
        assert_eq!(number(0.876), "0.88");
        assert_eq!(duration_us("2.00s"), Some(2e6));
        assert_eq!(ratio(380.0 / 30_497.0), "0.012");
        assert_eq!(ratio(0.876), "0.88");
        assert_eq!(ratio(107.6), "108");
        let a = parse_args(&["--duration".into(), "5".into()]).expect("parses");
        assert_eq!((a.duration, a.peers.len()), (5, 9));
        assert!(parse_args(&["--duration".into(), "0".into()]).is_err());
        assert!(parse_args(&["--bogus".into()]).is_err());
        assert_eq!(today().len(), 10);
    }

    #[test]
    fn a_signal_sets_the_stop_flag() {
        signals::install().unwrap();
        assert!(!signals::stopping());
        signal_hook::low_level::raise(signal_hook::consts::SIGTERM).unwrap();
        let started = Instant::now();
        while !signals::stopping() && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(signals::stopping());
    }
}
