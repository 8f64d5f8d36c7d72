//! P4 no build path, in the Hub's terms: the Hub runs code on artifact
//! bytes in its dataset viewer and converters (Parquet conversion,
//! Croissant, statistics, rows); a mirror offers none of those routes, and
//! a model card is served as the bytes committed, never rendered.

use super::facts::{Facts, Judge};
use super::plan::{at, endpoint, repos, Collector, RepoRef};
use crate::collect::Evidence;
use crate::common::build::{template_scan, tripwire_hits};
use crate::facts::find;
use crate::judge::{fail, inconclusive, pass, refusals, short, Verdict, PASSTHROUGH};
use egress_model::{BodyEnd, HfRepoType, ProbeRecord};

/// The dataset the viewer routes name: the first present dataset, else the
/// first present repository's id as a dataset's.
fn dataset(c: &super::plan::Packages) -> Option<String> {
    let all = repos(&c.present);
    all.iter()
        .find(|r| r.repo_type == HfRepoType::Dataset)
        .or(all.first())
        .map(|r| r.id.to_string())
}

pub fn collect_viewer(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(d)) = (endpoint(c), dataset(&c.plan.packages)) else {
        return ev;
    };
    let mut rels: Vec<String> = [
        "parquet",
        "parquet/default/train",
        "parquet/default/train/0.parquet",
        "croissant",
        "statistics",
        "rows",
    ]
    .iter()
    .map(|r| format!("api/datasets/{d}/{r}"))
    .collect();
    // The viewer's own routes (datasets-server), mounted below the endpoint.
    let q = format!("dataset={d}&config=default&split=train");
    for r in [
        "rows",
        "first-rows",
        "splits",
        "parquet",
        "statistics",
        "croissant",
    ] {
        rels.push(format!("{r}?{q}&offset=0&length=10"));
    }
    c.window("P4.viewer-routes", &mut ev, |ev| {
        for r in rels {
            ev.push(c.get("a dataset viewer or converter route", &at(&e, &r), None));
        }
    });
    ev
}

pub fn judge_viewer(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(u) = tripwire_hits(rec).first() {
        return fail(format!(
            "the upstream's dataset viewer ran on the dataset's files for the mirror: request #{} {} {}",
            u.seq,
            u.method,
            short(&u.target)
        ));
    }
    if let Err(v) = template_scan(rec) {
        return v;
    }
    refusals(j, rec, "C.info", PASSTHROUGH)
}

const CARD: &str = "the model card, as bytes";
const PAGE: &str = "a page that renders the model card";

/// The repository whose card is read: the first present one.
fn card_repo(c: &super::plan::Packages) -> Option<RepoRef> {
    super::plan::first(c)
}

pub fn collect_card(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (endpoint(c), card_repo(&c.plan.packages)) else {
        return ev;
    };
    let rev = f.sha.clone().unwrap_or_else(|| "main".to_string());
    if f.files.iter().any(|x| x.path == "README.md") {
        ev.push(c.get(CARD, &r.resolve(&e, &rev, "README.md"), None));
    }
    for tail in [
        String::new(),
        format!("/blob/{rev}/README.md"),
        "/blob/main/README.md".to_string(),
        "/tree/main".to_string(),
    ] {
        ev.push(c.get(PAGE, &r.page(&e, &tail), Some("text/html")));
    }
    ev
}

pub fn judge_card(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.resolve") {
        return v;
    }
    if let Err(v) = template_scan(rec) {
        return v;
    }
    let Some(entry) = j.facts.files.iter().find(|x| x.path == "README.md") else {
        return inconclusive("the tree lists no README.md (model card) to read");
    };
    let Some(ex) = find(rec, CARD) else {
        return inconclusive("the model card was not requested");
    };
    let Some(r) = ex
        .response
        .as_ref()
        .filter(|r| r.is_success() && r.body_end == BodyEnd::Complete)
    else {
        return inconclusive(format!(
            "the model card, listed in the tree, was not served: {}",
            ex.summary()
        ));
    };
    if r.header("content-type")
        .is_some_and(|t| t.to_ascii_lowercase().contains("html"))
    {
        return fail(format!(
            "{} is served as {}: a card is bytes, not a page",
            short(&ex.request_target()),
            r.header("content-type").unwrap_or_default()
        ));
    }
    if entry.matches(&r.body_sha256, r.full_body()) == Some(false) {
        return fail(format!(
            "{} is served with bytes that are not the committed card's (sha256 {:.16}…)",
            short(&ex.request_target()),
            r.body_sha256.to_hex()
        ));
    }
    let mut pages = rec.clone();
    pages.exchanges.retain(|e| e.label == PAGE);
    match refusals(j, &pages, "C.info", PASSTHROUGH) {
        (egress_model::Status::Pass, why) => pass(format!(
            "the card is served as its {} committed bytes, and the pages that render it: {why}",
            r.body_len
        )),
        v => v,
    }
}
