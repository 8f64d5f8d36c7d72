//! P5 snapshot immutability, in apt's terms: the signed snapshot manifest
//! (shared), the same bytes for the `InRelease`, the `Packages` index and a
//! `.deb` at every fetch, and upstream changes mid-run (a new version, a
//! `.deb` rebuilt at the same pool path, each with the `Release` re-signed)
//! that never show through.

use super::facts::{Facts, Judge};
use super::plan::{archive, at, Collector};
use super::reads::{self, read_all, WHATS};
use crate::collect::Evidence;
use crate::common::snapshot::{self, input, mutation, not_mutated};
use crate::facts::final_of;
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::{ProbeRecord, ProjectName};

pub fn judge_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    snapshot::manifest_verdict(j, rec, "C.release")
}

const FIRST: &str = "first read";
const SECOND: &str = "second read";

pub fn collect_stable(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    read_all(c, f, &mut ev, FIRST);
    read_all(c, f, &mut ev, SECOND);
    ev
}

pub fn judge_stable(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.deb") {
        return v;
    }
    if let Some(v) = snapshot::changed_without_cause(
        j,
        &[("P6.effect", reads::EFFECT_BEFORE, reads::EFFECT_AGAIN)],
    ) {
        return v;
    }
    let same = match snapshot::compare_reads(rec, FIRST, SECOND, &WHATS) {
        Ok(n) => n,
        Err(c) => {
            return fail(format!(
                "the {} changed between two fetches: {:.16}… then {:.16}…",
                c.what,
                c.first.to_hex(),
                c.second.to_hex()
            ))
        }
    };
    if same == 0 {
        return inconclusive("nothing was served whole twice");
    }
    pass(format!("{same} resources served the same bytes twice"))
}

const BEFORE: &str = "before the change upstream";
const AFTER: &str = "after the change upstream";
const NEW_DEB: &str = "the new version's .deb";

fn record_change(
    ev: &mut Evidence,
    change: Result<egress_model::Observation, egress_model::UpstreamError>,
) -> Option<String> {
    match change {
        Ok(o) => {
            let file = match &o {
                egress_model::Observation::UpstreamMutation { filename, .. } => {
                    Some(filename.clone())
                }
                _ => None,
            };
            ev.observations.push(o);
            file
        }
        Err(e) => {
            ev.observations
                .push(input(&format!("mutation failed: {e}"), Vec::new()));
            None
        }
    }
}

pub fn collect_new_version(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(name), Some(a)) = (c.upstream, c.plan.packages.present.first(), archive(c))
    else {
        return ev;
    };
    let p = &c.plan.packages;
    c.window("P5.upstream-new-version", &mut ev, |ev| {
        read_all(c, f, ev, BEFORE);
        let change = ProjectName::new(name)
            .map_err(|e| egress_model::UpstreamError::NotServed {
                message: e.to_string(),
            })
            .and_then(|n| up.publish_new_version(&n));
        let file = record_change(ev, change);
        read_all(c, f, ev, AFTER);
        if let Some(file) = file {
            let path = format!("{}{file}", p.pool_dir(name));
            c.get_following(ev, &format!("{AFTER}: {NEW_DEB}"), &at(&a, &path), None);
        }
    });
    ev
}

pub fn collect_replaced(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(d)) = (c.upstream, &f.control_deb) else {
        return ev;
    };
    c.window("P5.upstream-replaced-bytes", &mut ev, |ev| {
        read_all(c, f, ev, BEFORE);
        record_change(ev, up.replace_file_bytes(d.entry.filename.file_name()));
        read_all(c, f, ev, AFTER);
    });
    ev
}

/// Both mutation judges: nothing read after the change differs from what
/// was read before it, and nothing new is served.
fn judge_mutation(j: &Judge, rec: &ProbeRecord, what: &str) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped("the upstream is not controlled, so it cannot be changed mid-run");
    }
    if let Some(v) = j.require("C.deb") {
        return v;
    }
    let Some((file, _, after)) = mutation(rec) else {
        return inconclusive(not_mutated(rec, &format!("the upstream did not {what}")));
    };
    if let Some(ex) = final_of(rec, &format!("{AFTER}: {NEW_DEB}")) {
        if ex.response.as_ref().is_some_and(|r| r.is_success()) {
            return fail(format!(
                "{file}, published upstream mid-run, is served: {}",
                short(&ex.request_target())
            ));
        }
    }
    let compared = match snapshot::compare_reads(rec, BEFORE, AFTER, &WHATS) {
        Ok(n) => n,
        Err(c) if c.second == after => {
            return fail(format!(
                "the {} now serves the bytes of {file} as changed upstream",
                c.what
            ))
        }
        Err(c) => {
            return fail(format!(
                "the {} changed after the upstream changed {file} (and re-signed its Release): {:.16}… then {:.16}…",
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
        "the upstream changed {file} and re-signed its Release; the {compared} resources read before and after are unchanged"
    ))
}

pub fn judge_new_version(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_mutation(j, rec, "publish a new version")
}

pub fn judge_replaced(j: &Judge, rec: &ProbeRecord) -> Verdict {
    judge_mutation(j, rec, "replace the .deb's bytes")
}
