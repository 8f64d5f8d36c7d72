//! OpenPGP interoperability with the real GnuPG tools apt relies on: gpgv
//! must accept what `OpenPgpKey` signs (and refuse it once a byte changes),
//! and `Keyring` must verify what gpg signs. Every gpg call uses a fresh
//! temporary GNUPGHOME, never the user's; the agent it starts is stopped
//! when the test ends. Skipped, with a printed reason, only when gpg or
//! gpgv is not installed.
#![cfg(unix)]

use egress_signing::openpgp::{Keyring, OpenPgpError, OpenPgpKey};
use egress_signing::SigningKey;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

const CREATED: u32 = 1_700_000_000;
const SIGNED_AT: u32 = 1_700_000_600;

/// A Release-like text with the cases the cleartext framework must carry:
/// lines starting with `-` (dash-escaped), trailing spaces and tabs (not
/// signed), an empty line and a line starting with "From ".
const RELEASE: &str = "Origin: Egress Lab\nLabel: lab\nSuite: stable\nCodename: bookworm\n\
Date: Tue, 14 Nov 2023 22:13:20 UTC\nSHA256:\n 0123 17 main/binary-amd64/Packages\n\
-----BEGIN PGP SIGNATURE-----\n- already dashed\ntrailing spaces   \ntrailing tab\t\n\nFrom here\n";

/// A temporary directory for one test, with a GNUPGHOME inside; removing
/// it also stops the gpg-agent gpg started for that home.
struct Gpg {
    dir: PathBuf,
}

impl Gpg {
    fn new(name: &str) -> Option<Self> {
        for tool in ["gpg", "gpgv"] {
            let found = Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !found {
                println!(
                    "SKIPPED: `{tool}` is not installed; the OpenPGP interop tests need GnuPG"
                );
                return None;
            }
        }
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "egpg-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(dir.join("home")).expect("create temp dir");
        let mut perms = fs::metadata(dir.join("home")).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o700);
        fs::set_permissions(dir.join("home"), perms).expect("chmod");
        Some(Self { dir })
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    fn run(&self, tool: &str, args: &[&str]) -> Output {
        let home = self.home();
        Command::new(tool)
            .arg("--homedir")
            .arg(&home)
            .args(args)
            .env("GNUPGHOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"))
    }

    fn gpg(&self, args: &[&str]) -> Output {
        let mut all = vec![
            "--batch",
            "--no-tty",
            "--pinentry-mode",
            "loopback",
            "--passphrase",
            "",
        ];
        all.extend_from_slice(args);
        let out = self.run("gpg", &all);
        assert!(
            out.status.success(),
            "gpg {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn gpgv(&self, keyring: &Path, files: &[&Path]) -> Output {
        let mut args = vec![
            "--status-fd".to_owned(),
            "1".to_owned(),
            "--keyring".to_owned(),
            keyring.display().to_string(),
        ];
        args.extend(files.iter().map(|f| f.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run("gpgv", &args)
    }

    /// Fingerprints gpg lists for `key` (`fpr` records: primary, subkeys).
    fn fingerprints(&self, key: &str) -> Vec<String> {
        let out = self.gpg(&["--with-colons", "--fingerprint", "--fingerprint", key]);
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix("fpr:"))
            .filter_map(|l| l.split(':').nth(8).map(str::to_owned))
            .collect()
    }
}

impl Drop for Gpg {
    fn drop(&mut self) {
        let _ = Command::new("gpgconf")
            .arg("--homedir")
            .arg(self.home())
            .args(["--kill", "gpg-agent"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn lab_key() -> OpenPgpKey {
    let ssh = SigningKey::from_seed([42; 32], "lab@egress");
    OpenPgpKey::from_signing_key(&ssh, "Egress Lab Archive <lab@example.invalid>", CREATED)
}

fn flip_in_text(signed: &str, needle: &str) -> String {
    assert!(signed.contains(needle), "{needle} not in the signed text");
    signed.replacen(needle, &needle.replace('b', "c"), 1)
}

#[test]
fn gpgv_accepts_our_inrelease_and_refuses_a_changed_byte() {
    let Some(g) = Gpg::new("clear") else { return };
    let key = lab_key();
    let keyring = g.path("lab.gpg");
    fs::write(&keyring, key.public_keyring()).unwrap();
    let inrelease = key.sign_cleartext(RELEASE, SIGNED_AT);
    fs::write(g.path("InRelease"), &inrelease).unwrap();
    let out = g.gpgv(&keyring, &[&g.path("InRelease")]);
    let status = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "gpgv refused our InRelease: {status}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        status.contains(&format!("VALIDSIG {}", key.fingerprint())),
        "gpgv did not report our key: {status}"
    );

    // gpg's own reading of the text must be ours: decrypt prints the text.
    let text = g.gpg(&[
        "--keyring",
        &keyring.display().to_string(),
        "--no-default-keyring",
        "--decrypt",
        &g.path("InRelease").display().to_string(),
    ]);
    let ours = Keyring::parse(&key.public_keyring())
        .unwrap()
        .verify_cleartext(inrelease.as_bytes())
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&text.stdout)
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>(),
        String::from_utf8_lossy(&ours.text)
            .lines()
            .collect::<Vec<_>>()
    );
    assert_eq!(ours.signer, key.fingerprint());
    assert_eq!(ours.created, SIGNED_AT);

    let tampered = flip_in_text(&inrelease, "Label: lab");
    fs::write(g.path("InRelease.bad"), &tampered).unwrap();
    let out = g.gpgv(&keyring, &[&g.path("InRelease.bad")]);
    assert!(!out.status.success(), "gpgv accepted a changed InRelease");
    assert!(String::from_utf8_lossy(&out.stdout).contains("BADSIG"));
    let err = Keyring::parse(&key.public_keyring())
        .unwrap()
        .verify_cleartext(tampered.as_bytes())
        .unwrap_err();
    assert!(matches!(err, OpenPgpError::BadSignature { .. }), "{err}");
}

#[test]
fn gpgv_accepts_our_release_gpg_and_refuses_a_changed_byte() {
    let Some(g) = Gpg::new("detached") else {
        return;
    };
    let key = lab_key();
    for (name, keyring_bytes) in [
        ("lab.gpg", key.public_keyring()),
        ("lab.asc", key.public_keyring_armored().into_bytes()),
    ] {
        let keyring = g.path(name);
        fs::write(&keyring, &keyring_bytes).unwrap();
        fs::write(g.path("Release"), RELEASE).unwrap();
        fs::write(
            g.path("Release.gpg"),
            key.sign_detached(RELEASE.as_bytes(), SIGNED_AT),
        )
        .unwrap();
        if name.ends_with(".gpg") {
            let out = g.gpgv(&keyring, &[&g.path("Release.gpg"), &g.path("Release")]);
            assert!(
                out.status.success(),
                "gpgv refused our Release.gpg: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            let mut bad = RELEASE.as_bytes().to_vec();
            bad[3] ^= 1;
            fs::write(g.path("Release"), &bad).unwrap();
            let out = g.gpgv(&keyring, &[&g.path("Release.gpg"), &g.path("Release")]);
            assert!(!out.status.success(), "gpgv accepted a changed Release");
        }
        let ours = Keyring::parse(&keyring_bytes).unwrap();
        let v = ours
            .verify_detached(
                RELEASE.as_bytes(),
                key.sign_detached(RELEASE.as_bytes(), SIGNED_AT).as_bytes(),
            )
            .unwrap();
        assert_eq!(
            (v.signer, v.created, v.digest),
            (key.fingerprint(), SIGNED_AT, "SHA512")
        );
    }
}

#[test]
fn gpg_imports_our_public_keyring_with_our_fingerprint() {
    let Some(g) = Gpg::new("import") else { return };
    let key = lab_key();
    let want = key.fingerprint().to_string();
    assert_eq!(want.len(), 40);
    assert!(want
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)));
    fs::write(g.path("lab.gpg"), key.public_keyring()).unwrap();
    fs::write(g.path("lab.asc"), key.public_keyring_armored()).unwrap();
    g.gpg(&["--import", &g.path("lab.gpg").display().to_string()]);
    assert_eq!(g.fingerprints(&want), vec![want.clone()]);
    // The armored form imports as the same key, unchanged.
    let out = g.gpg(&[
        "--status-fd",
        "1",
        "--import",
        &g.path("lab.asc").display().to_string(),
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("IMPORT_OK 0 {want}")));
    // gpg's export of it is what we wrote.
    let exported = g.gpg(&["--export", &want]);
    assert_eq!(exported.stdout, key.public_keyring());
    // Deterministic: the same seed and time give the same key.
    assert_eq!(lab_key().public_keyring(), key.public_keyring());
}

/// gpg-made keys and signatures, as a distribution signs: RSA and Ed25519
/// primary keys, then a signing subkey, digests SHA256 and SHA512.
#[test]
fn keyring_verifies_what_gpg_signs() {
    let Some(g) = Gpg::new("gpgmade") else { return };
    fs::write(g.path("Release"), RELEASE).unwrap();
    let release = g.path("Release").display().to_string();
    for (algo, uid) in [
        ("ed25519", "Ed Test <ed@example.invalid>"),
        ("rsa3072", "Rsa Test <rsa@example.invalid>"),
    ] {
        g.gpg(&["--quick-gen-key", uid, algo, "sign", "never"]);
        let primary = g.fingerprints(uid)[0].clone();
        let check = |signer: &str, tag: &str| {
            let keyring_bytes = g.gpg(&["--export", &primary]).stdout;
            let keyring = Keyring::parse(&keyring_bytes).unwrap();
            assert_eq!(
                keyring
                    .fingerprints()
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>(),
                vec![primary.clone()]
            );
            let armored =
                Keyring::parse(&g.gpg(&["--export", "--armor", &primary]).stdout).unwrap();
            assert_eq!(armored.fingerprints(), keyring.fingerprints());
            for digest in ["SHA256", "SHA512"] {
                let out = g.path(&format!("{algo}-{tag}-{digest}"));
                let out_s = out.display().to_string();
                g.gpg(&[
                    "--yes",
                    "-u",
                    &primary,
                    "--digest-algo",
                    digest,
                    "-o",
                    &out_s,
                    "--clearsign",
                    &release,
                ]);
                let v = keyring
                    .verify_cleartext(&fs::read(&out).unwrap())
                    .unwrap_or_else(|e| panic!("{algo} {tag} {digest} clearsign: {e}"));
                assert_eq!(v.signer.to_string(), signer);
                assert_eq!(v.primary.to_string(), primary);
                let gpg_text = g.gpg(&["--decrypt", &out_s]).stdout;
                assert_eq!(
                    String::from_utf8_lossy(&v.text).lines().collect::<Vec<_>>(),
                    String::from_utf8_lossy(&gpg_text)
                        .lines()
                        .map(str::trim_end)
                        .collect::<Vec<_>>()
                );
                let mut bad = fs::read(&out).unwrap();
                let at = bad.windows(5).position(|w| w == b"Suite").unwrap();
                bad[at] = b's';
                assert!(matches!(
                    keyring.verify_cleartext(&bad),
                    Err(OpenPgpError::BadSignature { .. })
                ));

                for (mode, extra) in [
                    ("bin", vec![]),
                    ("asc", vec!["--armor"]),
                    ("text", vec!["--armor", "--textmode"]),
                ] {
                    let sig = g.path(&format!("{algo}-{tag}-{digest}-{mode}.sig"));
                    let sig_s = sig.display().to_string();
                    let mut args = vec![
                        "--yes",
                        "-u",
                        primary.as_str(),
                        "--digest-algo",
                        digest,
                        "-o",
                        &sig_s,
                    ];
                    args.extend(extra);
                    args.extend(["--detach-sign", &release]);
                    g.gpg(&args);
                    let v = keyring
                        .verify_detached(RELEASE.as_bytes(), &fs::read(&sig).unwrap())
                        .unwrap_or_else(|e| panic!("{algo} {tag} {digest} {mode}: {e}"));
                    assert_eq!(
                        (v.signer.to_string(), v.digest),
                        (signer.to_owned(), digest)
                    );
                    let mut bad = RELEASE.as_bytes().to_vec();
                    bad[0] ^= 0x20;
                    assert!(matches!(
                        keyring.verify_detached(&bad, &fs::read(&sig).unwrap()),
                        Err(OpenPgpError::BadSignature { .. })
                    ));
                }
            }
        };
        check(&primary, "primary");
        // A signing subkey: gpg now signs with it, and only its binding
        // signature makes it count.
        g.gpg(&["--quick-add-key", &primary, algo, "sign", "never"]);
        let fprs = g.fingerprints(&primary);
        let subkey = fprs.last().unwrap().clone();
        assert_ne!(subkey, primary);
        check(&subkey, "subkey");
    }

    // SHA1 is refused, as apt refuses it; a key not in the keyring is named.
    let rsa = g.fingerprints("rsa@example.invalid")[0].clone();
    let ed = g.fingerprints("ed@example.invalid")[0].clone();
    let out = g.path("sha1.asc");
    g.gpg(&[
        "--yes",
        "-u",
        &rsa,
        "--digest-algo",
        "SHA1",
        "-o",
        &out.display().to_string(),
        "--clearsign",
        &release,
    ]);
    let rsa_keyring = Keyring::parse(&g.gpg(&["--export", &rsa]).stdout).unwrap();
    let err = rsa_keyring
        .verify_cleartext(&fs::read(&out).unwrap())
        .unwrap_err();
    assert!(
        matches!(
            err,
            OpenPgpError::WeakDigest {
                algorithm: "SHA1",
                ..
            }
        ),
        "{err}"
    );
    let ed_keyring = Keyring::parse(&g.gpg(&["--export", &ed]).stdout).unwrap();
    let sig = g.path("by-rsa.sig");
    g.gpg(&[
        "--yes",
        "-u",
        &rsa,
        "--digest-algo",
        "SHA512",
        "-o",
        &sig.display().to_string(),
        "--detach-sign",
        &release,
    ]);
    let err = ed_keyring
        .verify_detached(RELEASE.as_bytes(), &fs::read(&sig).unwrap())
        .unwrap_err();
    assert!(matches!(err, OpenPgpError::UnknownKey { .. }), "{err}");

    // Both keys in one keyring (one file, concatenated exports) verify.
    let both = [
        g.gpg(&["--export", &rsa]).stdout,
        g.gpg(&["--export", &ed]).stdout,
    ]
    .concat();
    let both = Keyring::parse(&both).unwrap();
    assert_eq!(both.fingerprints().len(), 2);
    both.verify_detached(RELEASE.as_bytes(), &fs::read(&sig).unwrap())
        .unwrap();
}

/// Expiry as gpg writes it: a key that expires in a day, and a signature
/// that does, are good now and refused, each with its own error, later.
#[test]
fn expired_key_and_expired_signature_are_distinct_errors() {
    let Some(g) = Gpg::new("expiry") else { return };
    fs::write(g.path("Release"), RELEASE).unwrap();
    let release = g.path("Release").display().to_string();
    g.gpg(&[
        "--quick-gen-key",
        "Short <short@example.invalid>",
        "ed25519",
        "sign",
        "1d",
    ]);
    let fpr = g.fingerprints("short@example.invalid")[0].clone();
    let keyring = Keyring::parse(&g.gpg(&["--export", &fpr]).stdout).unwrap();
    let sig = g.path("short.sig");
    g.gpg(&[
        "--yes",
        "-u",
        &fpr,
        "-o",
        &sig.display().to_string(),
        "--detach-sign",
        &release,
    ]);
    let sig = fs::read(&sig).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    keyring
        .verify_detached_at(RELEASE.as_bytes(), &sig, now + 60)
        .unwrap();
    let err = keyring
        .verify_detached_at(RELEASE.as_bytes(), &sig, now + 3 * 86_400)
        .unwrap_err();
    assert!(matches!(err, OpenPgpError::KeyExpired { .. }), "{err}");

    g.gpg(&[
        "--quick-gen-key",
        "Long <long@example.invalid>",
        "ed25519",
        "sign",
        "never",
    ]);
    let fpr = g.fingerprints("long@example.invalid")[0].clone();
    let keyring = Keyring::parse(&g.gpg(&["--export", &fpr]).stdout).unwrap();
    let sig = g.path("expiring.sig");
    g.gpg(&[
        "--yes",
        "-u",
        &fpr,
        "--default-sig-expire",
        "1d",
        "-o",
        &sig.display().to_string(),
        "--detach-sign",
        &release,
    ]);
    let sig = fs::read(&sig).unwrap();
    keyring
        .verify_detached_at(RELEASE.as_bytes(), &sig, now + 60)
        .unwrap();
    let err = keyring
        .verify_detached_at(RELEASE.as_bytes(), &sig, now + 3 * 86_400)
        .unwrap_err();
    assert!(
        matches!(err, OpenPgpError::SignatureExpired { .. }),
        "{err}"
    );
}
