//! `sandbox-scan` in real topologies: a sandbox network namespace whose
//! only neighbour is a lab namespace running the real `egress-mirror`
//! (198.51.100.1:8080) and the standalone canary (203.0.113.1:8700, its
//! DNS responder on 203.0.113.1:53 or 198.51.100.1:53), joined by a veth
//! pair. Everything is made by the test and removed when it ends (a guard
//! deletes the namespaces, the veths with them, /etc/netns/NAME, and stops
//! the processes it started by their ids). Only documentation addresses.
//! The scan only ever runs inside the sandbox namespace (`ip netns exec`),
//! with a cleared environment, so it never meets the machine's own
//! network, resolvers or configuration.
//!
//! Every sandbox carries Debian's stock apt sources (deb.debian.org).
//! Sealed: PASS, exit 0, the stock sources a notice with the failed name
//! lookup; an unreachable proxy and an unreadable pip.conf are notices too.
//! Each failing variant opens one path and the scan must FAIL naming it: a
//! default route to the canary (and an apt source on it), a resolver that
//! answers (and the canary's DNS log shows the unique name arrived), a
//! proxy on the lab that answers (in HTTPS_PROXY and apt.conf), a pip.conf
//! extra-index-url that answers, an IPv6 route, a mirror that accepts
//! CONNECT, a uv.lock whose file URLs point at files.pythonhosted.org.
//! Each report re-derives with `report verify`, and its text lists the
//! notices after the findings.
//!
//! Needs root and `ip netns` (iproute2); without them each test prints why
//! and returns.

use egress_model::Status;
use egress_sandbox::ScanReport;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

mod common;

use common::netns::{
    unavailable, Proc, Topology, CANARY, CANARY_IP, MIRROR_IP, MIRROR_URL, STOCK_SOURCES, ZONE,
};
use common::s;

/// Where the CONNECT-accepting front (a proxy that serves the mirror's
/// pages, so claims to be the mirror) listens, when a test starts it.
const FRONT: &str = "198.51.100.1:8081";

macro_rules! require_netns {
    () => {
        if let Some(why) = unavailable() {
            eprintln!("SKIPPED: {why}");
            return;
        }
    };
}

impl Topology {
    /// The fixture mirror that accepts CONNECT, on 198.51.100.1:8081 in
    /// front of the real mirror: this test binary, run in the lab.
    fn start_tunnelling_front(&mut self) {
        let me = std::env::current_exe().unwrap();
        let mut cmd = self.in_lab(
            &me,
            &[
                "--exact",
                "fixture_tunnelling_front",
                "--ignored",
                "--nocapture",
            ],
        );
        cmd.env("EGRESS_FIXTURE_LISTEN", FRONT)
            .env("EGRESS_FIXTURE_BACKEND", format!("http://{MIRROR_IP}:8080"));
        self.procs.push(Proc::spawn(cmd, "tunnelling front ready"));
    }

    /// `sandbox-scan` inside the sandbox namespace, with a cleared
    /// environment plus `env`; its report, after `report verify` agreed.
    fn scan(&self, mirror: &str, env: &[(&str, &str)], lockfiles: Option<&Path>) -> ScanReport {
        self.scan_through(&[], mirror, env, lockfiles)
    }

    /// `scan`, the scan started through `wrap` (a program and its
    /// arguments, e.g. setpriv dropping capabilities) inside the namespace.
    fn scan_through(
        &self,
        wrap: &[&str],
        mirror: &str,
        env: &[(&str, &str)],
        lockfiles: Option<&Path>,
    ) -> ScanReport {
        let out = self.dir.join("out");
        let mut cmd = Command::new(&self.ip);
        cmd.args(["netns", "exec", &self.sandbox])
            .args(wrap)
            .arg(env!("CARGO_BIN_EXE_egress-conformance"))
            .args(["sandbox-scan", "--mirror", mirror, "--canary", CANARY])
            .args(["--canary-zone", ZONE, "--format", "json", "--out", s(&out)]);
        if let Some(l) = lockfiles {
            cmd.args(["--lockfiles", s(l)]);
        }
        cmd.env_clear()
            .env("HOME", self.dir.join("home"))
            .env("PATH", "/nonexistent")
            .current_dir(self.dir.join("work"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().expect("run the scan");
        let report: ScanReport = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "no report ({e}): {}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        });
        assert_eq!(
            o.status.code(),
            Some(i32::from(report.exit_code())),
            "{}",
            egress_sandbox::render::text(&report)
        );
        let v = common::run(&["report", "verify", s(&out)]);
        assert!(
            v.status.success(),
            "report verify: {}",
            String::from_utf8_lossy(&v.stdout)
        );
        // The text lists the notices after the findings, one line each.
        let text = std::fs::read_to_string(out.join("scan.txt")).unwrap();
        let notice_lines = text.lines().filter(|l| l.starts_with("  notice: ")).count();
        assert_eq!(notice_lines, report.notices.len(), "{text}");
        if let (Some(first), Some(last_check)) = (
            text.find("  notice: "),
            report.records.last().map(|r| text.find(&r.id).unwrap()),
        ) {
            assert!(first > last_check, "{text}");
        }
        report
    }
}

/// The status of check `id`, and its text for messages.
fn status(r: &ScanReport, id: &str) -> Status {
    r.record(id).unwrap_or_else(|| panic!("no {id}")).status
}

/// Asserts `id` FAILs naming `needle` in one of its paths.
fn fails_naming(r: &ScanReport, id: &str, needle: &str) {
    let rec = r.record(id).unwrap();
    assert_eq!(
        rec.status,
        Status::Fail,
        "{id}: {}",
        egress_sandbox::render::text(r)
    );
    assert!(
        rec.paths.iter().any(|p| p.contains(needle)),
        "{id} does not name {needle}: {:?}",
        rec.paths
    );
    assert_eq!(r.outcome, Status::Fail);
    assert_eq!(r.exit_code(), 1);
}

/// Every check other than `failing` passes (or is skipped).
fn only_these_fail(r: &ScanReport, failing: &[&str]) {
    for rec in &r.records {
        if failing.contains(&rec.id.as_str()) {
            continue;
        }
        assert!(
            matches!(rec.status, Status::Pass | Status::Skipped),
            "{} is {}: {}\n{}",
            rec.id,
            rec.status,
            rec.reason,
            egress_sandbox::render::text(r)
        );
    }
}

/// The notice of check `id` configured as `configured`, at `place`.
fn notice<'a>(
    r: &'a ScanReport,
    id: &str,
    place: &str,
    configured: &str,
) -> &'a egress_sandbox::Notice {
    r.notices
        .iter()
        .find(|n| n.check == id && n.place == place && n.configured == configured)
        .unwrap_or_else(|| {
            panic!(
                "no {id} notice for {configured} at {place}: {:#?}",
                r.notices
            )
        })
}

fn lab(tag: &str, dns: &str) -> (Topology, usize) {
    let mut t = Topology::new(tag);
    t.start_mirror();
    let c = t.start_canary(dns);
    (t, c)
}

#[test]
fn sealed_sandbox_passes() {
    require_netns!();
    let (t, canary) = lab("sealed", &format!("{CANARY_IP}:53"));
    let locks = t.dir.join("locks");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::write(
        locks.join("requirements.txt"),
        format!(
            "--index-url {MIRROR_URL}\nx==1 --hash=sha256:{}\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let r = t.scan(MIRROR_URL, &[], Some(&locks));
    only_these_fail(&r, &[]);
    assert_eq!(
        r.outcome,
        Status::Pass,
        "{}",
        egress_sandbox::render::text(&r)
    );
    assert_eq!(status(&r, "C.mirror"), Status::Pass);
    // The attempts were made and found nothing: the canary, the metadata
    // addresses, the resolver, the mirror's CONNECT.
    for id in [
        "R.canary",
        "R.metadata",
        "R.dns-public",
        "R.dns-canary",
        "R.mirror-connect",
    ] {
        let rec = r.record(id).unwrap();
        assert_eq!(rec.status, Status::Pass, "{id}");
        assert!(!rec.evidence.is_empty(), "{id} has no evidence");
    }
    let name = r.plan.canary_name().unwrap();
    assert!(
        !t.procs[canary].lines().iter().any(|l| l.contains(&name)),
        "the unique name reached the canary"
    );
    // The stock apt sources name the public archive, which the sealed
    // sandbox cannot reach: a notice with the attempt that failed, not a
    // FAIL; the exit stays 0.
    assert_eq!(r.exit_code(), 0);
    if t.has_apt() {
        assert_eq!(status(&r, "S.apt"), Status::Pass);
        for (line, uri) in [
            (1, "http://deb.debian.org/debian"),
            (8, "http://deb.debian.org/debian-security"),
        ] {
            let n = notice(&r, "S.apt", &format!("{STOCK_SOURCES} line {line}"), uri);
            assert_eq!(n.kind, egress_sandbox::NoticeKind::Unreachable);
            // The sandbox's resolver (203.0.113.1, no route to it) was
            // asked, from inside the namespace, and could not be reached.
            assert!(
                n.attempt.starts_with("name resolution failed")
                    && n.attempt
                        .contains("DNS A deb.debian.org via 203.0.113.1:53"),
                "{}",
                n.attempt
            );
        }
        // A comment's URL is no source.
        assert!(!r.notices.iter().any(|n| n.configured.contains("snapshot")));
    }
}

#[test]
fn a_proxy_the_sandbox_cannot_reach_is_a_notice() {
    require_netns!();
    let (t, _) = lab("proxy", &format!("{CANARY_IP}:53"));
    let proxy = format!("http://{CANARY}");
    let r = t.scan(MIRROR_URL, &[("HTTPS_PROXY", &proxy)], None);
    only_these_fail(&r, &[]);
    assert_eq!(r.outcome, Status::Pass);
    let n = notice(&r, "S.proxy-env", "HTTPS_PROXY", &proxy);
    assert!(
        n.attempt
            .contains(&format!("TCP {CANARY} (203.0.113.1): unreachable")),
        "{}",
        n.attempt
    );
}

#[test]
fn a_proxy_on_the_lab_that_answers_fails_whatever_it_claims() {
    require_netns!();
    let (mut t, _) = lab("labproxy", &format!("{CANARY_IP}:53"));
    // It serves the mirror's own pages (it claims to be the mirror), on
    // the mirror's address; the mirror is 198.51.100.1:8080, as --mirror
    // says.
    t.start_tunnelling_front();
    let proxy = format!("http://{FRONT}");
    let mut failing = vec!["S.proxy-env"];
    if t.has_apt() {
        std::fs::write(
            t.etc().join("apt/apt.conf.d/01proxy"),
            format!("Acquire::http::Proxy \"{proxy}/\";\n"),
        )
        .unwrap();
        failing.push("S.apt");
    }
    let r = t.scan(MIRROR_URL, &[("HTTPS_PROXY", &proxy)], None);
    fails_naming(
        &r,
        "S.proxy-env",
        &format!("HTTPS_PROXY={proxy}: a proxy that answers at {FRONT}"),
    );
    if t.has_apt() {
        fails_naming(
            &r,
            "S.apt",
            &format!(
                "/etc/apt/apt.conf.d/01proxy line 1: {proxy}/: a proxy that answers at {FRONT}"
            ),
        );
        // The stock sources stay notices beside the findings.
        notice(
            &r,
            "S.apt",
            &format!("{STOCK_SOURCES} line 1"),
            "http://deb.debian.org/debian",
        );
    }
    only_these_fail(&r, &failing);
}

#[test]
fn an_unreadable_config_file_is_a_notice() {
    require_netns!();
    let Some(setpriv) = ["/usr/bin/setpriv", "/bin/setpriv"]
        .iter()
        .find(|p| Path::new(p).is_file())
    else {
        eprintln!("SKIPPED: no setpriv (util-linux) to drop the DAC override capabilities");
        return;
    };
    let (t, _) = lab("unread", &format!("{CANARY_IP}:53"));
    let conf = t.dir.join("home/.config/pip");
    std::fs::create_dir_all(&conf).unwrap();
    let pip_conf = conf.join("pip.conf");
    std::fs::write(&pip_conf, "[global]\nindex-url = https://pypi.org/simple\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pip_conf, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads any file; without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH
    // it meets the file's mode as any user would.
    let r = t.scan_through(
        &[
            setpriv,
            "--bounding-set",
            "-dac_override,-dac_read_search",
            "--",
        ],
        MIRROR_URL,
        &[],
        None,
    );
    only_these_fail(&r, &[]);
    assert_eq!(r.outcome, Status::Pass);
    let place = pip_conf.display().to_string();
    let n = r
        .notices
        .iter()
        .find(|n| n.check == "S.pip" && n.place == place)
        .unwrap_or_else(|| panic!("{:#?}", r.notices));
    assert_eq!(n.kind, egress_sandbox::NoticeKind::Unread);
    assert!(n.attempt.contains("Permission denied"), "{}", n.attempt);
}

#[test]
fn a_default_route_to_the_canary_fails() {
    require_netns!();
    let (t, _) = lab("route", &format!("{CANARY_IP}:53"));
    t.ns(&t.sandbox, &["route", "add", "default", "via", MIRROR_IP]);
    // An apt source on the canary: unreachable when sealed, a door that
    // answers once routed.
    let source = format!("http://{CANARY}/debian");
    if t.has_apt() {
        std::fs::write(
            t.etc().join("apt/sources.list.d/canary.list"),
            format!("deb {source} bookworm main\n"),
        )
        .unwrap();
    }
    let r = t.scan(MIRROR_URL, &[], None);
    fails_naming(&r, "S.routes", &format!("IPv4 default via {MIRROR_IP}"));
    fails_naming(&r, "R.canary", CANARY);
    if t.has_apt() {
        fails_naming(
            &r,
            "S.apt",
            &format!("/etc/apt/sources.list.d/canary.list line 1: {source}: a door that answers at {CANARY}"),
        );
    }
}

#[test]
fn a_resolver_that_answers_fails_and_the_canary_sees_the_name() {
    require_netns!();
    let (t, canary) = lab("dns", &format!("{MIRROR_IP}:53"));
    std::fs::write(
        t.etc().join("resolv.conf"),
        format!("nameserver {MIRROR_IP}\n"),
    )
    .unwrap();
    let r = t.scan(MIRROR_URL, &[], None);
    fails_naming(&r, "R.dns-public", "resolves pypi.org");
    let name = r.plan.canary_name().unwrap();
    fails_naming(&r, "R.dns-canary", &name);
    only_these_fail(&r, &["R.dns-public", "R.dns-canary"]);
    // The canary's own log shows the name arrived.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        t.procs[canary]
            .lines()
            .iter()
            .any(|l| l.starts_with("dns query: ") && l.contains(&name)),
        "{:?}",
        t.procs[canary].lines()
    );
}

#[test]
fn a_pip_conf_extra_index_url_past_the_mirror_fails() {
    require_netns!();
    let (mut t, _) = lab("pip", &format!("{CANARY_IP}:53"));
    t.start_tunnelling_front();
    let conf = t.dir.join("home/.config/pip");
    std::fs::create_dir_all(&conf).unwrap();
    let extra = format!("http://{FRONT}/simple/");
    std::fs::write(
        conf.join("pip.conf"),
        format!("[global]\nindex-url = {MIRROR_URL}\nextra-index-url = {extra}\n    https://pypi.org/simple\n"),
    )
    .unwrap();
    let r = t.scan(MIRROR_URL, &[], None);
    // An extra index that answers is a door past the mirror; the public
    // index, which the sandbox cannot reach, is a notice.
    fails_naming(
        &r,
        "S.pip",
        &format!("{extra}: a door that answers at {FRONT}"),
    );
    only_these_fail(&r, &["S.pip"]);
    let place = format!("{} line 4", conf.join("pip.conf").display());
    let n = notice(&r, "S.pip", &place, "https://pypi.org/simple");
    assert!(
        n.attempt.starts_with("name resolution failed"),
        "{}",
        n.attempt
    );
}

#[test]
fn a_hugging_face_endpoint_past_the_mirror_or_a_token_fails() {
    require_netns!();
    let (mut t, _) = lab("hf", &format!("{CANARY_IP}:53"));
    t.start_tunnelling_front();
    let hub = format!("http://{FRONT}");
    // HF_ENDPOINT at a door that answers, and the token `hf auth login`
    // leaves in $HF_HOME/token: two findings of S.hf, the token's bytes
    // nowhere in the report.
    let hf_home = t.dir.join("home/.cache/huggingface");
    std::fs::create_dir_all(&hf_home).unwrap();
    std::fs::write(hf_home.join("token"), "hf_egresstestsecret\n").unwrap();
    let r = t.scan(MIRROR_URL, &[("HF_ENDPOINT", &hub)], None);
    fails_naming(
        &r,
        "S.hf",
        &format!("{hub}: a door that answers at {FRONT}"),
    );
    fails_naming(&r, "S.hf", "(a token file)");
    only_these_fail(&r, &["S.hf"]);
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        !json.contains("hf_egresstestsecret"),
        "the token was recorded"
    );
    // The mirror as the endpoint and no token: nothing to say.
    std::fs::remove_file(hf_home.join("token")).unwrap();
    let mirror_hf = format!("{}hf", MIRROR_URL.trim_end_matches("simple/"));
    let r = t.scan(MIRROR_URL, &[("HF_ENDPOINT", &mirror_hf)], None);
    assert_eq!(status(&r, "S.hf"), Status::Pass);
}

#[test]
fn an_ipv6_route_fails() {
    require_netns!();
    let (t, _) = lab("ipv6", &format!("{CANARY_IP}:53"));
    t.ns(
        &t.sandbox,
        &["addr", "add", "2001:db8:1::2/64", "dev", &t.veth_s, "nodad"],
    );
    t.ns(
        &t.sandbox,
        &["-6", "route", "add", "default", "via", "2001:db8:1::1"],
    );
    let r = t.scan(MIRROR_URL, &[], None);
    fails_naming(&r, "S.routes", "IPv6 default via 2001:db8:1::1");
    fails_naming(&r, "S.routes", "IPv6 2001:db8:1::/64");
    only_these_fail(&r, &["S.routes"]);
}

#[test]
fn a_mirror_that_accepts_connect_fails() {
    require_netns!();
    let (mut t, _) = lab("connect", &format!("{CANARY_IP}:53"));
    t.start_tunnelling_front();
    let front = format!("http://{MIRROR_IP}:8081/simple/");
    if t.etc().join("pip.conf").exists() {
        std::fs::write(
            t.etc().join("pip.conf"),
            format!("[global]\nindex-url = {front}\n"),
        )
        .unwrap();
    }
    let r = t.scan(&front, &[], None);
    assert_eq!(status(&r, "C.mirror"), Status::Pass);
    fails_naming(&r, "R.mirror-connect", &format!("CONNECT {CANARY}"));
    only_these_fail(&r, &["R.mirror-connect"]);
}

#[test]
fn a_uv_lock_with_public_file_urls_fails() {
    require_netns!();
    let (t, _) = lab("uvlock", &format!("{CANARY_IP}:53"));
    let locks = t.dir.join("locks/project");
    std::fs::create_dir_all(&locks).unwrap();
    std::fs::write(
        locks.join("uv.lock"),
        format!(
            "version = 1\n\n[[package]]\nname = \"idna\"\nversion = \"3.7\"\nsource = {{ registry = \"{MIRROR_URL}\" }}\n\
             wheels = [{{ url = \"https://files.pythonhosted.org/packages/idna-3.7-py3-none-any.whl\", hash = \"sha256:{}\" }}]\n",
            "0".repeat(64)
        ),
    )
    .unwrap();
    let r = t.scan(MIRROR_URL, &[], Some(&t.dir.join("locks")));
    fails_naming(&r, "S.lockfiles", "files.pythonhosted.org");
    only_these_fail(&r, &["S.lockfiles"]);
}

impl Topology {
    /// `check URL --from-sandbox` inside the sandbox namespace, as `scan`
    /// runs the scan; its combined report, after `report verify` agreed.
    fn check_from_sandbox(&self, env: &[(&str, &str)]) -> serde_json::Value {
        let out = self.dir.join("check-out");
        let signers = self.dir.join("allowed_signers");
        std::fs::write(&signers, egress_references::builtin::demo_signers()).unwrap();
        let mut cmd = Command::new(&self.ip);
        cmd.args(["netns", "exec", &self.sandbox])
            .arg(env!("CARGO_BIN_EXE_egress-conformance"))
            .args([
                "check",
                MIRROR_URL,
                "--allowed-signers",
                s(&signers),
                "--from-sandbox",
            ])
            .args(["--sandbox-canary", CANARY, "--canary-zone", ZONE])
            .args(["--format", "json", "--out", s(&out)])
            .env_clear()
            .env("HOME", self.dir.join("home"))
            .env("PATH", "/nonexistent")
            .current_dir(self.dir.join("work"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().expect("run check --from-sandbox");
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
            panic!(
                "no report ({e}): {}\n{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        });
        let code = match doc["outcome"].as_str() {
            Some("PASS") => 0,
            Some("FAIL") => 1,
            _ => 3,
        };
        assert_eq!(o.status.code(), Some(code));
        let v = common::run(&["report", "verify", s(&out)]);
        assert!(
            v.status.success(),
            "report verify: {}",
            String::from_utf8_lossy(&v.stdout)
        );
        assert!(String::from_utf8_lossy(&v.stdout).contains("sandbox-scan checks re-derived"));
        doc
    }
}

#[test]
fn check_from_sandbox_gives_one_report_of_both() {
    require_netns!();
    let (mut t, _) = lab("combined", &format!("{CANARY_IP}:53"));
    let doc = t.check_from_sandbox(&[]);
    assert_eq!(doc["schema"], "egress-conformance/from-sandbox/v1");
    assert_eq!(doc["scan"]["outcome"], "PASS", "{:#}", doc["scan"]);
    assert!(doc["check"]["probes"].as_array().unwrap().len() > 10);
    // The combined outcome is the worse of the two.
    let check = doc["check"]["outcome"].as_str().unwrap();
    assert_eq!(doc["outcome"], check);
    // The stock apt sources are notices, in the scan's part.
    if t.has_apt() {
        let notices = doc["scan"]["notices"].as_array().unwrap();
        assert!(
            notices
                .iter()
                .any(|n| n["check"] == "S.apt" && n["configured"] == "http://deb.debian.org/debian"),
            "{notices:#?}"
        );
    }
    // A path out makes the whole report FAIL, whatever the check says.
    t.start_tunnelling_front();
    let proxy = format!("http://{FRONT}");
    let doc = t.check_from_sandbox(&[("HTTPS_PROXY", &proxy)]);
    assert_eq!(doc["scan"]["outcome"], "FAIL");
    assert_eq!(doc["outcome"], "FAIL");
}

/// Not a test: the CONNECT-accepting mirror fixture, run in the lab
/// namespace by `a_mirror_that_accepts_connect_fails` (this binary, with
/// `--ignored --exact`). Without its variables it does nothing.
#[test]
#[ignore]
fn fixture_tunnelling_front() {
    let (Ok(listen), Ok(backend)) = (
        std::env::var("EGRESS_FIXTURE_LISTEN"),
        std::env::var("EGRESS_FIXTURE_BACKEND"),
    ) else {
        return;
    };
    let front = egress_references::tunnel::TunnelingFront::serve(
        listen.parse().unwrap(),
        egress_model::Url::parse(&backend).unwrap(),
    )
    .unwrap();
    println!("tunnelling front ready at {}", front.addr());
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}
