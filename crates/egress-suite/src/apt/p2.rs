//! P2 replay only, in apt's terms: a package absent from the snapshot but
//! present upstream is listed by no index and served at no pool path; the
//! upstream is never contacted.

use super::doc;
use super::facts::{Facts, Judge};
use super::plan::{archive, at, Collector};
use crate::collect::Evidence;
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, refusals, short, Verdict, STRICT};
use egress_model::ProbeRecord;

const INDEX: &str = "Packages index";

/// The absent packages: the plan's, and the controlled upstream's
/// upstream-only package.
fn absent(plan: &super::plan::Plan) -> Vec<String> {
    let mut out = plan.packages.absent.clone();
    if let Some(up) = &plan.upstream {
        let n = up.upstream_only.as_str().to_string();
        if !out.contains(&n) {
            out.push(n);
        }
    }
    out
}

pub fn collect_absent_index(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    let plain = p.packages_index();
    for rel in [plain.clone(), format!("{plain}.gz")] {
        ev.push(c.get(INDEX, &at(&a, &p.dist_path(&rel)), None));
    }
    ev
}

pub fn judge_absent_index(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packages") {
        return v;
    }
    let names = absent(j.plan);
    if names.is_empty() {
        return inconclusive("no absent package is named: give --absent NAME");
    }
    let mut read = 0;
    for ex in rec.exchanges.iter().filter(|e| e.label == INDEX) {
        let Some(entries) = success_body(ex).and_then(doc::packages) else {
            continue;
        };
        read += 1;
        if let Some(e) = entries.iter().find(|e| names.contains(&e.package)) {
            return fail(format!(
                "{} lists {} {}, which is absent from the snapshot",
                short(&ex.request_target()),
                e.package,
                e.version
            ));
        }
    }
    if read == 0 {
        return inconclusive("no Packages index was served");
    }
    pass(format!(
        "{read} Packages indexes list none of {}",
        names.join(", ")
    ))
}

pub fn collect_absent_pool(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    let mut paths = Vec::new();
    for name in absent(c.plan) {
        paths.push(p.pool_path(&name, "1.0"));
        paths.push(p.pool_dir(&name));
    }
    // The upstream's own pool paths of its upstream-only package, moved
    // under the target's archive root.
    if let Some(up) = &c.plan.upstream {
        let root = egress_model::Url::parse(&up.index_url)
            .map(|u| u.path().to_string())
            .unwrap_or_default();
        for u in &up.upstream_only_paths {
            if let Some(rel) = u
                .strip_prefix(&root)
                .or_else(|| u.strip_prefix(root.trim_end_matches('/')))
            {
                let rel = rel.trim_start_matches('/').to_string();
                if !paths.contains(&rel) {
                    paths.push(rel);
                }
            }
        }
    }
    c.window("P2.absent-pool", &mut ev, |ev| {
        for path in paths {
            let url = at(&a, &path);
            let sep = if url.path_and_query().contains('?') {
                '&'
            } else {
                '?'
            };
            let marked = url.with_path(&format!("{}{sep}ec={}", url.path_and_query(), c.token()));
            ev.push(c.get("pool path of an absent package", &marked, None));
            // And bare: a target that refuses every query string (403)
            // refuses the marked request for that alone.
            ev.push(c.get("pool path of an absent package, unmarked", &url, None));
        }
    });
    ev
}

pub fn judge_absent_pool(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.deb", STRICT)
}

/// Collected last: the whole run's upstream log.
pub fn judge_upstream_contact(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::replay::upstream_contact_verdict(j, rec, "C.release")
}
