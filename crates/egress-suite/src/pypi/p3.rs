//! P3 no path passthrough: anything outside the package namespace is refused
//! and never forwarded: absolute-form targets, CONNECT, traversal in every
//! encoding, `//host/` paths, `?url=`-style parameters, unknown routes, and
//! redirects that hand the client to another origin.

use super::facts::Judge;
use super::facts::{Facts, ListedFile};
use super::plan::Collector;
use crate::classify::{self, Answer};
use crate::collect::Evidence;
use crate::common::passthrough::{
    elsewhere, raw_get, same_origin_redirects, traversal_steps, TRAVERSAL_TARGETS,
};
use crate::common::{h2_smuggling, runwide, smuggling};
use crate::facts::{find, success_body};
use crate::judge::{
    fail, forwarded_fail, inconclusive, pass, refusals, short, Verdict, PASSTHROUGH,
};
use egress_model::ProbeRecord;
use egress_simple::HTML_LEGACY;

pub fn collect_traversal(c: &Collector, class: &str) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    let project = c
        .plan
        .packages
        .present
        .first()
        .map(|p| format!("{}{}/", index.path(), p.name))
        .unwrap_or_else(|| index.path().to_string());
    c.window(&format!("P3.traversal-{class}"), &mut ev, |ev| {
        for step in traversal_steps(class) {
            for base in [index.path().to_string(), project.clone()] {
                for aim in TRAVERSAL_TARGETS {
                    let target = format!("{base}{}{aim}?ec={}", step.repeat(8), c.token());
                    ev.push(c.send_raw(&format!("traversal ({class})"), &raw_get(c, &target)));
                }
            }
        }
    });
    ev
}

const BASELINE: &str = "baseline without parameters";
const WITH_PARAM: &str = "with a URL parameter";

pub fn collect_url_param(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    let other = elsewhere(c);
    let mut paths = vec![index.path().to_string(), "/".to_string()];
    if let Some(p) = c.plan.packages.present.first() {
        paths.push(format!("{}{}/", index.path(), p.name));
    }
    c.window("P3.url-param", &mut ev, |ev| {
        for path in &paths {
            ev.push(c.get(BASELINE, &index.with_path(path), Some(HTML_LEGACY)));
            for param in ["url", "target", "redirect", "next", "uri", "proxy"] {
                let q = format!("{path}?{param}=http://{other}/{}", c.token());
                ev.push(c.get(WITH_PARAM, &index.with_path(&q), Some(HTML_LEGACY)));
            }
        }
        let q = format!("/proxy?url=http://{other}/{}", c.token());
        ev.push(c.get(WITH_PARAM, &index.with_path(&q), Some(HTML_LEGACY)));
    });
    ev
}

pub fn judge_url_param(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    if let Some(v) = forwarded_fail(rec) {
        return v;
    }
    // With a controlled upstream, following the parameter is observed
    // directly (the URL names the upstream), so a 2xx that differs from the
    // baseline (e.g. a page that echoes the request URL) is not taken as
    // evidence of following. Without one, a changed answer is the only sign.
    let observed = classify::has_upstream_log(rec);
    let mut n = 0;
    let mut echoed = 0;
    for ex in rec.exchanges.iter().filter(|e| e.label == WITH_PARAM) {
        n += 1;
        let target = ex.request_target();
        let path = target.split('?').next().unwrap_or_default();
        let what = format!("GET {}", short(&target));
        match classify::classify(&origin, ex) {
            Answer::Served(s) => {
                let baseline = rec
                    .exchanges
                    .iter()
                    .find(|b| b.label == BASELINE && b.request_target() == path);
                let same = baseline
                    .and_then(|b| b.response.as_ref())
                    .zip(ex.response.as_ref())
                    .is_some_and(|(b, r)| b.is_success() && b.body_sha256 == r.body_sha256);
                if !same && observed {
                    echoed += 1;
                } else if !same {
                    return fail(format!("{what} was answered {s} with content that differs from {path} without the parameter"));
                }
            }
            Answer::RedirectOffOrigin(loc) => {
                return fail(format!("{what} was redirected to {}", short(&loc)))
            }
            Answer::Gateway(s) => {
                return fail(format!(
                    "{what} was answered {s}: the target tried to reach another server"
                ))
            }
            _ => {}
        }
    }
    if n == 0 {
        return inconclusive("no request with a parameter was recorded");
    }
    if echoed > 0 {
        return pass(format!(
            "{n} requests with url-style parameters: none followed (the upstream saw none); {echoed} answers differ from the page without the parameter"
        ));
    }
    pass(format!("{n} requests with url-style parameters were refused or answered as if the parameter were absent"))
}

pub fn collect_unknown(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    let project = c
        .plan
        .packages
        .present
        .first()
        .map(|p| format!("{}{}/", index.path(), p.name));
    c.window("P3.unknown-route", &mut ev, |ev| {
        let mut targets = vec![
            format!("/{}", c.token()),
            format!("/{}/", c.token()),
            format!("{}{}/{}", index.path(), c.token(), c.token()),
            format!("/api/{}", c.token()),
            format!("/admin/{}", c.token()),
            format!("/+api?{}", c.token()),
            format!("/-/{}", c.token()),
            format!("/.git/config?{}", c.token()),
        ];
        if let Some(p) = &project {
            targets.push(format!("{p}{}/", c.token()));
        }
        for t in targets {
            ev.push(c.get("unknown route", &index.with_path(&t), Some(HTML_LEGACY)));
        }
    });
    ev
}

const PAGE: &str = "project page (HTML)";
const REDIRECT_PROBE: &str = "request that mirrors commonly redirect";

pub fn collect_offsite(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    let Some(present) = c.plan.packages.present.first() else {
        return ev;
    };
    c.window("P3.offsite-redirect", &mut ev, |ev| {
        if let Ok(url) = c.plan.project_url(&present.name) {
            ev.push(c.get(PAGE, &url, Some(HTML_LEGACY)));
        }
        let name = present.name.as_str();
        let shouty = name.to_ascii_uppercase().replace('-', "_");
        for p in [
            format!("{}{name}", index.path()),
            format!("{}{shouty}/", index.path()),
        ] {
            ev.push(c.get(REDIRECT_PROBE, &index.with_path(&p), Some(HTML_LEGACY)));
        }
        for file in f.files.iter().take(super::p1::MAX_FILES) {
            if let Some(u) = &file.url {
                ev.push(c.get(REDIRECT_PROBE, u, None));
            }
        }
        for name in c.plan.packages.absent.iter().take(1) {
            if let Ok(u) = c.plan.project_url(name) {
                ev.push(c.get(REDIRECT_PROBE, &u, Some(HTML_LEGACY)));
            }
        }
        if let Some(up) = &c.plan.upstream {
            for p in &up.upstream_only_paths {
                ev.push(c.get(REDIRECT_PROBE, &index.with_path(p), None));
            }
        }
    });
    ev
}

pub fn judge_offsite(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    if let Some(body) = find(rec, PAGE).and_then(success_body) {
        if let (Ok(page), Some(url)) = (
            egress_simple::parse_project_html(body),
            j.facts.project_url.as_ref(),
        ) {
            let away: Vec<ListedFile> = page
                .files
                .iter()
                .map(|e| ListedFile::from_entry(url, e))
                .filter(|f| f.url.as_ref().is_some_and(|u| !u.same_origin(&origin)))
                .collect();
            if let Some(f) = away.first() {
                let to = f.url.as_ref().map(|u| u.origin()).unwrap_or_default();
                return fail(format!(
                    "the project page hands the client to another origin: {} links to {to}",
                    f.entry.filename
                ));
            }
        }
    }
    let redirects = match same_origin_redirects(&origin, rec) {
        Ok(n) => n,
        Err(v) => return v,
    };
    if rec.exchanges.len() < 2 {
        return inconclusive("too few requests were recorded");
    }
    pass(format!("{} requests, no redirect or link leaves the mirror's origin ({redirects} same-origin redirects)", rec.exchanges.len()))
}

pub fn judge_passthrough(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.project-html", PASSTHROUGH)
}

/// `P3.run-wide-redirects`: see [`runwide::judge_offsite`].
pub fn judge_run_wide_offsite(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_offsite(j, "C.project-html", super::p1::listings)
}

/// `P3.request-smuggling`: the corpus hides a GET of the present project's
/// page (see [`smuggling`]).
pub fn collect_smuggling(c: &Collector, _f: &Facts) -> Evidence {
    smuggling::collect(c, hidden(c).as_ref())
}

/// The page every smuggling case hides: the present project's HTML page.
fn hidden(c: &Collector) -> Option<smuggling::Hidden> {
    c.plan
        .packages
        .present
        .first()
        .and_then(|p| c.plan.project_url(&p.name).ok())
        .map(|u| smuggling::Hidden {
            path: u.path_and_query().to_string(),
            accept: HTML_LEGACY,
            bare_control: false,
        })
}

pub fn judge_smuggling(j: &Judge, rec: &ProbeRecord) -> Verdict {
    smuggling::judge(j, rec, "C.project-html")
}

/// `P3.h2-smuggling`: the HTTP/2 cases, each after a GET of the present
/// project's page on the same connection (see [`h2_smuggling`]).
pub fn collect_h2_smuggling(c: &Collector, _f: &Facts) -> Evidence {
    h2_smuggling::collect(c, hidden(c).as_ref())
}

pub fn judge_h2_smuggling(j: &Judge, rec: &ProbeRecord) -> Verdict {
    h2_smuggling::judge(j, rec, "C.project-html")
}
