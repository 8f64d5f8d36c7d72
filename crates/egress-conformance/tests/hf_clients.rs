//! The real `huggingface_hub` (pinned in scripts/clients.txt, installed by
//! scripts/setup-clients) against the Hugging Face Hub canary: the routes
//! the canary serves are the ones the client really asks, in the shapes it
//! really reads. `snapshot_download` of a model (regular files and LFS
//! files, one in a folder) and `hf_hub_download` of a dataset file, with
//! `HF_ENDPOINT` set to the canary, with and without `HF_HUB_DISABLE_XET`:
//! every byte is the canary's, and the canary's log shows what the client
//! asked. Then the same client against egress-mirror serving a snapshot
//! that `snapshot build --hf-lock` built from the canary, over http and
//! https, with and without Xet: the same bytes, the config loaded again
//! offline from the client's cache, and nothing of the canary reached.

mod common;

use common::{clients, free_port, ok, run, s, tmpdir, MirrorProcess};
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
    download_trusting(dir, endpoint, revision, xet, None)
}

fn download_trusting(
    dir: &Path,
    endpoint: &str,
    revision: &str,
    xet: bool,
    ca: Option<&Path>,
) -> std::process::Output {
    let mut c = Command::new(clients().join("bin/python"));
    c.env_clear();
    if let Some(ca) = ca {
        // A lab's own CA, as a TLS-inspecting network gives it.
        c.env("SSL_CERT_FILE", ca);
    }
    c.env("PATH", "/usr/bin:/bin")
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

/// Loads the downloaded config and tokenizer settings again from what the
/// client downloaded, offline (the local directory's own metadata).
const OFFLINE: &str = r#"
import json, sys
from huggingface_hub import hf_hub_download
kw = dict(repo_id=sys.argv[1], revision=sys.argv[2], local_dir=sys.argv[3])
config = json.load(open(hf_hub_download(filename="config.json", **kw)))
tokenizer = json.load(open(hf_hub_download(filename="tokenizer_config.json", **kw)))
print(config["model_type"], tokenizer["model_max_length"])
"#;

#[test]
fn huggingface_hub_downloads_from_the_mirror_over_http_and_https() {
    let dir = tmpdir("hf-mirror");
    let canary = HfCanary::start(hf_canary::fixtures()).expect("the hf canary");
    let model = canary
        .repo(HfRepoType::Model, hf_canary::MODEL)
        .expect("the fixture model");
    let commit = model.commit("main").expect("main").clone();
    let dataset = canary
        .repo(HfRepoType::Dataset, hf_canary::DATASET)
        .expect("the fixture dataset");
    let lock = dir.join("hf.lock");
    std::fs::write(
        &lock,
        format!(
            "# the lab's model and dataset\nmodel {} {}\ndataset {} {} data/*\n",
            hf_canary::MODEL,
            commit.sha,
            hf_canary::DATASET,
            dataset.main
        ),
    )
    .unwrap();
    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let snap = dir.join("snap");
    ok(
        &run(&[
            "snapshot",
            "build",
            "--hf-lock",
            s(&lock),
            "--hf-endpoint",
            canary.endpoint(),
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ]),
        "snapshot build --hf-lock",
    );
    ok(&run(&["snapshot", "verify", s(&snap)]), "snapshot verify");
    let mark = canary.requests().len();
    let ca = egress_testca::TestCa::new(&dir);
    let http = MirrorProcess::start(&snap, &format!("127.0.0.1:{}", free_port()));
    let https = MirrorProcess::start_tls(&snap, &format!("127.0.0.1:{}", free_port()), &ca);
    for (mirror, trust, xet) in [
        (&http, None, false),
        (&https, Some(ca.ca_cert.as_path()), true),
    ] {
        let endpoint = format!("{}/hf", mirror.base);
        for revision in ["main", commit.sha.as_str()] {
            let run_dir = dir.join(format!("run-{xet}-{revision}"));
            let o = download_trusting(&run_dir, &endpoint, revision, xet, trust);
            assert!(
                o.status.success(),
                "{endpoint} {revision}: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            for f in &commit.files {
                let got = std::fs::read(run_dir.join("out/model").join(&f.path))
                    .unwrap_or_else(|e| panic!("{}: {e}", f.path));
                assert_eq!(got, f.bytes, "{}", f.path);
            }
            let csv = std::fs::read(run_dir.join("out/dataset/data/train.csv")).unwrap();
            assert!(csv.starts_with(b"text,label\n"));
        }
    }
    // Offline, from what the client cached: the config loads.
    let cached = dir.join("run-false-main");
    let mut c = Command::new(clients().join("bin/python"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", cached.join("home"))
        .env("HF_HOME", cached.join("hf-home"))
        .env("HF_HUB_OFFLINE", "1")
        .arg("-c")
        .arg(OFFLINE)
        .arg(hf_canary::MODEL)
        .arg(&commit.sha)
        .arg(cached.join("out/model"));
    let o = c.output().expect("run python");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "gpt2 8",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        canary.requests().len(),
        mark,
        "the mirror reached the canary"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
