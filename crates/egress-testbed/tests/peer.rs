//! A peer's life with a stand-in server (python's http.server) in a stand-in
//! venv: seeded, started on loopback with nothing of this machine's
//! environment, ready, stopped by its process group, its files removed.

use egress_model::Url;
use egress_testbed::{start, Context, PeerConfig};
use std::path::{Path, PathBuf};

fn python() -> PathBuf {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("python3")
}

fn get(url: &Url, path: &str) -> (Option<u16>, Vec<u8>) {
    let c = egress_transcript::Client::new(url.clone(), Default::default(), None).expect("client");
    let ex = c.get("test", path, None);
    let body = ex
        .response
        .as_ref()
        .and_then(|r| r.full_body())
        .unwrap_or_default()
        .to_vec();
    (ex.status(), body)
}

#[test]
fn a_peer_is_seeded_started_and_stopped_by_its_process_group() {
    let peers =
        std::env::temp_dir().join(format!("egress-testbed-peer-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&peers);
    std::fs::create_dir_all(peers.join("py/bin")).expect("mkdir");
    std::os::unix::fs::symlink(python(), peers.join("py/bin/python")).expect("symlink");
    std::fs::write(
        peers.join("py/dump_env.py"),
        "import os\nopen('files/env.txt', 'w').write(' '.join(sorted(os.environ)) + '=' + os.environ['UPSTREAM'])\n",
    )
    .expect("write");
    std::fs::write(peers.join("own.conf.in"), "upstream = {canary_index}\n").expect("write");
    let cfg = PeerConfig::parse(
        "stand-in",
        "venv = py\nseed = {workdir}/files\nenv = UPSTREAM={canary_index}\n\
         file = own.conf.in {workdir}/files/own.conf\n\
         init = {venv}/bin/python {venv}/dump_env.py\n\
         run = {venv}/bin/python -m http.server --bind 127.0.0.1 --directory {workdir}/files {port}\n\
         index = /\n",
    )
    .map(|c| PeerConfig { dir: peers.clone(), ..c })
    .expect("parses");
    let packages = vec![(
        "a-1.0-py3-none-any.whl".to_string(),
        b"wheel bytes".to_vec(),
    )];
    let ctx = Context {
        peers_dir: &peers,
        canary_index: "http://127.0.0.1:9/simple/",
        canary_url: "http://127.0.0.1:9",
        packages: &packages,
        projects: &[],
        placeholders: &[],
        keyring: None,
    };
    let peer = start(&cfg, &ctx).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(peer.index_url.host(), "127.0.0.1");
    assert_eq!(
        get(&peer.index_url, "/a-1.0-py3-none-any.whl"),
        (Some(200), b"wheel bytes".to_vec())
    );
    // Only what the testbed sets reaches the peer; placeholders are filled.
    let (_, env) = get(&peer.index_url, "/env.txt");
    assert_eq!(
        String::from_utf8_lossy(&env),
        "HOME LC_ALL PATH PYTHONUNBUFFERED TMPDIR UPSTREAM=http://127.0.0.1:9/simple/"
    );
    assert_eq!(
        get(&peer.index_url, "/own.conf"),
        (
            Some(200),
            b"upstream = http://127.0.0.1:9/simple/\n".to_vec()
        )
    );
    let (pid, workdir) = (peer.pid(), peer.workdir().to_path_buf());
    peer.stop();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "pid {pid} still there"
    );
    assert!(!workdir.exists(), "{}", workdir.display());
    let _ = std::fs::remove_dir_all(&peers);
}
