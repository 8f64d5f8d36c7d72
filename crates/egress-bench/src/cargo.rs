//! `egress-bench-cargo OUT_DIR --lock Cargo.lock --mirror-url URL
//! --static-url URL`: the cargo benchmark's fixture. Starts the cargo canary
//! (crates.io's own index lines and `.crate` files, as cargo cached them
//! here), builds a signed snapshot of the lock's crates from it with the
//! builder `snapshot build --cargo-lock` runs (`OUT_DIR/snap`, its
//! `config.json` naming `--mirror-url`), and writes the same files at the
//! same paths as a static tree for nginx (`OUT_DIR/static`, its
//! `config.json` naming `--static-url`). Prints `index=<path>`, one index
//! file for a requests-per-second run.

use clap::Parser;
use egress_references::cargo::canary::{content_from_cargo_home, read_lock, CargoCanary};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "egress-bench-cargo")]
struct Args {
    /// Where to write snap/ and static/.
    #[arg(value_name = "OUT_DIR")]
    out: PathBuf,
    /// The Cargo.lock whose crates the snapshot holds.
    #[arg(long, value_name = "FILE")]
    lock: PathBuf,
    /// egress-mirror's base URL, as cargo will reach it.
    #[arg(long, value_name = "URL")]
    mirror_url: String,
    /// nginx's base URL, as cargo will reach it.
    #[arg(long, value_name = "URL")]
    static_url: String,
}

fn run(args: &Args) -> Result<String, String> {
    let lock = read_lock(&args.lock).map_err(|e| format!("{}: {e}", args.lock.display()))?;
    let content = content_from_cargo_home(&lock).map_err(|e| e.to_string())?;
    let canary = CargoCanary::start(content).map_err(|e| format!("the canary: {e}"))?;
    let snap = args.out.join("snap");
    let _ = std::fs::remove_dir_all(&snap);
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let key_path = args.out.join("bench-key");
    let key = egress_signing::SigningKey::from_seed([42; 32], "bench");
    std::fs::write(&key_path, key.to_openssh()).map_err(|e| e.to_string())?;
    egress_build::quiet(true);
    let mut options = egress_build::BuildOptions::new(egress_build::Common {
        jobs: 4,
        ..egress_build::Common::new(key_path, snap.clone())
    });
    options.cargo = egress_build::cargo::Inputs {
        cargo_lock: Some(args.lock.clone()),
        cargo_index_url: Some(canary.index_url()),
        cargo_registry_url: Some(args.mirror_url.clone()),
        ..Default::default()
    };
    egress_build::build(options, |_| {}).map_err(|e| e.to_string())?;
    drop(canary);
    write_static(&snap, &args.out.join("static"), &args.static_url)
}

/// Every served file at its path; `config.json` naming `static_url`.
fn write_static(snap: &Path, dir: &Path, static_url: &str) -> Result<String, String> {
    let snapshot = egress_snapshot::Snapshot::load_dir(snap).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_dir_all(dir);
    let mut index = String::new();
    for e in &snapshot.doc.served {
        let Some(rel) = e.path.strip_prefix("/cargo/") else {
            continue;
        };
        let file = dir.join("cargo").join(rel);
        let bytes = if e.path == egress_snapshot::cargo::CONFIG_PATH {
            egress_snapshot::cargo::render_config(static_url.trim_end_matches('/'))
        } else {
            let b = snapshot
                .blobs
                .get(&e.sha256)
                .ok_or_else(|| format!("blob for {} missing", e.path))?;
            b.to_vec()
        };
        if e.path.ends_with("/se/rd/serde") {
            index = e.path.clone();
        }
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&file, bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    }
    Ok(index)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(index) => {
            println!("index={index}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("egress-bench-cargo: {e}");
            ExitCode::FAILURE
        }
    }
}
