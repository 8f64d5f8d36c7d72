//! apt positive controls: the target serves the dist's `Release` (as
//! `InRelease`, or `Release` with `Release.gpg`), the `Packages` index it
//! lists, and a present package's `.deb`. Until a control passes, no
//! refusal on its route shape counts.
//!
//! A control never checks the property under test: a `Release` whose
//! signature does not verify fails P1, it does not make the run
//! inconclusive.

use super::doc;
use super::facts::{label, Facts, Judge};
use super::plan::{archive, at, Collector};
use crate::collect::Evidence;
use crate::facts::{final_of, find, success_body};
use crate::judge::{inconclusive, pass, Verdict};
use egress_model::{BodyEnd, ProbeRecord, Status};

/// GETs the dist's `InRelease`, `Release` and `Release.gpg`, each labelled
/// by its name (P1.release-signed reads the same three).
pub fn fetch_release(c: &Collector, ev: &mut Evidence, prefix: &str) {
    let Some(a) = archive(c) else { return };
    let p = &c.plan.packages;
    for name in [label::INRELEASE, label::RELEASE, label::RELEASE_GPG] {
        c.get_following(
            ev,
            &format!("{prefix}{name}"),
            &at(&a, &p.dist_path(name)),
            None,
        );
    }
}

pub fn collect_release(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    fetch_release(c, &mut ev, "");
    ev
}

pub fn judge_release(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let dist = &j.plan.packages.dist;
    let mut seen = Vec::new();
    for l in [label::INRELEASE, label::RELEASE] {
        let Some(ex) = final_of(rec, l) else { continue };
        seen.push(ex.summary());
        if let Some(r) = success_body(ex).and_then(doc::release) {
            return pass(format!(
                "dists/{dist}/{l} is served: a Release listing {} indexes with SHA256 (suite {}, codename {})",
                r.sha256.len(),
                r.suite.as_deref().unwrap_or("none"),
                r.codename.as_deref().unwrap_or("none"),
            ));
        }
    }
    inconclusive(if seen.is_empty() {
        format!("dists/{dist}/InRelease and Release were not requested")
    } else {
        format!(
            "neither InRelease nor Release of dist {dist} is served as a Release: {}",
            seen.join("; ")
        )
    })
}

pub fn collect_packages(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    let path = p.dist_path(&f.packages_index(p));
    c.get_following(&mut ev, label::PACKAGES, &at(&a, &path), None);
    ev
}

pub fn judge_packages(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.facts.controls.status("C.release") != Status::Pass {
        return inconclusive("no Release to take the index from (C.release did not pass)");
    }
    let Some(ex) = final_of(rec, label::PACKAGES) else {
        return inconclusive("the Packages index was not requested");
    };
    let Some(body) = success_body(ex) else {
        return inconclusive(format!(
            "the Packages index of the dist was not served: {}",
            ex.summary()
        ));
    };
    match doc::packages(body) {
        Some(entries) if !entries.is_empty() => pass(format!(
            "{} lists {} packages",
            ex.request_target(),
            entries.len()
        )),
        Some(_) => inconclusive("the Packages index lists no package"),
        None => inconclusive("the Packages index does not parse"),
    }
}

pub fn collect_deb(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(a), Some(e)) = (archive(c), f.control_entry(c.plan)) else {
        return ev;
    };
    c.get_following(&mut ev, label::DEB, &at(&a, e.filename.as_str()), None);
    ev
}

pub fn judge_deb(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.present.is_empty() {
        return inconclusive("no package known to be in the snapshot: give --present NAME");
    }
    if j.facts.controls.status("C.packages") != Status::Pass {
        return inconclusive(
            "no Packages index to take a pool path from (C.packages did not pass)",
        );
    }
    let Some(ex) = final_of(rec, label::DEB) else {
        return inconclusive(format!(
            "the Packages index does not list {}",
            j.plan.packages.present.first().map_or("", String::as_str)
        ));
    };
    let Some(r) = ex.response.as_ref().filter(|r| r.is_success()) else {
        return inconclusive(format!(
            "the .deb of a package in the snapshot was not served: {}",
            ex.summary()
        ));
    };
    if r.body_end != BodyEnd::Complete {
        return inconclusive(format!("the .deb did not arrive whole: {}", ex.summary()));
    }
    // An ar archive: the smallest check that this is a package and not an
    // error page served with 200.
    if !r.body_prefix.as_bytes().starts_with(b"!<arch>\n") {
        return inconclusive("the .deb is not an ar archive");
    }
    pass(format!(
        "{} served a {}-byte .deb",
        ex.request_target(),
        r.body_len
    ))
}

/// The first exchange labelled `label` in a record, as served whole.
pub fn served_whole<'a>(
    rec: &'a ProbeRecord,
    label: &str,
) -> Option<&'a egress_model::ResponseRecord> {
    find(rec, label)
        .and_then(|e| e.response.as_ref())
        .filter(|r| r.is_success() && r.body_end == BodyEnd::Complete)
}
