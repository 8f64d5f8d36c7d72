//! P6 no control channel, in cargo's terms: crates.io's write routes
//! (publish, yank, unyank, owners added and removed, `/me`), at the
//! target's root and under its registry, each with a registry token, are
//! refused and reach no upstream; no write in the run is honoured.

use super::facts::{Facts, Judge};
use super::plan::Collector;
use crate::collect::Evidence;
use crate::common::runwide;
use crate::judge::{refusals, Verdict, PASSTHROUGH};
use egress_model::{Method, ProbeRecord};
use egress_transcript::Request;

/// A publish body as cargo sends it: a little-endian u32 length, the JSON
/// metadata, a u32 length and the `.crate` (here none).
fn publish_body(name: &str) -> Vec<u8> {
    let meta = serde_json::json!({"name": name, "vers": "1.0.0", "deps": [], "features": {}})
        .to_string()
        .into_bytes();
    let mut out = (meta.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(&meta);
    out.extend_from_slice(&0u32.to_le_bytes());
    out
}

pub fn collect_write_routes(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Ok(index), Some(present)) = (c.plan.index(), c.plan.packages.present.first()) else {
        return ev;
    };
    let version = f
        .control_line()
        .map_or_else(|| "1.0.0".to_string(), |l| l.vers.clone());
    let root = index.path().trim_end_matches('/');
    let parent = root.rsplit_once('/').map_or("", |(p, _)| p).to_string();
    let token = c.token();
    let fresh = c.fresh.to_string();
    let owners = br#"{"users":["ec-nobody"]}"#.to_vec();
    let mut reqs = Vec::new();
    let mut bases = vec![String::new()];
    if !parent.is_empty() {
        bases.push(parent);
    }
    for base in bases {
        let api = format!("{base}/api/v1");
        reqs.push(
            Request::new(Method::Put, &format!("{api}/crates/new"))
                .header("Content-Type", "application/octet-stream")
                .body(publish_body(&fresh)),
        );
        reqs.push(Request::new(
            Method::Delete,
            &format!("{api}/crates/{present}/{version}/yank"),
        ));
        reqs.push(Request::new(
            Method::Put,
            &format!("{api}/crates/{present}/{version}/unyank"),
        ));
        for m in [Method::Put, Method::Delete] {
            reqs.push(
                Request::new(m, &format!("{api}/crates/{present}/owners"))
                    .header("Content-Type", "application/json")
                    .body(owners.clone()),
            );
        }
        reqs.push(Request::new(Method::Get, &format!("{api}/me")));
    }
    c.window("P6.write-routes", &mut ev, |ev| {
        for q in reqs {
            let q = q.header("Authorization", &token);
            ev.push(c.send("a crates.io write route", &q));
        }
    });
    ev
}

pub fn judge_write_routes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(u) = crate::classify::upstream_log(rec).find(|u| u.target.starts_with("/api/")) {
        let body = u.body.as_ref().map_or(String::new(), |b| {
            format!(
                " with a {}-byte body (sha256 {:.16}…)",
                b.bytes,
                b.sha256.to_hex()
            )
        });
        return crate::judge::fail(format!(
            "a write route was passed to the upstream: request #{} {} {}{body}",
            u.seq,
            u.method,
            crate::judge::short(&u.target)
        ));
    }
    refusals(j, rec, "C.index", PASSTHROUGH)
}

pub fn judge_run_wide_writes(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_writes(j, "C.index")
}
