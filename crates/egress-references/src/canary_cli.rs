//! `canary --listen ADDR`: the canary upstream as a long-lived service, for
//! a lab to point its mirror's upstream at during a conformance run, its
//! log and mutations behind a secret (`egress_references::control`). The
//! canary itself is each protocol's, started by `egress_references::registry::serve`.

use crate::control::{Secret, ServeOptions};
pub use crate::standalone::apt_keyring_path;
use egress_cli::{exit, Failure};
use egress_suite::Protocol;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct CanaryArgs {
    /// Address to listen on, e.g. 127.0.0.1:8700 or 0.0.0.0:8700 (port 0: any free port).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// Registry protocol the canary speaks.
    #[arg(
        long,
        default_value = "pypi",
        value_parser = clap::builder::PossibleValuesParser::new(Protocol::ALL.iter().map(|p| p.as_str()))
    )]
    pub protocol: String,
    /// The control secret: read from FILE if it exists, else generated and
    /// written there (mode 0600). apt: the canary's OpenPGP key is derived
    /// from it, and its public keyring written beside it
    /// (FILE with the extension `.apt-keyring.gpg`).
    #[arg(long, value_name = "FILE", default_value = "egress-canary.secret")]
    pub secret_file: PathBuf,
    /// The origin the mirror reaches the canary at, named in its pages and
    /// by the tripwire (default: http:// and the address bound).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Also answer DNS on ADDR (UDP, e.g. 0.0.0.0:53): every A query with
    /// the canary's IPv4 address, every AAAA with its IPv6 one, each name
    /// logged on standard output (`dns query: NAME TYPE from PEER`), so that
    /// a lookup a sandbox's resolver carries out is seen arriving.
    #[arg(long, value_name = "ADDR")]
    pub dns: Option<String>,
}

pub fn main(args: CanaryArgs) -> Result<u8, Failure> {
    let protocol: Protocol = args
        .protocol
        .parse()
        .map_err(|e: egress_suite::protocol::UnknownProtocol| Failure::usage(e.to_string()))?;
    let listen: SocketAddr = args.listen.parse().map_err(|_| {
        Failure::usage(format!(
            "--listen {}: give an IP address and a port, e.g. 127.0.0.1:8700",
            args.listen
        ))
    })?;
    if let Some(u) = &args.public_url {
        let url = egress_model::Url::parse(u)
            .map_err(|e| Failure::usage(format!("--public-url: {e}")))?;
        if url.path_and_query() != "/" {
            return Err(Failure::usage(
                "--public-url: give an origin (scheme://host:port), no path",
            ));
        }
    }
    let dns: Option<SocketAddr> = match &args.dns {
        Some(d) => Some(d.parse().map_err(|_| {
            Failure::usage(format!(
                "--dns {d}: give an IP address and a port, e.g. 0.0.0.0:53"
            ))
        })?),
        None => None,
    };
    let signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ])
    .map_err(|e| Failure::internal(format!("cannot handle signals: {e}")))?;
    let options = ServeOptions {
        listen,
        public_origin: args.public_url.clone(),
        secret: Some(Secret::load_or_create(&args.secret_file).map_err(|e| {
            Failure::input(format!("--secret-file {}: {e}", args.secret_file.display()))
        })?),
        kit: true,
    };
    let running = crate::registry::serve(protocol, &options)
        .map_err(|e| Failure::internal(format!("cannot listen on {listen}: {e}")))?;
    let keyring = match running.keyring() {
        Some(bytes) => {
            let path = apt_keyring_path(&args.secret_file);
            egress_cli::store::write_atomic(&path, &bytes).map_err(|e| {
                Failure::internal(format!(
                    "cannot write the canary's keyring to {}: {e}",
                    path.display()
                ))
            })?;
            Some(path)
        }
        None => None,
    };
    for line in running.lines(keyring.as_deref()) {
        egress_cli::outln!("{line}");
    }
    // The DNS answer: the canary's own address, where it has one.
    let responder = match dns {
        Some(at) => {
            let answers: Vec<std::net::IpAddr> = [listen.ip(), at.ip()]
                .into_iter()
                .filter(|ip| !ip.is_unspecified())
                .collect();
            let r = crate::dns::DnsResponder::serve(at, answers, |q| {
                egress_cli::outln!("dns query: {} {} from {}", q.name, q.qtype, q.from);
            })
            .map_err(|e| Failure::internal(format!("cannot listen for DNS on {at}: {e}")))?;
            egress_cli::outln!("dns: {}", r.addr());
            Some(r)
        }
        None => None,
    };
    egress_cli::outln!("secret file: {}", args.secret_file.display());
    let mut signals = signals;
    let _ = signals.forever().next();
    if let Some(r) = responder {
        r.stop();
    }
    running.stop();
    Ok(exit::PASS)
}
