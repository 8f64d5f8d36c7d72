//! `sandbox-scan --mirror URL`: the scan from inside a sandbox
//! (`egress_sandbox`), its flags, output and exit codes.

use crate::output::write_files;
use crate::{exit, Failure, Format};
use egress_sandbox::{render, ScanOptions, ScanReport, Timeouts};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct SandboxScanArgs {
    /// The mirror the sandbox must reach and nothing else: its index URL,
    /// e.g. http://mirror.lab:8080/simple/ (or the npm registry URL).
    #[arg(long, value_name = "URL")]
    pub mirror: String,
    /// A canary address the sandbox must not reach (IP:PORT, repeatable):
    /// tried directly, and as the target of CONNECT and absolute-form
    /// requests through the mirror.
    #[arg(long, value_name = "ADDR")]
    pub canary: Vec<String>,
    /// A DNS zone whose names only the canary's DNS responder answers
    /// (`canary --dns`); a unique name under it is looked up through the
    /// sandbox's resolvers.
    #[arg(long, value_name = "ZONE")]
    pub canary_zone: Option<String>,
    /// A directory whose lockfiles (requirements*.txt, uv.lock,
    /// package-lock.json) must name only the mirror.
    #[arg(long, value_name = "DIR")]
    pub lockfiles: Option<PathBuf>,
    /// PEM file of CA certificates to trust for an https mirror.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Output format on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also write scan.json, scan.txt, scan.junit.xml, scan.html and
    /// scan.sarif into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Writes the report as `scan.json`, `scan.txt` and `scan.junit.xml`
/// (`egress_sandbox::render::files`), and `scan.html` and `scan.sarif`
/// (rendered by egress-suite, above egress-sandbox).
pub fn write_scan(dir: &Path, report: &ScanReport) -> Result<(), Failure> {
    let mut files: Vec<(&str, String)> = render::files(report).into_iter().collect();
    files.push(("scan.html", egress_suite::html::scan(report)));
    files.push(("scan.sarif", egress_suite::sarif::scan(report)));
    write_files(dir, &files)
}

pub fn main(args: SandboxScanArgs) -> Result<u8, Failure> {
    let plan = egress_sandbox::plan(&ScanOptions {
        mirror: args.mirror.clone(),
        canaries: args.canary.clone(),
        canary_zone: args.canary_zone.clone(),
        lockfiles: args.lockfiles.clone(),
    })
    .map_err(|e| Failure::usage(e.to_string()))?;
    if let Some(c) = &args.cacert {
        // Read now, so that a bad file is an input error, not a mirror
        // that seems not to answer.
        let url = egress_model::Url::parse("https://mirror.invalid/")
            .map_err(|e| Failure::internal(e.to_string()))?;
        egress_transcript::Client::new(url, Default::default(), Some(c))
            .map_err(|e| Failure::input(format!("--cacert {}: {e}", c.display())))?;
    }
    let mut ctx = egress_sandbox::context(plan, Timeouts::default());
    ctx.cacert = args.cacert.clone();
    let report = egress_sandbox::run(&ctx);
    if let Some(dir) = &args.out {
        write_scan(dir, &report)?;
    }
    egress_cli::out!(
        "{}",
        match args.format {
            Format::Text => render::text(&report),
            Format::Json => render::json(&report),
            Format::Junit => render::junit(&report),
            Format::Html => egress_suite::html::scan(&report),
            Format::Sarif => egress_suite::sarif::scan(&report),
        }
    );
    Ok(match report.exit_code() {
        0 => exit::PASS,
        1 => exit::FAIL,
        _ => exit::INCONCLUSIVE,
    })
}
