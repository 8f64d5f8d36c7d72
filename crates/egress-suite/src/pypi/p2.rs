//! P2 replay only: a project absent from the snapshot but present upstream is
//! never served, neither its page nor its files; at best, the upstream is
//! never contacted at all.

use super::facts::control_file;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use crate::classify::{self, Answer};
use crate::collect::Evidence;
use crate::common::replay::{absent_listings, upstream_contact_verdict};
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, short, skipped, tally, Verdict};
use egress_model::ProbeRecord;
use egress_simple::{HTML_LEGACY, JSON_V1};

const PAGE: &str = "absent project's page";
const FILE: &str = "absent project's file";

pub fn collect_page(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    for name in c.plan.packages.absent.iter().take(3) {
        if let Ok(url) = c.plan.project_url(name) {
            ev.push(c.get(&format!("{PAGE} (HTML)"), &url, Some(HTML_LEGACY)));
            ev.push(c.get(&format!("{PAGE} (JSON)"), &url, Some(JSON_V1)));
        }
    }
    ev
}

/// Number of files a served page lists, if it is a page at all.
fn listed(body: &[u8]) -> Option<usize> {
    egress_simple::parse_project_html(body)
        .or_else(|_| egress_simple::parse_project_json(body))
        .ok()
        .map(|p| p.files.len())
}

pub fn judge_page(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    if rec.exchanges.is_empty() {
        return inconclusive("no absent project to ask for");
    }
    let codes = match absent_listings(&origin, rec, listed, "files of a project", "page") {
        Ok(c) => c,
        Err(v) => return v,
    };
    pass(format!("absent projects not served ({})", tally(&codes)))
}

pub fn collect_file(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    // Files the absent pages list, if a (non-conformant) target served any.
    for name in c.plan.packages.absent.iter().take(3) {
        let Ok(url) = c.plan.project_url(name) else {
            continue;
        };
        let page = c.get(&format!("{PAGE} (HTML)"), &url, Some(HTML_LEGACY));
        let files: Vec<_> = success_body(&page)
            .and_then(|b| egress_simple::parse_project_html(b).ok())
            .map(|p| p.files)
            .unwrap_or_default();
        ev.push(page);
        for file in files.iter().take(4) {
            if let Ok(u) = url.join(&file.url) {
                ev.push(c.get(FILE, &u, None));
            }
        }
    }
    // With a controlled upstream: the upstream's own file paths, and the
    // present file's URL shape with the absent file's name.
    if let Some(up) = &c.plan.upstream {
        let template =
            control_file(f).and_then(|l| l.url.clone().map(|u| (u, l.entry.filename.clone())));
        for path in &up.upstream_only_paths {
            ev.push(c.get(FILE, &index.with_path(path), None));
            let filename = path.rsplit('/').next().unwrap_or_default();
            if let Some((u, present_name)) = &template {
                let swapped = u.path().replace(present_name.as_str(), filename);
                if swapped != u.path() {
                    ev.push(c.get(FILE, &index.with_path(&swapped), None));
                }
            }
        }
    }
    ev
}

pub fn judge_file(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.file") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    let files: Vec<_> = rec.exchanges.iter().filter(|e| e.label == FILE).collect();
    if files.is_empty() {
        return skipped("no file URL of an absent project is known: its page lists none and the upstream is not controlled");
    }
    let mut codes = Vec::new();
    for ex in files {
        let what = format!("GET {}", short(&ex.request_target()));
        match classify::classify(&origin, ex) {
            Answer::Served(s) => {
                let n = ex.response.as_ref().map_or(0, |r| r.body_len);
                return fail(format!(
                    "{what} was answered {s} with {n} bytes of a project absent from the snapshot"
                ));
            }
            Answer::RedirectOffOrigin(loc) => {
                return fail(format!("{what} was redirected to {}", short(&loc)))
            }
            Answer::Gateway(s) => {
                return fail(format!(
                    "{what} was answered {s}: the target tried to fetch it upstream"
                ))
            }
            Answer::RedirectSameOrigin(_) => codes.push("3xx".into()),
            Answer::Refused(s) => codes.push(s.to_string()),
            Answer::NoAnswer => codes.push("no answer".into()),
        }
    }
    pass(format!(
        "no file of an absent project served ({})",
        tally(&codes)
    ))
}

/// Collected last: the whole run's upstream log.
pub fn judge_upstream_contact(j: &Judge, rec: &ProbeRecord) -> Verdict {
    upstream_contact_verdict(j, rec, "C.project-html")
}
