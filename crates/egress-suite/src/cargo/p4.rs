//! P4 no build path, in cargo's terms: cargo runs a crate's build script
//! only when it builds, never when it fetches, so what a registry could run
//! is its own rendering: no route documents or renders a crate (crates.io's
//! rendered README, docs.rs-like pages), and template text is never
//! evaluated.

use super::facts::{Facts, Judge};
use super::plan::Collector;
use crate::collect::Evidence;
use crate::judge::{fail, refusals, Verdict, PASSTHROUGH};
use egress_model::{ProbeRecord, TEMPLATE_MARKERS};

pub fn collect_render(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    let p = &c.plan.packages;
    let Some(name) = p.template.as_ref().or(p.present.first()) else {
        return ev;
    };
    let version = f
        .lines
        .first()
        .map_or_else(|| "1.0.0".to_string(), |l| l.vers.clone());
    let root = index.path().trim_end_matches('/');
    let parent = root.rsplit_once('/').map_or("", |(p, _)| p);
    let mut paths = Vec::new();
    for base in ["", parent] {
        paths.push(format!("{base}/api/v1/crates/{name}/{version}/readme"));
        paths.push(format!("{base}/api/v1/crates/{name}"));
        paths.push(format!("{base}/crates/{name}"));
        paths.push(format!(
            "{base}/{name}/{version}/{}/",
            name.replace('-', "_")
        ));
        paths.push(format!("{base}/crate/{name}/{version}"));
    }
    paths.dedup();
    c.window("P4.render-routes", &mut ev, |ev| {
        for p in paths {
            ev.push(c.get("a route that documents a crate", &index.with_path(&p), None));
        }
    });
    ev
}

pub fn judge_render(j: &Judge, rec: &ProbeRecord) -> Verdict {
    for ex in &rec.exchanges {
        let body = ex
            .response
            .as_ref()
            .map(|r| r.body_prefix.as_bytes().to_vec());
        let text = String::from_utf8_lossy(body.as_deref().unwrap_or_default()).into_owned();
        if let Some((_, evaluated)) = TEMPLATE_MARKERS.iter().find(|(_, e)| text.contains(e)) {
            return fail(format!(
                "{} evaluated template text: its answer holds {evaluated}",
                ex.request_target()
            ));
        }
    }
    refusals(j, rec, "C.index", PASSTHROUGH)
}
