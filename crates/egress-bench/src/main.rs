//! `egress-bench-fixture OUT_DIR [--projects N] [--big-mib M]`: writes
//! `OUT_DIR/snap` (a signed snapshot of N projects with three wheels each and
//! one large opaque sdist) and `OUT_DIR/static` (every HTML page and file the
//! mirror would serve, at the same paths, for nginx to serve as plain files).
//! Prints `page=<path>` and `big=<path>` for the benchmark script.

use clap::{CommandFactory, Parser};
use egress_artifacts::{build_wheel, WheelSpec};
use egress_model::name::InvalidName;
use egress_model::version::InvalidVersion;
use egress_model::{ProjectName, Version};
use egress_snapshot::{SnapshotBuilder, SnapshotError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: egress-bench-fixture OUT_DIR [--projects N] [--big-mib M]";

/// The command line: one output directory and two optional numbers. Anything
/// else (an unknown flag, a flag where the directory goes, a second
/// directory) is refused, so that a mistyped flag never becomes a directory.
#[derive(Parser)]
#[command(
    name = "egress-bench-fixture",
    about = "Writes OUT_DIR/snap (a signed benchmark snapshot) and OUT_DIR/static (the same files for nginx), and prints page=<path> and big=<path>.",
    override_usage = "egress-bench-fixture OUT_DIR [--projects N] [--big-mib M]"
)]
struct Args {
    /// Where to write snap/ and static/.
    #[arg(value_name = "OUT_DIR")]
    out: PathBuf,
    /// How many projects, with three wheels each.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    projects: usize,
    /// Size of the one large opaque sdist, in MiB.
    #[arg(long, value_name = "M", default_value_t = 50)]
    big_mib: usize,
}

/// Why the fixture could not be written.
#[derive(Debug, thiserror::Error)]
enum FixtureError {
    #[error(transparent)]
    Name(#[from] InvalidName),
    #[error(transparent)]
    Version(#[from] InvalidVersion),
    /// Building the snapshot or writing its directory failed.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// A file or directory under OUT_DIR could not be made or removed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The snapshot serves a path whose bytes it does not hold.
    #[error("blob for {path} missing")]
    MissingBlob { path: String },
}

impl FixtureError {
    /// For `map_err`: doing something to `path` failed.
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Deterministic pseudo-random bytes (xorshift), so the big file does not
/// compress and is the same on every run.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn run(args: Args) -> Result<(), FixtureError> {
    let Args {
        out,
        projects,
        big_mib,
    } = args;
    let mut builder = SnapshotBuilder::new("/simple/");
    for p in 0..projects {
        let name = ProjectName::new(&format!("bench-{p:05}"))?;
        for v in ["1.0.0", "1.1.0", "2.0.0"] {
            let version = Version::new(v)?;
            let wheel = build_wheel(&WheelSpec {
                name: name.clone(),
                version,
                summary: format!("benchmark project {p}"),
                description: "A benchmark fixture.\n".into(),
                requires_python: Some(">=3.8".into()),
                files: vec![(
                    format!("{}/__init__.py", name.wheel_component()),
                    format!("__version__ = '{v}'\n").into_bytes(),
                )],
            });
            builder.add_dist(&wheel.filename, wheel.bytes, None)?;
        }
    }
    // An sdist is opaque to the snapshot, so random bytes make a fine large file.
    builder.add_dist("bench_big-1.0.0.tar.gz", noise(big_mib * 1024 * 1024), None)?;
    let key = egress_signing::SigningKey::from_seed([42; 32], "bench");
    let snapshot = builder.build("2026-01-01T00:00:00Z", Some(&key), "bench")?;
    std::fs::create_dir_all(&out).map_err(FixtureError::io(&out))?;
    let snap_dir = out.join("snap");
    if snap_dir.exists() {
        std::fs::remove_dir_all(&snap_dir).map_err(FixtureError::io(&snap_dir))?;
    }
    snapshot.write_dir(&snap_dir)?;
    write_static(&snapshot, &out.join("static"))?;
    let big = snapshot
        .doc
        .served
        .iter()
        .find(|e| e.path.ends_with("bench_big-1.0.0.tar.gz"))
        .map(|e| e.path.clone())
        .unwrap_or_default();
    println!("page=/simple/bench-{:05}/", projects / 2);
    println!("big={big}");
    Ok(())
}

/// The same bytes at the same paths, HTML variants only (nginx does not
/// negotiate); a path ending in `/` becomes `index.html` in that directory.
fn write_static(snapshot: &egress_snapshot::Snapshot, dir: &Path) -> Result<(), FixtureError> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(FixtureError::io(dir))?;
    }
    for e in &snapshot.doc.served {
        if e.content_type.contains("json") {
            continue;
        }
        let rel = e.path.trim_start_matches('/');
        let file = if rel.ends_with('/') || rel.is_empty() {
            dir.join(rel).join("index.html")
        } else {
            dir.join(rel)
        };
        let bytes = snapshot
            .blobs
            .get(&e.sha256)
            .ok_or_else(|| FixtureError::MissingBlob {
                path: e.path.clone(),
            })?;
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(FixtureError::io(parent))?;
        }
        std::fs::write(&file, &bytes[..]).map_err(FixtureError::io(&file))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match egress_cli::parse::<Args>("egress-bench-fixture", args.iter().cloned()) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", Args::command().render_long_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "egress-bench-fixture: {} ({USAGE})",
                egress_cli::usage_line(&e)
            );
            return ExitCode::from(2);
        }
    };
    match run(parsed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            egress_cli::say_error("egress-bench-fixture", &e);
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[String]) -> Result<Option<Args>, clap::Error> {
        egress_cli::parse::<Args>("egress-bench-fixture", args.iter().cloned())
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_never_become_the_output_directory() {
        assert!(parse(&args(&["--help"])).unwrap().is_none());
        assert!(parse(&args(&["out", "-h"])).unwrap().is_none());
        for bad in [
            &[][..],
            &["--projects", "3"],
            &["--frobnicate", "out"],
            &["out", "--projects"],
            &["out", "--projects", "many"],
            &["out", "again"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
        let a = parse(&args(&["out", "--projects", "3", "--big-mib", "1"]))
            .unwrap()
            .unwrap();
        assert_eq!((a.out, a.projects, a.big_mib), (PathBuf::from("out"), 3, 1));
    }
}
