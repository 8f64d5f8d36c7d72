//! P2 replay only, in npm's terms: a package that is absent from the
//! snapshot but present upstream is never served (packument or tarball),
//! no served packument sends the client to another origin for a tarball,
//! and at best the upstream is never contacted at all.

use super::doc::Packument;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{at, packument_url, ABBREVIATED, FULL};
use crate::collect::Evidence;
use crate::common::replay::absent_listings;
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, refusals, short, tally, Verdict, PASSTHROUGH};
use egress_model::{NpmName, ProbeRecord};

const ABSENT: &str = "absent package's packument";

pub fn collect_absent_packument(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let p = &c.plan.packages;
    c.window("P2.absent-packument", &mut ev, |ev| {
        for name in p.absent.iter().take(3) {
            if let Some(u) = packument_url(c, name) {
                ev.push(c.get(&format!("{ABSENT} (full)"), &u, Some(FULL)));
                ev.push(c.get(&format!("{ABSENT} (abbreviated)"), &u, Some(ABBREVIATED)));
            }
        }
    });
    ev
}

pub fn judge_absent_packument(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's registry URL does not parse");
    };
    if rec.exchanges.is_empty() {
        return inconclusive("no absent package to ask for");
    }
    let versions = |b: &[u8]| Packument::parse(b).ok().map(|p| p.versions.len());
    let codes = match absent_listings(&origin, rec, versions, "versions of a package", "packument")
    {
        Ok(c) => c,
        Err(v) => return v,
    };
    pass(format!(
        "no packument of an absent package served ({})",
        tally(&codes)
    ))
}

/// Absent names with a version to ask for: the upstream's own paths when it
/// is controlled, else the conventional path of version 1.0.0.
pub fn collect_absent_tarball(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (p, Ok(registry)) = (&c.plan.packages, c.plan.index()) else {
        return ev;
    };
    c.window("P2.absent-tarball", &mut ev, |ev| {
        let mut paths: Vec<String> = c
            .plan
            .upstream
            .as_ref()
            .map(|u| u.upstream_only_paths.clone())
            .unwrap_or_default();
        for name in p.absent.iter().take(3) {
            paths.push(name.tarball_path("1.0.0"));
        }
        paths.dedup();
        for path in paths {
            ev.push(c.get("absent package's tarball", &at(&registry, &path), None));
        }
    });
    ev
}

pub fn judge_absent_tarball(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.tarball", PASSTHROUGH)
}

const LISTING: &str = "packument whose tarball URLs are read";

fn offsite_name(c: &Collector) -> Option<NpmName> {
    c.plan
        .upstream
        .as_ref()
        .and_then(|u| u.offsite.as_ref())
        .and_then(|n| NpmName::new(n.as_str()).ok())
}

pub fn collect_offsite_tarball(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let p = &c.plan.packages;
    let mut names: Vec<NpmName> = p.present.iter().take(3).cloned().collect();
    names.extend(p.scoped.iter().cloned());
    names.extend(offsite_name(c));
    let offsite = offsite_name(c);
    c.window("P2.offsite-tarball", &mut ev, |ev| {
        for name in &names {
            let Some(u) = packument_url(c, name) else {
                continue;
            };
            let full = c.get(LISTING, &u, Some(FULL));
            let doc = success_body(&full).and_then(|b| Packument::parse(b).ok());
            ev.push(full);
            ev.push(c.get(LISTING, &u, Some(ABBREVIATED)));
            // The package whose tarballs live elsewhere upstream: whatever
            // the mirror lists for it on its own origin is asked for too.
            if Some(name) != offsite.as_ref() {
                continue;
            }
            for v in doc.map(|d| d.versions).unwrap_or_default().iter().take(2) {
                if let Some(t) = v.tarball.as_deref().and_then(|t| u.join(t).ok()) {
                    c.get_following(ev, OFFSITE_TARBALL, &t, None);
                }
            }
        }
    });
    ev
}

const OFFSITE_TARBALL: &str = "tarball of the package whose tarballs live on another origin";

pub fn judge_offsite_tarball(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's registry URL does not parse");
    };
    if let Some(ex) = rec.exchanges.iter().find(|e| {
        e.label.starts_with(OFFSITE_TARBALL) && e.response.as_ref().is_some_and(|r| r.is_success())
    }) {
        return fail(format!(
            "{} serves the tarball of a package absent from the snapshot whose upstream tarballs live on another origin",
            short(&ex.request_target())
        ));
    }
    let offsite = j
        .plan
        .upstream
        .as_ref()
        .and_then(|u| u.offsite.as_ref())
        .and_then(|n| NpmName::new(n.as_str()).ok());
    let mut tarballs = 0;
    for ex in rec.exchanges.iter().filter(|e| e.label == LISTING) {
        let Some(doc) = success_body(ex).and_then(|b| Packument::parse(b).ok()) else {
            continue;
        };
        if let (Some(n), Some(got)) = (&offsite, &doc.name) {
            if n.as_str() == got && !doc.versions.is_empty() {
                return fail(format!(
                    "{} serves the packument of {n}, absent from the snapshot, whose upstream tarballs live on another origin",
                    short(&ex.request_target())
                ));
            }
        }
        let page = crate::facts::request_url(&origin, ex);
        for v in &doc.versions {
            let Some(t) = &v.tarball else { continue };
            match page.join(t) {
                Ok(u) if u.same_origin(&origin) => tarballs += 1,
                _ => {
                    return fail(format!(
                        "{} sends the client to another origin for {}: {}",
                        short(&ex.request_target()),
                        v.version,
                        short(t)
                    ))
                }
            }
        }
    }
    if tarballs == 0 {
        return inconclusive("no served packument listed a tarball");
    }
    pass(format!(
        "{tarballs} tarball URLs in served packuments, all on the mirror's origin"
    ))
}

/// Collected last: the whole run's upstream log.
pub fn judge_upstream_contact(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::replay::upstream_contact_verdict(j, rec, "C.packument")
}
