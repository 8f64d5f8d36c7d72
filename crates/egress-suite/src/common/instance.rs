//! P5 sub-probes about the running instance, shared by every protocol:
//!
//! - `P5.expected-snapshot`: the mirror serves exactly the snapshot whose
//!   signed manifest has the ID `check --expect-snapshot` names;
//! - `P5.instance-attestation`: the instance answers fresh nonces with
//!   statements signed by a key the lab certified for the snapshot it
//!   serves (see `egress_signing::instance` and docs/threat-model.md).
//!
//! The collectors record the nonces they drew as `input`, so the judges
//! (pure functions of the record) re-derive every verdict.

use crate::collect::{Collector, Evidence};
use crate::common::snapshot::{document, input, verified_manifest};
use crate::facts::{find, success_body, ControlFacts};
use crate::judge::{fail, inconclusive, pass, short, skipped, Judge, Verdict};
use egress_model::{ProbeRecord, Sha256Digest};
use egress_signing::{AllowedSigners, Attestation, Certificate, SNAPSHOT_NAMESPACE};
use egress_snapshot::well_known;

const SERVED_MANIFEST: &str = "served MANIFEST";
const SERVED_SIG: &str = "served MANIFEST.sig";
const SIGNERS: &str = "allowed_signers";
/// Two nonces: one answer could be a recording; two answers to two fresh
/// nonces, each signed, cannot.
const NONCES: usize = 2;
/// 256 bits per nonce.
const NONCE_BYTES: usize = 32;

fn nonce_label(n: usize) -> String {
    format!("nonce {n}")
}

fn answer_label(n: usize) -> String {
    format!("attestation {n}")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn push_signers<P>(c: &Collector<P>, ev: &mut Evidence) {
    if let Some(signers) = &c.allowed_signers {
        ev.observations.push(input(SIGNERS, signers.clone()));
    }
}

/// `P5.expected-snapshot`: the manifest and its signature as the mirror
/// serves them at its well-known paths (whatever `--manifest` says), when
/// the plan expects a snapshot.
pub fn collect_expected<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    let mut ev = Evidence::default();
    if c.plan.expect.snapshot.is_none() {
        return ev;
    }
    let Ok(index) = c.plan.index() else { return ev };
    ev.push(c.get(
        SERVED_MANIFEST,
        &index.with_path(well_known::MANIFEST),
        None,
    ));
    ev.push(c.get(SERVED_SIG, &index.with_path(well_known::SIGNATURE), None));
    push_signers(c, &mut ev);
    ev
}

/// The ID of the manifest P5.manifest verified, when it verified.
/// The snapshot a run holds the target to: `--expect-snapshot`, else the
/// one whose manifest P5.manifest verified.
pub fn snapshot_in_question<P, F: ControlFacts>(j: &Judge<P, F>) -> Option<Sha256Digest> {
    j.plan.expect.snapshot.or_else(|| checked_snapshot(j))
}

fn checked_snapshot<P, F: ControlFacts>(j: &Judge<P, F>) -> Option<Sha256Digest> {
    let rec = j.record("P5.manifest")?;
    verified_manifest(rec).ok().map(|(_, _, id)| id)
}

/// The served manifest's bytes, or the verdict when there are none.
fn served_manifest<'a>(rec: &'a ProbeRecord, what: &str) -> Result<&'a [u8], Verdict> {
    let Some(ex) = find(rec, SERVED_MANIFEST) else {
        return Err(inconclusive("the served manifest was not requested"));
    };
    match &ex.response {
        None => Err(inconclusive(format!(
            "no answer for the manifest: {}",
            ex.summary()
        ))),
        Some(r) if r.is_success() => success_body(ex).ok_or_else(|| {
            inconclusive(format!(
                "the manifest did not arrive whole: {}",
                ex.summary()
            ))
        }),
        Some(_) => Err(fail(format!(
            "the mirror serves no manifest at its well-known path, so it cannot show {what}: {}",
            ex.summary()
        ))),
    }
}

pub fn judge_expected<P, F: ControlFacts>(
    j: &Judge<P, F>,
    rec: &ProbeRecord,
    control: &str,
) -> Verdict {
    let Some(want) = j.plan.expect.snapshot else {
        return skipped("no --expect-snapshot given");
    };
    if let Some(v) = j.require(control) {
        return v;
    }
    let what = format!("that it serves snapshot {:.16}…", want.to_hex());
    let manifest = match served_manifest(rec, &what) {
        Ok(m) => m,
        Err(v) => return v,
    };
    let served = Sha256Digest::of(manifest);
    if served != want {
        return fail(format!(
            "the mirror serves snapshot {:.16}…, not the expected {:.16}… (the SHA-256 of the MANIFEST at {})",
            served.to_hex(),
            want.to_hex(),
            well_known::MANIFEST
        ));
    }
    if let Some(checked) = checked_snapshot(j).filter(|id| *id != want) {
        return fail(format!(
            "the content was checked against snapshot {:.16}… (P5.manifest), not the expected {:.16}…",
            checked.to_hex(),
            want.to_hex()
        ));
    }
    let Some(signers) = document(rec, SIGNERS) else {
        return pass(format!(
            "the mirror serves snapshot {:.16}…, the expected one (its signature is not checked: no --allowed-signers)",
            want.to_hex()
        ));
    };
    let allowed = match AllowedSigners::parse(&String::from_utf8_lossy(signers)) {
        Ok(a) => a,
        Err(e) => return inconclusive(format!("the given allowed signers do not parse: {e}")),
    };
    let Some(sig) = find(rec, SERVED_SIG).and_then(success_body) else {
        return fail(format!(
            "the expected snapshot's manifest is served without a signature: {}",
            find(rec, SERVED_SIG).map_or_else(|| "not requested".to_string(), |e| e.summary())
        ));
    };
    match egress_signing::verify(
        &String::from_utf8_lossy(sig),
        SNAPSHOT_NAMESPACE,
        manifest,
        &allowed,
    ) {
        Ok(v) => pass(format!(
            "the mirror serves snapshot {:.16}…, the expected one, signed by {} ({})",
            want.to_hex(),
            v.principal,
            v.fingerprint
        )),
        Err(e) => fail(format!(
            "the served manifest of snapshot {:.16}… is not signed by an allowed key: {e}",
            want.to_hex()
        )),
    }
}

/// `P5.instance-attestation`: two fresh random nonces, each sent to the
/// attestation path and recorded as `input`; the served manifest.
pub fn collect_attestation<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    for n in 1..=NONCES {
        let mut nonce = [0u8; NONCE_BYTES];
        if let Err(e) = getrandom::getrandom(&mut nonce) {
            ev.observations.push(input(
                &format!("no nonce: the random number generator failed ({e})"),
                Vec::new(),
            ));
            return ev;
        }
        ev.observations.push(input(&nonce_label(n), nonce.to_vec()));
        let url = index.with_path(&format!("{}{}", well_known::ATTEST, hex(&nonce)));
        ev.push(c.get(&answer_label(n), &url, None));
    }
    ev.push(c.get(
        SERVED_MANIFEST,
        &index.with_path(well_known::MANIFEST),
        None,
    ));
    push_signers(c, &mut ev);
    ev
}

/// One answer, checked on its own: the attestation, or the verdict.
enum Answer {
    /// No attestation claimed (not 2xx, or a body without the armour).
    NotOffered(String),
    Attested(Box<Attestation>),
}

fn read_answer(rec: &ProbeRecord, n: usize) -> Result<Answer, Verdict> {
    let Some(nonce) = document(rec, &nonce_label(n)) else {
        return Err(inconclusive(format!("nonce {n} was not recorded")));
    };
    let Some(ex) = find(rec, &answer_label(n)) else {
        return Err(inconclusive(format!("nonce {n} was not sent")));
    };
    let Some(r) = &ex.response else {
        return Err(inconclusive(format!(
            "no answer to nonce {n}: {}",
            ex.summary()
        )));
    };
    let body = success_body(ex);
    let claimed = r.is_success() && body.is_some_and(Attestation::claimed);
    if !claimed {
        // Not 2xx, a 2xx body too large to record whole, or one without the
        // armour: no attestation is claimed, and none can PASS.
        return Ok(Answer::NotOffered(ex.summary()));
    }
    let att = match Attestation::parse(body.unwrap_or_default()) {
        Ok(a) => a,
        Err(e) => {
            return Err(fail(format!(
                "the answer to nonce {n} is not a well-formed attestation ({e}): {}",
                ex.summary()
            )))
        }
    };
    if att.statement.nonce != nonce {
        return Err(fail(format!(
            "the statement answering nonce {n} ({:.16}…) names nonce {:.16}…: a replayed or precomputed statement, not an answer: {}",
            hex(nonce),
            hex(&att.statement.nonce),
            ex.summary()
        )));
    }
    if let Err(e) = att.verify_signature() {
        return Err(fail(format!(
            "the statement answering nonce {n} is not signed by the instance key it names ({}): {e}",
            att.statement.instance_key.fingerprint()
        )));
    }
    Ok(Answer::Attested(Box::new(att)))
}

/// The confinement as reported, made safe for a one-line reason.
fn one_line(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    short(clean.trim())
}

pub fn judge_attestation<P, F: ControlFacts>(
    j: &Judge<P, F>,
    rec: &ProbeRecord,
    control: &str,
) -> Verdict {
    if let Some(v) = j.require(control) {
        return v;
    }
    let required = j.plan.expect.attestation || j.plan.expect.binary.is_some();
    let mut attested = Vec::new();
    let mut not_offered = Vec::new();
    for n in 1..=NONCES {
        match read_answer(rec, n) {
            Ok(Answer::Attested(a)) => attested.push(*a),
            Ok(Answer::NotOffered(summary)) => not_offered.push(summary),
            Err(v) => return v,
        }
    }
    let Some(first) = attested.first() else {
        let how = not_offered.first().cloned().unwrap_or_default();
        return if required {
            fail(format!(
                "the mirror offers no instance attestation, which --expect-binary or --require-attestation asks for: {how}"
            ))
        } else {
            skipped(format!(
                "the mirror offers no instance attestation ({how}): nothing binds the answering instance to the signed snapshot"
            ))
        };
    };
    if let Some(how) = not_offered.first() {
        return fail(format!(
            "the mirror attested one nonce and not the other: {how}"
        ));
    }
    let mut certificates = Vec::new();
    for att in &attested {
        let key = att.statement.instance_key.fingerprint();
        let Some(bytes) = &att.certificate else {
            return fail(format!(
                "instance key {key} is not certified: the mirror sends no certificate with its statement"
            ));
        };
        let cert = match Certificate::parse(bytes) {
            Ok(c) => c,
            Err(e) => {
                return fail(format!(
                    "the certificate sent with instance key {key} does not parse: {e}"
                ))
            }
        };
        if cert.instance_key != att.statement.instance_key {
            return fail(format!(
                "a wrong certificate: it certifies instance key {}, but {key} signed the statement",
                cert.instance_key.fingerprint()
            ));
        }
        if cert.snapshot != att.statement.snapshot {
            return fail(format!(
                "a wrong certificate: it certifies instance key {key} for snapshot {:.16}…, but the statement claims snapshot {:.16}…",
                cert.snapshot.to_hex(),
                att.statement.snapshot.to_hex()
            ));
        }
        certificates.push(cert);
    }
    let claimed = first.statement.snapshot;
    if let Some(other) = attested.iter().find(|a| a.statement.snapshot != claimed) {
        return fail(format!(
            "the two statements claim different snapshots ({:.16}… and {:.16}…)",
            claimed.to_hex(),
            other.statement.snapshot.to_hex()
        ));
    }
    let manifest = match served_manifest(rec, "which snapshot the attested instance serves") {
        Ok(m) => m,
        Err(v) => return v,
    };
    let served = Sha256Digest::of(manifest);
    if served != claimed {
        return fail(format!(
            "the instance states snapshot {:.16}…, but the mirror serves the manifest of snapshot {:.16}…: another snapshot's statement",
            claimed.to_hex(),
            served.to_hex()
        ));
    }
    if let Some(checked) = checked_snapshot(j).filter(|id| *id != claimed) {
        return fail(format!(
            "the instance states snapshot {:.16}…, but the content was checked against snapshot {:.16}… (P5.manifest)",
            claimed.to_hex(),
            checked.to_hex()
        ));
    }
    if let Some(want) = j.plan.expect.snapshot.filter(|w| *w != claimed) {
        return fail(format!(
            "the instance states snapshot {:.16}…, not the expected {:.16}…",
            claimed.to_hex(),
            want.to_hex()
        ));
    }
    let binary = first.statement.binary;
    if let Some(other) = attested.iter().find(|a| a.statement.binary != binary) {
        return fail(format!(
            "the two statements report different binaries ({:.16}… and {:.16}…)",
            binary.to_hex(),
            other.statement.binary.to_hex()
        ));
    }
    if let Some(want) = j.plan.expect.binary.filter(|w| *w != binary) {
        return fail(format!(
            "the instance reports binary sha256 {}, not the expected {}",
            binary.to_hex(),
            want.to_hex()
        ));
    }
    let Some(signers) = document(rec, SIGNERS) else {
        let why =
            "no --allowed-signers given: the certificate is checked against no trusted lab key";
        return if required {
            inconclusive(why)
        } else {
            skipped(why)
        };
    };
    let allowed = match AllowedSigners::parse(&String::from_utf8_lossy(signers)) {
        Ok(a) => a,
        Err(e) => return inconclusive(format!("the given allowed signers do not parse: {e}")),
    };
    let mut lab = None;
    for cert in &certificates {
        match cert.verify(&allowed) {
            Ok(v) => lab = lab.or(Some(v)),
            Err(e) => {
                return fail(format!(
                "a wrong certificate: instance key {} is not certified by an allowed lab key: {e}",
                cert.instance_key.fingerprint()
            ))
            }
        }
    }
    let lab = lab.map_or_else(String::new, |v| {
        format!("{} ({})", v.principal, v.fingerprint)
    });
    pass(format!(
        "{NONCES} fresh nonces answered by instance key {}, certified by {lab} for snapshot {:.16}…, the one served{}; binary sha256 {}{}; confinement reported: {}",
        first.statement.instance_key.fingerprint(),
        claimed.to_hex(),
        if j.plan.expect.snapshot.is_some() { " and expected" } else { "" },
        binary.to_hex(),
        if j.plan.expect.binary.is_some() { " (as expected)" } else { "" },
        one_line(&first.statement.confinement)
    ))
}
