//! `check URL`: the suite against any mirror that speaks the PyPI simple API
//! or the npm registry protocol (`--protocol npm`). What is common to every
//! protocol lives here and in [`args`]; each protocol's plan in its own file.

mod args;
pub mod npm;
pub mod pypi;
mod snapshot_doc;

use crate::{exit, output, Failure, Format};
pub use args::CheckArgs;
use egress_model::Url;
use egress_suite::{ManifestSource, Protocol, Target};
use std::time::Duration;

pub fn main(args: CheckArgs) -> Result<u8, Failure> {
    let protocol: Protocol = args
        .protocol
        .parse()
        .map_err(|e: egress_suite::protocol::UnknownProtocol| Failure::usage(e.to_string()))?;
    let index = match protocol {
        Protocol::Pypi => pypi::index_url(&args.url)?,
        Protocol::Npm => npm::registry_url(&args.url)?,
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
    let plan = match protocol {
        Protocol::Pypi => pypi::plan(&args, &index, &client, manifest, allowed_signers.is_some())?,
        Protocol::Npm => npm::plan(&args, &index, &client, manifest, allowed_signers.is_some())?,
    };
    let report = egress_suite::run(Target {
        name: index.to_string(),
        client,
        plan,
        upstream: None,
        allowed_signers,
    });
    match args.format {
        Format::Text => egress_cli::out!("{}", egress_suite::render::text(&report)),
        Format::Json => egress_cli::out!("{}", egress_suite::render::json(&report)),
        Format::Junit => egress_cli::out!("{}", egress_suite::render::junit(&report)),
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
