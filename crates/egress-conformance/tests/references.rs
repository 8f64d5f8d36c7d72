//! The built-in references: (A) passes every sub-probe, (B) fails every
//! predicate, verdicts re-derive offline, edits are caught, and refusals
//! from servers that refuse everything are never taken for conformance.

use egress_model::{Status, Url};
use egress_references::hostile::{self, Hostile};
use egress_references::pypi::builtin::{self, run_both};
use egress_suite::pypi::{self, PresentSpec};
use egress_suite::{ManifestSource, Packages, Plan, Target};
use std::time::{Duration, Instant};

#[test]
fn every_predicate_discriminates_between_the_references() {
    let (a, b) = run_both().unwrap_or_else(|e| panic!("{e}"));
    for p in &a.probes {
        // (A) serves plain http, without h2c.
        if p.id == "P3.h2-smuggling" {
            assert_eq!(p.status, Status::Skipped, "(A) {}: {}", p.id, p.reason);
            assert!(p.reason.contains("does not speak HTTP/2"), "{}", p.reason);
            continue;
        }
        // (A)'s snapshot is no layer: no chain to check.
        if p.id == "P5.chain" {
            assert_eq!(p.status, Status::Skipped, "(A) {}: {}", p.id, p.reason);
            assert!(p.reason.contains("not a layer"), "{}", p.reason);
            continue;
        }
        assert_eq!(p.status, Status::Pass, "(A) {}: {}", p.id, p.reason);
        // Run-wide rules collect nothing: they judge the others' evidence.
        if !p.id.starts_with("P2.upstream-contact") && !p.id.contains(".run-wide-") {
            assert!(
                !p.exchanges.is_empty() || !p.observations.is_empty(),
                "(A) {} has no evidence",
                p.id
            );
        }
    }
    for (pid, _) in egress_suite::PREDICATES {
        assert_eq!(
            a.predicate(pid).map(|p| p.status),
            Some(Status::Pass),
            "(A) {pid}"
        );
        assert_eq!(
            b.predicate(pid).map(|p| p.status),
            Some(Status::Fail),
            "(B) {pid}"
        );
    }
    // (B)'s controls pass: its failures are failures, not inconclusive.
    for c in ["C.index", "C.project-html", "C.project-json", "C.file"] {
        assert_eq!(b.probe(c).map(|p| p.status), Some(Status::Pass), "(B) {c}");
    }
    assert!(egress_suite::verify(&a).is_empty());
    assert!(egress_suite::verify(&b).is_empty());
    let matrix = egress_suite::render::matrix_text(&[&a, &b]);
    for (pid, name) in egress_suite::PREDICATES {
        let row = matrix
            .lines()
            .find(|l| l.starts_with(&format!("{pid} {name}")))
            .expect("predicate row");
        assert!(row.trim_end().ends_with("yes"), "{row}");
    }
}

#[test]
fn report_verify_names_the_verdict_an_edit_changed() {
    let (a, _) = run_both().unwrap_or_else(|e| panic!("{e}"));
    // Edit the evidence: the mirror now seems to have answered CONNECT.
    let mut edited = a.clone();
    let rec = edited
        .probes
        .iter_mut()
        .find(|p| p.id == "P3.connect")
        .expect("P3.connect");
    let resp = rec.exchanges[0].response.as_mut().expect("response");
    resp.status = Some(200);
    resp.status_line = "HTTP/1.1 200 Connection established".into();
    let diffs = egress_suite::verify(&edited);
    assert!(
        diffs.iter().any(|d| d.id == "P3.connect"
            && d.recorded.0 == Status::Pass
            && d.derived.0 == Status::Fail),
        "{diffs:?}"
    );
    assert!(diffs.iter().any(|d| d.id == "P3"), "{diffs:?}");
    // Edit a verdict: the evidence does not support it.
    let mut edited = a.clone();
    let rec = edited
        .probes
        .iter_mut()
        .find(|p| p.id == "P1.bytes-match")
        .expect("P1.bytes-match");
    rec.status = Status::Fail;
    let diffs = egress_suite::verify(&edited);
    assert_eq!(diffs.len(), 1, "{diffs:?}");
    assert_eq!(diffs[0].id, "P1.bytes-match");
    // Round trip through JSON keeps every verdict derivable.
    let json = egress_suite::render::json(&a);
    let back: egress_suite::Report = serde_json::from_str(&json).expect("parse");
    assert!(egress_suite::verify(&back).is_empty());
}

#[test]
fn two_runs_give_the_same_matrix() {
    let (a1, b1) = run_both().unwrap_or_else(|e| panic!("{e}"));
    let (a2, b2) = run_both().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        egress_suite::render::matrix_text(&[&a1, &b1]),
        egress_suite::render::matrix_text(&[&a2, &b2])
    );
}

fn plan(index: &Url) -> Plan<Packages> {
    Plan {
        index_url: index.to_string(),
        packages: Packages::Pypi(pypi::Packages {
            present: vec![PresentSpec {
                name: "ec-present".parse().expect("name"),
                version: None,
            }],
            absent: vec!["ec-upstream-only".parse().expect("name")],
            sdist_only: None,
            tripwire: None,
            template: None,
        }),
        present_source: "--present".into(),
        upstream: None,
        manifest: ManifestSource::WellKnown,
        allowed_signers: false,
        destructive: false,
        expect: Default::default(),
    }
}

fn tight() -> egress_transcript::Limits {
    egress_transcript::Limits {
        connect_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_millis(300),
        deadline: Duration::from_millis(600),
        max_head_bytes: 16 * 1024,
        max_body_bytes: 256 * 1024,
        record_bytes: 4096,
    }
}

fn run_hostile(kind: Hostile) -> (egress_suite::Report, Duration) {
    let server = hostile::start(kind).expect("start");
    let index = builtin::index_of(&server.base_url()).unwrap_or_else(|e| panic!("{e}"));
    let client = egress_transcript::Client::new(index.clone(), tight(), None).expect("client");
    let start = Instant::now();
    let report = egress_suite::run(Target {
        name: "hostile".into(),
        client,
        plan: plan(&index),
        upstream: None,
        allowed_signers: None,
    });
    (report, start.elapsed())
}

/// A server that refuses everything refuses nothing that counts: no
/// predicate passes, the outcome is inconclusive.
fn assert_never_conformant(report: &egress_suite::Report) {
    for p in &report.predicates {
        assert_ne!(p.status, Status::Pass, "{}: {}", p.id, p.reason);
    }
    assert_eq!(report.exit_code(), 3, "{:?}", report.predicates);
    assert!(egress_suite::verify(report).is_empty());
}

#[test]
fn answering_404_to_everything_is_inconclusive() {
    let (r, _) = run_hostile(Hostile::Everything404);
    assert_never_conformant(&r);
    assert!(r.probes.iter().all(|p| p.status != Status::Pass));
}

#[test]
fn answering_403_to_everything_is_inconclusive() {
    let (r, _) = run_hostile(Hostile::Everything403);
    assert_never_conformant(&r);
    assert!(r.probes.iter().all(|p| p.status != Status::Pass));
}

#[test]
fn an_unreachable_target_is_inconclusive() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let index = Url::parse(&format!("http://127.0.0.1:{port}/simple/")).expect("url");
    let client = egress_transcript::Client::new(index.clone(), tight(), None).expect("client");
    let r = egress_suite::run(Target {
        name: "dead".into(),
        client,
        plan: plan(&index),
        upstream: None,
        allowed_signers: None,
    });
    assert_never_conformant(&r);
    let c = r.probe("C.index").expect("C.index");
    assert!(
        c.exchanges[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("refused")),
        "{:?}",
        c.exchanges[0].error
    );
}

/// Each hostile behaviour ends within its bounds (every exchange ends by the
/// deadline; only the index is fetched before the controls give up), is
/// recorded, and never counts as conformance.
macro_rules! hostile_cases {
    ($($name:ident: $kind:expr;)*) => {$(
        #[test]
        fn $name() {
            let (r, took) = run_hostile($kind);
            assert_never_conformant(&r);
            let index = r.probe("C.index").expect("C.index");
            assert!(!index.exchanges.is_empty());
            assert_ne!(index.status, Status::Pass, "{}", index.reason);
            // Generous bound: every exchange is cut at 600 ms, and most fail fast.
            assert!(took < Duration::from_secs(60), "took {took:?}");
            for p in &r.probes {
                for e in &p.exchanges {
                    assert!(e.elapsed_ms <= 600 + 500, "{} {} took {} ms", p.id, e.label, e.elapsed_ms);
                    if let Some(resp) = &e.response {
                        assert!(resp.body_len <= 256 * 1024);
                        assert!(resp.body_prefix.0.len() <= 4096 + 16 * 1024);
                    }
                }
            }
        }
    )*};
}

hostile_cases! {
    endless_body_is_bounded: Hostile::EndlessBody;
    huge_declared_length_is_bounded: Hostile::HugeDeclaredLength;
    slow_drip_is_bounded: Hostile::SlowDrip;
    garbage_is_bounded: Hostile::Garbage;
    reset_is_bounded: Hostile::Reset;
    redirect_loop_is_bounded: Hostile::RedirectLoop;
}

/// `check` without `--destructive`, as the plan records it: P6.vendor-routes
/// sends only the dictionary's non-destructive routes, the reference still
/// passes, the reason says what was held back, and the report re-derives.
#[test]
fn without_destructive_only_safe_vendor_routes_are_sent() {
    use egress_suite::common::routes::dictionary;
    let canary = builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot = builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let server = egress_mirror::serve(std::sync::Arc::new(snapshot), "127.0.0.1:0").expect("serve");
    let index = builtin::index_of(&server.base_url()).unwrap_or_else(|e| panic!("{e}"));
    let mut plan = builtin::plan_for(&index, &canary, false);
    plan.destructive = false;
    plan.upstream = None;
    let client = egress_transcript::Client::new(index.clone(), tight(), None).expect("client");
    let report = egress_suite::run(Target {
        name: "check without --destructive".into(),
        client,
        plan,
        upstream: None,
        allowed_signers: None,
    });
    let p = report.probe("P6.vendor-routes").expect("record");
    assert_eq!(p.status, Status::Pass, "{}", p.reason);
    assert!(p.reason.contains("give --destructive"), "{}", p.reason);
    let routes = dictionary().unwrap_or_else(|e| panic!("{e}"));
    let sent: Vec<&str> = p
        .exchanges
        .iter()
        .filter_map(|e| e.label.strip_prefix("vendor route "))
        .filter(|l| !l.contains(": "))
        .collect();
    assert!(!sent.is_empty());
    for id in sent {
        let r = routes.iter().find(|r| r.id == id).expect("known route");
        assert!(r.safe, "{id} is destructive but was sent");
    }
    assert!(egress_suite::verify(&report).is_empty());
}

/// In front of a real mirror until the first request that carries one of
/// the suite's marker tokens (`ecm…`, in probes after the controls), then
/// closes that connection and every later one without a byte: a mirror that
/// a payload crashed. With `back_after`, it relays again that long after
/// (a supervisor restarted it), and markers no longer kill it. Returns its
/// port.
fn dying_relay(backend: std::net::SocketAddr, back_after: Option<Duration>) -> u16 {
    use std::io::{Read, Write};
    use std::net::{Shutdown, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let dead = Arc::new(AtomicBool::new(false));
    let died: Arc<std::sync::Mutex<Option<Instant>>> = Arc::default();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let since = *died.lock().expect("lock");
            if let (Some(at), Some(back)) = (since, back_after) {
                if at.elapsed() >= back {
                    dead.store(false, Ordering::SeqCst);
                }
            }
            if dead.load(Ordering::SeqCst) {
                continue; // dropped: closed at once
            }
            let dead = dead.clone();
            let died = died.clone();
            std::thread::spawn(move || {
                let Ok(server) = TcpStream::connect(backend) else {
                    return;
                };
                let (mut c_in, mut s_out) = (client, server);
                let (Ok(mut c_out), Ok(mut s_in)) = (c_in.try_clone(), s_out.try_clone()) else {
                    return;
                };
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut s_in, &mut c_out);
                    let _ = c_out.shutdown(Shutdown::Both);
                });
                let mut buf = [0u8; 16 * 1024];
                while let Ok(n @ 1..) = c_in.read(&mut buf) {
                    let chunk = buf.get(..n).unwrap_or_default();
                    let first = died.lock().expect("lock").is_none();
                    if dead.load(Ordering::SeqCst)
                        || (first && chunk.windows(3).any(|w| w == b"ecm"))
                    {
                        dead.store(true, Ordering::SeqCst);
                        died.lock().expect("lock").get_or_insert_with(Instant::now);
                        let _ = s_out.shutdown(Shutdown::Both);
                        let _ = c_in.shutdown(Shutdown::Both);
                        return;
                    }
                    if s_out.write_all(chunk).is_err() {
                        return;
                    }
                }
                let _ = s_out.shutdown(Shutdown::Write);
            });
        }
    });
    port
}

/// The suite against the reference mirror behind a [`dying_relay`].
fn run_behind_dying_relay(back_after: Option<Duration>) -> egress_suite::Report {
    let canary = builtin::start_canary().unwrap_or_else(|e| panic!("{e}"));
    let snapshot = builtin::demo_snapshot(&canary).unwrap_or_else(|e| panic!("{e}"));
    let server = egress_mirror::serve(std::sync::Arc::new(snapshot), "127.0.0.1:0").expect("serve");
    let backend: std::net::SocketAddr = server
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .expect("addr");
    let port = dying_relay(backend, back_after);
    let index =
        builtin::index_of(&format!("http://127.0.0.1:{port}")).unwrap_or_else(|e| panic!("{e}"));
    let client = egress_transcript::Client::new(index.clone(), tight(), None).expect("client");
    egress_suite::run(Target {
        name: "behind a relay that dies".into(),
        client,
        plan: plan(&index),
        upstream: None,
        allowed_signers: None,
    })
}

/// A mirror that stops answering after the controls (a payload crashed it)
/// refuses nothing from then on: no sub-probe whose requests all went
/// unanswered is a PASS, each such one says the target was not shown
/// serving after them, and the verdicts re-derive.
#[test]
fn a_target_that_dies_mid_run_refuses_nothing() {
    let report = run_behind_dying_relay(None);
    let control = report.probe("C.index").expect("C.index");
    assert_eq!(control.status, Status::Pass, "{}", control.reason);
    let mut silent = 0;
    for p in &report.probes {
        let all_silent =
            !p.exchanges.is_empty() && p.exchanges.iter().all(|e| e.status().is_none());
        if !all_silent || p.id.starts_with("C.") {
            continue;
        }
        silent += 1;
        assert_ne!(p.status, Status::Pass, "{}: {}", p.id, p.reason);
    }
    assert!(
        silent >= 5,
        "the relay did not die: {silent} silent sub-probes"
    );
    let webdav = report.probe("P6.webdav").expect("P6.webdav");
    assert_eq!(webdav.status, Status::Inconclusive, "{}", webdav.reason);
    assert!(
        webdav.reason.contains("not served right after them"),
        "{}",
        webdav.reason
    );
    assert!(egress_suite::verify(&report).is_empty());
}

/// A mirror that a payload stops and a supervisor restarts a second later:
/// the sub-probe that stopped it is INCONCLUSIVE and says it came back, and
/// the sub-probes after it measure the running mirror again (they PASS, as
/// against the mirror itself).
#[test]
fn a_target_that_comes_back_is_measured_again() {
    let report = run_behind_dying_relay(Some(Duration::from_secs(1)));
    let stopped: Vec<_> = report
        .probes
        .iter()
        .filter(|p| p.reason.contains("it served again later"))
        .collect();
    assert_eq!(
        stopped.len(),
        1,
        "{:?}",
        report
            .probes
            .iter()
            .map(|p| (&p.id, &p.reason))
            .collect::<Vec<_>>()
    );
    assert_eq!(stopped[0].status, Status::Inconclusive);
    let webdav = report.probe("P6.webdav").expect("P6.webdav");
    assert_eq!(webdav.status, Status::Pass, "{}", webdav.reason);
    assert!(egress_suite::verify(&report).is_empty());
}
