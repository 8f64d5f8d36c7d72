//! P1 digest binding, in npm's terms: every version a packument lists (full
//! and abbreviated) carries a sha512 `dist.integrity`, and the tarball bytes
//! match it; a package the upstream lists without integrity, or with one its
//! bytes do not have, is not passed on.

use super::doc::{integrity_matches, sha512_entries, version_dist, Packument};
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{at, packument_url, ABBREVIATED, FULL};
use crate::collect::Evidence;
use crate::common::runwide::{self, Expected, Listing};
use crate::facts::{final_of, success_body};
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::{NpmName, ProbeRecord, Url};

/// At most this many tarballs are fetched per sub-probe.
pub const MAX_TARBALLS: usize = 6;

const PACKUMENT: &str = "packument";

/// The packages whose documents P1 reads: the present ones (up to three)
/// and the scoped one.
fn listed_packages(c: &Collector) -> Vec<NpmName> {
    let p = &c.plan.packages;
    let mut out: Vec<NpmName> = p.present.iter().take(3).cloned().collect();
    out.extend(p.scoped.iter().cloned());
    out.dedup();
    out
}

fn collect_integrity(c: &Collector, accept: &str) -> Evidence {
    let mut ev = Evidence::default();
    for name in listed_packages(c) {
        if let Some(u) = packument_url(c, &name) {
            ev.push(c.get(&format!("{PACKUMENT} {name}"), &u, Some(accept)));
        }
    }
    ev
}

pub fn collect_integrity_full(c: &Collector, _f: &Facts) -> Evidence {
    collect_integrity(c, FULL)
}

pub fn collect_integrity_abbreviated(c: &Collector, _f: &Facts) -> Evidence {
    collect_integrity(c, ABBREVIATED)
}

/// The first version of a served packument without a sha512 integrity.
fn missing_integrity(p: &Packument) -> Option<String> {
    p.versions.iter().find_map(|v| match &v.integrity {
        None => Some(format!("{} has no dist.integrity", v.version)),
        Some(i) if sha512_entries(i).is_empty() => Some(format!(
            "{} has dist.integrity {:?} with no sha512",
            v.version,
            short(i)
        )),
        Some(_) => None,
    })
}

fn judge_integrity(j: &Judge, rec: &ProbeRecord, control: &str) -> Verdict {
    if let Some(v) = j.require(control) {
        return v;
    }
    let mut versions = 0;
    let mut docs = 0;
    for ex in &rec.exchanges {
        let Some(body) = success_body(ex) else {
            continue;
        };
        let Ok(p) = Packument::parse(body) else {
            return fail(format!(
                "{} served something that is not a packument",
                short(&ex.request_target())
            ));
        };
        if let Some(why) = missing_integrity(&p) {
            return fail(format!("{}: version {why}", short(&ex.request_target())));
        }
        docs += 1;
        versions += p.versions.len();
    }
    if docs == 0 {
        return inconclusive("no packument was served whole");
    }
    pass(format!(
        "{versions} versions in {docs} packuments all carry a sha512 dist.integrity"
    ))
}

pub fn judge_integrity_full(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_integrity(j, rec, "C.packument")
}

pub fn judge_integrity_abbreviated(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_integrity(j, rec, "C.abbreviated")
}

fn tarball_label(name: &str, version: &str) -> String {
    format!("tarball {name}@{version}")
}

/// Fetches the packument of `name` and every same-origin tarball it lists
/// (up to `max`), each labelled with its name and version.
fn packument_and_tarballs(
    c: &Collector,
    ev: &mut Evidence,
    name: &NpmName,
    accept: &str,
    max: usize,
) {
    let Some(page) = packument_url(c, name) else {
        return;
    };
    let ex = c.get(&format!("{PACKUMENT} {name}"), &page, Some(accept));
    let doc = success_body(&ex).and_then(|b| Packument::parse(b).ok());
    ev.push(ex);
    let Some(doc) = doc else { return };
    for v in doc.versions.iter().rev().take(max) {
        let Some(u) = v.tarball.as_deref().and_then(|t| page.join(t).ok()) else {
            continue;
        };
        if u.same_origin(c.client.base()) {
            c.get_following(ev, &tarball_label(name.as_str(), &v.version), &u, None);
        }
    }
}

pub fn collect_bytes_match(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    for name in listed_packages(c) {
        packument_and_tarballs(c, &mut ev, &name, FULL, MAX_TARBALLS);
    }
    ev
}

/// A tarball served against its packument's integrity.
#[derive(Debug, thiserror::Error)]
enum TarballMismatch {
    #[error("the tarball of {0} is served although its packument lists no sha512 integrity")]
    NoIntegrity(String),
    #[error("the tarball of {0} does not match the integrity its packument lists")]
    Differs(String),
}

/// Checks each tarball served after a packument against the integrity that
/// packument lists for it: `(checked, unchecked)` or the first mismatch.
fn check_tarballs(rec: &ProbeRecord) -> Result<(usize, Vec<String>), TarballMismatch> {
    let mut checked = 0;
    let mut unchecked = Vec::new();
    for ex in rec
        .exchanges
        .iter()
        .filter(|e| e.label.starts_with(PACKUMENT))
    {
        let name = ex.label.trim_start_matches(PACKUMENT).trim();
        let Some(doc) = success_body(ex).and_then(|b| Packument::parse(b).ok()) else {
            continue;
        };
        for v in &doc.versions {
            let Some(t) = final_of(rec, &tarball_label(name, &v.version)) else {
                continue;
            };
            let Some(r) = t.response.as_ref().filter(|r| r.is_success()) else {
                continue;
            };
            let what = format!("{name}@{}", v.version);
            let Some(integrity) = v
                .integrity
                .as_deref()
                .filter(|i| !sha512_entries(i).is_empty())
            else {
                return Err(TarballMismatch::NoIntegrity(what));
            };
            match r.full_body() {
                Some(bytes) if integrity_matches(integrity, bytes) => checked += 1,
                Some(_) => return Err(TarballMismatch::Differs(what)),
                None => {
                    unchecked.push(format!("{what} ({} bytes, not recorded whole)", r.body_len))
                }
            }
        }
    }
    Ok((checked, unchecked))
}

pub fn judge_bytes_match(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.tarball") {
        return v;
    }
    match check_tarballs(rec) {
        Err(e) => fail(e.to_string()),
        Ok((0, unchecked)) if !unchecked.is_empty() => inconclusive(format!(
            "no tarball was recorded whole, so no integrity could be checked: {}",
            unchecked.join(", ")
        )),
        Ok((0, _)) => inconclusive("no tarball was served to check"),
        Ok((n, unchecked)) if unchecked.is_empty() => {
            pass(format!("{n} tarballs match their sha512 integrity"))
        }
        Ok((n, unchecked)) => pass(format!(
            "{n} tarballs match their sha512 integrity ({} too large to record whole)",
            unchecked.len()
        )),
    }
}

/// A name the controlled upstream plants for a P1 sub-probe.
fn upstream_name(
    c: &Collector,
    pick: impl Fn(&egress_model::UpstreamPlan) -> Option<String>,
) -> Option<NpmName> {
    c.plan
        .upstream
        .as_ref()
        .and_then(pick)
        .and_then(|n| NpmName::new(&n).ok())
}

/// The packument, the tarballs it lists and the conventional tarball path.
fn collect_planted(c: &Collector, name: Option<NpmName>, window: &str) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Ok(registry)) = (name, c.plan.index()) else {
        return ev;
    };
    c.window(window, &mut ev, |ev| {
        packument_and_tarballs(c, ev, &name, FULL, 2);
        packument_and_tarballs(c, ev, &name, ABBREVIATED, 0);
        let conventional = at(&registry, &name.tarball_path("1.0.0"));
        c.get_following(
            ev,
            &tarball_label(name.as_str(), "1.0.0 (conventional path)"),
            &conventional,
            None,
        );
    });
    ev
}

pub fn collect_no_integrity(c: &Collector, _f: &Facts) -> Evidence {
    collect_planted(
        c,
        upstream_name(c, |u| u.no_digest.as_ref().map(|n| n.to_string())),
        "P1.upstream-no-integrity",
    )
}

pub fn collect_bad_integrity(c: &Collector, _f: &Facts) -> Evidence {
    collect_planted(
        c,
        upstream_name(c, |u| u.bad_digest.as_ref().map(|n| n.to_string())),
        "P1.upstream-bad-integrity",
    )
}

/// Shared by both planted packages: nothing served without an integrity
/// that the served bytes match.
fn judge_planted(j: &Judge, rec: &ProbeRecord, what: &str) -> Verdict {
    if rec.exchanges.is_empty() {
        return skipped(format!(
            "the upstream is not controlled, so no package {what} is known"
        ));
    }
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    for ex in rec
        .exchanges
        .iter()
        .filter(|e| e.label.starts_with(PACKUMENT))
    {
        if let Some(body) = success_body(ex) {
            if let Some(why) = Packument::parse(body)
                .ok()
                .as_ref()
                .and_then(missing_integrity)
            {
                return fail(format!(
                    "the upstream's package {what} is passed on: {} lists version {why}",
                    short(&ex.request_target())
                ));
            }
        }
    }
    if let Err(e) = check_tarballs(rec) {
        return fail(format!("the upstream's package {what} is passed on: {e}"));
    }
    // A tarball at the conventional path has no packument entry to check
    // it against here; bytes served there are judged by whether any served
    // packument vouches for them.
    let conventional = rec
        .exchanges
        .iter()
        .filter(|e| e.label.contains("conventional path"))
        .find(|e| e.response.as_ref().is_some_and(|r| r.is_success()));
    if let Some(ex) = conventional {
        let vouched = rec
            .exchanges
            .iter()
            .filter(|e| e.label.starts_with(PACKUMENT))
            .filter_map(success_body)
            .filter_map(|b| Packument::parse(b).ok())
            .flat_map(|p| p.versions)
            .filter_map(|v| v.integrity)
            .any(|i| {
                ex.response
                    .as_ref()
                    .and_then(|r| r.full_body())
                    .is_some_and(|b| integrity_matches(&i, b))
            });
        if !vouched {
            return fail(format!(
                "{} serves the upstream's tarball of a package {what}, with no integrity that matches it",
                short(&ex.request_target())
            ));
        }
    }
    let served = rec
        .exchanges
        .iter()
        .filter(|e| e.response.as_ref().is_some_and(|r| r.is_success()))
        .count();
    pass(format!(
        "{} requests for the package {what}: {served} served, none without a matching integrity",
        rec.exchanges.len()
    ))
}

pub fn judge_no_integrity(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_planted(j, rec, "listed upstream without integrity")
}

pub fn judge_bad_integrity(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_planted(j, rec, "whose upstream integrity its bytes do not match")
}

const VERSION_DOC: &str = "version document";

pub fn collect_version_doc(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Ok(registry)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return ev;
    };
    let npm = f;
    let mut versions: Vec<String> = vec!["latest".into()];
    if let Some((v, _)) = npm.control_version(&registry) {
        versions.push(v.version.clone());
    }
    for v in versions {
        let u: Url = at(&registry, &format!("{}/{v}", name.packument_path()));
        ev.push(c.get(VERSION_DOC, &u, Some(FULL)));
    }
    ev
}

pub fn judge_version_doc(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    let npm = j.facts;
    let Some(full) = npm.full.as_ref() else {
        return inconclusive("the full packument was not recorded");
    };
    let mut served = 0;
    for ex in rec.exchanges.iter().filter(|e| e.label == VERSION_DOC) {
        let Some(body) = success_body(ex) else {
            continue;
        };
        let what = short(&ex.request_target());
        let Ok(doc) = serde_json::from_slice::<serde_json::Value>(body) else {
            return fail(format!("{what} was served, and is not a version document"));
        };
        let version = doc
            .get("version")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let dist = version_dist(version, &doc);
        let Some(integrity) = dist.integrity.filter(|i| !sha512_entries(i).is_empty()) else {
            return fail(format!(
                "{what} resolves a name and version with no sha512 dist.integrity"
            ));
        };
        match full.version(version).and_then(|v| v.integrity.clone()) {
            Some(listed) if listed == integrity => served += 1,
            _ => {
                return fail(format!(
                    "{what} gives version {version:?} an integrity the packument does not list"
                ))
            }
        }
    }
    pass(if served == 0 {
        "version documents are not served by name and version".to_string()
    } else {
        format!("{served} version documents carry the packument's sha512 integrity")
    })
}

/// The tarballs a served packument lists, with the sha512 integrity it
/// gives for each. The run-wide rules read every served body through this.
pub fn listings(page_url: &Url, body: &[u8]) -> Vec<Listing> {
    let Ok(doc) = Packument::parse(body) else {
        return Vec::new();
    };
    let name = doc.name.clone().unwrap_or_default();
    doc.versions
        .iter()
        .filter_map(|v| {
            let url = page_url.join(v.tarball.as_deref()?).ok()?;
            let expected = v
                .integrity
                .iter()
                .filter(|i| !sha512_entries(i).is_empty())
                .map(|i| Expected::Sri(i.clone()))
                .collect();
            Some(Listing {
                name: format!("{name}@{}", v.version),
                url,
                expected,
            })
        })
        .collect()
}

/// `P1.run-wide-digests`: see [`runwide::judge_digests`].
pub fn judge_run_wide_digests(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_digests(j, "C.tarball", listings)
}
