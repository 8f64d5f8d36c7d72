//! P5 sub-probes every protocol shares: one snapshot, one manifest. The
//! manifest and its signature wherever the plan says, and the checks of
//! served bytes against SNAPSHOT.json and MANIFEST.

use crate::collect::{Collector, Evidence};
use crate::facts::success_body;
use crate::facts::{final_of, find, ControlFacts};
use crate::judge::{fail, inconclusive, pass, skipped, Judge, Verdict};
use crate::plan::ManifestSource;
use egress_model::{BodyEnd, Observation, ProbeRecord, Sha256Digest, Url, WireBytes};
use egress_snapshot::manifest::ManifestError;
use egress_snapshot::manifest::SNAPSHOT_JSON;
use egress_snapshot::{well_known, Manifest, SnapshotDoc};

const MANIFEST: &str = "MANIFEST";

const SIG: &str = "MANIFEST.sig";

const SIGNERS: &str = "allowed_signers";

pub fn input(name: &str, bytes: Vec<u8>) -> Observation {
    Observation::Input {
        name: name.to_string(),
        bytes: WireBytes(bytes),
    }
}

/// Fetches a document from any origin (a `--manifest` URL may live elsewhere).
fn fetch<P>(c: &Collector<P>, label: &str, url: &Url) -> egress_model::Exchange {
    if url.same_origin(c.client.base()) {
        return c.get(label, url, None);
    }
    match egress_transcript::Client::new(url.clone(), *c.client.limits(), None) {
        Ok(client) => client.get(label, url.path_and_query(), None),
        Err(e) => egress_model::Exchange {
            label: label.to_string(),
            peer: url.authority(),
            request: WireBytes::default(),
            response: None,
            error: Some(e.to_string()),
            elapsed_ms: 0,
            after: None,
            h2: None,
        },
    }
}

/// Collects `name` (a sibling of the manifest) wherever the plan says the manifest is.
fn sibling<P>(c: &Collector<P>, ev: &mut Evidence, name: &str, well_known_path: &str) {
    let Ok(index) = c.plan.index() else { return };
    match &c.plan.manifest {
        ManifestSource::WellKnown => ev.push(c.get(name, &index.with_path(well_known_path), None)),
        ManifestSource::File(path) => {
            let p = std::path::Path::new(path).with_file_name(name);
            match std::fs::read(&p) {
                Ok(bytes) => ev.observations.push(input(name, bytes)),
                Err(_) => ev.push(c.get(name, &index.with_path(well_known_path), None)),
            }
        }
        ManifestSource::Url(u) => {
            if let Ok(url) = Url::parse(u).and_then(|u| u.join(name)) {
                ev.push(fetch(c, name, &url));
            }
        }
    }
}

pub fn collect_manifest<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    match &c.plan.manifest {
        ManifestSource::WellKnown => {
            ev.push(c.get(MANIFEST, &index.with_path(well_known::MANIFEST), None))
        }
        ManifestSource::File(path) => match std::fs::read(path) {
            Ok(bytes) => ev.observations.push(input(MANIFEST, bytes)),
            Err(e) => ev
                .observations
                .push(input(&format!("{MANIFEST} (unreadable: {e})"), Vec::new())),
        },
        ManifestSource::Url(u) => {
            if let Ok(url) = Url::parse(u) {
                ev.push(fetch(c, MANIFEST, &url));
            }
        }
    }
    sibling(c, &mut ev, SNAPSHOT_JSON, well_known::SNAPSHOT_JSON);
    ev
}

/// A named document from a record: a recorded input, or a 2xx body.
pub fn document<'a>(rec: &'a ProbeRecord, name: &str) -> Option<&'a [u8]> {
    rec.observations
        .iter()
        .find_map(|o| match o {
            Observation::Input { name: n, bytes } if n == name => Some(bytes.as_bytes()),
            _ => None,
        })
        .or_else(|| find(rec, name).and_then(success_body))
}

/// Why a recorded manifest and snapshot document do not stand together.
#[derive(Debug, thiserror::Error)]
pub enum ManifestProblem {
    #[error("no manifest: {0}")]
    NotServed(String),
    #[error("no manifest was read")]
    NotRead,
    #[error(transparent)]
    Parse(#[from] ManifestError),
    #[error("SNAPSHOT.json could not be read")]
    NoSnapshotDoc,
    #[error("the manifest does not list SNAPSHOT.json")]
    SnapshotDocUnlisted,
    #[error("SNAPSHOT.json hashes to {:.16}…, the manifest says {:.16}…", .actual.to_hex(), .listed.to_hex())]
    SnapshotDocDigest {
        actual: Sha256Digest,
        listed: Sha256Digest,
    },
    #[error("SNAPSHOT.json serves {0} from a blob the manifest does not list")]
    UnlistedBlob(String),
}

/// What a served-in-manifest judge compares the served content with: the
/// verified manifest and snapshot document of `P5.manifest`, and the
/// target's origin (`url` names the plan's URL in the reason); or the
/// verdict that ends the judging: `control` has not passed, or there is
/// nothing verified to compare with.
pub fn manifest_to_compare<P, F: ControlFacts>(
    j: &Judge<P, F>,
    control: &str,
    url: &str,
) -> Result<(Manifest, SnapshotDoc, Url), Verdict> {
    if let Some(v) = j.require(control) {
        return Err(v);
    }
    let Some(mrec) = j.record("P5.manifest") else {
        return Err(inconclusive("P5.manifest was not run"));
    };
    let (manifest, doc, _) = verified_manifest(mrec)
        .map_err(|e| inconclusive(format!("no verified manifest to compare with: {e}")))?;
    let origin = j
        .origin()
        .ok_or_else(|| inconclusive(format!("the plan's {url} URL does not parse")))?;
    Ok((manifest, doc, origin))
}

/// The manifest and snapshot document, checked against each other.
pub fn verified_manifest(
    rec: &ProbeRecord,
) -> Result<(Manifest, SnapshotDoc, Sha256Digest), ManifestProblem> {
    let bytes = document(rec, MANIFEST).ok_or_else(|| match find(rec, MANIFEST) {
        Some(ex) => ManifestProblem::NotServed(ex.summary()),
        None => ManifestProblem::NotRead,
    })?;
    let manifest = Manifest::parse(bytes)?;
    let id = Sha256Digest::of(bytes);
    let doc_bytes = document(rec, SNAPSHOT_JSON).ok_or(ManifestProblem::NoSnapshotDoc)?;
    let listed = manifest
        .get(SNAPSHOT_JSON)
        .ok_or(ManifestProblem::SnapshotDocUnlisted)?;
    let actual = Sha256Digest::of(doc_bytes);
    if listed != actual {
        return Err(ManifestProblem::SnapshotDocDigest { actual, listed });
    }
    let doc = SnapshotDoc::parse(doc_bytes)?;
    if let Some(e) = doc.served.iter().find(|e| !manifest.has_blob(&e.sha256)) {
        return Err(ManifestProblem::UnlistedBlob(e.path.clone()));
    }
    Ok((manifest, doc, id))
}

/// P5.manifest once `control` (the route shape the manifest's path shares
/// with content) has passed: a missing manifest is then a failure.
pub fn manifest_verdict<P, F: ControlFacts>(
    j: &Judge<P, F>,
    rec: &ProbeRecord,
    control: &str,
) -> Verdict {
    if let Some(v) = j.require(control) {
        return v;
    }
    match verified_manifest(rec) {
        Ok((m, doc, id)) => pass(format!(
            "snapshot {:.16}…: {} manifest entries, SNAPSHOT.json digest recomputes, {} served paths",
            id.to_hex(),
            m.len(),
            doc.served.len()
        )),
        Err(e) => fail(e.to_string()),
    }
}

pub fn collect_signature<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    let mut ev = Evidence::default();
    sibling(c, &mut ev, SIG, well_known::SIGNATURE);
    if let Some(signers) = &c.allowed_signers {
        ev.observations.push(input(SIGNERS, signers.clone()));
    }
    ev
}

pub fn judge_signature<P, F: ControlFacts>(j: &Judge<P, F>, rec: &ProbeRecord) -> Verdict {
    let Some(signers) = document(rec, SIGNERS) else {
        return skipped("no --allowed-signers given: a signature checked against a key the mirror itself publishes proves nothing");
    };
    let Some(mrec) = j.record("P5.manifest") else {
        return inconclusive("P5.manifest was not run");
    };
    let Some(manifest) = document(mrec, MANIFEST) else {
        return fail("there is no manifest to verify a signature over");
    };
    let Some(sig) = document(rec, SIG) else {
        return fail(match find(rec, SIG) {
            Some(ex) => format!("no signature: {}", ex.summary()),
            None => "no signature was found beside the manifest".to_string(),
        });
    };
    let allowed = match egress_signing::AllowedSigners::parse(&String::from_utf8_lossy(signers)) {
        Ok(a) => a,
        Err(e) => return inconclusive(format!("the given allowed signers do not parse: {e}")),
    };
    match egress_signing::verify(
        &String::from_utf8_lossy(sig),
        egress_signing::SNAPSHOT_NAMESPACE,
        manifest,
        &allowed,
    ) {
        Ok(v) => pass(format!(
            "the manifest's signature verifies: signed by {} ({})",
            v.principal, v.fingerprint
        )),
        Err(e) => fail(format!("the manifest's signature does not verify: {e}")),
    }
}

/// Checks one answer against SNAPSHOT.json and MANIFEST: `Ok(Some(path))`
/// when it served its path's listed bytes whole, `Ok(None)` when it served
/// nothing, the verdict otherwise. Shared by PyPI and npm.
pub fn served_as_listed(
    ex: &egress_model::Exchange,
    doc: &SnapshotDoc,
    manifest: &Manifest,
) -> Result<Option<String>, Verdict> {
    let Some(r) = ex.response.as_ref().filter(|r| r.is_success()) else {
        return Ok(None);
    };
    if r.body_end != BodyEnd::Complete {
        return Err(inconclusive(format!(
            "{} did not arrive whole: {}",
            ex.request_target(),
            ex.summary()
        )));
    }
    let target = ex.request_target();
    let path = target.split('?').next().unwrap_or_default();
    let entries: Vec<_> = doc.served.iter().filter(|e| e.path == path).collect();
    if entries.is_empty() {
        return Err(fail(format!(
            "{path} is served but SNAPSHOT.json does not list it"
        )));
    }
    if !entries.iter().any(|e| e.sha256 == r.body_sha256) {
        return Err(fail(format!(
            "{path} served bytes hashing to {:.16}…, which SNAPSHOT.json does not list for it",
            r.body_sha256.to_hex()
        )));
    }
    if !manifest.has_blob(&r.body_sha256) {
        return Err(fail(format!(
            "{path} served a blob the manifest does not list"
        )));
    }
    Ok(Some(path.to_string()))
}

/// A resource whose whole bytes differ between two reads of it.
pub struct Changed<'a> {
    pub what: &'a str,
    pub first: Sha256Digest,
    pub second: Sha256Digest,
}

/// Each of `whats`, read as `"{first}: {what}"` and then as
/// `"{second}: {what}"` (whole 2xx bodies; a resource not served whole both
/// times is not compared): how many were compared when all kept their
/// bytes, or the first that did not.
pub fn compare_reads<'a>(
    rec: &ProbeRecord,
    first: &str,
    second: &str,
    whats: &[&'a str],
) -> Result<usize, Changed<'a>> {
    let mut compared = 0;
    for what in whats {
        let (Some(a), Some(b)) = (
            whole_digest(rec, &format!("{first}: {what}")),
            whole_digest(rec, &format!("{second}: {what}")),
        ) else {
            continue;
        };
        if a != b {
            return Err(Changed {
                what,
                first: a,
                second: b,
            });
        }
        compared += 1;
    }
    Ok(compared)
}

/// The digest of a whole 2xx body at the end of a (same-origin) redirect
/// chain; `None` when nothing whole was served.
pub fn whole_digest(rec: &ProbeRecord, label: &str) -> Option<Sha256Digest> {
    final_of(rec, label)
        .and_then(|e| e.response.as_ref())
        .filter(|r| r.is_success() && r.body_end == BodyEnd::Complete)
        .map(|r| r.body_sha256)
}

pub fn mutation(rec: &ProbeRecord) -> Option<(&str, Option<Sha256Digest>, Sha256Digest)> {
    rec.observations.iter().find_map(|o| match o {
        Observation::UpstreamMutation {
            filename,
            before,
            after,
            ..
        } => Some((filename.as_str(), *before, *after)),
        _ => None,
    })
}

/// Why a P5 mutation has no [`mutation`] observation: `what` (e.g. "the
/// upstream did not publish a new version"), with the upstream's refusal
/// recorded by the collector (`mutation failed: ...`) when there is one, so
/// that the operator reads what to do (a standalone canary says how to
/// make the snapshot hold a package it serves).
pub fn not_mutated(rec: &ProbeRecord, what: &str) -> String {
    let failure = rec.observations.iter().find_map(|o| match o {
        Observation::Input { name, .. } => name.strip_prefix("mutation failed: "),
        _ => None,
    });
    match failure {
        Some(f) => format!("{what}: {f}"),
        None => what.to_string(),
    }
}

/// P5.stable-bytes over other sub-probes' repeated reads: each `(id,
/// before, again)` names a record whose `"{before}: X"` reads were repeated
/// as `"{again}: X"` with nothing done in between (P6.effect's reads before
/// the write attempts). A resource that changed between them is unstable on
/// its own: the FAIL names it and the record. Shared by PyPI and npm.
pub fn changed_without_cause<P, F: ControlFacts>(
    j: &Judge<P, F>,
    reads: &[(&str, &str, &str)],
) -> Option<Verdict> {
    reads.iter().find_map(|(id, before, again)| {
        let rec = j.record(id)?;
        let changed = crate::common::writes::changed_between(rec, before, again);
        changed.first().map(|first| {
            fail(format!(
                "{id}: the {first}, read twice in a row with nothing done in between"
            ))
        })
    })
}
