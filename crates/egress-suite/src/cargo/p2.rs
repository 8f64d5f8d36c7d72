//! P2 replay only, in cargo's terms: a crate absent from the snapshot but
//! served upstream is never listed nor downloaded; an index file never
//! gains a version, even when the upstream publishes one mid-run; the
//! upstream is never contacted.

use super::controls::served_lines;
use super::facts::{Facts, Judge};
use super::plan::{at, index_file, root, Collector, Plan};
use crate::collect::Evidence;
use crate::common::snapshot::{mutation, not_mutated};
use crate::facts::find;
use crate::judge::{fail, inconclusive, pass, refusals, skipped, Verdict, STRICT};
use egress_model::{ProbeRecord, ProjectName};

fn absent(plan: &Plan) -> Vec<String> {
    let mut out = plan.packages.absent.clone();
    if let Some(up) = &plan.upstream {
        let n = up.upstream_only.as_str().to_string();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

pub fn collect_absent(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(r) = root(c) else { return ev };
    let mut urls = Vec::new();
    for name in absent(c.plan) {
        urls.extend(index_file(&r, &name));
    }
    // The upstream's own paths of its upstream-only crate, moved under the
    // target's index root and its parent (where a proxy mounts downloads).
    if let Some(up) = &c.plan.upstream {
        for p in &up.upstream_only_paths {
            let rel = p.trim_start_matches('/');
            let rel = rel.strip_prefix("index/").unwrap_or(rel);
            urls.push(at(&r, rel));
            urls.push(r.with_path(&format!("/{}", p.trim_start_matches('/'))));
        }
    }
    c.window("P2.absent", &mut ev, |ev| {
        for u in urls {
            ev.push(c.get("index file or download of an absent crate", &u, None));
        }
    });
    ev
}

pub fn judge_absent(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if absent(j.plan).is_empty() {
        return inconclusive("no absent crate is named: give --absent NAME");
    }
    refusals(j, rec, "C.index", STRICT)
}

const BEFORE: &str = "the present crate's index file, before the publish upstream";
const AFTER: &str = "the present crate's index file, after the publish upstream";

pub fn collect_new_publish(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(name), Some(r)) = (c.upstream, c.plan.packages.present.first(), root(c))
    else {
        return ev;
    };
    let Some(u) = index_file(&r, name) else {
        return ev;
    };
    c.window("P2.new-publish", &mut ev, |ev| {
        ev.push(c.get(BEFORE, &u, None));
        let change = ProjectName::new(name)
            .map_err(|e| egress_model::UpstreamError::NotServed {
                message: e.to_string(),
            })
            .and_then(|n| up.publish_new_version(&n));
        match change {
            Ok(o) => ev.observations.push(o),
            Err(e) => ev.observations.push(crate::common::snapshot::input(
                &format!("mutation failed: {e}"),
                Vec::new(),
            )),
        }
        ev.push(c.get(AFTER, &u, None));
    });
    ev
}

pub fn judge_new_publish(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped("the upstream is not controlled, so it cannot publish mid-run");
    }
    if let Some(v) = j.require("C.index") {
        return v;
    }
    let Some((file, _, _)) = mutation(rec) else {
        return inconclusive(not_mutated(
            rec,
            "the upstream did not publish a new version",
        ));
    };
    let (Some(before), Some(after)) = (
        find(rec, BEFORE).and_then(served_lines),
        find(rec, AFTER).and_then(served_lines),
    ) else {
        return inconclusive("the index file was not served before and after the publish");
    };
    if let Some(new) = after
        .iter()
        .find(|a| !before.iter().any(|b| b.vers == a.vers))
    {
        return fail(format!(
            "the index file gained {} {} after the upstream published {file}",
            new.name, new.vers
        ));
    }
    pass(format!(
        "the upstream published {file}; the index file still lists the same {} versions",
        before.len()
    ))
}

pub fn judge_upstream_contact(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::replay::upstream_contact_verdict(j, rec, "C.index")
}
