//! The apt framework with a stand-in peer: a static copy of the apt
//! canary's archive (fetched by a few lines of Python in an `init` step,
//! served by python's http.server), started from a `protocol = apt` config
//! in front of a fresh apt canary and measured by the apt suite, as the
//! testbed measures apt-cacher-ng. The placeholders an apt peer gets are
//! filled, and the keyring the suite verifies `Release` against is the
//! canary's unless the config names another.

use egress_model::Status;
use egress_suite::Report;
use egress_testbed::suite::{self, Variant};
use egress_testbed::{PeerConfig, Protocol};
use std::path::{Path, PathBuf};

/// Copies the canary's signed dist (its Release files, both Packages, each
/// also by hash) and every .deb its Packages lists into OUT; fails unless
/// the placeholders it is given agree.
const MIRROR_PY: &str = r#"
import hashlib, os, sys, urllib.request
base, dist, comp, arch, keyring, host, port, out = sys.argv[1:9]
def save(rel, data):
    p = os.path.join(out, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, 'wb').write(data)
def get(rel):
    data = urllib.request.urlopen(base + rel).read()
    save(rel, data)
    return data
for f in ['InRelease', 'Release', 'Release.gpg']:
    get('dists/%s/%s' % (dist, f))
idx = 'dists/%s/%s/binary-%s/' % (dist, comp, arch)
for f in ['Packages', 'Packages.gz']:
    d = get(idx + f)
    save(idx + 'by-hash/SHA256/' + hashlib.sha256(d).hexdigest(), d)
for line in open(os.path.join(out, idx, 'Packages')).read().splitlines():
    if line.startswith('Filename: '):
        get(line.split(' ', 1)[1])
assert len(open(keyring, 'rb').read()) > 0, keyring
assert base == 'http://%s:%s/debian/' % (host, port), (base, host, port)
assert (dist, comp, arch) == ('canary', 'main', 'amd64'), (dist, comp, arch)
"#;

fn python() -> PathBuf {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .expect("python3")
}

/// A peers directory holding the stand-in, "installed" as setup-peers
/// leaves a Debian-package peer.
fn peers_dir(label: &str) -> PathBuf {
    let peers =
        std::env::temp_dir().join(format!("egress-testbed-apt-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&peers);
    std::fs::create_dir_all(peers.join("static")).expect("mkdir");
    std::fs::write(peers.join("static/.installed"), "stand-in\n").expect("write");
    std::fs::write(peers.join("mirror.py"), MIRROR_PY).expect("write");
    peers
}

fn config(peers: &Path, keyring: Option<&str>) -> PeerConfig {
    config_with(peers, keyring, "")
}

/// [`config`] with more lines.
fn config_with(peers: &Path, keyring: Option<&str>, more: &str) -> PeerConfig {
    let py = python();
    let py = py.display();
    let mut text = format!(
        "protocol = apt\nvenv = static\nfile = mirror.py {{workdir}}/mirror.py\n\
         init = {py} {{workdir}}/mirror.py {{canary_index}} {{dist}} {{component}} {{arch}} \
         {{canary_keyring}} {{canary_host}} {{canary_port}} {{workdir}}/www/debian\n\
         run = {py} -m http.server --bind 127.0.0.1 --directory {{workdir}}/www {{port}}\n\
         index = /debian/\n"
    );
    if let Some(k) = keyring {
        text.push_str(&format!("keyring = {k}\n"));
    }
    text.push_str(&more.replace("{py}", &py.to_string()));
    PeerConfig::parse("static-apt", &text)
        .map(|c| PeerConfig {
            dir: peers.to_path_buf(),
            ..c
        })
        .expect("parses")
}

fn status(r: &Report, id: &str) -> Status {
    r.probe(id)
        .map(|p| p.status)
        .or_else(|| r.predicate(id).map(|p| p.status))
        .unwrap_or_else(|| panic!("no row {id}"))
}

#[test]
fn a_static_apt_peer_is_measured_by_the_apt_suite() {
    let peers = peers_dir("ok");
    let cfg = config(&peers, None);
    assert_eq!(cfg.protocol, Protocol::Apt);
    let v = Variant::Peer(Box::new(cfg));
    assert_eq!(v.protocol(), Protocol::Apt);
    let (report, _) = suite::run_variant(&v, &peers).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.plan.protocol(), "apt");
    // It served the signed dist, its index and its .debs, signed by the
    // canary's key, which is what the suite verified against.
    for row in ["C.release", "C.packages", "C.deb", "P1.release-signed"] {
        assert_eq!(status(&report, row), Status::Pass, "{row}");
    }
    // A copy of the whole upstream serves the upstream-only package.
    assert_eq!(status(&report, "P2.absent-pool"), Status::Fail);
    // The apt matrix is a matrix of its own.
    let text = suite::matrix_text(std::slice::from_ref(&report));
    assert!(text.contains("static-apt"), "{text}");
    let _ = std::fs::remove_dir_all(&peers);
}

#[test]
fn the_keyring_a_config_names_is_the_one_release_must_verify_against() {
    let peers = peers_dir("other-key");
    // A keyring that is not the canary's: a real keyring, of another key.
    let other = egress_references::apt::builtin::lab_keyring();
    std::fs::write(peers.join("other.gpg"), other).expect("write");
    let path = peers.join("other.gpg");
    let cfg = config(&peers, Some(&path.display().to_string()));
    let (report, _) =
        suite::run_variant(&Variant::Peer(Box::new(cfg)), &peers).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status(&report, "P1.release-signed"), Status::Fail);
    let _ = std::fs::remove_dir_all(&peers);
}

#[test]
fn a_missing_keyring_file_is_a_one_line_error() {
    let peers = peers_dir("no-key");
    let cfg = config(&peers, Some("{workdir}/nothing.gpg"));
    let e = suite::run_variant(&Variant::Peer(Box::new(cfg)), &peers).expect_err("an error");
    let msg = e.to_string();
    assert!(
        msg.contains("cannot read its keyring") && msg.contains("nothing.gpg"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
    let _ = std::fs::remove_dir_all(&peers);
}

/// The variants come protocol by protocol, in the suite's order, each
/// block led by that protocol's reference.
#[test]
fn variants_come_protocol_by_protocol_each_led_by_its_reference() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed/peers");
    let all = suite::variants(&dir).expect("parses");
    let names: Vec<&str> = all.iter().map(Variant::name).collect();
    let order: Vec<Protocol> = all.iter().map(Variant::protocol).collect();
    let mut seen: Vec<Protocol> = Vec::new();
    for (i, v) in all.iter().enumerate() {
        let p = v.protocol();
        if seen.last() != Some(&p) {
            assert!(!seen.contains(&p), "{p} comes twice: {names:?}");
            assert_eq!(v.name(), suite::reference_name(p), "{names:?}");
            seen.push(p);
        }
        assert_eq!(order.get(i), Some(&p));
    }
    assert_eq!(seen, Protocol::ALL, "{names:?}");
    for p in Protocol::ALL {
        assert!(Variant::is_reference(suite::reference_name(*p)));
    }
    assert!(!Variant::is_reference("olah"));
}

/// `warm-then-run`: everything apt fetches for the lab's packages is
/// fetched through the first server (a .deb must be the canary's bytes),
/// then the second serves.
#[test]
fn warm_then_run_fetches_what_apt_fetches_and_checks_the_debs() {
    let peers = peers_dir("warm");
    let serve =
        "warm-then-run = {py} -m http.server --bind 127.0.0.1 --directory {workdir}/www {port}\n";
    let cfg = config_with(&peers, None, serve);
    let (report, _) =
        suite::run_variant(&Variant::Peer(Box::new(cfg)), &peers).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status(&report, "C.deb"), Status::Pass);
    // The same, with the lab's .deb replaced by other bytes in the copy:
    // the warm-up refuses it, naming the file.
    let tamper = format!(
        "init = {} -c open('{{workdir}}/www/debian/pool/main/e/ec-present/ec-present_1.0_amd64.deb','ab').write(b'x')\n{serve}",
        python().display()
    );
    let cfg = config_with(&peers, None, &tamper);
    let e = suite::run_variant(&Variant::Peer(Box::new(cfg)), &peers).expect_err("refused");
    let msg = e.to_string();
    assert!(
        msg.contains("warming") && msg.contains("ec-present_1.0_amd64.deb"),
        "{msg}"
    );
    let _ = std::fs::remove_dir_all(&peers);
}
