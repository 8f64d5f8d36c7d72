//! P6 no control channel, in apt's terms: WebDAV verbs and TRACE (shared),
//! the vendor dictionary's apt routes (apt-cacher-ng's maintenance
//! actions, aptly's API, uploads), judged by refusal and by effect, and the
//! `InRelease`, index and `.deb` unchanged by all of them.

use super::facts::{Facts, Judge};
use super::plan::Collector;
use super::reads::{
    read_all, EFFECT_AFTER as AFTER, EFFECT_AGAIN as AGAIN, EFFECT_BEFORE as BEFORE, WHATS,
};
use crate::collect::Evidence;
use crate::common::{runwide, writes};
use crate::judge::{pass, refusals, Verdict, PASSTHROUGH};
use egress_model::ProbeRecord;

pub fn judge_refused(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.release", PASSTHROUGH)
}

pub fn collect_effect_before(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    read_all(c, f, &mut ev, BEFORE);
    read_all(c, f, &mut ev, AGAIN);
    ev
}

pub fn collect_effect_after(c: &Collector, f: &Facts, ev: &mut Evidence) {
    read_all(c, f, ev, AFTER);
}

pub fn judge_effect(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.release") {
        return v;
    }
    match writes::unchanged(rec, (BEFORE, AGAIN, AFTER), "the write attempts", &WHATS) {
        Err(v) => v,
        Ok(c) if c.unchanged == 0 => crate::judge::inconclusive(if c.unstable.is_empty() {
            "nothing was read whole before and after the write attempts".to_string()
        } else {
            format!(
                "every resource changed on its own: {}",
                c.unstable.join("; ")
            )
        }),
        Ok(c) => pass(format!(
            "{} resources unchanged by the write attempts",
            c.unchanged
        )),
    }
}

pub fn judge_run_wide_writes(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_writes(j, "C.release")
}

/// P6.vendor-routes: the vendor dictionary's apt and generic routes, with
/// the control package.
pub fn collect_vendor_routes(c: &Collector, f: &Facts) -> Evidence {
    let (Some(present), Ok(index)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return Evidence::default();
    };
    let vars = crate::common::routes::Vars {
        index: index.path().to_string(),
        project: present.clone(),
        package_path: present.clone(),
        version: f
            .control_deb
            .as_ref()
            .map_or_else(|| "1.0".to_string(), |d| d.entry.version.clone()),
        marker: String::new(),
    };
    crate::common::vendor::collect(
        c,
        crate::common::vendor::Input {
            protocol: "apt",
            vars,
            accept: None,
        },
    )
}

pub fn judge_vendor_routes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::vendor::judge(j, rec, "C.release", "apt")
}
