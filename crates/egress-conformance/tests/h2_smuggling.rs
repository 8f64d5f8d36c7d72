//! `P3.h2-smuggling` end to end: its collector and judge against the
//! reference mirror over https (HTTP/2 by ALPN), the same mirror on plain
//! http (no h2c: SKIPPED, with the refused preface as evidence), an h2c
//! front that relays `:authority` to the canary (FAIL, naming the case and
//! the token the canary saw), a correct h2c front (PASS) and one that
//! answers 404 to everything (INCONCLUSIVE, never PASS). Every verdict is
//! re-derived from the record after a JSON round trip, as `report verify`
//! does.

mod common;

use common::h2_front::{Fault, H2Front};
use egress_model::{ProbeRecord, Status, Upstream, Url};
use egress_references::pypi::builtin::{demo_snapshot, start_canary};
use egress_references::pypi::canary::Canary;
use egress_suite::collect::Collector;
use egress_suite::common::{h2_smuggling, smuggling};
use egress_suite::facts::{ControlFacts, Controls};
use egress_suite::judge::{Judge, Verdict};
use egress_suite::{ManifestSource, Plan};
use egress_testca::TestCa;
use egress_transcript::{Client, Limits, Listen};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Facts(Controls);

impl ControlFacts for Facts {
    fn status(&self, control: &str) -> Status {
        self.0.status(control)
    }
    fn served_artifact(&self) -> Option<Url> {
        None
    }
}

fn plan(url: &Url, canary: &Canary) -> Plan<()> {
    Plan {
        index_url: url.to_string(),
        packages: (),
        present_source: "test".into(),
        upstream: Some(canary.plan()),
        manifest: ManifestSource::WellKnown,
        allowed_signers: false,
        destructive: false,
        expect: Default::default(),
    }
}

fn judge(plan: &Plan<()>, rec: &ProbeRecord) -> Verdict {
    let facts = Facts(Controls(vec![("C.project-html".into(), Status::Pass)]));
    let j = Judge {
        plan,
        facts: &facts,
        records: std::slice::from_ref(rec),
    };
    h2_smuggling::judge(&j, rec, "C.project-html")
}

/// Collects against `url` (with `canary` as the controlled upstream) and
/// judges the record, then judges it again from its JSON form.
fn run(url: &Url, cacert: Option<&Path>, canary: &Canary) -> (Verdict, ProbeRecord) {
    let limits = Limits {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        deadline: Duration::from_secs(10),
        ..Limits::default()
    };
    let client = Client::new(url.clone(), limits, cacert).unwrap();
    let plan = plan(url, canary);
    let c = Collector {
        client: &client,
        plan: &plan,
        upstream: Some(canary),
        allowed_signers: None,
        fresh: "ecm0000000000000000",
    };
    let listen = Listen {
        quiet: Duration::from_millis(500),
        ..Listen::default()
    };
    let hidden = smuggling::Hidden {
        path: "/simple/ec-present/".into(),
        accept: "text/html",
        bare_control: false,
    };
    let ev = h2_smuggling::collect_with(&c, Some(&hidden), listen);
    let mut rec = ProbeRecord {
        id: "P3.h2-smuggling".into(),
        status: Status::Inconclusive,
        reason: String::new(),
        exchanges: ev.exchanges,
        observations: ev.observations,
    };
    let v = judge(&plan, &rec);
    (rec.status, rec.reason) = v.clone();
    let back: ProbeRecord = serde_json::from_str(&serde_json::to_string(&rec).unwrap()).unwrap();
    assert_eq!(judge(&plan, &back), v, "re-derived from the record");
    (v, rec)
}

fn mirror(canary: &Canary) -> egress_mirror::Mirror {
    egress_mirror::Mirror::new(Arc::new(demo_snapshot(canary).unwrap()))
}

#[test]
fn the_mirror_over_https_refuses_every_case() {
    let t = Instant::now();
    let dir = common::tmpdir("egress-h2-smuggling-https");
    let ca = TestCa::new(&dir);
    let canary = start_canary().unwrap();
    let tls = egress_mirror::tls::load(&ca.server.cert, &ca.server.key).unwrap();
    let server = egress_mirror::serve_mirror_tls(mirror(&canary), "127.0.0.1:0", tls).unwrap();
    let url = Url::parse(&format!(
        "https://localhost:{}/simple/",
        server.addr().port()
    ))
    .unwrap();
    let ((status, reason), rec) = run(&url, Some(&ca.ca_cert), &canary);
    for ex in &rec.exchanges {
        eprintln!("{}: {}", ex.label, ex.summary());
    }
    assert_eq!(status, Status::Pass, "{reason}");
    assert!(reason.contains("HTTP/2 by ALPN"), "{reason}");
    assert!(reason.contains("none reached the upstream"), "{reason}");
    assert_eq!(
        rec.exchanges.len(),
        1 + egress_model::smuggling::H2_CORPUS.len()
    );
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plain_http_mirror_is_skipped_with_its_answer_to_the_preface() {
    let canary = start_canary().unwrap();
    let server = egress_mirror::serve_mirror(mirror(&canary), "127.0.0.1:0").unwrap();
    let url = Url::parse(&format!("{}/simple/", server.base_url())).unwrap();
    let ((status, reason), rec) = run(&url, None, &canary);
    assert_eq!(status, Status::Skipped, "{reason}");
    assert!(
        reason.contains("answered the HTTP/2 preface with \"HTTP/1.1 505"),
        "{reason}"
    );
    // Only the control was sent.
    assert_eq!(rec.exchanges.len(), 1);
}

fn behind_front(fault: Fault, canary: &Canary) -> (H2Front, egress_http::ServerHandle, Url) {
    let server = egress_mirror::serve_mirror(mirror(canary), "127.0.0.1:0").unwrap();
    let mut front = H2Front::bind();
    front.serve(server.addr(), fault);
    let url = Url::parse(&format!("{}/simple/", front.base_url())).unwrap();
    (front, server, url)
}

#[test]
fn an_h2c_front_relaying_authority_fails_naming_the_case() {
    let canary = start_canary().unwrap();
    let (_front, _server, url) = behind_front(Fault::RoutesByAuthority, &canary);
    let ((status, reason), _) = run(&url, None, &canary);
    assert_eq!(status, Status::Fail, "{reason}");
    assert!(
        reason.contains("h2-authority-host-mismatch (:authority naming the upstream, host naming the target): GET /simple/ec-present/?ec=ecm"),
        "{reason}"
    );
    assert!(reason.contains("was answered 200 on stream 3"), "{reason}");
    assert!(
        reason.contains("its token reached the upstream as GET /simple/ec-present/?ec=ecm"),
        "{reason}"
    );
    assert!(reason.contains("h2c prior knowledge"), "{reason}");
}

#[test]
fn a_correct_h2c_front_passes_and_one_that_serves_nothing_does_not() {
    let canary = start_canary().unwrap();
    let (_front, _server, url) = behind_front(Fault::None, &canary);
    let ((status, reason), _) = run(&url, None, &canary);
    assert_eq!(status, Status::Pass, "{reason}");
    assert!(reason.contains("reset PROTOCOL_ERROR×"), "{reason}");
    let (_front, _server, url) = behind_front(Fault::NotFound, &canary);
    let ((status, reason), _) = run(&url, None, &canary);
    assert_eq!(status, Status::Inconclusive, "{reason}");
    assert!(reason.contains("were answered [404, 404]"), "{reason}");
}
