//! `kit --protocol pypi|npm|apt|cargo|hf --out DIR [--canary URL]`: the conformance
//! kit, the probe packages a lab adds to the snapshot under test. They are
//! made in each protocol's `kit` module (`egress_references::{pypi,npm,apt,cargo,hf}::kit`,
//! registered in `crate::PROTOCOLS`), next to the canaries that build the
//! same packages; this file only prints.

use crate::kit::{self, KitError, DOCUMENTATION_CANARY};
use egress_cli::{exit, Failure};
use egress_suite::Protocol;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct KitArgs {
    /// Registry protocol of the snapshot the kit goes into.
    #[arg(
        long,
        default_value = "pypi",
        value_parser = clap::builder::PossibleValuesParser::new(Protocol::ALL.iter().map(|p| p.as_str()))
    )]
    pub protocol: String,
    /// The directory to write (atomically; it must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The canary the tripwire's build or install code calls. Without it,
    /// http://192.0.2.1/, a documentation address (RFC 5737) no real host has.
    #[arg(long, value_name = "URL")]
    pub canary: Option<String>,
}

pub fn main(args: KitArgs) -> Result<u8, Failure> {
    let protocol: Protocol = args
        .protocol
        .parse()
        .map_err(|e: egress_suite::protocol::UnknownProtocol| Failure::usage(e.to_string()))?;
    let canary = match &args.canary {
        Some(c) => kit::check_canary(c).map_err(|e| Failure::usage(e.to_string()))?,
        None => DOCUMENTATION_CANARY.to_string(),
    };
    let Some(registered) = crate::registry::of(protocol) else {
        return Err(Failure::internal(format!(
            "no kit is registered for {protocol}"
        )));
    };
    let files = (registered.kit)(&canary);
    let dir = args.out.display();
    let add = (registered.kit_use)(&args.out);
    kit::write(&args.out, &files).map_err(|e| match e {
        KitError::Canary(_) | KitError::Exists(_) => Failure::usage(e.to_string()),
        KitError::Io { .. } => Failure::internal(e.to_string()).because(e),
    })?;
    for f in &files {
        egress_cli::outln!("{}  {}", egress_model::Sha256Digest::of(&f.bytes), f.name);
    }
    egress_cli::outln!(
        "wrote {} {} kit files into {dir}; add them to the snapshot under test with `{add}`",
        files.len(),
        protocol.as_str()
    );
    if args.canary.is_none() && registered.tripwire {
        egress_cli::outln!(
            "the tripwire calls {DOCUMENTATION_CANARY}, a documentation address no real host has: give --canary URL to aim it at a canary you run"
        );
    }
    Ok(exit::PASS)
}
