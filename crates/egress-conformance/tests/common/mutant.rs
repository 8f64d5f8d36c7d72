//! What the PyPI and npm mutant tests share: reading and rewriting the
//! wrapped mirror's responses, and the verdicts every mutant run must meet.

use egress_http::{Body, Reply, Response};
use egress_model::Status;
use egress_suite::Report;
use std::io::Read;

/// The body of a response of the wrapped (memory-backed) mirror.
pub(crate) fn body_of(r: &Response) -> Vec<u8> {
    match &r.body {
        Body::Empty => Vec::new(),
        Body::Bytes(b) => b.clone(),
        Body::Shared(b) => b.to_vec(),
        Body::File(f, len) => {
            // The mutant rewrites the body, so reading it up here is fine.
            let mut out = Vec::new();
            let _ = (&**f).take(*len).read_to_end(&mut out);
            out
        }
        // Sealed bodies come only from a mirror serving a directory; the
        // mutants wrap one serving from memory.
        Body::Sealed(_) => unreachable!("a memory-backed mirror has no sealed bodies"),
    }
}

/// A fleet whose replicas serve two snapshots behind one balancer: every
/// other answer (by `count`) names another snapshot in `X-Egress-Snapshot`,
/// as the replica serving it would.
pub(crate) fn other_replica(count: &std::sync::atomic::AtomicUsize, mut r: Response) -> Reply {
    if count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 2 == 1 {
        for (name, value) in &mut r.headers {
            if name.eq_ignore_ascii_case("x-egress-snapshot") {
                *value = "9a7e".repeat(16);
            }
        }
    }
    Reply::Response(r)
}

/// `r` with another body; its validator no longer holds, so it goes.
pub(crate) fn with_body(mut r: Response, body: Vec<u8>) -> Reply {
    r.body = Body::Bytes(body);
    r.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("etag"));
    Reply::Response(r)
}

/// The verdicts re-derive from the evidence for every mutant too.
pub(crate) fn assert_reverifies(report: &Report, kind: &str) {
    let diffs = egress_suite::verify(report);
    assert!(diffs.is_empty(), "verify disagrees for {kind}: {diffs:?}");
}

/// `probe` failed on mutant `kind`, and so did its predicate and the run.
pub(crate) fn assert_fails(report: &Report, kind: &str, probe: &str) {
    let rec = report.probe(probe).expect("sub-probe in report");
    assert_eq!(
        rec.status,
        Status::Fail,
        "{probe} on mutant {kind}: {} {}",
        rec.status,
        rec.reason
    );
    let predicate = probe.split('.').next().unwrap_or_default();
    assert_eq!(
        report.predicate(predicate).map(|p| p.status),
        Some(Status::Fail)
    );
    assert_eq!(report.exit_code(), 1);
}

/// The unmodified wrapper passes every sub-probe, but `P3.h2-smuggling`,
/// which it skips: it serves plain http and no h2c.
pub(crate) fn assert_all_pass(report: &Report) {
    for p in &report.probes {
        if skipped_for_plain_http(p) || skipped_without_times(p) {
            continue;
        }
        assert_eq!(p.status, Status::Pass, "{}: {}", p.id, p.reason);
    }
    assert_eq!(report.exit_code(), 0);
}

/// The other snapshot's creation time: a mirror started on another
/// snapshot serves the same content under another ID.
pub(crate) const OTHER_CREATED: &str = "2026-02-02T00:00:00Z";

/// The wrapped mirror's attestor for mutant `kind` serving `snapshot`: the
/// reference's (certified by the demonstration key), or one whose
/// certificate is missing, for another instance key, or by a key the lab
/// does not have.
pub(crate) fn attestor_for(
    kind: &str,
    snapshot: egress_model::Sha256Digest,
) -> egress_mirror::Attestor {
    use egress_signing::{Certificate, InstanceKey, SigningKey};
    let lab = egress_references::builtin::demo_key();
    let plain = || {
        egress_mirror::Attestor::new(
            InstanceKey::generate().expect("instance key"),
            egress_mirror::own_binary_sha256().expect("own binary"),
            "NOT confined: a mutant",
        )
    };
    let cert = |by: &SigningKey, key: &egress_signing::PublicKey| {
        Certificate::issue(by, key, snapshot).to_text().into_bytes()
    };
    match kind {
        "attest-uncertified-key" => plain(),
        "attest-wrong-certificate" => {
            let other = InstanceKey::generate().expect("instance key");
            plain().with_certificate(cert(&lab, &other.public()))
        }
        "attest-foreign-certificate" => {
            let a = plain();
            let someone = SigningKey::from_seed([7; 32], "someone-else");
            let bytes = cert(&someone, &a.public());
            a.with_certificate(bytes)
        }
        _ => egress_references::builtin::demo_attestor(snapshot).expect("attestor"),
    }
}

/// What the replaying and the other-snapshot mutants keep.
#[derive(Default)]
pub(crate) struct AttestState {
    /// The first attestation served, replayed for every later nonce.
    first: std::sync::Mutex<Option<Vec<u8>>>,
    /// An attested mirror of another snapshot, which answers the nonces.
    pub(crate) other: std::sync::OnceLock<egress_mirror::Mirror>,
}

/// The answer of attestation mutant `kind` to an attestation request,
/// given the wrapped mirror's own answer `inner`; `None` when the kind does
/// not touch this request.
pub(crate) fn attest_answer(
    kind: &str,
    state: &AttestState,
    req: &egress_http::Request,
    inner: impl FnOnce(egress_http::Request) -> Response,
) -> Option<Reply> {
    use egress_http::Handler as _;
    if !req.path().starts_with(egress_snapshot::well_known::ATTEST) {
        return None;
    }
    match kind {
        "attest-replayed-nonce" => {
            let r = inner(req.clone());
            let body = body_of(&r);
            let mut first = state.first.lock().unwrap_or_else(|p| p.into_inner());
            let replay = first.get_or_insert(body).clone();
            Some(with_body(r, replay))
        }
        "attest-another-snapshot" => state.other.get().map(|m| m.handle(req.clone())),
        _ => None,
    }
}

/// `P3.h2-smuggling` on a target over plain http that does not speak h2c
/// (the reference mirror answers the preface 505): SKIPPED, saying so.
pub(crate) fn skipped_for_plain_http(p: &egress_model::ProbeRecord) -> bool {
    p.id == "P3.h2-smuggling"
        && p.status == Status::Skipped
        && p.reason.contains("does not speak HTTP/2")
}

/// `P5.cutoff` on a target whose snapshot records no upload time and no
/// cutoff (a kit of local files, the canary's own PyPI pages) or that has
/// no manifest at all (a caching proxy): nothing to hold its pages to, so
/// SKIPPED, saying so, never PASS.
///
/// Likewise `P5.chain` on a snapshot that is no layer (it names no parent),
/// or on a target with no manifest: no chain is claimed, so SKIPPED, saying
/// so, never PASS.
/// And `P5.run-wide-snapshot` against a target whose answers name no
/// snapshot (every mirror but egress-mirror): nothing to compare, SKIPPED.
pub(crate) fn skipped_without_times(p: &egress_model::ProbeRecord) -> bool {
    let cutoff = p.id == "P5.cutoff"
        && (p.reason.contains("records neither a cutoff") || p.reason.starts_with("no manifest"));
    let chain = p.id == "P5.chain"
        && (p.reason.starts_with("the snapshot is not a layer")
            || p.reason.starts_with("no manifest"));
    let unnamed = p.id == "P5.run-wide-snapshot"
        && p.reason
            .starts_with("no answer names the snapshot it came from");
    p.status == Status::Skipped && (cutoff || chain || unnamed)
}

/// The `MANIFEST` and `SNAPSHOT.json` of `snapshot` made to claim that it
/// is a layer on a parent whose evidence nobody serves (both recomputed, so
/// P5.manifest still passes): P5.chain's gap.
pub(crate) fn claimed_layer(snapshot: &egress_snapshot::Snapshot) -> (String, String) {
    use egress_snapshot::manifest::SNAPSHOT_JSON;
    let mut doc = snapshot.doc.clone();
    doc.layer = Some(egress_snapshot::Layer {
        parent: egress_model::Sha256Digest::of(b"a parent nobody serves"),
        parent_snapshot_json: egress_model::Sha256Digest::of(b"its SNAPSHOT.json"),
        depth: 1,
        removed: Vec::new(),
    });
    let doc_bytes = doc.to_canonical_json();
    let mut manifest = egress_snapshot::Manifest::new();
    for (path, digest) in snapshot.manifest.entries() {
        if path != SNAPSHOT_JSON {
            manifest.insert(path, digest).expect("entry");
        }
    }
    manifest
        .insert(SNAPSHOT_JSON, egress_model::Sha256Digest::of(&doc_bytes))
        .expect("entry");
    (
        manifest.render(),
        String::from_utf8(doc_bytes).expect("JSON is UTF-8"),
    )
}
