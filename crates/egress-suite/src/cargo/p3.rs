//! P3 no path passthrough, in cargo's terms: `config.json` hands cargo to
//! no other origin, traversal in the crate name, version and index path is
//! refused in every encoding, and a registry token sent to the target never
//! reaches the upstream.

use super::facts::{label, Facts, Judge};
use super::plan::{index_file, root, Collector};
use crate::collect::Evidence;
use crate::common::passthrough::{raw_get, traversal_steps, TRAVERSAL_TARGETS};
use crate::common::runwide;
use crate::facts::{final_of, success_body};
use crate::judge::{fail, inconclusive, pass, refusals, Verdict, PASSTHROUGH};
use egress_model::{Method, ProbeRecord};
use egress_transcript::Request;

pub fn judge_config_origin(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.config") {
        return v;
    }
    let (Some(origin), Some(rec)) = (j.origin(), j.record("C.config")) else {
        return inconclusive("config.json's record is missing");
    };
    let Some(ex) = final_of(rec, label::CONFIG) else {
        return inconclusive("config.json was not requested");
    };
    let Some(c) = success_body(ex).and_then(super::doc::config) else {
        return inconclusive("config.json was not served");
    };
    for (what, u) in [("dl", Some(c.dl.clone())), ("api", c.api.clone())] {
        let Some(u) = u else { continue };
        match origin.join(&u) {
            Ok(url) if url.same_origin(&origin) => {}
            _ => {
                return fail(format!(
                    "config.json's {what} names {u}, not the mirror's own origin {}",
                    origin.origin()
                ))
            }
        }
    }
    pass(format!(
        "config.json's dl{} name the mirror's own origin",
        if c.api.is_some() {
            " and api"
        } else {
            " (no api)"
        }
    ))
}

pub fn collect_traversal(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(r) = root(c) else { return ev };
    let base = r.path().to_string();
    let mut starts = vec![base.clone(), format!("{base}3/e/")];
    if let Some(l) = f.control_line() {
        if let Some(u) = f.download_url(l) {
            // The download route, with the crate name and the version
            // replaced by the traversal.
            let p = u.path().to_string();
            if let Some((dir, _)) = p.rsplit_once('/') {
                starts.push(format!("{dir}/"));
            }
        }
    }
    let mut targets = Vec::new();
    for class in ["raw", "percent", "double", "backslash", "overlong"] {
        for step in traversal_steps(class) {
            for start in &starts {
                for aim in TRAVERSAL_TARGETS {
                    targets.push(format!("{start}{}{aim}", step.repeat(8)));
                }
            }
        }
    }
    c.window("P3.traversal", &mut ev, |ev| {
        for t in targets {
            ev.push(c.send_raw("traversal out of the registry", &raw_get(c, &t)));
        }
    });
    ev
}

pub fn judge_passthrough(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.index", PASSTHROUGH)
}

/// The requests a registry token rides on: the index file and a download
/// (cargo sends it with every request when `auth-required` is set), and a
/// publish.
pub fn collect_token(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(r), Some(name)) = (root(c), c.plan.packages.present.first()) else {
        return ev;
    };
    let token = c.token();
    let auth = |method: Method, target: String| {
        Request::new(method, &target).header("Authorization", &token)
    };
    let mut reqs = Vec::new();
    if let Some(u) = index_file(&r, name) {
        reqs.push(auth(Method::Get, u.path_and_query().to_string()));
    }
    if let Some(u) = f.crate_url.as_ref() {
        reqs.push(auth(Method::Get, u.path_and_query().to_string()));
    }
    reqs.push(auth(Method::Get, "/api/v1/me".to_string()));
    c.window("P3.registry-token", &mut ev, |ev| {
        for q in &reqs {
            ev.push(c.send("a request carrying a registry token", q));
        }
    });
    ev
}

pub fn judge_token(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if !crate::classify::has_upstream_log(rec) {
        return crate::judge::skipped(
            "the upstream is not controlled, so a forwarded token cannot be observed",
        );
    }
    if let Some(v) = j.require("C.index") {
        return v;
    }
    if let Some(u) = crate::classify::upstream_log(rec).find(|u| u.authorization) {
        return fail(format!(
            "a registry token sent to the mirror reached the upstream: request #{} {} {} carried an Authorization header",
            u.seq,
            u.method,
            crate::judge::short(&u.target)
        ));
    }
    pass(format!(
        "{} requests carried a token; none reached the upstream with one",
        rec.exchanges.len()
    ))
}

pub fn judge_run_wide_offsite(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_offsite(j, "C.config", super::doc::listings)
}
