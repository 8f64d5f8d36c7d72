//! P1 digest binding, in apt's terms: the `Release` verifies against the
//! keyring the run was given, every index it lists carries a SHA256 (and is
//! served by hash where `Acquire-By-Hash` is announced), every `.deb`
//! reached has a SHA256 line in a signed index and its bytes match, and
//! what the upstream lists without a covering digest is never served.

use super::controls::{fetch_release, served_whole};
use super::doc;
use super::facts::{label, Facts, Judge};
use super::plan::{archive, at, Collector};
use crate::collect::Evidence;
use crate::common::runwide;
use crate::facts::{final_of, find};
use crate::judge::{fail, inconclusive, pass, refusals, short, skipped, Verdict, STRICT};
use egress_apt::by_hash_path;
use egress_model::ProbeRecord;
use egress_signing::openpgp::Keyring;

pub fn collect_release_signed(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    fetch_release(c, &mut ev, "");
    ev
}

pub fn judge_release_signed(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(keyring) = &j.plan.packages.keyring else {
        return skipped(
            "no --keyring given: a Release checked against a key the mirror itself publishes proves nothing",
        );
    };
    if let Some(v) = j.require("C.release") {
        return v;
    }
    let keyring = match Keyring::parse(keyring.as_bytes()) {
        Ok(k) if !k.signing_fingerprints().is_empty() => k,
        Ok(_) => return inconclusive("the given keyring holds no key that can sign"),
        Err(e) => return inconclusive(format!("the given keyring does not parse: {e}")),
    };
    let dist = &j.plan.packages.dist;
    let inrelease = served_whole(rec, label::INRELEASE);
    let mut verified = Vec::new();
    if let Some(r) = inrelease {
        let Some(body) = r.full_body() else {
            return inconclusive("the InRelease was not recorded whole");
        };
        match keyring.verify_cleartext(body) {
            Ok(v) => {
                if egress_apt::Release::parse(&String::from_utf8_lossy(&v.text)).is_err() {
                    return fail(format!(
                        "dists/{dist}/InRelease verifies, but its signed text is not a Release"
                    ));
                }
                verified.push(format!("InRelease (signed by {})", hex(&v.signer)));
            }
            Err(e) => {
                return fail(format!(
                    "dists/{dist}/InRelease is served but does not verify against the keyring: {e}"
                ))
            }
        }
    }
    if let Some(r) = served_whole(rec, label::RELEASE) {
        let sig = served_whole(rec, label::RELEASE_GPG).and_then(|s| s.full_body());
        match (r.full_body(), sig) {
            (Some(body), Some(sig)) => match keyring.verify_detached(body, sig) {
                Ok(v) => verified.push(format!(
                    "Release with Release.gpg (signed by {})",
                    hex(&v.signer)
                )),
                Err(e) => {
                    return fail(format!(
                        "dists/{dist}/Release is served but its Release.gpg does not verify it against the keyring: {e}"
                    ))
                }
            },
            // apt takes the InRelease when there is one.
            (_, None) if !verified.is_empty() => {}
            (_, None) => {
                return fail(format!(
                    "dists/{dist}/Release is served with no InRelease and no Release.gpg: an index no signature covers ({})",
                    find(rec, label::RELEASE_GPG).map_or_else(|| "not requested".into(), |e| e.summary())
                ))
            }
            (None, _) => return inconclusive("the Release was not recorded whole"),
        }
    }
    if verified.is_empty() {
        return inconclusive("neither InRelease nor Release was served whole");
    }
    pass(format!(
        "{} verify against the keyring",
        verified.join(" and ")
    ))
}

/// A fingerprint in lower-case hex, as the report writes digests.
fn hex(f: &egress_signing::openpgp::Fingerprint) -> String {
    f.to_string().to_lowercase()
}

fn index_label(path: &str) -> String {
    format!("index {path}")
}
fn by_hash_label(path: &str) -> String {
    format!("index {path} by hash")
}

/// The `Release` entries of the run's component and architecture.
fn own_indexes<'a>(f: &'a Facts, p: &super::Packages) -> Vec<&'a egress_apt::IndexEntry> {
    let prefix = format!("{}/binary-{}/", p.component, p.arch);
    f.release
        .iter()
        .flat_map(|r| r.sha256.iter())
        .filter(|e| e.path.as_str().starts_with(&prefix) && !e.path.as_str().contains("/by-hash/"))
        .take(8)
        .collect()
}

pub fn collect_index_digests(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    let by_hash = f.release.as_ref().is_some_and(|r| r.acquire_by_hash);
    for e in own_indexes(f, p) {
        let path = e.path.as_str();
        c.get_following(
            &mut ev,
            &index_label(path),
            &at(&a, &p.dist_path(path)),
            None,
        );
        if by_hash {
            let h = by_hash_path(&e.path, &e.digest);
            c.get_following(
                &mut ev,
                &by_hash_label(path),
                &at(&a, &p.dist_path(&h)),
                None,
            );
        }
    }
    ev
}

pub fn judge_index_digests(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packages") {
        return v;
    }
    let Some(release) = &j.facts.release else {
        return inconclusive("no Release was read");
    };
    let p = &j.plan.packages;
    if release.sha256.is_empty() {
        return fail(
            "the Release lists no index with a SHA256: nothing binds the indexes it serves",
        );
    }
    let read = j.facts.packages_index(p);
    if release.find(&read).is_none() {
        return fail(format!(
            "dists/{}/{read} is served (C.packages) but the Release lists no SHA256 for it",
            p.dist
        ));
    }
    let (mut matched, mut hashed) = (0, 0);
    for e in own_indexes(j.facts, p) {
        let path = e.path.as_str();
        let plain = final_of(rec, &index_label(path)).and_then(|x| x.response.as_ref());
        let served = plain.filter(|r| r.is_success());
        if let Some(r) = served {
            if r.body_end != egress_model::BodyEnd::Complete {
                return inconclusive(format!("{path} did not arrive whole"));
            }
            if r.body_sha256 != e.digest {
                return fail(format!(
                    "dists/{}/{path} served bytes hashing to {:.16}…, the Release lists {:.16}…",
                    p.dist,
                    r.body_sha256.to_hex(),
                    e.digest.to_hex()
                ));
            }
            matched += 1;
        }
        if release.acquire_by_hash && served.is_some() {
            let Some(ex) = final_of(rec, &by_hash_label(path)) else {
                return inconclusive(format!("{path} was not requested by hash"));
            };
            match ex.response.as_ref().filter(|r| r.is_success()) {
                Some(r) if r.body_sha256 == e.digest => hashed += 1,
                Some(r) => {
                    return fail(format!(
                        "{} served bytes hashing to {:.16}…, not the digest in its path",
                        short(&ex.request_target()),
                        r.body_sha256.to_hex()
                    ))
                }
                None => {
                    return fail(format!(
                        "the Release announces Acquire-By-Hash: yes, but {} was answered {}",
                        short(&ex.request_target()),
                        ex.summary()
                    ))
                }
            }
        }
    }
    if matched == 0 {
        return inconclusive("no index of the component and architecture was served");
    }
    pass(format!(
        "{} indexes listed with SHA256, {matched} served matching it{}",
        release.sha256.len(),
        if release.acquire_by_hash {
            format!(", {hashed} by hash")
        } else {
            String::new()
        }
    ))
}

const DEB: &str = "deb";

pub fn collect_deb_digests(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let present = &c.plan.packages.present;
    for e in f
        .packages
        .iter()
        .filter(|e| present.contains(&e.package))
        .take(6)
    {
        let l = format!("{DEB} {}", e.filename.as_str());
        c.get_following(&mut ev, &l, &at(&a, e.filename.as_str()), None);
    }
    ev
}

pub fn judge_deb_digests(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.deb") {
        return v;
    }
    if let Some(e) = j.facts.packages.iter().find(|e| e.sha256.is_none()) {
        return fail(format!(
            "the Packages index lists {} {} with no SHA256: a package no digest covers",
            e.package, e.version
        ));
    }
    let mut checked = 0;
    for e in &j.facts.packages {
        let l = format!("{DEB} {}", e.filename.as_str());
        let Some(ex) = final_of(rec, &l) else {
            continue;
        };
        let Some(r) = ex.response.as_ref().filter(|r| r.is_success()) else {
            continue;
        };
        if r.body_end != egress_model::BodyEnd::Complete {
            return inconclusive(format!("{} did not arrive whole", e.filename.as_str()));
        }
        if Some(r.body_sha256) != e.sha256 || r.body_len != e.size {
            return fail(format!(
                "{} served {} bytes hashing to {:.16}…; the signed index lists {} bytes, SHA256 {:.16}…",
                e.filename.as_str(),
                r.body_len,
                r.body_sha256.to_hex(),
                e.size,
                e.sha256.map(|d| d.to_hex()).unwrap_or_default()
            ));
        }
        checked += 1;
    }
    if checked == 0 {
        return inconclusive("no .deb of a present package was served");
    }
    pass(format!(
        "{} stanzas carry a SHA256; {checked} .debs served match it",
        j.facts.packages.len()
    ))
}

/// The packages the upstream lists without a covering digest.
fn uncovered(j_up: Option<&egress_model::UpstreamPlan>) -> Vec<(String, &'static str)> {
    let Some(up) = j_up else { return Vec::new() };
    let mut out = Vec::new();
    if let Some(n) = &up.no_digest {
        out.push((
            n.as_str().to_string(),
            "the upstream lists it with no SHA256",
        ));
    }
    if let Some(n) = &up.bad_digest {
        out.push((
            n.as_str().to_string(),
            "its bytes contradict the SHA256 the upstream lists",
        ));
    }
    out
}

/// The first version of every package the canaries serve.
const FIRST_VERSION: &str = "1.0";

pub fn collect_upstream_uncovered(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    c.window("P1.upstream-uncovered", &mut ev, |ev| {
        for (name, _) in uncovered(c.plan.upstream.as_ref()) {
            for path in [p.pool_path(&name, FIRST_VERSION), p.pool_dir(&name)] {
                ev.push(c.get(&format!("pool path of {name}"), &at(&a, &path), None));
            }
        }
    });
    ev
}

pub fn judge_upstream_uncovered(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let planted = uncovered(j.plan.upstream.as_ref());
    if planted.is_empty() {
        return skipped("the upstream is not controlled, so no package without a digest is known");
    }
    if let Some(v) = j.require("C.deb") {
        return v;
    }
    for (name, why) in &planted {
        if let Some(e) = j.facts.packages.iter().find(|e| &e.package == name) {
            return fail(format!(
                "the Packages index lists {name} {} though {why}",
                e.version
            ));
        }
    }
    let (status, reason) = refusals(j, rec, "C.deb", STRICT);
    if status != egress_model::Status::Pass {
        return (status, reason);
    }
    let names: Vec<&str> = planted.iter().map(|(n, _)| n.as_str()).collect();
    pass(format!(
        "{} is listed by no index and its pool paths are refused: {reason}",
        names.join(" and ")
    ))
}

pub fn judge_run_wide_digests(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_digests(j, "C.deb", doc::listings)
}
