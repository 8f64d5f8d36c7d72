//! `egress-bench-hf OUT_DIR [--size BYTES]`: the Hugging Face benchmark's
//! fixture. Starts the Hub canary with one model whose `model.safetensors`
//! is an LFS file of `--size` zero bytes (a sparse file's contents: 1 GiB
//! by default), builds a signed snapshot of it with the builder `snapshot
//! build --hf-lock` runs (`OUT_DIR/snap`), and links the same blob at the
//! same path into a static tree for nginx (`OUT_DIR/static`). Prints
//! `file=<served path>` and `size=<bytes>`.

use clap::Parser;
use egress_model::{HfRepoType, Sha256Digest};
use egress_references::hf::canary::{HfCanary, HfFile, HfRepo};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "egress-bench-hf")]
struct Args {
    /// Where to write snap/ and static/.
    #[arg(value_name = "OUT_DIR")]
    out: PathBuf,
    /// The LFS file's size in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    size: u64,
}

const REPO: &str = "ec-org/ec-big";
const FILE: &str = "model.safetensors";

fn run(args: &Args) -> Result<String, String> {
    let size = usize::try_from(args.size).map_err(|_| "--size is too large".to_string())?;
    let repo = HfRepo::new(
        HfRepoType::Model,
        REPO,
        vec![
            HfFile {
                path: "config.json".into(),
                bytes: br#"{"model_type":"gpt2"}"#.to_vec(),
                lfs: false,
            },
            HfFile {
                path: FILE.into(),
                bytes: vec![0; size],
                lfs: true,
            },
        ],
    );
    let commit = repo.main.clone();
    let canary = HfCanary::start(vec![repo]).map_err(|e| format!("the canary: {e}"))?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let snap = args.out.join("snap");
    let _ = std::fs::remove_dir_all(&snap);
    let lock = args.out.join("hf.lock");
    std::fs::write(&lock, format!("model {REPO} {commit}\n")).map_err(|e| e.to_string())?;
    let key_path = args.out.join("bench-key");
    let key = egress_signing::SigningKey::from_seed([42; 32], "bench");
    std::fs::write(&key_path, key.to_openssh()).map_err(|e| e.to_string())?;
    egress_build::quiet(true);
    let mut options =
        egress_build::BuildOptions::new(egress_build::Common::new(key_path, snap.clone()));
    options.hf = egress_build::hf::Inputs {
        hf_lock: Some(lock),
        hf_endpoint: Some(canary.endpoint().to_string()),
    };
    egress_build::build(options, |_| {}).map_err(|e| e.to_string())?;
    drop(canary);
    // The same bytes for nginx: the snapshot's blob, linked at the path
    // the mirror serves it at.
    let path = egress_snapshot::hf::resolve_path(HfRepoType::Model, REPO, &commit, FILE);
    let digest = Sha256Digest::of(&vec![0; size]);
    let blob = snap.join(egress_snapshot::manifest::blob_path(&digest));
    let static_dir = args.out.join("static");
    let _ = std::fs::remove_dir_all(&static_dir);
    let target = static_dir.join(path.trim_start_matches('/'));
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    std::fs::hard_link(&blob, &target).map_err(|e| {
        format!(
            "cannot link {} to {}: {e}",
            blob.display(),
            target.display()
        )
    })?;
    Ok(format!("file={path}\nsize={size}\n"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("egress-bench-hf: {e}");
            ExitCode::from(5)
        }
    }
}
