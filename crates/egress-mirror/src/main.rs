//! `egress-mirror SNAPSHOT_DIR [--listen ADDR]`: loads and verifies a
//! snapshot directory, then serves it until killed.
//!
//! Exit codes: 0 help, 2 usage, 4 snapshot invalid, 5 cannot bind.

use egress_snapshot::Snapshot;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

const USAGE: &str =
    "usage: egress-mirror SNAPSHOT_DIR [--listen ADDR]   (default ADDR 127.0.0.1:8080)";
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

struct Args {
    dir: PathBuf,
    listen: String,
}

/// `Ok(None)` means help was asked for.
fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut dir = None;
    let mut listen = None;
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--listen" => match args.next() {
                Some(addr) => listen = Some(addr),
                None => return Err("--listen needs an address, e.g. 127.0.0.1:8080".into()),
            },
            _ if arg.starts_with("--listen=") => {
                listen = Some(arg["--listen=".len()..].to_string())
            }
            _ if arg.starts_with('-') && arg != "-" => {
                return Err(format!("unknown option {arg:?}"))
            }
            _ if dir.is_some() => {
                return Err(format!(
                    "unexpected argument {arg:?}: give one snapshot directory"
                ))
            }
            _ => dir = Some(PathBuf::from(arg)),
        }
    }
    let dir = dir.ok_or("missing SNAPSHOT_DIR")?;
    Ok(Some(Args {
        dir,
        listen: listen.unwrap_or_else(|| DEFAULT_LISTEN.to_string()),
    }))
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("egress-mirror: {e}; {USAGE}");
            return ExitCode::from(2);
        }
    };
    let snapshot = match Snapshot::load_dir(&args.dir) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!(
                "egress-mirror: snapshot {} is invalid: {e}",
                args.dir.display()
            );
            return ExitCode::from(4);
        }
    };
    let id = snapshot.id();
    let paths = snapshot.doc.served.len();
    let server = match egress_mirror::serve(snapshot, &args.listen) {
        Ok(server) => server,
        Err(e) => {
            eprintln!(
                "egress-mirror: cannot listen on {}: {e}; choose another --listen address",
                args.listen
            );
            return ExitCode::from(5);
        }
    };
    println!(
        "egress-mirror: serving snapshot {id} ({paths} entries) at {}/",
        server.base_url()
    );
    // The server runs on its own threads until the process is killed.
    loop {
        std::thread::park();
    }
}
