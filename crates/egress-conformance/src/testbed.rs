//! `testbed`: the suite against the PyPI mirrors labs deploy.
//!
//! For every variant (the reference mirror, and each `testbed/peers/*.conf`
//! started by `egress-testbed`) a fresh canary upstream is started on
//! loopback, the peer is started with the canary as its only upstream, the
//! whole suite runs with the upstream-observing sub-probes on (the plan of
//! the built-in run), and everything is stopped again. Variants run one
//! after the other, so that no peer's timing depends on another's load.

use crate::{builtin, exit, output, Failure};
use egress_fixtures::canary::Canary;
use egress_model::{Status, Url};
use egress_suite::Report;
use egress_testbed::PeerConfig;
use std::any::Any;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct TestbedArgs {
    /// Run only this peer (repeatable); by default every peer: `reference`
    /// and each testbed/peers/NAME.conf.
    #[arg(long = "peer", value_name = "NAME")]
    pub peers: Vec<String>,
    /// Where the reports and the matrix are written.
    #[arg(long, value_name = "DIR", default_value = "target/testbed")]
    pub out: PathBuf,
}

/// The reference mirror's column.
pub const REFERENCE: &str = "reference";

/// The newest file of the present project is slow upstream for every
/// variant: a real upstream is sometimes slow, and what a proxy does then
/// (wait, or hand the client to the upstream) is part of what is measured.
/// Never the file the suite's file control fetches.
const SLOW_FILE: &str = "ec_present-1.1.0-py3-none-any.whl";
pub const SLOW_UPSTREAM: Duration = Duration::from_secs(2);

/// Something that stops an in-process peer when dropped.
pub type Guard = Box<dyn Any>;
/// Starts an in-process peer in front of the canary; returns its index URL.
pub type StartFn = Box<dyn Fn(&Canary) -> Result<(Url, Guard), String>>;

pub enum Variant {
    /// The reference mirror serving a snapshot of the lab's projects.
    Reference,
    /// A real peer, from its config file.
    Peer(Box<PeerConfig>),
    /// An in-process peer (the tests' fixtures).
    Fixture { name: String, start: StartFn },
}

impl Variant {
    pub fn name(&self) -> &str {
        match self {
            Variant::Reference => REFERENCE,
            Variant::Peer(c) => &c.name,
            Variant::Fixture { name, .. } => name,
        }
    }

    pub fn about(&self) -> String {
        match self {
            Variant::Reference => {
                "egress-mirror serving a signed snapshot of the lab's projects, built from the canary's files".into()
            }
            Variant::Peer(c) => c.about.clone(),
            Variant::Fixture { .. } => "a test fixture".into(),
        }
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

/// The reference first, then every peer config in name order.
pub fn variants(configs: &Path) -> Result<Vec<Variant>, String> {
    let mut all = vec![Variant::Reference];
    all.extend(
        PeerConfig::load_dir(configs)?
            .into_iter()
            .map(|c| Variant::Peer(Box::new(c))),
    );
    Ok(all)
}

/// The reference mirror: the built-in run's snapshot written to a
/// directory and served from it, as `egress-mirror DIR` serves one.
pub fn start_reference(canary: &Canary) -> Result<(Url, Guard), String> {
    /// The server (which stops on drop) goes before its directory.
    struct Served<S>(Option<S>, PathBuf);
    impl<S> Drop for Served<S> {
        fn drop(&mut self) {
            drop(self.0.take());
            let _ = std::fs::remove_dir_all(&self.1);
        }
    }
    let snapshot = builtin::demo_snapshot(canary).map_err(|f| f.message)?;
    let dir = egress_testbed::fresh_dir(REFERENCE);
    let mut served = Served(None, dir.clone());
    snapshot
        .write_dir(&dir)
        .map_err(|e| format!("cannot write the snapshot: {e}"))?;
    let store = egress_snapshot::StoredSnapshot::open(&dir)
        .map_err(|e| format!("cannot open the snapshot: {e}"))?;
    let server = egress_mirror::serve_dir(store, "127.0.0.1:0")
        .map_err(|e| format!("cannot serve the snapshot: {e}"))?;
    let index = builtin::index_of(&server.base_url()).map_err(|f| f.message)?;
    served.0 = Some(server);
    Ok((index, Box::new(served)))
}

/// Runs the suite against one variant in front of its own fresh canary and
/// stops everything again; returns the report and how long the variant took
/// to start (set-up steps, a sync or a warm-up included). `Err` names why
/// the variant could not run.
pub fn run_variant(v: &Variant, peers_dir: &Path) -> Result<(Report, Duration), String> {
    let canary = builtin::start_canary().map_err(|f| f.message)?;
    canary.set_slow(SLOW_FILE, SLOW_UPSTREAM);
    let started = Instant::now();
    let ready;
    let report = match v {
        Variant::Reference => {
            let (index, guard) = start_reference(&canary)?;
            ready = started.elapsed();
            let r = builtin::run_against(v.name(), &index, &canary);
            drop(guard);
            r.map_err(|f| f.message)?
        }
        Variant::Fixture { start, .. } => {
            let (index, guard) = start(&canary)?;
            ready = started.elapsed();
            let r = builtin::run_against(v.name(), &index, &canary);
            drop(guard);
            r.map_err(|f| f.message)?
        }
        Variant::Peer(cfg) => {
            let dists = canary.dists(false);
            let packages: Vec<(String, Vec<u8>)> = dists
                .iter()
                .map(|(_, d)| (d.filename.clone(), d.bytes.clone()))
                .collect();
            let mut projects: Vec<String> = dists.iter().map(|(n, _)| n.to_string()).collect();
            projects.dedup();
            let ctx = egress_testbed::Context {
                peers_dir,
                canary_index: &canary.index_url(),
                canary_url: &canary.base_url(),
                packages: &packages,
                projects: &projects,
            };
            let peer = egress_testbed::start(cfg, &ctx)?;
            ready = started.elapsed();
            let r = builtin::run_against(v.name(), &peer.index_url, &canary);
            peer.stop();
            r.map_err(|f| f.message)?
        }
    };
    canary.stop();
    Ok((report, ready))
}

/// The reports of the variants that ran, and why the others did not.
pub struct Outcome {
    pub reports: Vec<Report>,
    pub not_run: Vec<(String, String)>,
}

impl Outcome {
    /// The reference's column is all PASS (when it was run) and every
    /// variant ran.
    pub fn ok(&self) -> bool {
        let reference_passes = self
            .reports
            .iter()
            .filter(|r| r.target_name == REFERENCE)
            .all(|r| {
                r.probes.iter().all(|p| p.status == Status::Pass)
                    && r.predicates.iter().all(|p| p.status == Status::Pass)
            });
        reference_passes && self.not_run.is_empty()
    }

    /// One line per variant that did not run.
    pub fn notes(&self) -> String {
        self.not_run
            .iter()
            .map(|(n, e)| format!("not run: {n}: {e}\n"))
            .collect()
    }
}

/// Runs every variant in order; `progress` gets one line per variant.
pub fn run(variants: &[Variant], peers_dir: &Path, mut progress: impl FnMut(&str)) -> Outcome {
    let mut out = Outcome {
        reports: Vec::new(),
        not_run: Vec::new(),
    };
    for v in variants {
        let started = Instant::now();
        match run_variant(v, peers_dir) {
            Ok((r, ready)) => {
                progress(&format!(
                    "{}: {} in {:.1} s (serving after {:.1} s)",
                    v.name(),
                    r.outcome,
                    started.elapsed().as_secs_f64(),
                    ready.as_secs_f64()
                ));
                out.reports.push(r);
            }
            Err(e) => {
                progress(&format!("{}: could not run: {e}", v.name()));
                out.not_run.push((v.name().to_string(), e));
            }
        }
    }
    out
}

/// The Markdown matrix with the legend of its columns and the variants
/// that did not run. Nothing in it changes from run to run but verdicts.
pub fn matrix_markdown(variants: &[Variant], out: &Outcome) -> String {
    let mut md = String::new();
    for v in variants {
        md.push_str(&format!("- `{}`: {}\n", v.name(), v.about()));
    }
    md.push('\n');
    let refs: Vec<&Report> = out.reports.iter().collect();
    md.push_str(&egress_suite::render::matrix_markdown(&refs));
    for (n, e) in &out.not_run {
        md.push_str(&format!(
            "\n**not run**: `{n}`: {}\n",
            e.replace('|', "\\|")
        ));
    }
    md
}

/// Writes each report (JSON, text, JUnit) and `matrix.md` / `matrix.txt`;
/// removes the reports a previous run left for a variant that did not run
/// now, so that `report verify DIR` sees only this run's.
pub fn write(dir: &Path, variants: &[Variant], out: &Outcome) -> Result<(), Failure> {
    let stems: Vec<String> = out
        .reports
        .iter()
        .map(|r| output::slug(&r.target_name))
        .collect();
    let pairs: Vec<(&str, &Report)> = stems.iter().map(String::as_str).zip(&out.reports).collect();
    output::write_reports(dir, &pairs)?;
    for (name, _) in &out.not_run {
        for ext in ["json", "txt", "junit.xml"] {
            let _ = std::fs::remove_file(dir.join(format!("{}.{ext}", output::slug(name))));
        }
    }
    let refs: Vec<&Report> = out.reports.iter().collect();
    for (name, body) in [
        ("matrix.md", matrix_markdown(variants, out)),
        (
            "matrix.txt",
            egress_suite::render::matrix_text(&refs) + &out.notes(),
        ),
    ] {
        let p = dir.join(name);
        output::write_atomic(&p, body.as_bytes())
            .map_err(|e| Failure::internal(format!("cannot write {}: {e}", p.display())))?;
    }
    Ok(())
}

pub fn main(args: TestbedArgs) -> Result<u8, Failure> {
    let paths = Paths::find();
    let mut all = variants(&paths.configs).map_err(Failure::input)?;
    if !args.peers.is_empty() {
        let known: Vec<String> = all.iter().map(|v| v.name().to_string()).collect();
        if let Some(bad) = args.peers.iter().find(|p| !known.contains(p)) {
            return Err(Failure::usage(format!(
                "--peer {bad}: no such peer (known: {})",
                known.join(", ")
            )));
        }
        all.retain(|v| args.peers.iter().any(|p| p == v.name()));
    }
    let started = Instant::now();
    let out = run(&all, &paths.peers, |line| eprintln!("testbed: {line}"));
    let refs: Vec<&Report> = out.reports.iter().collect();
    if refs.is_empty() {
        // A matrix without columns says nothing; the notes say why.
        println!("no peer ran");
    } else {
        print!("{}", egress_suite::render::matrix_text(&refs));
    }
    print!("{}", out.notes());
    write(&args.out, &all, &out)?;
    eprintln!(
        "testbed: {} of {} ran in {:.0} s; reports and matrix.md in {}",
        out.reports.len(),
        all.len(),
        started.elapsed().as_secs_f64(),
        args.out.display()
    );
    Ok(if out.ok() { exit::PASS } else { exit::FAIL })
}
