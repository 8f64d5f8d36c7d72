//! `snapshot build` as a new user first meets it (issue 26, "first-run
//! friction"), each against a loopback canary with real inputs:
//!
//! - an npm lock that real npm wrote with `omit-lockfile-registry-resolved`
//!   (no `resolved` URLs) builds from `--npm-upstream`, and npm installs it
//!   from the mirror; a lock whose integrity the upstream bytes do not match
//!   is refused;
//! - the builder trusts the system's store, as curl does: a test CA given
//!   only through `SSL_CERT_FILE` is trusted; without it the one-line error
//!   names the issuer and both fixes; `--cacert` adds to the store;
//! - an apt source is read as apt reads it: the stock one-line source of
//!   a security archive (`SUITE main` for a Release listing `updates/main`)
//!   and deb822 `.sources` files with `Signed-By` (a path, a key block)
//!   build, and a real apt installs from the snapshot.

use egress_references::npm::canary::NpmCanary;
use egress_references::npm::universe::{self as eu, Universe, UNIVERSE_CUTOFF};
use egress_testca::TestCa;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

mod common;

use common::{free_port, ok, run, s, tmpdir, MirrorProcess};

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The last line of stderr: the one-line error.
fn error_line(o: &Output) -> String {
    err(o).lines().last().unwrap_or_default().to_string()
}

/// scripts/test installs npm; its absence fails the test.
fn require_npm() {
    let found = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "npm is not installed (Debian: apt-get install nodejs npm)"
    );
}

/// A project in `dir/name` with a `package.json` and no dependency yet.
fn project(dir: &Path, name: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(&p).expect("mkdir");
    std::fs::write(
        p.join("package.json"),
        r#"{"name":"first-run-test","version":"0.0.0","private":true}"#,
    )
    .expect("package.json");
    p
}

/// Names under `node_modules` (scoped ones as `@scope/name`).
fn installed(modules: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(modules).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        if name.starts_with('@') {
            for s in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                out.push(format!("{name}/{}", s.file_name().to_string_lossy()));
            }
        } else {
            out.push(name);
        }
    }
    out.sort();
    out
}

/// npm's `omit-lockfile-registry-resolved=true` (set here, so the test
/// does not depend on this machine's npm configuration) writes a lock with
/// `integrity` and no `resolved`. The builder resolves each package against
/// `--npm-upstream` (the canary: packuments, a scoped name among them),
/// verifies the bytes against the lock's integrity, and `npm ci` installs
/// the lock from the mirror serving the snapshot. A lock whose integrity
/// the upstream's bytes do not match refuses the build (exit 6), and an
/// upstream that does not list a locked version too.
#[test]
fn an_npm_lock_without_resolved_urls_builds_from_the_upstream() {
    require_npm();
    let canary = NpmCanary::start_with(Universe::default()).expect("canary");
    let dir = tmpdir("first-run-npm");
    let proj = project(&dir, "project");
    let mut cmd = egress_references::npm::client::isolated_npm(
        &proj,
        &dir.join("cache"),
        &canary.registry_url(),
    )
    .expect("npm");
    cmd.args([
        "install",
        eu::APP,
        "--package-lock-only",
        "--before",
        UNIVERSE_CUTOFF,
        "--omit-lockfile-registry-resolved=true",
    ]);
    ok(
        &cmd.output().expect("npm"),
        "npm install --package-lock-only",
    );
    let lock_path = proj.join("package-lock.json");
    let lock: Value =
        serde_json::from_slice(&std::fs::read(&lock_path).expect("lock")).expect("JSON");
    let packages = lock["packages"].as_object().expect("packages");
    let pinned: Vec<&String> = packages.keys().filter(|k| !k.is_empty()).collect();
    assert!(pinned.len() >= 4, "{lock}");
    assert!(
        packages
            .iter()
            .filter(|(k, _)| !k.is_empty())
            .all(|(_, e)| e.get("resolved").is_none() && e.get("integrity").is_some()),
        "npm wrote resolved URLs: {lock}"
    );
    assert!(
        packages.contains_key("node_modules/@eu/native-linux-x64-gnu"),
        "{lock}"
    );

    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let port = free_port();
    let mirror_url = format!("http://127.0.0.1:{port}/");
    let snap = dir.join("snap");
    let upstream = canary.registry_url();
    let build = |lock: &Path, upstream: &str| {
        run(&[
            "snapshot",
            "build",
            "--npm-lock",
            s(lock),
            "--npm-upstream",
            upstream,
            "--npm-registry-url",
            &mirror_url,
            "--sign-key",
            s(&key),
            "--out",
            s(&snap),
        ])
    };
    let o = build(&lock_path, &upstream);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(err(&o).contains("resolving"), "{}", err(&o));

    // A locked integrity the upstream's bytes do not match: refused, and
    // the snapshot already there is left as it was.
    let before = std::fs::read(snap.join("SNAPSHOT.json")).expect("snapshot");
    let mut forged = lock.clone();
    let other = forged["packages"]["node_modules/eu-lib"]["integrity"].clone();
    forged["packages"]["node_modules/eu-app"]["integrity"] = other;
    let forged_path = dir.join("forged-lock.json");
    std::fs::write(&forged_path, forged.to_string()).expect("write");
    let o = build(&forged_path, &upstream);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("eu-app@") && line.contains("expected integrity"),
        "{line}"
    );
    assert_eq!(
        std::fs::read(snap.join("SNAPSHOT.json")).expect("snapshot"),
        before
    );
    // A version the upstream does not list: refused, naming the flag.
    let mut unknown = lock.clone();
    unknown["packages"]["node_modules/eu-app"]["version"] = "9.9.9".into();
    let unknown_path = dir.join("unknown-lock.json");
    std::fs::write(&unknown_path, unknown.to_string()).expect("write");
    let o = build(&unknown_path, &upstream);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("eu-app@9.9.9") && line.contains("--npm-upstream"),
        "{line}"
    );
    // --npm-upstream with nothing that reads it.
    let o = run(&[
        "snapshot",
        "build",
        "--npm-upstream",
        &upstream,
        "--requirements",
        s(&lock_path),
        "--sign-key",
        s(&key),
        "--out",
        s(&dir.join("unused")),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        error_line(&o).contains("--npm-upstream is only used with"),
        "{}",
        err(&o)
    );

    // npm ci installs the lock from the mirror alone.
    drop(canary);
    let mirror = MirrorProcess::start(&snap, &format!("127.0.0.1:{port}"));
    let ci = project(&dir, "ci");
    std::fs::copy(&lock_path, ci.join("package-lock.json")).expect("copy");
    std::fs::copy(proj.join("package.json"), ci.join("package.json")).expect("copy");
    let mut cmd = egress_references::npm::client::isolated_npm(
        &ci,
        &dir.join("ci-cache"),
        &format!("{}/", mirror.base),
    )
    .expect("npm");
    cmd.arg("ci");
    ok(&cmd.output().expect("npm"), "npm ci from the mirror");
    let got = installed(&ci.join("node_modules"));
    for want in ["eu-app", "eu-lib", "eu-peer"] {
        assert!(got.iter().any(|g| g == want), "{want} not in {got:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `snapshot build --requirements` from an https index (the canary's
/// files served by the mirror over TLS, its certificate issued by a test
/// CA), with `env` set and `SSL_CERT_FILE`/`SSL_CERT_DIR` otherwise unset.
fn build_https(dir: &Path, index: &str, env: &[(&str, &Path)], extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_egress-conformance"));
    cmd.args([
        "snapshot",
        "build",
        "--requirements",
        s(&dir.join("requirements.txt")),
        "--index-url",
        index,
        "--sign-key",
        s(&dir.join("key")),
        "--out",
        s(&dir.join("snap")),
    ])
    .args(extra)
    .env_remove("SSL_CERT_FILE")
    .env_remove("SSL_CERT_DIR");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the binary")
}

/// The builder's default trust is the system's: a lab CA given only as
/// `SSL_CERT_FILE` (as curl, pip and uv `--native-tls` read it) is
/// trusted. Without it the build fails with one line that names the issuer
/// it was shown and both fixes; `--cacert` adds the CA to the system's
/// store; an `SSL_CERT_FILE` that cannot be read is bad input (exit 4).
/// `check` reads the same store.
#[test]
fn the_builder_trusts_a_ca_given_only_through_ssl_cert_file() {
    let dir = tmpdir("first-run-tls");
    let ca = TestCa::new(&dir);
    let canary = egress_references::pypi::builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let wheel = canary
        .dists(false)
        .into_iter()
        .find(|(_, d)| d.filename == "ec_present-1.0.0-py3-none-any.whl")
        .map(|(_, d)| d.sha256.to_hex())
        .expect("canary wheel");
    let snapshot =
        egress_references::pypi::builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let tls = egress_mirror::tls::load(&ca.server.cert, &ca.server.key).expect("certificate");
    let server = egress_mirror::serve_mirror_tls(
        egress_mirror::Mirror::new(std::sync::Arc::new(snapshot)),
        "127.0.0.1:0",
        tls,
    )
    .expect("serve");
    let index = format!("https://localhost:{}/simple/", server.addr().port());
    std::fs::write(
        dir.join("requirements.txt"),
        format!("ec-present==1.0.0 --hash=sha256:{wheel}\n"),
    )
    .expect("write");
    ok(
        &run(&["key", "generate", "--out", s(&dir.join("key"))]),
        "key generate",
    );

    let o = build_https(&dir, &index, &[("SSL_CERT_FILE", &ca.ca_cert)], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert!(dir.join("snap/SNAPSHOT.json").is_file());

    // The platform's store alone: not trusted, one line saying why.
    let o = build_https(&dir, &index, &[], &[]);
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("\"CN=egress test CA\"")
            && line.contains("--cacert FILE")
            && line.contains("SSL_CERT_FILE=FILE")
            && !line.contains("gave up after"),
        "{line}"
    );
    assert!(
        !err(&o).contains("UnknownIssuer"),
        "rustls' own words: {}",
        err(&o)
    );

    // --cacert adds to the system's store.
    let o = build_https(&dir, &index, &[], &["--cacert", s(&ca.ca_cert)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));

    // `check` reads the same store: the mirror behind the lab CA is judged.
    let check = |env: &[(&str, &Path)]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_egress-conformance"));
        cmd.args([
            "check",
            &index,
            "--timeout",
            "5",
            "--absent",
            "ec-upstream-only",
        ])
        .env_remove("SSL_CERT_FILE")
        .env_remove("SSL_CERT_DIR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run the binary")
    };
    let o = check(&[("SSL_CERT_FILE", &ca.ca_cert)]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let o = check(&[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("is issued by \"CN"), "{text}");

    // An SSL_CERT_FILE that is not there: bad input, naming it.
    let missing = dir.join("no-such-bundle.pem");
    let o = build_https(&dir, &index, &[("SSL_CERT_FILE", &missing)], &[]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    let line = error_line(&o);
    assert!(
        line.contains("SSL_CERT_FILE=") && line.contains("no-such-bundle.pem"),
        "{line}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A deb822 multi-line value: each line indented, an empty one as ` .`.
fn deb822_block(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                " .".to_string()
            } else {
                format!(" {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The apt canary's `canary-security` dist is shaped as Debian's security
/// archive (`Components: updates/main`, indexes under `main/`). Real apt
/// accepts the stock-style `canary-security main` for it, and so does the
/// builder: from that one-line `--apt-source`, and from `--apt-sources`
/// deb822 files as a lab's image carries them (comments, a `deb-src` and a
/// disabled paragraph, `Signed-By` a keyring path or a key block, no
/// `--apt-keyring`). A real apt then installs from the mirror serving the
/// snapshot. A component the Release does not have, a source without keys
/// and a malformed file each get one line and their exit code.
#[test]
fn an_apt_source_is_read_as_apt_reads_it() {
    use egress_references::apt::canary::{self as apt_canary, AptCanary};
    use egress_references::apt::client::AptClient;
    assert!(
        AptClient::available(),
        "apt-get is not installed (Debian: it always is)"
    );
    let dir = tmpdir("first-run-apt");
    let canary = AptCanary::start().expect("apt canary");
    let dist = apt_canary::SECURITY_DIST;
    let release = String::from_utf8(
        canary
            .file(&format!("dists/{dist}/Release"))
            .expect("Release"),
    )
    .expect("utf-8");
    assert!(release.contains("Components: updates/main\n"), "{release}");
    assert!(
        release.contains(" main/binary-amd64/Packages\n"),
        "{release}"
    );

    // Real apt takes the stock-style line, and says what to fetch.
    let lab_apt = AptClient::new(&dir.join("lab-apt")).expect("apt tree");
    let keyring = lab_apt
        .add_keyring("canary", &canary.keyring())
        .expect("keyring");
    lab_apt
        .add_source(&canary.source_line(&keyring, dist))
        .expect("source");
    ok(
        &lab_apt.update().expect("apt-get"),
        "apt-get update (security-style)",
    );
    let o = lab_apt.print_uris(&[apt_canary::PRESENT]).expect("apt-get");
    ok(&o, "apt-get install --print-uris");
    let uris = dir.join("uris.txt");
    std::fs::write(&uris, &o.stdout).expect("write");

    let key = dir.join("key");
    ok(&run(&["key", "generate", "--out", s(&key)]), "key generate");
    let build = |out: &str, extra: &[&str]| {
        let mut a = vec![
            "snapshot",
            "build",
            "--apt-uris",
            s(&uris),
            "--sign-key",
            s(&key),
        ];
        let out = dir.join(out);
        a.extend_from_slice(&["--out", s(&out)]);
        a.extend_from_slice(extra);
        let o = run(&a);
        (o, out)
    };
    let line = format!("{} {dist} main", canary.archive_url());
    let (o, _) = build(
        "from-line",
        &["--apt-source", &line, "--apt-keyring", s(&keyring)],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));

    // deb822, as an image's debian.sources: Signed-By a path.
    let file = dir.join("lab.sources");
    std::fs::write(
        &file,
        format!(
            "# the lab image's sources\nTypes: deb\n# a comment inside\nURIs: {url}\nSuites: {dist}\nComponents: main\nSigned-By: {k}\n\nTypes: deb-src\nURIs: {url}\nSuites: {dist}\nComponents: main\n\nEnabled: no\nTypes: deb\nURIs: http://192.0.2.1/debian\nSuites: elsewhere\nComponents: main\n",
            url = canary.archive_url(),
            k = keyring.display()
        ),
    )
    .expect("write");
    let (o, _) = build("from-path", &["--apt-sources", s(&file)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));

    // Signed-By a key block in the file itself.
    let inline = dir.join("inline.sources");
    std::fs::write(
        &inline,
        format!(
            "Types: deb\nURIs: {}\nSuites: {dist}\nComponents: main\nArchitectures: amd64\nSigned-By:\n{}\n",
            canary.archive_url(),
            deb822_block(&canary.keyring_armored())
        ),
    )
    .expect("write");
    let (o, snap) = build("from-inline", &["--apt-sources", s(&inline)]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));

    // A real apt, trusting only the lab key, installs from the mirror.
    let mirror = MirrorProcess::start(&snap, "127.0.0.1:0");
    let lab = dir.join("lab.gpg");
    ok(
        &run(&[
            "snapshot",
            "apt-keyring",
            "--key",
            s(&key),
            "--out",
            s(&lab),
        ]),
        "snapshot apt-keyring",
    );
    let sandbox = AptClient::new(&dir.join("sandbox-apt")).expect("apt tree");
    let trusted = sandbox
        .add_keyring("lab", &std::fs::read(&lab).expect("read"))
        .expect("keyring");
    sandbox
        .add_source(&format!(
            "deb [signed-by={}] {}/apt/debian {dist} main",
            trusted.display(),
            mirror.base.trim_end_matches('/'),
        ))
        .expect("source");
    ok(
        &sandbox.update().expect("apt-get"),
        "apt-get update (mirror)",
    );
    ok(
        &sandbox.download(&[apt_canary::PRESENT]).expect("apt-get"),
        "apt-get install --download-only (mirror)",
    );
    let (pool, bytes, _) = canary
        .deb(apt_canary::PRESENT, apt_canary::FIRST_VERSION)
        .expect("deb");
    let got = std::fs::read(sandbox.archives_dir().join(pool.file_name())).expect("downloaded");
    assert!(
        got == bytes,
        "apt fetched the canary's bytes from the mirror"
    );
    drop(mirror);

    // A component the signed Release does not have: refused, naming it.
    let list = dir.join("contrib.list");
    std::fs::write(
        &list,
        format!(
            "deb [signed-by={}] {} {dist} main contrib\n",
            keyring.display(),
            canary.archive_url()
        ),
    )
    .expect("write");
    let (o, _) = build("contrib", &["--apt-sources", s(&list)]);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    let e = error_line(&o);
    assert!(
        e.contains("no component \"contrib\"") && e.contains("contrib.list line 1"),
        "{e}"
    );
    // No Signed-By and no --apt-keyring: a usage error naming the entry.
    let bare = dir.join("bare.sources");
    std::fs::write(
        &bare,
        format!(
            "Types: deb\nURIs: {}\nSuites: {dist}\nComponents: main\n",
            canary.archive_url()
        ),
    )
    .expect("write");
    let (o, _) = build("bare", &["--apt-sources", s(&bare)]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(
        error_line(&o).contains("no Signed-By, and no --apt-keyring"),
        "{}",
        err(&o)
    );
    // A malformed file: bad input, naming its line.
    let broken = dir.join("broken.sources");
    std::fs::write(&broken, "Types: deb\nURIs: http://x/debian\nURIs: again\n").expect("write");
    let (o, _) = build("broken", &["--apt-sources", s(&broken)]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    assert!(
        error_line(&o).contains("broken.sources: line 3"),
        "{}",
        err(&o)
    );
    canary.stop();
    let _ = std::fs::remove_dir_all(&dir);
}
