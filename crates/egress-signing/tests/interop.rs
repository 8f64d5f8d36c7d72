//! Interoperability with the real OpenSSH `ssh-keygen` (set `SSH_KEYGEN` to
//! use another binary). These tests fail, rather than skip, when ssh-keygen
//! is missing: interop is the point of the crate.
#![cfg(unix)]

use egress_signing::{verify, AllowedSigners, PublicKey, SigningKey, SNAPSHOT_NAMESPACE};
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const MESSAGE: &[u8] = b"{\"snapshot\":\"example\",\"artifacts\":[]}\n";

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "egress-signing-{name}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir(&dir).expect("create temp dir");
        Self(dir)
    }

    fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn ssh_keygen(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let program = std::env::var("SSH_KEYGEN").unwrap_or_else(|_| "ssh-keygen".to_owned());
    let mut child = Command::new(&program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run `{program}` ({e}): these interop tests need OpenSSH's ssh-keygen; \
                 install openssh-client or set SSH_KEYGEN to its path"
            )
        });
    if let Some(data) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(data)
            .expect("write stdin");
    }
    child.wait_with_output().expect("wait for ssh-keygen")
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}): stdout={} stderr={}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn write_private(path: &Path, text: &str) {
    fs::write(path, text).expect("write key");
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).expect("chmod 600");
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[test]
fn ssh_keygen_verifies_our_signature() {
    let dir = TempDir::new("verify");
    let key = SigningKey::from_seed([42; 32], "mirror@egress");
    let (keyfile, allowed, msg, sig) = (
        dir.path("key"),
        dir.path("allowed_signers"),
        dir.path("message"),
        dir.path("message.sig"),
    );
    write_private(&keyfile, &key.to_openssh());
    fs::write(&msg, MESSAGE).expect("message");
    fs::write(&sig, key.sign(SNAPSHOT_NAMESPACE, MESSAGE)).expect("sig");
    let lines = format!(
        "# test\n{}\n{}\n",
        AllowedSigners::line_for("other", &SigningKey::from_seed([1; 32], "").public()),
        AllowedSigners::line_for_namespace("mirror", &key.public(), SNAPSHOT_NAMESPACE)
    );
    fs::write(&allowed, &lines).expect("allowed");

    let verify_with = |namespace: &str, message: &[u8]| {
        ssh_keygen(
            &[
                "-Y",
                "verify",
                "-f",
                s(&allowed),
                "-I",
                "mirror",
                "-n",
                namespace,
                "-s",
                s(&sig),
            ],
            Some(message),
        )
    };
    let stdout = ok(
        verify_with(SNAPSHOT_NAMESPACE, MESSAGE),
        "ssh-keygen -Y verify",
    );
    assert!(
        stdout.contains("Good \"egress-mirror-snapshot@egress-conformance\" signature for mirror")
    );
    // Sanity: ssh-keygen is really checking (tampered message, wrong namespace).
    assert!(!verify_with(SNAPSHOT_NAMESPACE, b"tampered")
        .status
        .success());
    assert!(!verify_with("file", MESSAGE).status.success());

    // Our signature is byte-identical to the one ssh-keygen makes with our key.
    fs::remove_file(&sig).expect("remove our sig");
    ok(
        ssh_keygen(
            &[
                "-Y",
                "sign",
                "-f",
                s(&keyfile),
                "-n",
                SNAPSHOT_NAMESPACE,
                s(&msg),
            ],
            None,
        ),
        "ssh-keygen -Y sign",
    );
    let theirs = fs::read_to_string(&sig).expect("read sig");
    assert_eq!(theirs, key.sign(SNAPSHOT_NAMESPACE, MESSAGE));

    // And ssh-keygen -Y find-principals agrees with our principal lookup.
    let found = ok(
        ssh_keygen(
            &["-Y", "find-principals", "-f", s(&allowed), "-s", s(&sig)],
            None,
        ),
        "ssh-keygen -Y find-principals",
    );
    let ours = verify(
        &theirs,
        SNAPSHOT_NAMESPACE,
        MESSAGE,
        &AllowedSigners::parse(&lines).expect("parse"),
    )
    .expect("our verify");
    assert_eq!(found.trim(), ours.principal);
}

#[test]
fn we_load_ssh_keygen_keys_and_verify_its_signatures() {
    let dir = TempDir::new("load");
    let (keyfile, msg) = (dir.path("k"), dir.path("message"));
    ok(
        ssh_keygen(
            &[
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                "ci@example",
                "-f",
                s(&keyfile),
            ],
            None,
        ),
        "ssh-keygen -t ed25519",
    );
    let private_text = fs::read_to_string(&keyfile).expect("read key");
    let key = SigningKey::from_openssh(&private_text).expect("load ssh-keygen key");
    assert_eq!(key.comment(), "ci@example");
    // Byte-for-byte: our writer reproduces ssh-keygen's file.
    assert_eq!(key.to_openssh(), private_text);

    let pub_line = fs::read_to_string(dir.path("k.pub")).expect("read pub");
    let public = PublicKey::parse_openssh(&pub_line).expect("parse .pub");
    assert_eq!(public, key.public());
    assert_eq!(key.public().to_openssh("ci@example"), pub_line.trim_end());

    let fp = ok(
        ssh_keygen(&["-l", "-f", s(&dir.path("k.pub"))], None),
        "ssh-keygen -l",
    );
    assert_eq!(
        fp.split_whitespace().nth(1),
        Some(public.fingerprint().as_str())
    );

    fs::write(&msg, MESSAGE).expect("message");
    ok(
        ssh_keygen(
            &[
                "-Y",
                "sign",
                "-f",
                s(&keyfile),
                "-n",
                SNAPSHOT_NAMESPACE,
                s(&msg),
            ],
            None,
        ),
        "ssh-keygen -Y sign",
    );
    let sig = fs::read_to_string(dir.path("message.sig")).expect("read sig");
    let allowed = AllowedSigners::parse(&AllowedSigners::line_for("ci", &public)).expect("allowed");
    let verified = verify(&sig, SNAPSHOT_NAMESPACE, MESSAGE, &allowed).expect("verify");
    assert_eq!(verified.principal, "ci");
    assert_eq!(verified.fingerprint, public.fingerprint());
    assert!(verify(&sig, SNAPSHOT_NAMESPACE, b"tampered", &allowed).is_err());
    assert!(verify(&sig, "file", MESSAGE, &allowed).is_err());
}

#[test]
fn ssh_keygen_derives_our_public_key() {
    let dir = TempDir::new("pub");
    let key = SigningKey::from_seed([7; 32], "derived@egress");
    let keyfile = dir.path("key");
    write_private(&keyfile, &key.to_openssh());
    let printed = ok(
        ssh_keygen(&["-y", "-f", s(&keyfile)], None),
        "ssh-keygen -y",
    );
    let printed = printed.trim_end();
    assert_eq!(
        PublicKey::parse_openssh(printed).expect("parse"),
        key.public()
    );
    // OpenSSH 8.x and later print the comment too; older ones do not.
    let ours = key.public().to_openssh("derived@egress");
    assert!(
        ours.starts_with(printed),
        "ssh-keygen printed {printed:?}, we wrote {ours:?}"
    );
}

#[test]
fn ssh_keygen_rejects_our_signature_when_not_allowed() {
    let dir = TempDir::new("deny");
    let key = SigningKey::from_seed([9; 32], "");
    let other = SigningKey::from_seed([10; 32], "");
    let (allowed, sig) = (dir.path("allowed_signers"), dir.path("sig"));
    fs::write(
        &allowed,
        AllowedSigners::line_for("mirror", &other.public()) + "\n",
    )
    .expect("w");
    fs::write(&sig, key.sign(SNAPSHOT_NAMESPACE, MESSAGE)).expect("w");
    let out = ssh_keygen(
        &[
            "-Y",
            "verify",
            "-f",
            s(&allowed),
            "-I",
            "mirror",
            "-n",
            SNAPSHOT_NAMESPACE,
            "-s",
            s(&sig),
        ],
        Some(MESSAGE),
    );
    assert!(!out.status.success());
}
