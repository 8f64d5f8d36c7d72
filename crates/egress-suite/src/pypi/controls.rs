//! Positive controls: the target serves a project that is in the snapshot,
//! through each route shape the refusal probes use. Until a control passes,
//! no refusal on its route shape counts.
//!
//! A control never checks the property under test (no hash, no manifest):
//! a mirror whose links carry no hashes fails P1, it is not inconclusive.

use super::facts::control_file;
use super::facts::Judge;
use super::facts::{label, Facts};
use super::plan::{Collector, Plan, PresentSpec};
use crate::collect::Evidence;
use crate::facts::{final_of, find, success_body};
use crate::judge::{inconclusive, pass, Verdict};
use egress_model::{DistFilename, DistKind, ProbeRecord, ProjectName, Status};
use egress_simple::{HTML_LEGACY, JSON_V1};

pub fn collect_index(c: &Collector) -> Evidence {
    let mut ev = Evidence::default();
    if let Ok(u) = c.plan.index() {
        ev.push(c.get(label::INDEX, &u, Some(HTML_LEGACY)));
    }
    ev
}

pub fn judge_index(_j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(ex) = find(rec, label::INDEX) else {
        return inconclusive("the index was not requested");
    };
    let Some(body) = success_body(ex) else {
        return inconclusive(format!("the index did not serve content: {}", ex.summary()));
    };
    match egress_simple::parse_index_html(body) {
        Ok(idx) => pass(format!(
            "the index serves a page listing {} projects",
            idx.projects.len()
        )),
        Err(e) => inconclusive(format!(
            "the index answered but is not a simple-API page: {e}"
        )),
    }
}

fn project_or_inconclusive(j: &Judge) -> Result<(), Verdict> {
    if j.plan.packages.present.is_empty() {
        return Err(inconclusive(
            "no project known to be in the snapshot: give --present NAME==VERSION or --manifest",
        ));
    }
    Ok(())
}

pub fn collect_project(c: &Collector, json: bool) -> Evidence {
    let mut ev = Evidence::default();
    if let Some(url) = c
        .plan
        .packages
        .present
        .first()
        .and_then(|p| c.plan.project_url(&p.name).ok())
    {
        if json {
            ev.push(c.get(label::PROJECT_JSON, &url, Some(JSON_V1)));
        } else {
            ev.push(c.get(label::PROJECT_HTML, &url, Some(HTML_LEGACY)));
        }
    }
    ev
}

pub fn judge_project_html(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Err(v) = project_or_inconclusive(j) {
        return v;
    }
    let Some(ex) = find(rec, label::PROJECT_HTML) else {
        return inconclusive("the project page was not requested");
    };
    let Some(body) = success_body(ex) else {
        return inconclusive(format!(
            "the present project's page did not serve content: {}",
            ex.summary()
        ));
    };
    match egress_simple::parse_project_html(body) {
        Ok(p) if !p.files.is_empty() => pass(format!(
            "the project page (HTML) lists {} files",
            p.files.len()
        )),
        Ok(_) => inconclusive("the present project's page lists no file"),
        Err(e) => inconclusive(format!("the project page is not a PEP 503 page: {e}")),
    }
}

pub fn judge_project_json(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Err(v) = project_or_inconclusive(j) {
        return v;
    }
    let Some(ex) = find(rec, label::PROJECT_JSON) else {
        return inconclusive("the JSON page was not requested");
    };
    let Some(body) = success_body(ex) else {
        return inconclusive(format!(
            "the present project's JSON page did not serve content: {}",
            ex.summary()
        ));
    };
    let ctype = ex
        .response
        .as_ref()
        .and_then(|r| r.header("content-type"))
        .unwrap_or_default();
    if !ctype.to_ascii_lowercase().starts_with(JSON_V1) {
        return inconclusive(format!(
            "asked for {JSON_V1} and got Content-Type {ctype:?}: PEP 691 JSON is not served"
        ));
    }
    match egress_simple::parse_project_json(body) {
        Ok(p) if !p.files.is_empty() => pass(format!(
            "the project page (JSON) lists {} files",
            p.files.len()
        )),
        Ok(_) => inconclusive("the present project's JSON page lists no file"),
        Err(e) => inconclusive(format!("the JSON page does not parse: {e}")),
    }
}

pub fn collect_file(c: &Collector, facts: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    if let Some(url) = control_file(facts).and_then(|f| f.url.clone()) {
        c.get_following(&mut ev, label::FILE, &url, None);
    }
    ev
}

/// Whether bytes look like the artifact their name says (zip or gzip magic).
pub fn looks_like_artifact(filename: &str, body: &[u8]) -> bool {
    let zip = body.starts_with(b"PK\x03\x04");
    let gz = body.starts_with(&[0x1f, 0x8b]);
    match DistFilename::parse(filename).map(|d| d.kind) {
        Ok(DistKind::Wheel) => zip,
        Ok(DistKind::Sdist) if filename.ends_with(".zip") => zip,
        Ok(DistKind::Sdist) => gz,
        Err(_) => zip || gz,
    }
}

pub fn judge_file(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.facts.controls.status("C.project-html") != egress_model::Status::Pass {
        return inconclusive(
            "no project page to take a file link from (C.project-html did not pass)",
        );
    }
    let Some(listed) = control_file(j.facts) else {
        return fail_or_inconclusive_no_same_origin(j);
    };
    let Some(ex) = final_of(rec, label::FILE) else {
        return inconclusive("the file was not requested");
    };
    let Some(r) = &ex.response else {
        return inconclusive(format!("the file was not served: {}", ex.summary()));
    };
    if !r.is_success() {
        return inconclusive(format!("the file was not served: {}", ex.summary()));
    }
    if r.body_end != egress_model::BodyEnd::Complete || r.body_len == 0 {
        return inconclusive(format!(
            "the file body did not arrive whole: {}",
            ex.summary()
        ));
    }
    if !looks_like_artifact(&listed.entry.filename, r.body_prefix.as_bytes()) {
        return inconclusive(format!(
            "{} does not start like a wheel or sdist",
            listed.entry.filename
        ));
    }
    pass(format!(
        "{} served, {} bytes of a valid archive",
        listed.entry.filename, r.body_len
    ))
}

fn fail_or_inconclusive_no_same_origin(j: &Judge) -> Verdict {
    if j.facts.files.is_empty() {
        inconclusive("the project page lists no file for the planned version")
    } else {
        // Every link leaves the mirror: nothing can be fetched from the target
        // itself. P3 judges the hand-off; here there is no control.
        inconclusive("every file link on the project page points to another origin")
    }
}

/// Picks the first project the index lists that is not planned as absent,
/// when the plan names no present project and the index control passed.
pub fn discover(plan: &mut Plan, records: &[ProbeRecord]) {
    if !plan.packages.present.is_empty() {
        return;
    }
    let Some(index_record) = records
        .iter()
        .find(|r| r.id == "C.index" && r.status == Status::Pass)
    else {
        return;
    };
    let Some(body) = find(index_record, label::INDEX).and_then(success_body) else {
        return;
    };
    let Ok(idx) = egress_simple::parse_index_html(body) else {
        return;
    };
    let mut names: Vec<ProjectName> = idx
        .projects
        .iter()
        .filter_map(|n| ProjectName::new(n).ok())
        .filter(|n| !plan.packages.absent.contains(n))
        .collect();
    names.sort();
    if let Some(n) = names.into_iter().next() {
        plan.packages.present.push(PresentSpec {
            name: n,
            version: None,
        });
        plan.present_source = "root index".into();
    }
}
