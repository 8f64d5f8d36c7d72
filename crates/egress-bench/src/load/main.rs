//! `egress-bench-load --server NAME=ADDR@PID... --page PATH [--keep-alive N]
//! [--held N]... [--idle N] [--duration SECS] [--legit-every-ms MS] [--legit-nice N]
//! [--drip-every SECS] [--per-source N] [--out FILE]`: servers under load
//! on loopback, side by side in one run, scenario by scenario (each server
//! in turn, so that all meet the same machine):
//!
//! 1. **idle**: the server's resident memory (the process named by PID and
//!    its children, from `/proc`) with none of our connections, then with N
//!    connections that send nothing, 2 s after the last one connected;
//!    reported per 1,000 connections still open then;
//! 2. **the legitimate client alone**: one GET of the page every MS
//!    milliseconds for SECS seconds, each on a new connection from
//!    127.0.0.1 and bounded by 5 s: the unloaded success rate and p99.
//!    It runs on a thread of its own at nice `--legit-nice` (default -20,
//!    which needs root; the table shows the value it ran at): the
//!    generator stands in for other machines, so the client that measures
//!    should not wait behind it for a core;
//! 3. **held**, for each `--held N`: N connections, half of them sending
//!    half a request line and then one more line every `--drip-every`
//!    seconds (never ending the head), half sending nothing, each opened
//!    again if the server closes it, while the legitimate client runs as in
//!    2: its success rate and p99, and how many held connections stayed
//!    open;
//! 4. **keep-alive**: N connections each asking for the page again as soon
//!    as the previous response is complete, for SECS seconds once all are
//!    open: requests/s, p99, errors, and the server's peak resident memory
//!    during the run (sampled every 100 ms).
//!
//! Generated connections come from loopback source addresses 127.0.0.2,
//! 127.0.0.3, ... with at most `--per-source` on each (default 50), so a
//! server's per-client connection limit sees a fleet of clients, not one;
//! the legitimate client alone uses 127.0.0.1. A scenario given 0 is
//! skipped. The table (markdown, one column per server and, for two, their
//! ratio) is printed and written to `--out`.
//!
//! Exit codes: 0 done, 1 a server did not answer the page before the run or
//! a scenario could not be run (the table says which), 2 usage.

mod net;
mod pool;
mod rss;
mod scenarios;
mod table;

use clap::{CommandFactory, Parser};
use scenarios::{Settings, Target};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use table::{Column, Plan};

const USAGE: &str = "usage: egress-bench-load --server NAME=ADDR@PID... --page PATH [--keep-alive N] [--held N]... [--idle N] [--duration SECS] [--legit-every-ms MS] [--legit-nice N] [--drip-every SECS] [--per-source N] [--out FILE]";

#[derive(Parser)]
#[command(
    name = "egress-bench-load",
    about = "Servers under load on loopback, side by side: idle connections' memory, held (slow and silent) connections against a legitimate client, and many keep-alive connections.",
    override_usage = "egress-bench-load --server NAME=ADDR@PID... --page PATH [OPTIONS]",
    after_help = "Exit codes: 0 done, 1 a server did not answer or a scenario could not run, 2 usage."
)]
struct Args {
    /// A server: a name for its column, its address, and the process whose
    /// memory (with its children's) is measured, e.g. nginx=127.0.0.1:8081@4242.
    #[arg(long = "server", value_name = "NAME=ADDR@PID", required = true, value_parser = parse_server)]
    servers: Vec<Target>,
    /// The page to ask for (with Accept: text/html).
    #[arg(long, value_name = "PATH")]
    page: String,
    /// Keep-alive connections (0 skips the scenario).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    keep_alive: usize,
    /// Held connections; repeat for several runs (0 skips).
    #[arg(long, value_name = "N", default_values_t = [1_000, 10_000])]
    held: Vec<usize>,
    /// Idle connections for the memory figure (0 skips).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    idle: usize,
    /// Seconds per keep-alive run and per legitimate client's run.
    #[arg(long, value_name = "SECS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    duration: u64,
    /// Milliseconds between the legitimate client's requests.
    #[arg(long, value_name = "MS", default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    legit_every_ms: u64,
    /// Seconds between the lines a slow connection sends.
    #[arg(long, value_name = "SECS", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    drip_every: u64,
    /// The nice value of the legitimate client's thread (-20 to 19; below
    /// 0 needs root). The generator stands in for other machines, so by
    /// default the client that measures does not wait behind it for a
    /// core; 0 runs it as the generator runs.
    #[arg(long, value_name = "N", default_value_t = -20, allow_negative_numbers = true, value_parser = clap::value_parser!(i32).range(-20..=19))]
    legit_nice: i32,
    /// Generated connections per loopback source address.
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    per_source: u64,
    /// Where to write the table (also printed).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Why a `--server` value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ServerSpecError {
    #[error("{0:?}: expected NAME=ADDR@PID, e.g. mirror=127.0.0.1:8080@4242")]
    Shape(String),
    #[error("{0:?} is not an address such as 127.0.0.1:8080")]
    Addr(String),
    #[error("{0:?} is not a process id")]
    Pid(String),
}

fn parse_server(text: &str) -> Result<Target, ServerSpecError> {
    let shape = || ServerSpecError::Shape(text.to_string());
    let (name, rest) = text.split_once('=').ok_or_else(shape)?;
    let (addr, pid) = rest.rsplit_once('@').ok_or_else(shape)?;
    if name.is_empty() {
        return Err(shape());
    }
    Ok(Target {
        name: name.to_string(),
        addr: addr
            .parse::<SocketAddr>()
            .map_err(|_| ServerSpecError::Addr(addr.to_string()))?,
        pid: pid
            .parse::<u32>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| ServerSpecError::Pid(pid.to_string()))?,
    })
}

/// Why the run could not start.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    #[error("{name} at {addr} did not answer {page} with 200 ({why}); start it first")]
    NotServing {
        name: String,
        addr: SocketAddr,
        page: String,
        why: String,
    },
    #[error("{needed} open files are needed and the limit is {limit}; raise it (ulimit -n) or lower the connection counts")]
    FileLimit { needed: u64, limit: u64 },
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Raises the soft limit on open files to the hard one and checks that
/// `needed` fit.
fn file_limit(needed: u64) -> Result<(), LoadError> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
    let now = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    if now < needed {
        return Err(LoadError::FileLimit { needed, limit: now });
    }
    Ok(())
}

fn say(line: &str) {
    eprintln!("egress-bench-load: {line}");
}

fn run(args: &Args) -> Result<(String, bool), LoadError> {
    let largest = args
        .held
        .iter()
        .chain([&args.keep_alive, &args.idle])
        .copied()
        .max()
        .unwrap_or(0);
    file_limit(largest as u64 + 256)?;
    let s = Settings {
        page: args.page.clone(),
        per_source: usize::try_from(args.per_source).unwrap_or(usize::MAX),
        duration: Duration::from_secs(args.duration),
        legit_every: Duration::from_millis(args.legit_every_ms),
        drip_every: Duration::from_secs(args.drip_every),
        legit_nice: args.legit_nice,
    };
    for t in &args.servers {
        match net::one_get(t.addr, &s.page, Duration::from_secs(5)) {
            Ok(true) => {}
            Ok(false) => return Err(not_serving(t, &s, "another status".into())),
            Err(e) => return Err(not_serving(t, &s, e.to_string())),
        }
    }
    let mut cols: Vec<Column> = args.servers.iter().map(|_| Column::default()).collect();
    let pause = || std::thread::sleep(Duration::from_secs(2));
    if args.idle > 0 {
        for (t, c) in args.servers.iter().zip(&mut cols) {
            say(&format!("{}: {} idle connections", t.name, args.idle));
            c.idle = Some(scenarios::idle(t, &s, args.idle).map_err(|e| e.to_string()));
            pause();
        }
    }
    if args.held.iter().any(|h| *h > 0) {
        for (t, c) in args.servers.iter().zip(&mut cols) {
            say(&format!("{}: the legitimate client alone", t.name));
            let done = std::sync::Arc::default();
            c.alone = Some(
                scenarios::joined(scenarios::legit(t.addr, &s, done)).map_err(|e| e.to_string()),
            );
        }
    }
    for h in args.held.iter().copied().filter(|h| *h > 0) {
        for (t, c) in args.servers.iter().zip(&mut cols) {
            say(&format!("{}: {h} held connections", t.name));
            c.held
                .push(scenarios::held(t, &s, h).map_err(|e| e.to_string()));
            pause();
        }
    }
    if args.keep_alive > 0 {
        for (t, c) in args.servers.iter().zip(&mut cols) {
            say(&format!(
                "{}: {} keep-alive connections",
                t.name, args.keep_alive
            ));
            c.keep_alive =
                Some(scenarios::keep_alive(t, &s, args.keep_alive).map_err(|e| e.to_string()));
            pause();
        }
    }
    let failed = cols.iter().any(|c| {
        c.idle.as_ref().is_some_and(Result::is_err)
            || c.held.iter().any(Result::is_err)
            || c.keep_alive.as_ref().is_some_and(Result::is_err)
    });
    let plan = Plan {
        names: args.servers.iter().map(|t| t.name.as_str()).collect(),
        idle: args.idle,
        held: args.held.clone(),
        keep_alive: args.keep_alive,
        legit_every: s.legit_every,
    };
    Ok((table::render(&plan, &cols), failed))
}

fn not_serving(t: &Target, s: &Settings, why: String) -> LoadError {
    LoadError::NotServing {
        name: t.name.clone(),
        addr: t.addr,
        page: s.page.clone(),
        why,
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match egress_cli::parse::<Args>("egress-bench-load", argv.iter().cloned()) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", Args::command().render_long_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "egress-bench-load: {} ({USAGE})",
                egress_cli::usage_line(&e)
            );
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok((table, failed)) => {
            println!("{table}");
            if let Some(path) = &args.out {
                if let Err(source) = std::fs::write(path, format!("{table}\n")) {
                    egress_cli::say_error(
                        "egress-bench-load",
                        &LoadError::Write {
                            path: path.clone(),
                            source,
                        },
                    );
                    return ExitCode::from(1);
                }
            }
            if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            egress_cli::say_error("egress-bench-load", &e);
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Option<Args>, clap::Error> {
        egress_cli::parse::<Args>("egress-bench-load", a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn servers_are_named_addresses_with_a_process() {
        assert_eq!(
            parse_server("nginx=127.0.0.1:8081@42"),
            Ok(Target {
                name: "nginx".into(),
                addr: "127.0.0.1:8081".parse().unwrap(),
                pid: 42
            })
        );
        for bad in [
            "nginx",
            "=127.0.0.1:1@2",
            "nginx=127.0.0.1:1",
            "nginx=localhost:1@2",
            "nginx=127.0.0.1:1@0",
            "nginx=127.0.0.1:1@x",
        ] {
            assert!(parse_server(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_are_checked() {
        assert!(parse(&["--help"]).unwrap().is_none());
        let a = parse(&[
            "--server",
            "m=127.0.0.1:1@2",
            "--page",
            "/simple/",
            "--held",
            "10",
            "--held",
            "20",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.held, vec![10, 20]);
        assert_eq!((a.keep_alive, a.idle, a.duration), (10_000, 10_000, 10));
        assert_eq!(
            a.legit_every_ms, 20,
            "500 requests in a 10 s run, so p99 is not the worst one"
        );
        for bad in [
            &["--page", "/simple/"][..],
            &["--server", "m=127.0.0.1:1@2"],
            &[
                "--server",
                "m=127.0.0.1:1@2",
                "--page",
                "/",
                "--duration",
                "0",
            ],
            &[
                "--server",
                "m=127.0.0.1:1@2",
                "--page",
                "/",
                "--per-source",
                "0",
            ],
            &["--server", "m=127.0.0.1:1@2", "--page", "/", "stray"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}
