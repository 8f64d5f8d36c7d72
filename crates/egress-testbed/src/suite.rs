//! The suite against the mirrors labs deploy (PyPI, npm, apt, cargo, the
//! Hub), as `egress-conformance testbed` runs it.
//!
//! For every variant (the reference mirror for each protocol, and each
//! `testbed/peers/*.conf` started by [`crate::start`]) a fresh canary
//! upstream of its protocol is started on loopback, the peer is started
//! with the canary as its only upstream, the whole suite of that protocol
//! runs with the upstream-observing sub-probes on (the plan of the built-in
//! run), and everything is stopped again. Variants run one after the
//! other, so that no peer's timing depends on another's load. Each
//! protocol's sub-probes are its own, so each gets a matrix of its own.
//! How a protocol's variants run (its canary, what a peer of it is given,
//! its reference) is in its file below `suite/`; this file keeps what is
//! common and the one `match` that sends a variant to its protocol.

mod apt;
mod cargo;
mod hf;
mod npm;
mod pypi;

pub use apt::{apt_lab, start_apt_reference};
pub use npm::{npm_lab, start_npm_reference};
pub use pypi::start_reference;

use crate::config::ConfigError;
use crate::peer::PeerError;
use crate::{PeerConfig, Protocol};
use egress_model::{Status, Url};
use egress_references::apt::canary::AptCanary;
use egress_references::builtin::BuiltinError;
use egress_references::pypi::canary::Canary;
use egress_suite::Report;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The reference mirror's column.
pub const REFERENCE: &str = "reference";
/// The reference mirror's column in the npm matrix.
pub const NPM_REFERENCE: &str = "reference-npm";
/// The reference mirror's column in the apt matrix.
pub const APT_REFERENCE: &str = "reference-apt";
/// The reference mirror's column in the cargo matrix.
pub const CARGO_REFERENCE: &str = "reference-cargo";
/// The reference mirror's column in the Hub matrix.
pub const HF_REFERENCE: &str = "reference-hf";

pub const SLOW_UPSTREAM: Duration = Duration::from_secs(2);

/// Why a variant did not run (its column says so instead of verdicts).
#[derive(Debug, thiserror::Error)]
pub enum VariantError {
    /// A canary, or the snapshot of a reference, could not be made.
    #[error(transparent)]
    Reference(#[from] BuiltinError),
    /// A peer did not start.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// An in-process peer (a reference or a fixture) did not start.
    #[error("{0}")]
    InProcess(String),
}

/// Something that stops an in-process peer when dropped.
pub type Guard = Box<dyn Any>;
/// Starts an in-process peer in front of the canary; returns its index URL.
pub type StartFn = Box<dyn Fn(&Canary) -> Result<(Url, Guard), String>>;
/// Starts an in-process apt peer in front of the apt canary; returns its
/// archive root URL and the keyring its `Release` verifies against.
pub type AptStartFn = Box<dyn Fn(&AptCanary) -> Result<(Url, Vec<u8>, Guard), String>>;

pub enum Variant {
    /// The reference mirror of a protocol, serving the built-in snapshot
    /// of its canary's lab content.
    Reference(Protocol),
    /// A real peer, from its config file.
    Peer(Box<PeerConfig>),
    /// An in-process peer (the tests' fixtures).
    Fixture { name: String, start: StartFn },
    /// An in-process apt peer (the tests' fixtures).
    AptFixture { name: String, start: AptStartFn },
}

/// The reference mirror's column of `protocol`'s matrix.
pub fn reference_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Pypi => REFERENCE,
        Protocol::Npm => NPM_REFERENCE,
        Protocol::Apt => APT_REFERENCE,
        Protocol::Cargo => CARGO_REFERENCE,
        Protocol::Hf => HF_REFERENCE,
    }
}

/// What the reference mirror of `protocol` serves, for the legend.
fn reference_about(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Pypi => "egress-mirror serving a signed snapshot of the lab's projects, built from the canary's files",
        Protocol::Npm => "egress-mirror serving a signed npm snapshot of the lab's packages, built from the npm canary's tarballs",
        Protocol::Apt => "egress-mirror serving the built-in apt snapshot (the canary's snapshot packages, built from apt-get --print-uris lines and re-signed with the lab key)",
        Protocol::Cargo => "egress-mirror serving the built-in cargo snapshot (the canary's snapshot crates, built with snapshot build --cargo-lock from a Cargo.lock that pins them)",
        Protocol::Hf => "egress-mirror serving the built-in Hub snapshot (the canary's kit repositories, built with snapshot build --hf-lock from the kit's hf.lock)",
    }
}

impl Variant {
    pub fn name(&self) -> &str {
        match self {
            Variant::Reference(p) => reference_name(*p),
            Variant::Peer(c) => &c.name,
            Variant::Fixture { name, .. } | Variant::AptFixture { name, .. } => name,
        }
    }

    pub fn about(&self) -> String {
        match self {
            Variant::Reference(p) => reference_about(*p).to_string(),
            Variant::Peer(c) => c.about.clone(),
            Variant::Fixture { .. } | Variant::AptFixture { .. } => "a test fixture".into(),
        }
    }

    pub fn protocol(&self) -> Protocol {
        match self {
            Variant::Reference(p) => *p,
            Variant::Peer(c) => c.protocol,
            Variant::AptFixture { .. } => Protocol::Apt,
            Variant::Fixture { .. } => Protocol::Pypi,
        }
    }

    /// The peer's config, for a real peer.
    fn peer(&self) -> Option<&PeerConfig> {
        match self {
            Variant::Peer(c) => Some(c),
            _ => None,
        }
    }

    /// Whether this is a reference mirror's column, which must be all PASS.
    pub fn is_reference(name: &str) -> bool {
        Protocol::ALL.iter().any(|p| reference_name(*p) == name)
    }
}

/// Where the peer configs and the installed peers are: under the current
/// directory when it is the workspace, else under the workspace this binary
/// was built from. `EGRESS_PEERS_DIR` overrides where the venvs are.
pub struct Paths {
    pub configs: PathBuf,
    pub peers: PathBuf,
}

impl Paths {
    pub fn find() -> Self {
        let here = PathBuf::from("testbed/peers");
        let root = if here.is_dir() {
            PathBuf::from(".")
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
        };
        let peers = std::env::var_os("EGRESS_PEERS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join(".tools/peers"));
        Paths {
            configs: root.join("testbed/peers"),
            peers,
        }
    }
}

/// Per protocol, PyPI first, then npm, apt, cargo and the Hub: the reference, then every
/// peer config of that protocol in name order.
pub fn variants(configs: &Path) -> Result<Vec<Variant>, ConfigError> {
    let configs = PeerConfig::load_dir(configs)?;
    let mut all = Vec::new();
    for &protocol in Protocol::ALL {
        all.push(Variant::Reference(protocol));
        all.extend(
            configs
                .iter()
                .filter(|c| c.protocol == protocol)
                .map(|c| Variant::Peer(Box::new(c.clone()))),
        );
    }
    Ok(all)
}

/// Runs the suite against one variant in front of its own fresh canary and
/// stops everything again; returns the report and how long the variant took
/// to start (set-up steps, a sync or a warm-up included). `Err` names why
/// the variant could not run.
pub fn run_variant(v: &Variant, peers_dir: &Path) -> Result<(Report, Duration), VariantError> {
    run_variant_ran(v, peers_dir).map(|r| (r.report, r.ready))
}

/// What one variant's run gave.
pub struct Ran {
    pub report: Report,
    /// How long the variant took to start serving.
    pub ready: Duration,
    /// If the peer's process was no longer running when the suite ended:
    /// how it had ended (`signal: 11 (SIGSEGV)`). The sub-probes after
    /// that met a closed port.
    pub exited: Option<String>,
}

/// [`run_variant`], and whether the peer was still running at the end.
pub fn run_variant_ran(v: &Variant, peers_dir: &Path) -> Result<Ran, VariantError> {
    let (name, cfg) = (v.name(), v.peer());
    match v.protocol() {
        Protocol::Pypi => pypi::run_pypi_variant(v, peers_dir),
        Protocol::Npm => npm::run_npm_variant(name, cfg, peers_dir),
        Protocol::Apt => apt::run_apt_variant(v, peers_dir),
        Protocol::Cargo => cargo::run_cargo_variant(name, cfg, peers_dir),
        Protocol::Hf => hf::run_hf_variant(name, cfg, peers_dir),
    }
}

/// The reports of the variants that ran, and why the others did not.
pub struct Outcome {
    pub reports: Vec<Report>,
    pub not_run: Vec<(String, String)>,
    /// Peers whose process ended during the suite's run, and how: their
    /// columns are what the suite measured, the later sub-probes against a
    /// closed port.
    pub exited: Vec<(String, String)>,
}

impl Outcome {
    /// The references' columns are all PASS (when they were run) and every
    /// variant ran. A reference's sub-probe may be SKIPPED for what it
    /// cannot be asked here: HTTP/2 (`P3.h2-smuggling`), which a mirror on
    /// plain http does not speak; every predicate still PASSes.
    pub fn ok(&self) -> bool {
        let reference_passes = self
            .reports
            .iter()
            .filter(|r| Variant::is_reference(&r.target_name))
            .all(|r| {
                r.probes
                    .iter()
                    .all(|p| matches!(p.status, Status::Pass | Status::Skipped))
                    && r.predicates.iter().all(|p| p.status == Status::Pass)
            });
        reference_passes && self.not_run.is_empty()
    }

    /// One line per variant that did not run, or whose process ended
    /// during the run.
    pub fn notes(&self) -> String {
        let not_run = self
            .not_run
            .iter()
            .map(|(n, e)| format!("not run: {n}: {e}\n"));
        let exited = self
            .exited
            .iter()
            .map(|(n, s)| format!("exited during the run: {n}: {s}\n"));
        not_run.chain(exited).collect()
    }
}

/// Runs every variant in order; `progress` gets one line per variant.
pub fn run(variants: &[Variant], peers_dir: &Path, mut progress: impl FnMut(&str)) -> Outcome {
    let mut out = Outcome {
        reports: Vec::new(),
        not_run: Vec::new(),
        exited: Vec::new(),
    };
    for v in variants {
        let started = Instant::now();
        match run_variant_ran(v, peers_dir) {
            Ok(Ran {
                report: r,
                ready,
                exited,
            }) => {
                progress(&format!(
                    "{}: {} in {:.1} s (serving after {:.1} s){}",
                    v.name(),
                    r.outcome,
                    started.elapsed().as_secs_f64(),
                    ready.as_secs_f64(),
                    exited
                        .as_ref()
                        .map(|s| format!("; the peer exited during the run ({s})"))
                        .unwrap_or_default()
                ));
                if let Some(s) = exited {
                    out.exited.push((v.name().to_string(), s));
                }
                out.reports.push(r);
            }
            Err(e) => {
                progress(&format!("{}: could not run: {e}", v.name()));
                out.not_run.push((v.name().to_string(), e.to_string()));
            }
        }
    }
    out
}

/// The reports that ran, one group per protocol (in `Protocol::ALL` order), each in
/// run order: the columns of one matrix.
pub fn by_protocol(reports: &[Report]) -> Vec<(&'static str, Vec<&Report>)> {
    Protocol::ALL
        .iter()
        .map(|p| {
            let title = match p {
                Protocol::Pypi => "PyPI",
                other => other.as_str(),
            };
            let group = reports.iter().filter(|r| r.plan.protocol() == *p).collect();
            (title, group)
        })
        .filter(|(_, g): &(_, Vec<&Report>)| !g.is_empty())
        .collect()
}

/// One text matrix per protocol that ran, each under its title when
/// there is more than one.
pub fn matrix_text(reports: &[Report]) -> String {
    let groups = by_protocol(reports);
    let titled = groups.len() > 1;
    let mut text = String::new();
    for (i, (title, refs)) in groups.iter().enumerate() {
        if titled {
            text.push_str(&format!("{}{title}\n", if i > 0 { "\n" } else { "" }));
        }
        text.push_str(&egress_suite::render::matrix_text(refs));
    }
    text
}

/// The Markdown matrices (one per protocol: their sub-probes differ) with
/// the legend of their columns and the variants that did not run. Nothing
/// in it changes from run to run but verdicts.
pub fn matrix_markdown(variants: &[Variant], out: &Outcome) -> String {
    let mut md = String::new();
    for v in variants {
        md.push_str(&format!("- `{}`: {}\n", v.name(), v.about()));
    }
    let groups = by_protocol(&out.reports);
    let titled = groups.len() > 1;
    for (title, refs) in &groups {
        md.push('\n');
        if titled {
            md.push_str(&format!("### {title}\n\n"));
        }
        md.push_str(&egress_suite::render::matrix_markdown(refs));
    }
    for (n, e) in &out.not_run {
        md.push_str(&format!(
            "\n**not run**: `{n}`: {}\n",
            e.replace('|', "\\|")
        ));
    }
    for (n, s) in &out.exited {
        md.push_str(&format!(
            "\n**exited during the run**: `{n}`: {s}; the sub-probes after that met a closed port\n"
        ));
    }
    md
}
