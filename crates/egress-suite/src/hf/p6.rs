//! P6 no control channel, in the Hub's terms: its write routes (create a
//! repository, commit, preupload, the LFS batch API, discussions,
//! settings, a branch, git `receive-pack`), below the endpoint and at the
//! origin's root, each with a token, are refused and reach no upstream; no
//! write in the run is honoured.

use super::facts::{Facts, Judge};
use super::plan::{at, endpoint, first, Collector};
use crate::collect::Evidence;
use crate::common::runwide;
use crate::judge::{fail, refusals, short, Verdict, PASSTHROUGH};
use egress_model::{Method, ProbeRecord, Url};
use egress_transcript::Request;

fn json(method: Method, url: &Url, body: serde_json::Value) -> Request {
    Request::new(method, url.path_and_query())
        .header("Content-Type", "application/json")
        .body(body.to_string().into_bytes())
}

pub fn collect_write_routes(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (endpoint(c), first(&c.plan.packages)) else {
        return ev;
    };
    let token = format!("Bearer {}", c.token());
    let fresh = c.fresh.to_string();
    let ns =
        r.id.as_str()
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
    let mut bases = vec![e.clone()];
    if !e.path().trim_end_matches('/').is_empty() {
        bases.push(e.with_path("/"));
    }
    let mut reqs = Vec::new();
    for b in &bases {
        let t = r.repo_type.api_segment();
        let api = |tail: &str| r.api(b, tail);
        reqs.push(json(
            Method::Post,
            &at(b, "api/repos/create"),
            serde_json::json!({"name": fresh, "organization": ns, "type": r.repo_type.as_str()}),
        ));
        // A commit as the client sends it: a header line, then a file.
        let commit = format!(
            "{}\n{}\n",
            serde_json::json!({"key": "header", "value": {"summary": "ec", "description": ""}}),
            serde_json::json!({"key": "file", "value": {"path": "ec.txt", "encoding": "base64", "content": "ZWM="}})
        );
        reqs.push(
            Request::new(Method::Post, api("/commit/main").path_and_query())
                .header("Content-Type", "application/x-ndjson")
                .body(commit.into_bytes()),
        );
        reqs.push(json(
            Method::Post,
            &api("/preupload/main"),
            serde_json::json!({"files": [{"path": "ec.bin", "sample": "ZWM=", "size": 2}]}),
        ));
        reqs.push(
            json(
                Method::Post,
                &r.page(b, ".git/info/lfs/objects/batch"),
                serde_json::json!({"operation": "upload", "transfers": ["basic"], "objects": [{"oid": "0".repeat(64), "size": 2}]}),
            )
            .header("Accept", "application/vnd.git-lfs+json"),
        );
        reqs.push(json(
            Method::Post,
            &api("/discussions"),
            serde_json::json!({"title": fresh, "description": "ec", "pullRequest": false}),
        ));
        reqs.push(json(
            Method::Put,
            &api("/settings"),
            serde_json::json!({"private": true}),
        ));
        reqs.push(json(
            Method::Post,
            &api(&format!("/branch/{fresh}")),
            serde_json::json!({}),
        ));
        reqs.push(json(
            Method::Delete,
            &at(b, "api/repos/delete"),
            serde_json::json!({"name": fresh, "organization": ns, "type": t}),
        ));
        reqs.push(Request::new(
            Method::Get,
            r.page(b, ".git/info/refs?service=git-receive-pack")
                .path_and_query(),
        ));
        reqs.push(
            Request::new(
                Method::Post,
                r.page(b, ".git/git-receive-pack").path_and_query(),
            )
            .header("Content-Type", "application/x-git-receive-pack-request")
            .body(b"0000".to_vec()),
        );
    }
    c.window("P6.write-routes", &mut ev, |ev| {
        for q in reqs {
            let q = q.header("Authorization", &token);
            ev.push(c.send("a Hub write route", &q));
        }
    });
    ev
}

pub fn judge_write_routes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let write = |u: &&egress_model::UpstreamRequest| {
        !u.method.is_read() || u.target.contains("receive-pack")
    };
    if let Some(u) = crate::classify::upstream_log(rec).find(write) {
        let body = u.body.as_ref().map_or(String::new(), |b| {
            format!(
                " with a {}-byte body (sha256 {:.16}…)",
                b.bytes,
                b.sha256.to_hex()
            )
        });
        return fail(format!(
            "a write route was passed to the upstream: request #{} {} {}{body}",
            u.seq,
            u.method,
            short(&u.target)
        ));
    }
    refusals(j, rec, "C.info", PASSTHROUGH)
}

pub fn judge_run_wide_writes(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_writes(j, "C.info")
}
