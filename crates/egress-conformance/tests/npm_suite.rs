//! The suite in npm's terms: the built-in npm references discriminate on
//! every predicate, verdicts re-derive offline, and `check --protocol npm`
//! behaves as `check` does for PyPI (exit codes, one-line errors, reports).

mod common;

use common::{run, s, tmpdir};
use egress_model::Status;
use egress_references::builtin;
use egress_references::npm::builtin as npm_builtin;

#[test]
fn every_predicate_discriminates_between_the_npm_references() {
    let (a, b) = npm_builtin::run_npm_both().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(a.plan.protocol(), "npm");
    for sp in egress_suite::npm::TABLE {
        let p = a
            .probe(sp.id)
            .unwrap_or_else(|| panic!("(A) lacks {}", sp.id));
        if common::mutant::skipped_for_plain_http(p) || common::mutant::skipped_without_times(p) {
            continue;
        }
        assert_eq!(p.status, Status::Pass, "(A) {}: {}", p.id, p.reason);
        // Run-wide rules collect nothing: they judge the others' evidence.
        if p.id != "P2.upstream-contact" && !p.id.contains(".run-wide-") {
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
    for c in ["C.packument", "C.abbreviated", "C.scoped", "C.tarball"] {
        assert_eq!(b.probe(c).map(|p| p.status), Some(Status::Pass), "(B) {c}");
    }
    assert!(builtin::references_hold(&a, &b));
    assert!(egress_suite::verify(&a).is_empty());
    assert!(egress_suite::verify(&b).is_empty());
}

#[test]
fn an_edited_npm_report_names_the_changed_verdict() {
    let (_, b) = npm_builtin::run_npm_both().unwrap_or_else(|e| panic!("{e}"));
    // Claim that (B) refused every publish attempt: the evidence says otherwise.
    let mut edited = b.clone();
    let rec = edited
        .probes
        .iter_mut()
        .find(|p| p.id == "P6.publish")
        .expect("P6.publish");
    assert_eq!(rec.status, Status::Fail);
    rec.status = Status::Pass;
    let d = egress_suite::verify(&edited);
    assert!(d.iter().any(|d| d.id == "P6.publish"), "{d:?}");

    // Edit the evidence instead: a publish answered 201 now reads 403.
    let mut edited = b.clone();
    let rec = edited
        .probes
        .iter_mut()
        .find(|p| p.id == "P6.adduser")
        .expect("P6.adduser");
    for ex in &mut rec.exchanges {
        if let Some(r) = &mut ex.response {
            r.status = Some(403);
        }
    }
    let d = egress_suite::verify(&edited);
    assert!(d.iter().any(|d| d.id == "P6.adduser"), "{d:?}");
}

#[test]
fn check_protocol_npm_from_the_command_line() {
    let canary = npm_builtin::start_npm_canary().unwrap_or_else(|e| panic!("{e}"));
    let (mirror, registry) =
        npm_builtin::serve_npm_reference(&canary).unwrap_or_else(|e| panic!("{e}"));
    let registry = registry.to_string();
    let dir = tmpdir("npm-check");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let signers = dir.join("allowed_signers");
    std::fs::write(&signers, builtin::demo_signers()).expect("write");
    let out = dir.join("out");

    // Packages are found in the mirror's SNAPSHOT.json. Every predicate
    // passes but P4: without an upstream the suite controls, no lifecycle
    // script or template can be observed, and P4 says so rather than pass.
    let o = run(&[
        "check",
        &registry,
        "--protocol",
        "npm",
        "--allowed-signers",
        s(&signers),
        "--absent",
        "ec-upstream-only",
        "--verbose",
        "--out",
        s(&out),
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{text}");
    for p in ["P1", "P2", "P3", "P5", "P6"] {
        assert!(
            text.contains(&format!("{p} ")) && !text.contains(&format!("{p} FAIL")),
            "{text}"
        );
    }
    let json: egress_suite::Report =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).expect("report"))
            .expect("json");
    for (pid, _) in egress_suite::PREDICATES {
        let want = if pid == "P4" {
            Status::Inconclusive
        } else {
            Status::Pass
        };
        assert_eq!(
            json.predicate(pid).map(|p| p.status),
            Some(want),
            "{pid}: {text}"
        );
    }
    assert!(
        text.contains("C.scoped") && text.contains("signed by"),
        "{text}"
    );
    let report = out.join("report.json");
    let o = run(&["report", "verify", s(&report)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // A scoped package given explicitly is the scoped control.
    let o = run(&[
        "check",
        &registry,
        "--protocol",
        "npm",
        "--present",
        "ec-present",
        "--present",
        "@ec/scoped",
    ]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains("present: ec-present, @ec/scoped (--present)"),
        "{text}"
    );
    assert!(!text.contains("FAIL"), "{text}");

    // A name npm would never send is a usage error on one line.
    let o = run(&[
        "check",
        &registry,
        "--protocol",
        "npm",
        "--present",
        "../etc",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--present") && err.contains("npm package name"),
        "{err}"
    );

    // A package the mirror does not serve: nothing to compare refusals with.
    let o = run(&[
        "check",
        &registry,
        "--protocol",
        "npm",
        "--present",
        "not-in-the-snapshot",
    ]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    mirror.stop();

    // The caching proxy fails.
    let proxy = egress_references::npm::proxy::NpmCachingProxy::start(
        egress_model::Url::parse(&canary.registry_url()).expect("url"),
    )
    .expect("proxy");
    let o = run(&[
        "check",
        &proxy.registry_url(),
        "--protocol",
        "npm",
        "--present",
        "ec-present",
        "--absent",
        "ec-upstream-only",
    ]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );

    // Dead and refuse-everything targets are inconclusive, never conformant.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let dead = format!("http://127.0.0.1:{port}/");
    let o = run(&[
        "check",
        &dead,
        "--protocol",
        "npm",
        "--present",
        "x",
        "--timeout",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let h = egress_references::hostile::start(egress_references::hostile::Hostile::Everything404)
        .expect("start");
    let o = run(&[
        "check",
        &h.base_url(),
        "--protocol",
        "npm",
        "--present",
        "ec-present",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let _ = std::fs::remove_dir_all(&dir);
}

fn npm_plan(registry: &egress_model::Url) -> egress_suite::Plan<egress_suite::Packages> {
    let name = |s: &str| egress_model::NpmName::new(s).expect("name");
    egress_suite::Plan {
        index_url: registry.to_string(),
        present_source: "--present".into(),
        upstream: None,
        manifest: egress_suite::ManifestSource::WellKnown,
        allowed_signers: false,
        destructive: false,
        expect: Default::default(),
        packages: egress_suite::Packages::Npm(egress_suite::npm::Packages {
            present: vec![name("ec-present")],
            scoped: Some(name("@ec/scoped")),
            absent: vec![name("ec-upstream-only")],
            tripwire: None,
            template: None,
        }),
    }
}

/// The npm suite against a hostile server: every exchange bounded, the
/// run short, the report re-verifiable, and never a conformance verdict.
fn run_npm_hostile(kind: egress_references::hostile::Hostile) {
    use std::time::{Duration, Instant};
    let server = egress_references::hostile::start(kind).expect("start");
    let registry = egress_model::Url::parse(&format!("{}/", server.base_url())).expect("url");
    let limits = egress_transcript::Limits {
        connect_timeout: Duration::from_millis(600),
        idle_timeout: Duration::from_millis(600),
        deadline: Duration::from_millis(600),
        max_head_bytes: 16 * 1024,
        max_body_bytes: 256 * 1024,
        record_bytes: 4096,
    };
    let client = egress_transcript::Client::new(registry.clone(), limits, None).expect("client");
    let start = Instant::now();
    let r = egress_suite::run(egress_suite::Target {
        name: "hostile".into(),
        client,
        plan: npm_plan(&registry),
        upstream: None,
        allowed_signers: None,
    });
    let took = start.elapsed();
    for p in &r.predicates {
        assert_ne!(p.status, Status::Pass, "{kind:?} {}: {}", p.id, p.reason);
    }
    assert_eq!(r.exit_code(), 3, "{kind:?} {:?}", r.predicates);
    assert!(egress_suite::verify(&r).is_empty());
    assert_ne!(r.probe("C.packument").map(|p| p.status), Some(Status::Pass));
    assert!(took < Duration::from_secs(30), "{kind:?} took {took:?}");
    for p in &r.probes {
        for e in &p.exchanges {
            assert!(
                e.elapsed_ms <= 1100,
                "{kind:?} {} {} took {} ms",
                p.id,
                e.label,
                e.elapsed_ms
            );
            if let Some(resp) = &e.response {
                assert!(resp.body_len <= 256 * 1024);
            }
        }
    }
}

#[test]
fn hostile_servers_never_pass_the_npm_suite() {
    use egress_references::hostile::Hostile;
    for kind in [
        Hostile::Everything404,
        Hostile::Everything403,
        Hostile::EndlessBody,
        Hostile::HugeDeclaredLength,
        Hostile::SlowDrip,
        Hostile::Garbage,
        Hostile::Reset,
        Hostile::RedirectLoop,
    ] {
        run_npm_hostile(kind);
    }
}
