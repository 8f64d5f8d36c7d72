//! P5 snapshot immutability, in cargo's terms: the manifest and its
//! signature (shared); the index file and the `.crate` unchanged when the
//! upstream republishes the version with other bytes or yanks it; the held
//! crate at a yanked version served with the signed line, still yanked.

use super::controls::served_lines;
use super::facts::{Facts, Judge};
use super::plan::{index_file, root, Collector};
use crate::collect::Evidence;
use crate::common::snapshot::{self, input, mutation, not_mutated};
use crate::judge::{fail, inconclusive, pass, skipped, Verdict};
use egress_model::ProbeRecord;

pub fn judge_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    snapshot::manifest_verdict(j, rec, "C.index")
}

const BEFORE: &str = "before the change upstream";
const AFTER: &str = "after the change upstream";
const WHATS: [&str; 2] = ["index file", ".crate"];

fn read_both(c: &Collector, f: &Facts, ev: &mut Evidence, when: &str) {
    let (Some(r), Some(name)) = (root(c), c.plan.packages.present.first()) else {
        return;
    };
    if let Some(u) = index_file(&r, name) {
        c.get_following(ev, &format!("{when}: index file"), &u, None);
    }
    if let Some(u) = &f.crate_url {
        c.get_following(ev, &format!("{when}: .crate"), u, None);
    }
}

fn around(
    c: &Collector,
    f: &Facts,
    window: &str,
    change: impl FnOnce(
        &dyn egress_model::Upstream,
        &str,
        &str,
    ) -> Result<egress_model::Observation, egress_model::UpstreamError>,
) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(l)) = (c.upstream, f.control_line()) else {
        return ev;
    };
    let (name, vers) = (l.name.clone(), l.vers.clone());
    c.window(window, &mut ev, |ev| {
        read_both(c, f, ev, BEFORE);
        match change(up, &name, &vers) {
            Ok(o) => ev.observations.push(o),
            Err(e) => ev
                .observations
                .push(input(&format!("mutation failed: {e}"), Vec::new())),
        }
        read_both(c, f, ev, AFTER);
    });
    ev
}

pub fn collect_republished(c: &Collector, f: &Facts) -> Evidence {
    around(c, f, "P5.upstream-republished", |up, n, v| {
        up.replace_file_bytes(&format!("{n}-{v}.crate"))
    })
}

pub fn collect_yank(c: &Collector, f: &Facts) -> Evidence {
    around(c, f, "P5.upstream-yank", |up, n, v| up.yank(n, v))
}

fn judge_change(j: &Judge, rec: &ProbeRecord, what: &str) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped("the upstream is not controlled, so it cannot be changed mid-run");
    }
    if let Some(v) = j.require("C.crate") {
        return v;
    }
    let Some((file, _, _)) = mutation(rec) else {
        return inconclusive(not_mutated(rec, &format!("the upstream did not {what}")));
    };
    let compared = match snapshot::compare_reads(rec, BEFORE, AFTER, &WHATS) {
        Ok(n) => n,
        Err(c) => {
            return fail(format!(
                "the {} changed after the upstream {what} ({file}): {:.16}… then {:.16}…",
                c.what,
                c.first.to_hex(),
                c.second.to_hex()
            ))
        }
    };
    if compared == 0 {
        return inconclusive("nothing was served whole before and after the change");
    }
    pass(format!(
        "the upstream {what} ({file}); the {compared} resources read before and after are unchanged"
    ))
}

pub fn judge_republished(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_change(j, rec, "republished the version with other bytes")
}

pub fn judge_yank(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_change(j, rec, "yanked the version")
}

const YANKED: &str = "index file of the crate held at a yanked version";

pub fn collect_yanked_flags(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(r), Some(name)) = (root(c), c.plan.packages.yanked.as_ref()) else {
        return ev;
    };
    if let Some(u) = index_file(&r, name) {
        c.get_following(&mut ev, YANKED, &u, None);
    }
    ev
}

/// The held crate's lines are served, and at least one says `yanked`: a
/// registry that drops the flag (or the line) hands cargo a version the
/// signed index withdrew. With a verified manifest, the bytes must be the
/// ones it lists for the path.
pub fn judge_yanked_flags(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(name) = j.plan.packages.yanked.as_ref() else {
        return skipped("no crate held at a yanked version is named");
    };
    if let Some(v) = j.require("C.index") {
        return v;
    }
    let Some(ex) = crate::facts::final_of(rec, YANKED) else {
        return inconclusive("the index file was not requested");
    };
    let Some(lines) = served_lines(ex) else {
        return fail(format!(
            "the index file of {name}, held in the snapshot, is not served: {}",
            ex.summary()
        ));
    };
    if !lines.iter().any(|l| l.yanked) {
        return fail(format!(
            "{name}'s index file marks none of its {} versions yanked, as the signed index does",
            lines.len()
        ));
    }
    if let Ok((manifest, doc, _)) =
        snapshot::manifest_to_compare(j, "C.index", &ex.request_target())
    {
        if let Err(v) = snapshot::served_as_listed(ex, &doc, &manifest) {
            return v;
        }
    }
    pass(format!("{name}'s index file keeps the signed yanked flag"))
}
