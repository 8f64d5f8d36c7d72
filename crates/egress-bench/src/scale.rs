//! `egress-bench-scale OUT_DIR --entries N [--sample K]`: writes
//! `OUT_DIR/snap`, a signed snapshot of about N `MANIFEST` entries (one-wheel
//! projects: the wheel, its PEP 658 metadata and the project's HTML and JSON
//! pages are four blobs), made by `egress_snapshot::SnapshotBuilder` with its
//! blobs streamed to disk; `OUT_DIR/static`, every HTML page at its path
//! (hard links to the snapshot's blobs) for nginx; and `OUT_DIR/pages.txt`,
//! K project pages spread over the index, one per line. Prints
//! `page=<path>`, `pages=<file>`, `entries=<MANIFEST lines>`.
//!
//! `egress-bench-scale OUT_DIR --entries N --dists-only`: writes only the
//! wheels, as files in `OUT_DIR/dists`, for timing `snapshot build --dist`.
//!
//! For `scripts/bench-scale`; see docs/benchmarks.md, "Scale".

use clap::{CommandFactory, Parser};
use egress_artifacts::{build_wheel, BuiltDist, WheelSpec};
use egress_model::name::InvalidName;
use egress_model::version::InvalidVersion;
use egress_model::{ProjectName, Version};
use egress_simple::HTML_V1;
use egress_snapshot::{SnapshotBuilder, SnapshotError};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str =
    "usage: egress-bench-scale OUT_DIR --entries N [--sample K] [--dists-only] [--no-static]";

#[derive(Parser)]
#[command(
    name = "egress-bench-scale",
    about = "Writes OUT_DIR/snap (a signed snapshot of about N MANIFEST entries, one-wheel projects), OUT_DIR/static (its HTML pages for nginx) and OUT_DIR/pages.txt; with --dists-only, only the wheels in OUT_DIR/dists.",
    override_usage = "egress-bench-scale OUT_DIR --entries N [--sample K] [--dists-only] [--no-static]"
)]
struct Args {
    /// Where to write snap/, static/ and pages.txt (or dists/).
    #[arg(value_name = "OUT_DIR")]
    out: PathBuf,
    /// About how many MANIFEST entries: four per project, and four more.
    #[arg(long, value_name = "N")]
    entries: usize,
    /// How many project pages to list in pages.txt.
    #[arg(long, value_name = "K", default_value_t = 1000)]
    sample: usize,
    /// Write only the wheels, to OUT_DIR/dists.
    #[arg(long)]
    dists_only: bool,
    /// Do not write OUT_DIR/static.
    #[arg(long)]
    no_static: bool,
}

#[derive(Debug, thiserror::Error)]
enum ScaleError {
    #[error(transparent)]
    Name(#[from] InvalidName),
    #[error(transparent)]
    Version(#[from] InvalidVersion),
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ScaleError + '_ {
    move |source| ScaleError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn project(p: usize) -> String {
    format!("scale-{p:07}")
}

fn wheel(p: usize) -> Result<BuiltDist, ScaleError> {
    let name = ProjectName::new(&project(p))?;
    Ok(build_wheel(&WheelSpec {
        name: name.clone(),
        version: Version::new("1.0.0")?,
        summary: format!("scale project {p}"),
        description: String::new(),
        requires_python: None,
        files: vec![(
            format!("{}/__init__.py", name.wheel_component()),
            b"x = 1\n".to_vec(),
        )],
    }))
}

fn remove(path: &Path) -> Result<(), ScaleError> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path)(e)),
        _ => Ok(()),
    }
}

fn run(args: Args) -> Result<(), ScaleError> {
    let started = Instant::now();
    let projects = args.entries.saturating_sub(4).div_ceil(4).max(1);
    std::fs::create_dir_all(&args.out).map_err(io(&args.out))?;
    if args.dists_only {
        let dir = args.out.join("dists");
        remove(&dir)?;
        std::fs::create_dir(&dir).map_err(io(&dir))?;
        for p in 0..projects {
            let w = wheel(p)?;
            let path = dir.join(&w.filename);
            std::fs::write(&path, &w.bytes).map_err(io(&path))?;
        }
        eprintln!(
            "egress-bench-scale: {projects} wheels in {} ({:.1} s)",
            dir.display(),
            started.elapsed().as_secs_f64()
        );
        println!("dists={}", dir.display());
        return Ok(());
    }

    let staging = args.out.join(".staging");
    remove(&staging)?;
    let mut builder = SnapshotBuilder::on_disk("/simple/", &staging)?;
    for p in 0..projects {
        let w = wheel(p)?;
        builder.add_dist(&w.filename, w.bytes, None)?;
    }
    let added = started.elapsed().as_secs_f64();
    let key = egress_signing::SigningKey::from_seed([42; 32], "bench");
    let snapshot = builder.build("2026-01-01T00:00:00Z", Some(&key), "bench")?;
    let built = started.elapsed().as_secs_f64();
    let snap = args.out.join("snap");
    remove(&snap)?;
    snapshot.write_dir(&snap)?;
    let written = started.elapsed().as_secs_f64();

    // The HTML pages, linked to the snapshot's own blobs: the same bytes.
    let pages: Vec<&str> = snapshot
        .doc
        .served
        .iter()
        .filter(|e| e.content_type == HTML_V1)
        .map(|e| e.path.as_str())
        .collect();
    if !args.no_static {
        let dir = args.out.join("static");
        remove(&dir)?;
        for e in snapshot
            .doc
            .served
            .iter()
            .filter(|e| e.content_type == HTML_V1)
        {
            let rel = e.path.trim_start_matches('/');
            let target = dir.join(rel);
            std::fs::create_dir_all(&target).map_err(io(&target))?;
            let file = target.join("index.html");
            let blob = snap.join(egress_snapshot::manifest::blob_path(&e.sha256));
            std::fs::hard_link(&blob, &file)
                .or_else(|_| std::fs::copy(&blob, &file).map(|_| ()))
                .map_err(io(&file))?;
        }
    }
    let projects_pages: Vec<&str> = pages.iter().copied().filter(|p| *p != "/simple/").collect();
    let step = (projects_pages.len() / args.sample.max(1)).max(1);
    let sample: Vec<&str> = projects_pages
        .iter()
        .step_by(step)
        .take(args.sample.max(1))
        .copied()
        .collect();
    let list = args.out.join("pages.txt");
    std::fs::write(&list, sample.join("\n") + "\n").map_err(io(&list))?;
    eprintln!(
        "egress-bench-scale: {} MANIFEST entries ({projects} projects): added in {added:.1} s, built in {:.1} s, written in {:.1} s, all {:.1} s",
        snapshot.manifest.len(),
        built - added,
        written - built,
        started.elapsed().as_secs_f64()
    );
    println!(
        "page={}",
        projects_pages
            .get(projects_pages.len() / 2)
            .copied()
            .unwrap_or("/simple/")
    );
    println!("pages={}", list.display());
    println!("entries={}", snapshot.manifest.len());
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match egress_cli::parse::<Args>("egress-bench-scale", args.iter().cloned()) {
        Ok(Some(a)) => a,
        Ok(None) => {
            println!("{}", Args::command().render_long_help());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!(
                "egress-bench-scale: {} ({USAGE})",
                egress_cli::usage_line(&e)
            );
            return ExitCode::from(2);
        }
    };
    match run(parsed) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            egress_cli::say_error("egress-bench-scale", &e);
            ExitCode::from(2)
        }
    }
}
