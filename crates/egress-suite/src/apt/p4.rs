//! P4 no build path, in apt's terms: a tripwire `.deb`'s maintainer
//! scripts never run on the mirror, and a `Description` carrying template
//! expressions is never evaluated in anything the mirror serves.

use super::facts::{Facts, Judge};
use super::plan::{archive, at, Collector};
use crate::classify::has_upstream_log;
use crate::collect::Evidence;
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::ProbeRecord;

const TRIP: &str = "tripwire package";

/// Pages where apt caches and repository managers render package text.
fn text_routes(c: &Collector, name: &str) -> Vec<String> {
    let p = &c.plan.packages;
    let root = archive(c).map(|a| a.path().to_string()).unwrap_or_default();
    vec![
        format!("{root}{}", p.pool_dir(name)),
        root.clone(),
        format!("{root}dists/{}/", p.dist),
        "/acng-report.html".to_string(),
        format!("/api/packages/{name}"),
    ]
}

pub fn collect_tripwire(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Some(a)) = (c.plan.packages.tripwire.clone(), archive(c)) else {
        return ev;
    };
    let p = &c.plan.packages;
    c.window("P4.tripwire", &mut ev, |ev| {
        ev.push(c.get(
            &format!("{TRIP}: index"),
            &at(&a, &p.dist_path(&f.packages_index(p))),
            None,
        ));
        let mut debs: Vec<String> = f
            .packages
            .iter()
            .filter(|e| e.package == name)
            .map(|e| e.filename.as_str().to_string())
            .collect();
        if debs.is_empty() {
            debs.push(p.pool_path(&name, "1.0"));
        }
        for d in debs.iter().take(2) {
            c.get_following(ev, &format!("{TRIP}: .deb"), &at(&a, d), None);
        }
        for r in text_routes(c, &name) {
            ev.push(c.get(&format!("{TRIP}: other views"), &a.with_path(&r), None));
        }
    });
    ev
}

pub fn judge_tripwire(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if !has_upstream_log(rec) {
        return skipped("the upstream is not controlled, so the tripwire cannot be observed");
    }
    if j.plan.packages.tripwire.is_none() {
        return skipped("no tripwire package is known in the snapshot");
    }
    if let Some(v) = j.require("C.deb") {
        return v;
    }
    if let Some(hit) = crate::common::build::tripwire_hits(rec).first() {
        return fail(format!(
            "a maintainer script of the tripwire package ran on the mirror: the canary received {}",
            short(&hit.target)
        ));
    }
    let served = rec.exchanges.iter().any(|e| {
        e.label.starts_with(&format!("{TRIP}: .deb"))
            && e.response.as_ref().is_some_and(|r| r.is_success())
    });
    if !served {
        return inconclusive(
            "the tripwire package's .deb is not served, so its maintainer scripts were never in reach",
        );
    }
    pass(format!(
        "{} requests around the tripwire .deb; its maintainer scripts never ran",
        rec.exchanges.len()
    ))
}

const TEXT: &str = "document that may carry package text";

pub fn collect_template(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Some(a)) = (c.plan.packages.template.clone(), archive(c)) else {
        return ev;
    };
    let p = &c.plan.packages;
    let plain = p.packages_index();
    for rel in [plain.clone(), f.packages_index(p)] {
        ev.push(c.get(TEXT, &at(&a, &p.dist_path(&rel)), None));
    }
    for r in text_routes(c, &name) {
        ev.push(c.get(TEXT, &a.with_path(&r), None));
    }
    ev
}

pub fn judge_template(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.template.is_none() {
        return skipped("no package carrying template text is known in the snapshot");
    }
    if let Some(v) = j.require("C.packages") {
        return v;
    }
    // A gzipped index carries the text compressed: read it unpacked.
    for ex in &rec.exchanges {
        if let Some(text) = success_body(ex).and_then(super::doc::packages_text) {
            for (raw, evaluated) in egress_model::TEMPLATE_MARKERS {
                if text.contains(evaluated) {
                    return fail(format!(
                        "GET {} evaluated package text: {raw:?} came back as {evaluated:?}",
                        short(&ex.request_target())
                    ));
                }
            }
        }
    }
    let carrying = match crate::common::build::template_scan(rec) {
        Ok(n) => n,
        Err(v) => return v,
    };
    if rec.exchanges.iter().all(|e| success_body(e).is_none()) {
        return inconclusive("the template package's index is not served at all");
    }
    if carrying == 0 {
        return pass("no served document carries the package's text, so none evaluates it");
    }
    pass(format!(
        "{carrying} served documents carry the template expressions verbatim, none evaluated"
    ))
}
