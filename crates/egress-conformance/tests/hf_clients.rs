//! The real `huggingface_hub` (pinned in scripts/clients.txt, installed by
//! scripts/setup-clients) against the Hugging Face Hub canary: the routes
//! the canary serves are the ones the client really asks, in the shapes it
//! really reads. `snapshot_download` of a model (regular files and LFS
//! files, one in a folder) and `hf_hub_download` of a dataset file, with
//! `HF_ENDPOINT` set to the canary, with and without `HF_HUB_DISABLE_XET`:
//! every byte is the canary's, and the canary's log shows what the client
//! asked.

mod common;

use common::{clients, tmpdir};
use egress_model::HfRepoType;
use egress_references::hf::canary::{self as hf_canary, HfCanary};
use std::path::Path;
use std::process::Command;

const SCRIPT: &str = r#"
import json, sys
from huggingface_hub import hf_hub_download, snapshot_download
out, model, dataset, revision = sys.argv[1:5]
m = snapshot_download(repo_id=model, revision=revision, local_dir=out + "/model")
d = hf_hub_download(repo_id=dataset, repo_type="dataset", filename="data/train.csv", local_dir=out + "/dataset")
print(json.dumps({"model": m, "dataset": d}))
"#;

/// Runs the script with nothing of this machine's environment but `PATH`:
/// its own `HF_HOME`, the canary as `HF_ENDPOINT`.
fn download(dir: &Path, endpoint: &str, revision: &str, xet: bool) -> std::process::Output {
    let mut c = Command::new(clients().join("bin/python"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.join("home"))
        .env("HF_HOME", dir.join("hf-home"))
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HUB_ETAG_TIMEOUT", "10")
        .env("HF_HUB_DOWNLOAD_TIMEOUT", "10")
        .arg("-c")
        .arg(SCRIPT)
        .arg(dir.join("out"))
        .arg(hf_canary::MODEL)
        .arg(hf_canary::DATASET)
        .arg(revision);
    if !xet {
        c.env("HF_HUB_DISABLE_XET", "1");
    }
    c.output().expect("run python")
}

#[test]
fn huggingface_hub_downloads_from_the_canary() {
    let canary = HfCanary::start(hf_canary::fixtures()).expect("the hf canary");
    let model = canary
        .repo(HfRepoType::Model, hf_canary::MODEL)
        .expect("the fixture model");
    let commit = model.commit("main").expect("main").clone();
    for (xet, revision) in [(false, "main"), (true, commit.sha.as_str())] {
        let dir = tmpdir(&format!("hf-clients-{xet}"));
        let o = download(&dir, canary.endpoint(), revision, xet);
        assert!(
            o.status.success(),
            "xet {xet}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        for f in &commit.files {
            let got = std::fs::read(dir.join("out/model").join(&f.path))
                .unwrap_or_else(|e| panic!("{}: {e}", f.path));
            assert_eq!(got, f.bytes, "{}", f.path);
        }
        let csv = std::fs::read(dir.join("out/dataset/data/train.csv")).expect("the csv");
        assert!(csv.starts_with(b"text,label\n"));
        let _ = std::fs::remove_dir_all(&dir);
    }
    // What the client asked: the revision (a branch only), the recursive
    // tree at the commit, each file's HEAD then GET under /resolve/ at the
    // commit, and the LFS files from the CDN origin.
    let asked: Vec<String> = canary
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.target))
        .collect();
    let sha = &commit.sha;
    for want in [
        format!("GET /api/models/{}/revision/main", hf_canary::MODEL),
        format!(
            "GET /api/models/{}/tree/{sha}?recursive=true&expand=false",
            hf_canary::MODEL
        ),
        format!("HEAD /{}/resolve/{sha}/config.json", hf_canary::MODEL),
        format!("GET /{}/resolve/{sha}/config.json", hf_canary::MODEL),
        format!("HEAD /{}/resolve/{sha}/model.safetensors", hf_canary::MODEL),
    ] {
        assert!(asked.iter().any(|a| a == &want), "{want}: {asked:#?}");
    }
    assert!(
        asked.iter().any(|a| a.starts_with("GET /lfs/")),
        "{asked:#?}"
    );
    assert!(
        !asked.iter().any(|a| a.starts_with(&format!(
            "GET /api/models/{}/revision/{sha}",
            hf_canary::MODEL
        ))),
        "a commit needs no revision lookup: {asked:#?}"
    );
}
