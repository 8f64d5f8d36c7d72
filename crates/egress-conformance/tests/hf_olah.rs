//! olah (PyPI `olah`, pinned in testbed/requirements/olah.txt, installed by
//! scripts/setup-peers into .tools/peers/olah), the self-hosted Hub mirror
//! labs deploy, in front of the Hub canary, with the real huggingface_hub
//! as its client: the canary speaks the Hub's protocol well enough for a
//! real peer to mirror it, and what olah does with a repository the lab
//! never named is seen at the canary (a pull-through cache: it fetches it).

mod common;

use common::{clients, free_port, tmpdir};
use egress_model::HfRepoType;
use egress_references::hf::canary::{self as hf_canary, HfCanary};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn peers_dir() -> PathBuf {
    std::env::var_os("EGRESS_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::workspace().join(".tools/peers"))
}

struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn olah_mirrors_the_canary_for_the_real_client() {
    let olah = peers_dir().join("olah/bin/olah-cli");
    assert!(
        olah.is_file(),
        "{} is not installed: run scripts/setup-peers olah (scripts/test does)",
        olah.display()
    );
    let dir = tmpdir("hf-olah");
    let canary = HfCanary::start(hf_canary::fixtures()).expect("canary");
    let netloc = |u: &str| u.trim_start_matches("http://").to_string();
    let port = free_port();
    let proc = Command::new(&olah)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &dir)
        .current_dir(&dir)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args([
            "--hf-scheme",
            "http",
            "--hf-netloc",
            &netloc(canary.endpoint()),
        ])
        .args(["--hf-lfs-netloc", &netloc(canary.cdn_origin())])
        .args([
            "--mirror-scheme",
            "http",
            "--mirror-netloc",
            &format!("127.0.0.1:{port}"),
        ])
        .args(["--mirror-lfs-netloc", &format!("127.0.0.1:{port}")])
        .args(["--repos-path", dir.join("repos").to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start olah");
    let _olah = Stop(proc);
    let endpoint = format!("http://127.0.0.1:{port}");
    for _ in 0..300 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let model = canary.repo(HfRepoType::Model, hf_canary::MODEL).unwrap();
    let commit = model.commit("main").unwrap().clone();
    let o = Command::new(clients().join("bin/python"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.join("home"))
        .env("HF_HOME", dir.join("hf-home"))
        .env("HF_ENDPOINT", &endpoint)
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .env("HF_HUB_DISABLE_XET", "1")
        .arg("-c")
        .arg("import sys; from huggingface_hub import snapshot_download; print(snapshot_download(repo_id=sys.argv[1], local_dir=sys.argv[2]))")
        .arg(hf_canary::MODEL)
        .arg(dir.join("out"))
        .output()
        .expect("python");
    assert!(
        o.status.success(),
        "{}{} canary saw: {:#?}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .unwrap_or_default(),
        canary
            .requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.target))
            .collect::<Vec<_>>()
    );
    for f in &commit.files {
        let got = std::fs::read(dir.join("out").join(&f.path)).unwrap();
        assert_eq!(got, f.bytes, "{}", f.path);
    }
    // A pull-through cache: what the client asked, olah asked the canary.
    let asked = canary.requests();
    assert!(
        asked.iter().any(|r| r.target.contains("/resolve/")),
        "{asked:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
