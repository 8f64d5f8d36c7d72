//! `check URL`: the suite against any mirror that speaks the PyPI simple
//! API, the npm registry protocol (`--protocol npm`) or apt's
//! (`--protocol apt`). The flags and the URL forms they accept are in
//! [`args`]; each protocol's plan is made by its `deployed.rs` in
//! egress-suite (`egress_suite::{pypi,npm,apt}::deployed`).

mod args;

use crate::{exit, output, Failure, Format};
pub use args::{archive_url, index_url, registry_url, CheckArgs};
use egress_model::{Upstream, Url};
use egress_references::control::Secret;
use egress_references::remote::RemoteCanary;
use egress_suite::deployed::{Given, PlanError};
use egress_suite::{apt, npm, pypi, ManifestSource, Protocol, Target};
use std::time::Duration;

pub fn main(args: CheckArgs) -> Result<u8, Failure> {
    let protocol: Protocol = args
        .protocol
        .parse()
        .map_err(|e: egress_suite::protocol::UnknownProtocol| Failure::usage(e.to_string()))?;
    let index = match protocol {
        Protocol::Pypi => index_url(&args.url)?,
        Protocol::Npm => registry_url(&args.url)?,
        Protocol::Apt => archive_url(&args.url)?,
        Protocol::Cargo => args::base_url(&args.url, "/cargo/index/")?,
        Protocol::Hf => args::base_url(&args.url, "/hf/")?,
    };
    // The scan's flags are checked before anything is sent.
    let scan_plan = if args.from_sandbox {
        Some(
            egress_sandbox::plan(&egress_sandbox::ScanOptions {
                mirror: index.to_string(),
                canaries: args.sandbox_canary.clone(),
                canary_zone: args.canary_zone.clone(),
                lockfiles: args.lockfiles.clone(),
            })
            .map_err(|e| {
                Failure::usage(e.to_string().replacen("--canary ", "--sandbox-canary ", 1))
            })?,
        )
    } else {
        None
    };
    if args.timeout == 0 || args.timeout > 3600 {
        return Err(Failure::usage(
            "--timeout: give a number of seconds between 1 and 3600",
        ));
    }
    // Checked before anything is sent.
    let expect = args.expectations()?;
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
    let canary = connect_canary(&args, protocol)?;
    // The package the canary's mutations act on: one its plan says a lab's
    // snapshot holds (the conformance kit's present package, for the
    // standalone canary), taken first when the snapshot holds it too.
    let mutable = canary.as_ref().map(|c| c.plan().present);
    let given = Given {
        present: &args.present,
        absent: &args.absent,
        manifest,
        allowed_signers: allowed_signers.is_some(),
        destructive: args.destructive,
        expect,
        mutable: mutable.as_ref(),
    };
    let mut plan = match protocol {
        Protocol::Pypi => pypi::deployed::plan(given, &index, &client),
        Protocol::Npm => npm::deployed::plan(given, &index, &client),
        Protocol::Apt => {
            let source = apt::deployed::Source {
                dist: args.dist.as_deref(),
                component: &args.component,
                arch: &args.arch,
                keyring: args.keyring.as_deref(),
            };
            apt::deployed::plan(given, source, &index, &client)
        }
        Protocol::Cargo => egress_suite::cargo::deployed::plan(given, &index),
        Protocol::Hf => egress_suite::hf::deployed::plan(given, &index, canary.is_some()),
    }
    .map_err(|e| match e {
        PlanError::Usage(m) => Failure::usage(m),
        PlanError::Input(m) => Failure::input(m),
    })?;
    if let Some(c) = &canary {
        plan.with_canary(c.plan(), args.absent.is_empty())
            .map_err(|e| Failure::new(exit::CANARY, format!("--canary: {e}")))?;
    }
    let report = egress_suite::run(Target {
        name: index.to_string(),
        client,
        plan,
        upstream: canary.as_ref().map(|c| c as &dyn Upstream),
        allowed_signers,
    });
    if let Some(e) = canary.as_ref().and_then(RemoteCanary::failure) {
        return Err(Failure::new(
            exit::CANARY,
            format!("--canary: {e}; no verdict: the upstream's log was not read whole"),
        ));
    }
    if let Some(plan) = scan_plan {
        let mut ctx = egress_sandbox::context(plan, egress_sandbox::Timeouts::default());
        ctx.cacert = args.cacert.clone();
        let both = crate::combined::Combined::new(report, egress_sandbox::run(&ctx));
        return crate::combined::emit(&both, args.format, args.text, args.out.as_deref());
    }
    match args.format {
        Format::Text if args.text.verbose => {
            egress_cli::out!("{}", egress_suite::render::text(&report))
        }
        Format::Text => egress_cli::out!(
            "{}",
            egress_suite::summary::report_text(&report, SHORT_MAX, args.text.paint())
        ),
        Format::Json => egress_cli::out!("{}", egress_suite::render::json(&report)),
        Format::Junit => egress_cli::out!("{}", egress_suite::render::junit(&report)),
        Format::Html => egress_cli::out!("{}", egress_suite::html::reports(&[&report])),
        Format::Sarif => egress_cli::out!("{}", egress_suite::sarif::reports(&[&report])),
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

/// The most lines `check`'s short text prints.
const SHORT_MAX: usize = 60;

/// The standalone canary `--canary` names, reached through its control API
/// with the secret in `--canary-secret`; `None` without `--canary`.
fn connect_canary(args: &CheckArgs, protocol: Protocol) -> Result<Option<RemoteCanary>, Failure> {
    let (Some(raw), Some(file)) = (&args.canary, &args.canary_secret) else {
        return Ok(None);
    };
    let url = Url::parse(raw).map_err(|e| Failure::usage(format!("--canary: {e}")))?;
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::input(format!("--canary-secret {shown}: {e}")))?;
    let secret = Secret::parse(&text)
        .map_err(|e| Failure::input(format!("--canary-secret {shown}: {e}")))?;
    let timeout = Duration::from_secs(args.timeout);
    let canary = RemoteCanary::connect(&url, &secret, timeout)
        .map_err(|e| Failure::new(exit::CANARY, format!("--canary: {e}")))?;
    let serves = canary.protocol();
    if serves != protocol {
        return Err(Failure::usage(format!(
            "--canary {raw} is not a canary of --protocol {protocol}; start it with `canary --protocol {protocol}`"
        )));
    }
    Ok(Some(canary))
}
