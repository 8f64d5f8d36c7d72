//! P4 no build path, in npm's terms: a tarball's lifecycle scripts never run
//! on the mirror, and package text with template expressions is never
//! evaluated in anything the mirror serves.

use super::doc::Packument;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{at, packument_url, ABBREVIATED, FULL};
use crate::classify::has_upstream_log;
use crate::collect::Evidence;
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::{NpmName, ProbeRecord};

/// Routes where registries render package text: the Verdaccio web UI's
/// data routes and a version document.
fn text_routes(name: &NpmName) -> Vec<String> {
    vec![
        format!("/-/verdaccio/data/package/readme/{}", name.as_str()),
        format!("/-/verdaccio/data/sidebar/{}", name.as_str()),
        format!("/-/web/detail/{}", name.as_str()),
        format!("{}/latest", name.packument_path()),
    ]
}

const TRIP: &str = "tripwire package";

pub fn collect_tripwire(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Ok(registry)) = (c.plan.packages.tripwire.clone(), c.plan.index()) else {
        return ev;
    };
    let Some(page) = packument_url(c, &name) else {
        return ev;
    };
    c.window("P4.tripwire", &mut ev, |ev| {
        let full = c.get(&format!("{TRIP}: packument"), &page, Some(FULL));
        let doc = success_body(&full).and_then(|b| Packument::parse(b).ok());
        ev.push(full);
        ev.push(c.get(&format!("{TRIP}: packument"), &page, Some(ABBREVIATED)));
        for v in doc.map(|d| d.versions).unwrap_or_default().iter().take(2) {
            if let Some(u) = v.tarball.as_deref().and_then(|t| page.join(t).ok()) {
                c.get_following(ev, &format!("{TRIP}: tarball"), &u, None);
            }
        }
        for p in text_routes(&name) {
            ev.push(c.get(&format!("{TRIP}: other views"), &at(&registry, &p), None));
        }
    });
    ev
}

pub fn judge_tripwire(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if !has_upstream_log(rec) {
        return skipped("the upstream is not controlled, so the tripwire cannot be observed");
    }
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    if let Some(hit) = crate::common::build::tripwire_hits(rec).first() {
        return fail(format!(
            "a lifecycle script of the tripwire package ran on the mirror: the canary received {}",
            short(&hit.target)
        ));
    }
    let served_tarball = rec.exchanges.iter().any(|e| {
        e.label.starts_with(&format!("{TRIP}: tarball"))
            && e.response.as_ref().is_some_and(|r| r.is_success())
    });
    if !served_tarball {
        return inconclusive(
            "the tripwire package's tarball is not served, so its scripts were never in reach",
        );
    }
    pass(format!(
        "{} requests around the tripwire tarball; its lifecycle scripts never ran",
        rec.exchanges.len()
    ))
}

const TEXT: &str = "document that may carry package text";

pub fn collect_template(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Ok(registry)) = (c.plan.packages.template.clone(), c.plan.index()) else {
        return ev;
    };
    if let Some(page) = packument_url(c, &name) {
        ev.push(c.get(TEXT, &page, Some(FULL)));
        ev.push(c.get(TEXT, &page, Some(ABBREVIATED)));
    }
    for p in text_routes(&name) {
        ev.push(c.get(TEXT, &at(&registry, &p), None));
    }
    ev
}

pub fn judge_template(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.template.is_none() {
        return skipped("no package carrying template text is known in the snapshot");
    }
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    let carrying = match crate::common::build::template_scan(rec) {
        Ok(n) => n,
        Err(v) => return v,
    };
    if rec.exchanges.iter().all(|e| success_body(e).is_none()) {
        return inconclusive("the template package is not served at all");
    }
    if carrying == 0 {
        return pass("no served document carries the package's text, so none evaluates it");
    }
    pass(format!(
        "{carrying} served documents carry the template expressions verbatim, none evaluated"
    ))
}
