//! `check URL`: the suite against any mirror that speaks the PyPI simple API
//! or the npm registry protocol (`--protocol npm`).

use crate::{exit, output, Failure, Format};
use egress_model::{ProjectName, Url};
use egress_suite::plan::DEFAULT_ABSENT;
use egress_suite::{ManifestSource, Plan, PresentSpec, Target};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct CheckArgs {
    /// The mirror's index URL, e.g. http://127.0.0.1:8080/simple/ (a bare origin
    /// means /simple/); with --protocol npm, its registry URL (a bare origin means /).
    pub url: String,
    /// Registry protocol the mirror speaks.
    #[arg(long, default_value = "pypi", value_parser = ["pypi", "npm"])]
    pub protocol: String,
    /// The snapshot manifest (a MANIFEST file or its URL); by default the mirror's
    /// /.well-known/egress-mirror/MANIFEST.
    #[arg(long, value_name = "PATH|URL")]
    pub manifest: Option<String>,
    /// An OpenSSH allowed_signers file trusted to sign the manifest.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// A project (and version) the snapshot holds; repeatable. By default taken
    /// from the manifest or the root index (npm: a package name, `@scope/name`
    /// too; by default taken from the manifest's SNAPSHOT.json).
    #[arg(long, value_name = "NAME==VERSION")]
    pub present: Vec<String>,
    /// A project that exists upstream but must not be in the snapshot; repeatable.
    #[arg(long, value_name = "NAME")]
    pub absent: Vec<String>,
    /// PEM file of CA certificates to trust for an https mirror.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Output format on standard output.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Also write the report in every format into DIR.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Longest time, in seconds, for any single exchange.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub timeout: u64,
}

/// The index URL the suite probes: a bare origin means `/simple/`, and the
/// path always ends in `/` so that project pages join under it.
pub fn index_url(raw: &str) -> Result<Url, Failure> {
    base_url(raw, "/simple/")
}

/// `raw` with its path ending in `/`; a bare origin gets `root`.
fn base_url(raw: &str, root: &str) -> Result<Url, Failure> {
    let url = Url::parse(raw).map_err(|e| Failure::usage(format!("URL: {e}")))?;
    let path = url.path();
    let fixed = if path == "/" {
        root.to_string()
    } else if path.ends_with('/') {
        path.to_string()
    } else {
        format!("{path}/")
    };
    if url.path_and_query().contains('?') {
        return Err(Failure::usage(
            "URL: the index URL must not carry a query string",
        ));
    }
    Ok(url.with_path(&fixed))
}

fn pypi_plan(
    args: &CheckArgs,
    index: &Url,
    manifest: ManifestSource,
    allowed_signers: bool,
) -> Result<Plan, Failure> {
    let given: Vec<PresentSpec> = args
        .present
        .iter()
        .map(|p| {
            p.parse()
                .map_err(|e| Failure::usage(format!("--present {p}: {e}")))
        })
        .collect::<Result<_, _>>()?;
    let (present, present_source) = if !given.is_empty() {
        (given, "--present")
    } else if let ManifestSource::File(m) = &manifest {
        (
            present_from_manifest(std::path::Path::new(m), index.path()),
            "manifest",
        )
    } else {
        (Vec::new(), "root index")
    };
    let absent = if args.absent.is_empty() {
        DEFAULT_ABSENT
            .iter()
            .filter_map(|n| ProjectName::new(n).ok())
            .collect()
    } else {
        args.absent
            .iter()
            .map(|a| ProjectName::new(a).map_err(|e| Failure::usage(format!("--absent: {e}"))))
            .collect::<Result<_, _>>()?
    };
    Ok(Plan {
        index_url: index.to_string(),
        protocol: args.protocol.clone(),
        present,
        present_source: present_source.to_string(),
        absent,
        sdist_only: None,
        template: None,
        upstream: None,
        manifest,
        allowed_signers,
        npm: None,
    })
}

/// Present projects listed in a local manifest's SNAPSHOT.json, if any.
fn present_from_manifest(manifest: &std::path::Path, index_path: &str) -> Vec<PresentSpec> {
    let Ok(bytes) = std::fs::read(manifest.with_file_name("SNAPSHOT.json")) else {
        return Vec::new();
    };
    let Ok(doc) = egress_snapshot::SnapshotDoc::parse(&bytes) else {
        return Vec::new();
    };
    let mut names: Vec<ProjectName> = doc
        .paths()
        .filter_map(|p| {
            p.strip_prefix(index_path)?
                .strip_suffix('/')
                .filter(|n| !n.is_empty() && !n.contains('/'))
                .and_then(|n| ProjectName::new(n).ok())
        })
        .collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .take(1)
        .map(|name| PresentSpec {
            name,
            version: None,
        })
        .collect()
}

pub fn main(args: CheckArgs) -> Result<u8, Failure> {
    let npm = args.protocol == "npm";
    let index = if npm {
        base_url(&args.url, "/")?
    } else {
        index_url(&args.url)?
    };
    if args.timeout == 0 || args.timeout > 3600 {
        return Err(Failure::usage(
            "--timeout: give a number of seconds between 1 and 3600",
        ));
    }
    let manifest = match &args.manifest {
        None => ManifestSource::WellKnown,
        Some(m) if m.starts_with("http://") || m.starts_with("https://") => {
            Url::parse(m).map_err(|e| Failure::usage(format!("--manifest: {e}")))?;
            ManifestSource::Url(m.clone())
        }
        Some(m) => {
            std::fs::metadata(m).map_err(|e| Failure::input(format!("--manifest {m}: {e}")))?;
            ManifestSource::File(m.clone())
        }
    };
    let allowed_signers = match &args.allowed_signers {
        None => None,
        Some(p) => {
            let bytes = std::fs::read(p)
                .map_err(|e| Failure::input(format!("--allowed-signers {}: {e}", p.display())))?;
            egress_signing::AllowedSigners::parse(&String::from_utf8_lossy(&bytes))
                .map_err(|e| Failure::input(format!("--allowed-signers {}: {e}", p.display())))?;
            Some(bytes)
        }
    };
    let limits = egress_transcript::Limits {
        deadline: Duration::from_secs(args.timeout),
        ..Default::default()
    };
    let client = egress_transcript::Client::new(index.clone(), limits, args.cacert.as_deref())
        .map_err(|e| Failure::input(e.to_string()))?;
    let plan = if npm {
        crate::check_npm::plan(&args, &index, &client, manifest, allowed_signers.is_some())?
    } else {
        pypi_plan(&args, &index, manifest, allowed_signers.is_some())?
    };
    let report = egress_suite::run(Target {
        name: index.to_string(),
        client,
        plan,
        upstream: None,
        allowed_signers,
    });
    match args.format {
        Format::Text => print!("{}", egress_suite::render::text(&report)),
        Format::Json => print!("{}", egress_suite::render::json(&report)),
        Format::Junit => print!("{}", egress_suite::render::junit(&report)),
    }
    if let Some(dir) = &args.out {
        output::write_reports(dir, &[("report", &report)])?;
    }
    Ok(match report.exit_code() {
        0 => exit::PASS,
        1 => exit::FAIL,
        _ => exit::INCONCLUSIVE,
    })
}
