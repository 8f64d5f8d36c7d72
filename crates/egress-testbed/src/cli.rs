//! `testbed`: the suite against the PyPI, npm and apt mirrors labs deploy, as
//! `egress_testbed::suite` runs it, printed and written as files.

use crate::suite::{self, Outcome, Paths, Variant};
use egress_cli::store::write_files;
use egress_cli::{exit, Failure};
use egress_suite::Report;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct TestbedArgs {
    /// Run only this peer (repeatable); by default every peer: `reference`,
    /// `reference-npm`, `reference-apt` and each testbed/peers/NAME.conf.
    #[arg(long = "peer", value_name = "NAME")]
    pub peers: Vec<String>,
    /// Where the reports and the matrix are written.
    #[arg(long, value_name = "DIR", default_value = "target/testbed")]
    pub out: PathBuf,
}

/// Writes each report (JSON, text, JUnit) and `matrix.md` / `matrix.txt`;
/// removes the reports a previous run left for a variant that did not run
/// now, so that `report verify DIR` sees only this run's.
pub fn write(dir: &Path, variants: &[Variant], out: &Outcome) -> Result<(), Failure> {
    let stems: Vec<String> = out
        .reports
        .iter()
        .map(|r| egress_suite::render::slug(&r.target_name))
        .collect();
    let pairs: Vec<(&str, &Report)> = stems.iter().map(String::as_str).zip(&out.reports).collect();
    write_files(dir, &egress_suite::files::report_files(&pairs))?;
    for (name, _) in &out.not_run {
        for ext in egress_suite::files::REPORT_EXTENSIONS {
            let _ = std::fs::remove_file(
                dir.join(format!("{}.{ext}", egress_suite::render::slug(name))),
            );
        }
    }
    write_files(
        dir,
        &[
            ("matrix.md", suite::matrix_markdown(variants, out)),
            (
                "matrix.txt",
                suite::matrix_text(&out.reports) + &out.notes(),
            ),
        ],
    )?;
    Ok(())
}

pub fn main(args: TestbedArgs) -> Result<u8, Failure> {
    let paths = Paths::find();
    let mut all = suite::variants(&paths.configs).map_err(|e| Failure::input(e.to_string()))?;
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
    let out = suite::run(&all, &paths.peers, |line| eprintln!("testbed: {line}"));
    if out.reports.is_empty() {
        // A matrix without columns says nothing; the notes say why.
        egress_cli::outln!("no peer ran");
    } else {
        egress_cli::out!("{}", suite::matrix_text(&out.reports));
    }
    egress_cli::out!("{}", out.notes());
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
