//! P4 no build path: no endpoint executes or evaluates anything an artifact
//! supplies: no sdist build to compute metadata, no lifecycle scripts, no
//! template rendering of package text.

use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use crate::classify::{self, has_upstream_log, Answer};
use crate::collect::Evidence;
use crate::common::build::{template_scan, tripwire_hits};
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::{DistFilename, DistKind, ProbeRecord, Url};
use egress_simple::{HTML_LEGACY, JSON_V1};

const PAGE: &str = "project page listing sdists";
const META: &str = "core metadata of an sdist";

fn sdists(page_url: &Url, body: &[u8]) -> Vec<(String, Url)> {
    let Ok(page) = egress_simple::parse_project_html(body) else {
        return Vec::new();
    };
    page.files
        .iter()
        .filter(|f| DistFilename::parse(&f.filename).is_ok_and(|d| d.kind == DistKind::Sdist))
        .filter_map(|f| page_url.join(&f.url).ok().map(|u| (f.filename.clone(), u)))
        .collect()
}

/// Asks for core metadata of every sdist (at most four per project) of the
/// sdist-only project, if one is known, and of the present project: without
/// a build, a mirror cannot know an sdist's metadata (PEP 643 static
/// metadata aside, see docs/predicates.md).
pub fn collect_metadata_sdist(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let mut names: Vec<_> = c.plan.packages.sdist_only.iter().cloned().collect();
    names.extend(c.plan.packages.present.iter().map(|p| p.name.clone()));
    names.dedup();
    c.window("P4.metadata-sdist", &mut ev, |ev| {
        for name in &names {
            let Ok(url) = c.plan.project_url(name) else {
                continue;
            };
            let page = c.get(PAGE, &url, Some(HTML_LEGACY));
            let files = success_body(&page)
                .map(|b| sdists(&url, b))
                .unwrap_or_default();
            ev.push(page);
            for (_, u) in files.iter().take(4) {
                ev.push(c.get(META, &u.with_path(&format!("{}.metadata", u.path())), None));
            }
        }
    });
    ev
}

pub fn judge_metadata_sdist(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    if let Some(hit) = tripwire_hits(rec).first() {
        return fail(format!(
            "an sdist's build code ran: the tripwire received {}",
            short(&hit.target)
        ));
    }
    let metas: Vec<_> = rec.exchanges.iter().filter(|e| e.label == META).collect();
    if metas.is_empty() {
        return skipped("no sdist is listed on the probed project pages");
    }
    for ex in &metas {
        if let Answer::Served(s) = classify::classify(&origin, ex) {
            return fail(format!(
                "GET {} was answered {s}: core metadata of an sdist needs a build",
                short(&ex.request_target())
            ));
        }
        if let Answer::Gateway(s) = classify::classify(&origin, ex) {
            return fail(format!(
                "GET {} was answered {s}: the target tried to fetch it upstream",
                short(&ex.request_target())
            ));
        }
    }
    pass(format!(
        "{} metadata requests for sdists refused",
        metas.len()
    ))
}

const TRIP: &str = "tripwire project";

/// Probes the snapshot's tripwire project (the conformance kit's), else the
/// controlled upstream's; without either, nothing.
pub fn collect_tripwire(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(name) = (c.plan.packages.tripwire.clone())
        .or_else(|| c.plan.upstream.as_ref().map(|u| u.tripwire.clone()))
    else {
        return ev;
    };
    let Ok(index) = c.plan.index() else { return ev };
    let Ok(url) = c.plan.project_url(&name) else {
        return ev;
    };
    c.window("P4.tripwire", &mut ev, |ev| {
        let page = c.get(&format!("{TRIP}: page"), &url, Some(HTML_LEGACY));
        let files = success_body(&page)
            .map(|b| sdists(&url, b))
            .unwrap_or_default();
        ev.push(page);
        ev.push(c.get(&format!("{TRIP}: page"), &url, Some(JSON_V1)));
        for (_, u) in files.iter().take(2) {
            c.get_following(ev, &format!("{TRIP}: sdist"), u, None);
            ev.push(c.get(
                &format!("{TRIP}: metadata"),
                &u.with_path(&format!("{}.metadata", u.path())),
                None,
            ));
        }
        for p in [format!("/pypi/{name}/json"), format!("/project/{name}/")] {
            ev.push(c.get(&format!("{TRIP}: other views"), &index.with_path(&p), None));
        }
    });
    ev
}

pub fn judge_tripwire(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if !has_upstream_log(rec) {
        return skipped("the upstream is not controlled, so the tripwire cannot be observed");
    }
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    if let Some(hit) = tripwire_hits(rec).first() {
        return fail(format!(
            "code from the tripwire sdist ran on the mirror: the canary received {}",
            short(&hit.target)
        ));
    }
    let served_page = rec.exchanges.iter().any(|e| {
        e.label.ends_with(": page") && e.response.as_ref().is_some_and(|r| r.is_success())
    });
    if !served_page {
        return inconclusive(
            "the tripwire project is not served, so its sdist was never offered to a build",
        );
    }
    pass(format!(
        "{} requests around the tripwire sdist; its build code never ran",
        rec.exchanges.len()
    ))
}

const TEXT: &str = "page that may carry package text";

pub fn collect_template(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(name) = c.plan.packages.template.clone() else {
        return ev;
    };
    let (Ok(index), Ok(url)) = (c.plan.index(), c.plan.project_url(&name)) else {
        return ev;
    };
    let page = c.get(TEXT, &url, Some(HTML_LEGACY));
    let files: Vec<Url> = success_body(&page)
        .and_then(|b| egress_simple::parse_project_html(b).ok())
        .map(|p| {
            p.files
                .iter()
                .filter_map(|f| url.join(&f.url).ok())
                .collect()
        })
        .unwrap_or_default();
    ev.push(page);
    ev.push(c.get(TEXT, &url, Some(JSON_V1)));
    for u in files.iter().take(4) {
        ev.push(c.get(TEXT, &u.with_path(&format!("{}.metadata", u.path())), None));
    }
    for p in [
        format!("/pypi/{name}/json"),
        format!("/project/{name}/"),
        format!("/{name}/"),
    ] {
        ev.push(c.get(TEXT, &index.with_path(&p), None));
    }
    ev
}

pub fn judge_template(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.template.is_none() {
        return skipped("no project carrying template text is known in the snapshot");
    }
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let carrying = match template_scan(rec) {
        Ok(n) => n,
        Err(v) => return v,
    };
    if rec.exchanges.iter().all(|e| success_body(e).is_none()) {
        return inconclusive("the template project is not served at all");
    }
    if carrying == 0 {
        return pass("no served page carries the package's text, so none evaluates it");
    }
    pass(format!(
        "{carrying} served pages carry the template expressions verbatim, none evaluated"
    ))
}
