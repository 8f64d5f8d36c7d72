//! npm positive controls: the target serves a package that is in the
//! snapshot, through each route shape the refusal probes use (a packument,
//! full and abbreviated, a scoped packument, a tarball). Until a control
//! passes, no refusal on its route shape counts.
//!
//! A control never checks the property under test: a packument without
//! `dist.integrity` fails P1, it does not make the run inconclusive.

use super::doc::Packument;
use super::facts::label;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{packument_url, ABBREVIATED, FULL};
use crate::collect::Evidence;
use crate::facts::{final_of, find, success_body};
use crate::judge::{inconclusive, pass, skipped, Verdict};
use egress_model::{BodyEnd, ProbeRecord};

pub fn collect_packument(c: &Collector, abbreviated: bool) -> Evidence {
    let mut ev = Evidence::default();
    let Some(url) = c
        .plan
        .packages
        .present
        .first()
        .and_then(|n| packument_url(c, n))
    else {
        return ev;
    };
    if abbreviated {
        ev.push(c.get(label::ABBREVIATED, &url, Some(ABBREVIATED)));
    } else {
        ev.push(c.get(label::FULL, &url, Some(FULL)));
    }
    ev
}

fn judge_doc(j: &Judge, rec: &ProbeRecord, label: &str, want_name: Option<&str>) -> Verdict {
    if j.plan.packages.present.is_empty() {
        return inconclusive(
            "no package known to be in the snapshot: give --present NAME or --manifest",
        );
    }
    let Some(ex) = find(rec, label) else {
        return inconclusive(format!("the {label} was not requested"));
    };
    let Some(body) = success_body(ex) else {
        return inconclusive(format!(
            "the {label} of a package in the snapshot was not served: {}",
            ex.summary()
        ));
    };
    match Packument::parse(body) {
        Ok(p) if p.versions.is_empty() => inconclusive(format!("the {label} lists no version")),
        Ok(p) => {
            if let (Some(want), Some(got)) = (want_name, p.name.as_deref()) {
                if want != got {
                    return inconclusive(format!("the {label} is for {got:?}, not {want:?}"));
                }
            }
            let ctype = ex
                .response
                .as_ref()
                .and_then(|r| r.header("content-type"))
                .unwrap_or("no content type")
                .to_string();
            pass(format!(
                "the {label} lists {} versions ({ctype})",
                p.versions.len()
            ))
        }
        Err(e) => inconclusive(format!("the {label} is not a packument: {e}")),
    }
}

pub fn judge_packument(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let name = j.plan.packages.present.first();
    judge_doc(j, rec, label::FULL, name.map(|n| n.as_str()))
}

pub fn judge_abbreviated(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let name = j.plan.packages.present.first();
    judge_doc(j, rec, label::ABBREVIATED, name.map(|n| n.as_str()))
}

pub fn collect_scoped(c: &Collector) -> Evidence {
    let mut ev = Evidence::default();
    if let Some(url) = c
        .plan
        .packages
        .scoped
        .as_ref()
        .and_then(|n| packument_url(c, n))
    {
        ev.push(c.get(label::SCOPED, &url, Some(ABBREVIATED)));
    }
    ev
}

pub fn judge_scoped(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(name) = j.plan.packages.scoped.as_ref() else {
        return skipped("no scoped package is known to be in the snapshot");
    };
    judge_doc(j, rec, label::SCOPED, Some(name.as_str()))
}

pub fn collect_tarball(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Ok(registry), npm) = (c.plan.index(), f) else {
        return ev;
    };
    if let Some((_, url)) = npm.control_version(&registry) {
        c.get_following(&mut ev, label::TARBALL, &url, None);
    }
    ev
}

pub fn judge_tarball(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.facts.controls.status("C.packument") != egress_model::Status::Pass {
        return inconclusive("no packument to take a tarball URL from (C.packument did not pass)");
    }
    let Some(ex) = final_of(rec, label::TARBALL) else {
        return inconclusive("the packument lists no tarball on the mirror's origin");
    };
    let Some(r) = ex.response.as_ref().filter(|r| r.is_success()) else {
        return inconclusive(format!(
            "the tarball of a version in the snapshot was not served: {}",
            ex.summary()
        ));
    };
    if r.body_end != BodyEnd::Complete {
        return inconclusive(format!(
            "the tarball did not arrive whole: {}",
            ex.summary()
        ));
    }
    // A gzip stream: the smallest check that this is an archive and not an
    // error page served with 200.
    if !r.body_prefix.as_bytes().starts_with(&[0x1f, 0x8b]) {
        return inconclusive("the tarball is not gzip data");
    }
    pass(format!(
        "{} served a {}-byte gzip tarball",
        ex.request_target(),
        r.body_len
    ))
}
