//! cargo positive controls: the target serves `config.json` with a `dl`,
//! the index file of a present crate, and that crate's `.crate` where
//! `dl` says. Until a control passes, no refusal on its route shape counts.
//!
//! A control never checks the property under test: a `dl` on another
//! origin fails P3, a `cksum` the bytes do not have fails P1.

use super::doc;
use super::facts::{label, Facts, Judge};
use super::plan::{at, index_file, root, Collector};
use crate::collect::Evidence;
use crate::facts::{final_of, success_body};
use crate::judge::{inconclusive, pass, Verdict};
use egress_model::{BodyEnd, ProbeRecord, Status};

pub fn collect_config(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    if let Some(r) = root(c) {
        c.get_following(&mut ev, label::CONFIG, &at(&r, "config.json"), None);
    }
    ev
}

pub fn judge_config(_j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(ex) = final_of(rec, label::CONFIG) else {
        return inconclusive("config.json was not requested");
    };
    match success_body(ex).map(doc::config) {
        Some(Some(c)) => pass(format!(
            "{} names dl {} and {}",
            ex.request_target(),
            c.dl,
            c.api
                .map_or_else(|| "no api".to_string(), |a| format!("api {a}"))
        )),
        Some(None) => inconclusive("config.json is served but names no dl"),
        None => inconclusive(format!("config.json is not served: {}", ex.summary())),
    }
}

pub fn collect_index(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(r), Some(name)) = (root(c), c.plan.packages.present.first()) else {
        return ev;
    };
    if let Some(u) = index_file(&r, name) {
        c.get_following(&mut ev, label::INDEX, &u, None);
    }
    ev
}

pub fn judge_index(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(name) = j.plan.packages.present.first() else {
        return inconclusive("no crate known to be in the snapshot: give --present NAME");
    };
    let Some(ex) = final_of(rec, label::INDEX) else {
        return inconclusive(format!("{name} is not a crate name cargo asks for"));
    };
    match success_body(ex).map(doc::lines) {
        Some(Some(lines)) if lines.iter().any(|l| l.name.eq_ignore_ascii_case(name)) => {
            pass(format!(
                "{} lists {} versions of {name}",
                ex.request_target(),
                lines.len()
            ))
        }
        Some(_) => inconclusive(format!("the index file of {name} lists no line of it")),
        None => inconclusive(format!(
            "the index file of {name}, a crate in the snapshot, is not served: {}",
            ex.summary()
        )),
    }
}

pub fn collect_crate(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    if let Some(u) = f.control_line().and_then(|l| f.download_url(l)) {
        c.get_following(&mut ev, label::CRATE, &u, None);
    }
    ev
}

pub fn judge_crate(j: &Judge, rec: &ProbeRecord) -> Verdict {
    for control in ["C.config", "C.index"] {
        if j.facts.controls.status(control) != Status::Pass {
            return inconclusive(format!("no download URL to take ({control} did not pass)"));
        }
    }
    let Some(ex) = final_of(rec, label::CRATE) else {
        return inconclusive("the .crate was not requested (dl names another origin)");
    };
    let Some(r) = ex.response.as_ref().filter(|r| r.is_success()) else {
        return inconclusive(format!(
            "the .crate of a crate in the snapshot was not served: {}",
            ex.summary()
        ));
    };
    if r.body_end != BodyEnd::Complete || !r.body_prefix.as_bytes().starts_with(&[0x1f, 0x8b]) {
        return inconclusive(format!(
            "the .crate is not a whole gzip file: {}",
            ex.summary()
        ));
    }
    pass(format!(
        "{} served a {}-byte .crate",
        ex.request_target(),
        r.body_len
    ))
}

/// Whether `body` is a served index file of a `success_body`.
pub fn served_lines(ex: &egress_model::Exchange) -> Option<Vec<doc::Line>> {
    success_body(ex).and_then(doc::lines)
}
