//! P5.chain, every protocol: a layer's chain, as the mirror serves it.
//!
//! A layer (`snapshot build --base`) signs its parent's ID and
//! `SNAPSHOT.json` digest, and serves every ancestor's evidence under
//! `/.well-known/egress-mirror/chain/<id>/` (see `egress_snapshot::chain`).
//! The collector reads that evidence down the chain; the judge re-derives
//! the chain from the recorded bodies alone with the same
//! [`egress_snapshot::chain::walk`] that `snapshot verify` runs.

use crate::collect::{Collector, Evidence};
use crate::common::snapshot::{document, input, verified_manifest, ManifestProblem};
use crate::facts::{find, success_body, ControlFacts};
use crate::judge::{fail, inconclusive, pass, skipped, Judge, Verdict};
use egress_model::ProbeRecord;
use egress_snapshot::chain::{self, ChainProblem};
use egress_snapshot::SnapshotDoc;

const SIGNERS: &str = "allowed_signers";

/// The deepest chain read; a longer one is judged on what was read.
const MAX_DEPTH: usize = 64;

pub fn collect<P>(c: &Collector<P>, records: &[ProbeRecord]) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(base) = c.plan.index() else { return ev };
    let Some(mrec) = records.iter().find(|r| r.id == "P5.manifest") else {
        return ev;
    };
    let Ok((_, doc, _)) = verified_manifest(mrec) else {
        return ev;
    };
    if let Some(signers) = &c.allowed_signers {
        ev.observations.push(input(SIGNERS, signers.clone()));
    }
    let mut child: SnapshotDoc = doc;
    for _ in 0..MAX_DEPTH {
        let Some(layer) = &child.layer else { break };
        let parent = layer.parent;
        for name in chain::EVIDENCE {
            let path = chain::evidence_path(&parent, name);
            ev.push(c.get(&path, &base.with_path(&path), None));
        }
        let doc_path = chain::evidence_path(&parent, "SNAPSHOT.json");
        let next = ev
            .exchanges
            .iter()
            .rev()
            .find(|e| e.label == doc_path)
            .and_then(success_body)
            .and_then(|body| SnapshotDoc::parse(body).ok());
        match next {
            Some(d) => child = d,
            None => break,
        }
    }
    ev
}

pub fn judge<P, F: ControlFacts>(j: &Judge<P, F>, rec: &ProbeRecord, control: &str) -> Verdict {
    let Some(mrec) = j.record("P5.manifest") else {
        return inconclusive("P5.manifest was not run");
    };
    let (_, doc, id) = match verified_manifest(mrec) {
        Ok(v) => v,
        // No chain is claimed (P5.manifest's finding).
        Err(e @ (ManifestProblem::NotServed(_) | ManifestProblem::NotRead)) => {
            return skipped(format!("no manifest, so no chain to check: {e}"))
        }
        Err(e) => return inconclusive(format!("no verified manifest to read a chain from: {e}")),
    };
    let Some(layer) = &doc.layer else {
        return skipped("the snapshot is not a layer: its SNAPSHOT.json names no parent");
    };
    let signers = match document(rec, SIGNERS) {
        None => None,
        Some(bytes) => match egress_signing::AllowedSigners::parse(&String::from_utf8_lossy(bytes))
        {
            Ok(a) => Some(a),
            Err(e) => return inconclusive(format!("the given allowed signers do not parse: {e}")),
        },
    };
    match chain::walk(id, &doc, signers.as_ref(), |path| {
        document(rec, path).map(<[u8]>::to_vec)
    }) {
        Ok(ancestors) => {
            let signed = if signers.is_some() {
                let who: Vec<&str> = ancestors
                    .iter()
                    .filter_map(|a| a.signer.as_deref())
                    .collect();
                format!("each signed by the allowed signers ({})", who.join(", "))
            } else {
                "signatures NOT checked (no --allowed-signers)".to_string()
            };
            pass(format!(
                "layer {} of its chain: {} ancestor(s) down to base {:.16}…, each served evidence hashes to the ID its child signed, every layer only adds (or removes with a tombstone), {signed}",
                layer.depth,
                ancestors.len(),
                ancestors.last().map(|a| a.id.to_hex()).unwrap_or_default()
            ))
        }
        Err(problem @ ChainProblem::Gap { .. }) => {
            // A refusal counts only where the same route shape served.
            if let Some(v) = j.require(control) {
                return v;
            }
            let what = match &problem {
                ChainProblem::Gap { parent, .. } => {
                    let path = chain::evidence_path(parent, "MANIFEST");
                    find(rec, &path)
                        .map(|e| format!(" ({})", e.summary()))
                        .unwrap_or_default()
                }
                _ => String::new(),
            };
            fail(format!("{problem}{what}"))
        }
        Err(problem) => fail(problem.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::cutoff::testing::{doc, exchange, manifest_record, plan, Facts};
    use crate::facts::Controls;
    use egress_model::{Observation, Sha256Digest, Status, WireBytes};
    use egress_signing::{AllowedSigners, SigningKey, SNAPSHOT_NAMESPACE};
    use egress_snapshot::manifest::{blob_path, SNAPSHOT_JSON};
    use egress_snapshot::{Layer, Manifest, Tombstone};

    const WHEEL: &str = "/files/aa/a-1.0-py3-none-any.whl";
    const OTHER: &str = "/files/bb/b-1.0-py3-none-any.whl";

    fn manifest_of(d: &SnapshotDoc) -> Vec<u8> {
        let mut m = Manifest::new();
        for e in &d.served {
            m.insert(&blob_path(&e.sha256), e.sha256).unwrap();
        }
        m.insert(SNAPSHOT_JSON, Sha256Digest::of(&d.to_canonical_json()))
            .unwrap();
        m.render().into_bytes()
    }

    /// A base serving `base_files`, a layer on it serving `layer_files`,
    /// and what the layer's mirror answered at each evidence path (`None`:
    /// a 404); judged with signers (of `signer`, or none) and the control.
    struct Case {
        layer_files: Vec<&'static str>,
        removed: Vec<&'static str>,
        answers: [Option<Vec<u8>>; 3],
        signers: Option<SigningKey>,
        control: Status,
    }

    fn base() -> (SnapshotDoc, Vec<u8>, String) {
        let key = SigningKey::from_seed([7; 32], "lab");
        let d = doc(&[(WHEEL, "application/octet-stream")], &[], None);
        let m = manifest_of(&d);
        let sig = key.sign(SNAPSHOT_NAMESPACE, &m);
        (d, m, sig)
    }

    fn case() -> Case {
        let (d, m, sig) = base();
        Case {
            layer_files: vec![WHEEL, OTHER],
            removed: vec![],
            answers: [Some(m), Some(sig.into_bytes()), Some(d.to_canonical_json())],
            signers: Some(SigningKey::from_seed([7; 32], "lab")),
            control: Status::Pass,
        }
    }

    fn judged(c: Case) -> Verdict {
        let (bd, bm, _) = base();
        let served: Vec<(&str, &str)> = c
            .layer_files
            .iter()
            .map(|p| (*p, "application/octet-stream"))
            .collect();
        let mut top = doc(&served, &[], None);
        top.layer = Some(Layer {
            parent: Sha256Digest::of(&bm),
            parent_snapshot_json: Sha256Digest::of(&bd.to_canonical_json()),
            depth: 1,
            removed: c
                .removed
                .iter()
                .map(|p| Tombstone {
                    protocol: "pypi".into(),
                    name: "a".into(),
                    version: "1.0".into(),
                    paths: vec![p.to_string()],
                })
                .collect(),
        });
        let parent = Sha256Digest::of(&bm);
        let mut exchanges = Vec::new();
        for (name, answer) in chain::EVIDENCE.iter().zip(&c.answers) {
            let path = chain::evidence_path(&parent, name);
            exchanges.push(match answer {
                Some(body) => exchange(&path, &path, 200, body),
                None => exchange(&path, &path, 404, b"not found"),
            });
        }
        let mut observations = Vec::new();
        if let Some(k) = &c.signers {
            let line = AllowedSigners::line_for_namespace("lab", &k.public(), SNAPSHOT_NAMESPACE);
            observations.push(Observation::Input {
                name: SIGNERS.into(),
                bytes: WireBytes(format!("{line}\n").into_bytes()),
            });
        }
        let rec = ProbeRecord {
            id: "P5.chain".into(),
            status: Status::Inconclusive,
            reason: String::new(),
            exchanges,
            observations,
        };
        let plan = plan("/simple/", c.signers.is_some());
        let facts = Facts(Controls(vec![("C.index".into(), c.control)]));
        let records = [manifest_record(Some(&top)), rec];
        let judge = Judge {
            plan: &plan,
            facts: &facts,
            records: &records,
        };
        super::judge(&judge, &records[1], "C.index")
    }

    #[test]
    fn a_chain_that_holds_passes_with_its_signer() {
        let (status, reason) = judged(case());
        assert_eq!(status, Status::Pass, "{reason}");
        assert!(reason.contains("lab"), "{reason}");
        let (status, reason) = judged(Case {
            signers: None,
            ..case()
        });
        assert_eq!(status, Status::Pass, "{reason}");
        assert!(reason.contains("NOT checked"), "{reason}");
    }

    #[test]
    fn a_gap_fails_only_where_the_route_shape_served() {
        let gap = || {
            let mut c = case();
            c.answers[0] = None;
            c
        };
        let (status, reason) = judged(gap());
        assert_eq!(status, Status::Fail, "{reason}");
        assert!(
            reason.contains("chain gap") && reason.contains("404"),
            "{reason}"
        );
        let (status, reason) = judged(Case {
            control: Status::Fail,
            ..gap()
        });
        assert_eq!(status, Status::Inconclusive, "{reason}");
    }

    #[test]
    fn forks_and_bad_signatures_fail_and_say_which() {
        // Another MANIFEST served for the parent's ID.
        let mut c = case();
        c.answers[0] = Some(b"0000  SNAPSHOT.json\n".to_vec());
        let (status, reason) = judged(c);
        assert_eq!(status, Status::Fail);
        assert!(
            reason.contains("forked chain") && reason.contains("another MANIFEST"),
            "{reason}"
        );
        // A file of the parent gone without a tombstone.
        let (status, reason) = judged(Case {
            layer_files: vec![OTHER],
            ..case()
        });
        assert_eq!(status, Status::Fail);
        assert!(reason.contains("gone without a tombstone"), "{reason}");
        // ... and with one, the layer holds.
        let (status, reason) = judged(Case {
            layer_files: vec![OTHER],
            removed: vec![WHEEL],
            ..case()
        });
        assert_eq!(status, Status::Pass, "{reason}");
        // The same name with other bytes.
        let (status, reason) = judged(Case {
            layer_files: vec!["/files/cc/a-1.0-py3-none-any.whl"],
            ..case()
        });
        assert_eq!(status, Status::Fail);
        assert!(reason.contains("changed bytes"), "{reason}");
        // Signed by a key the signers do not hold.
        let (status, reason) = judged(Case {
            signers: Some(SigningKey::from_seed([8; 32], "other")),
            ..case()
        });
        assert_eq!(status, Status::Fail);
        assert!(reason.contains("does not verify"), "{reason}");
    }

    #[test]
    fn a_snapshot_that_is_no_layer_is_skipped() {
        let plan_doc = doc(&[(WHEEL, "application/octet-stream")], &[], None);
        let rec = ProbeRecord {
            id: "P5.chain".into(),
            status: Status::Inconclusive,
            reason: String::new(),
            exchanges: Vec::new(),
            observations: Vec::new(),
        };
        let plan = plan("/simple/", false);
        let facts = Facts(Controls(vec![("C.index".into(), Status::Pass)]));
        let records = [manifest_record(Some(&plan_doc)), rec];
        let judge = Judge {
            plan: &plan,
            facts: &facts,
            records: &records,
        };
        let (status, _) = super::judge(&judge, &records[1], "C.index");
        assert_eq!(status, Status::Skipped);
    }
}
