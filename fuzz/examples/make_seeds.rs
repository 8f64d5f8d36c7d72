//! Writes the generated part of the seed corpus (fuzz/corpus/<target>/) from
//! the project's own builders, so the seeds are real artifacts, pages and
//! signatures. Run from fuzz/: `cargo run --example make_seeds`.
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use egress_apt::{render_release, IndexEntry, IndexPath, ReleaseFields};
use egress_artifacts::{
    build_deb, build_npm_tarball, build_sdist, build_wheel, DebSpec, NpmPackageSpec, SdistSpec,
    WheelSpec,
};
use egress_model::Sha256Digest;
use egress_model::{ProjectName, Version};
use egress_signing::{AllowedSigners, SigningKey};
use egress_simple::{
    render_index_html, render_index_json, render_project_html, render_project_json, FileEntry,
    IndexPage, ProjectPage,
};

fn put(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).expect("create corpus dir");
    fs::write(dir.join(name), bytes).expect("write seed");
}

fn main() {
    let name = ProjectName::new("ec-present").expect("name");
    let version = Version::new("1.0.0").expect("version");
    let wheel = build_wheel(&WheelSpec {
        name: name.clone(),
        version: version.clone(),
        summary: "a seed".into(),
        description: "seed for fuzzing\n".into(),
        requires_python: Some(">=3.8".into()),
        files: vec![("ec_present/__init__.py".into(), b"X = 1\n".to_vec())],
    });
    put("wheel", "ec_present-1.0.0-py3-none-any.whl", &wheel.bytes);
    let sdist = build_sdist(&SdistSpec {
        name: name.clone(),
        version: version.clone(),
        summary: "a seed".into(),
        setup_py: "from setuptools import setup\nsetup()\n".into(),
        files: vec![("ec_present/__init__.py".into(), b"X = 1\n".to_vec())],
    });
    put("sdist", "ec_present-1.0.0.tar.gz", &sdist.bytes);
    let npm = build_npm_tarball(&NpmPackageSpec::new(
        "ec-present",
        "1.0.0",
        "a seed",
        "module.exports = 1;\n",
    ));
    put("npm_tarball", "ec-present-1.0.0.tgz", &npm.bytes);

    let mut hashes = BTreeMap::new();
    hashes.insert("sha256".to_string(), wheel.sha256.to_string());
    let page = ProjectPage {
        name: "ec-present".into(),
        files: vec![FileEntry {
            filename: wheel.filename.clone(),
            url: format!("../../files/{}", wheel.filename),
            hashes,
            requires_python: Some(">=3.8".into()),
            yanked: Some("bad build".into()),
            ..FileEntry::default()
        }],
        versions: vec!["1.0.0".into()],
        api_version: Some("1.1".into()),
    };
    let index = IndexPage {
        projects: vec!["ec-present".into(), "other".into()],
        api_version: Some("1.1".into()),
    };
    put(
        "simple_html",
        "project.html",
        render_project_html(&page).as_bytes(),
    );
    put(
        "simple_html",
        "index.html",
        render_index_html(&index).as_bytes(),
    );
    put(
        "simple_json",
        "project.json",
        render_project_json(&page).as_bytes(),
    );
    put(
        "simple_json",
        "index.json",
        render_index_json(&index).as_bytes(),
    );

    let key = SigningKey::from_seed([7; 32], "fuzz@example");
    let sig = key.sign("file", b"fuzz message\n");
    put("sshsig", "good.sig", sig.as_bytes());
    put(
        "sshsig",
        "wrong-namespace.sig",
        key.sign("other", b"fuzz message\n").as_bytes(),
    );

    // An instance attestation with its certificate by the same key.
    let instance = egress_signing::InstanceKey::from_seed([5; 32]);
    let snapshot = egress_model::Sha256Digest::of(b"fuzz manifest\n");
    let cert = egress_signing::Certificate::issue(&key, &instance.public(), snapshot).to_text();
    put("attestation", "certificate.txt", cert.as_bytes());
    let statement = egress_signing::Statement {
        instance_key: instance.public(),
        nonce: vec![0xab; 32],
        snapshot,
        binary: egress_model::Sha256Digest::of(b"fuzz binary\n"),
        confinement: "landlock ABI 6: outbound TCP denied".into(),
    };
    let attestation = instance.attest(statement, Some(cert.into_bytes()));
    put(
        "attestation",
        "attestation.txt",
        attestation.to_text().as_bytes(),
    );
    let other = SigningKey::from_seed([9; 32], "other@example");
    let signers = format!(
        "{}\n{}\n# comment\n*@example cert-authority {}",
        AllowedSigners::line_for("fuzz@example", &key.public()),
        AllowedSigners::line_for_namespace("other@example", &other.public(), "file,git"),
        other.public().to_openssh("ca"),
    );
    put("allowed_signers", "allowed_signers", signers.as_bytes());

    let packument = format!(
        r#"{{"name":"ec-present","dist-tags":{{"latest":"1.0.0"}},"versions":{{"1.0.0":{{"name":"ec-present","version":"1.0.0","dist":{{"tarball":"http://127.0.0.1/ec-present/-/ec-present-1.0.0.tgz","integrity":"{}","shasum":"00","signatures":[{{"keyid":"k","sig":"s"}}]}}}}}}}}"#,
        npm.integrity
    );
    put("packument", "full.json", packument.as_bytes());
    let lock = format!(
        r#"{{"name":"app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{{"":{{"name":"app","version":"1.0.0","dependencies":{{"ec-present":"^1.0.0"}}}},"node_modules/ec-present":{{"version":"1.0.0","resolved":"http://127.0.0.1/ec-present/-/ec-present-1.0.0.tgz","integrity":"{}"}}}}}}"#,
        npm.integrity
    );
    put("package_lock", "v3.json", lock.as_bytes());
    put(
        "requirements",
        "hashed.txt",
        format!(
            "--index-url https://pypi.org/simple\nec-present==1.0.0 \\\n    --hash=sha256:{}\n",
            wheel.sha256
        )
        .as_bytes(),
    );

    // OpenPGP (apt): the lab key's keyring, an InRelease and a Release.gpg
    // by it, and the real Debian InRelease the fuzz target's Debian
    // keyring verifies.
    let pgp = egress_signing::OpenPgpKey::from_signing_key(
        &key,
        "Fuzz <fuzz@example.invalid>",
        1_700_000_000,
    );
    put("openpgp", "lab.gpg", &pgp.public_keyring());
    put(
        "openpgp",
        "lab.asc",
        pgp.public_keyring_armored().as_bytes(),
    );
    let release = "Origin: Lab\nSuite: stable\n-dash\nSHA256:\n 00ff 12 main/Packages\n";
    put(
        "openpgp",
        "InRelease",
        pgp.sign_cleartext(release, 1_700_000_100).as_bytes(),
    );
    put(
        "openpgp",
        "Release.gpg",
        pgp.sign_detached(b"fuzz message\n", 1_700_000_100)
            .as_bytes(),
    );
    put(
        "openpgp",
        "debian-bookworm-updates-InRelease",
        include_bytes!("../../crates/egress-signing/tests/data/bookworm-updates_InRelease"),
    );
    let deb = build_deb(&DebSpec {
        package: "ec-tripwire".into(),
        version: "1:1.0-1".into(),
        architecture: "all".into(),
        maintainer: "seed <nobody@example.invalid>".into(),
        description: "a seed\n with a long description.".into(),
        depends: Some("libc6 (>= 2.34)".into()),
        scripts: vec![("postinst".into(), "#!/bin/sh\nexit 0\n".into())],
        files: vec![(
            "usr/share/doc/ec-tripwire/README".into(),
            b"seed\n".to_vec(),
        )],
    });
    put("deb", "ec-tripwire_1.0-1_all.deb", &deb);
    let packages = format!(
        "Package: ec-tripwire\nVersion: 1:1.0-1\nArchitecture: all\nMaintainer: seed <nobody@example.invalid>\nDescription: a seed\n with a long description.\nFilename: pool/main/e/ec-tripwire/ec-tripwire_1.0-1_all.deb\nSize: {}\nMD5sum: 0123456789abcdef0123456789abcdef\nSHA256: {}\n",
        deb.len(),
        Sha256Digest::of(&deb)
    );
    put("apt_packages", "ours", packages.as_bytes());
    let release = render_release(
        &ReleaseFields {
            origin: "egress".into(),
            label: "seed".into(),
            suite: "stable".into(),
            codename: "bookworm".into(),
            date: 1_764_547_200,
            valid_until: Some(1_764_633_600),
            architectures: vec!["amd64".into(), "all".into()],
            components: vec!["main".into()],
            description: Some("a seed".into()),
        },
        &[IndexEntry {
            path: IndexPath::new("main/binary-amd64/Packages").expect("path"),
            size: packages.len() as u64,
            digest: Sha256Digest::of(packages.as_bytes()),
        }],
    );
    put("apt_release", "ours", release.as_bytes());
}
