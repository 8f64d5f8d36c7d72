//! P6 no control channel: state-changing requests (upload, publish, delete,
//! user creation, login, WebDAV verbs) are never honoured on the egress path,
//! judged by status and by effect.

use super::facts::control_file;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use crate::collect::Evidence;
use crate::common::runwide;
use crate::common::writes::unchanged;
use crate::facts::success_body;
use crate::judge::{fail, inconclusive, pass, refusals, Verdict, PASSTHROUGH};
use egress_model::{DistFilename, ProbeRecord, Url, Version};
use egress_simple::{HTML_LEGACY, JSON_V1};
use egress_transcript::{Method, Request};

/// The version every upload attempt claims; the effect check looks for it.
pub const UPLOAD_VERSION: &str = "6.6.6";

/// The routes every write attempt targets: the index, the project page and a file.
fn routes(c: &Collector, f: &Facts) -> Vec<Url> {
    let mut out = Vec::new();
    if let Ok(i) = c.plan.index() {
        out.push(i);
    }
    if let Some(u) = &f.project_url {
        out.push(u.clone());
    }
    if let Some(u) = control_file(f).and_then(|l| l.url.clone()) {
        out.push(u);
    }
    out
}

pub fn collect_write_methods(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    c.window("P6.write-methods", &mut ev, |ev| {
        for url in routes(c, f) {
            for method in [Method::Post, Method::Put, Method::Delete, Method::Patch] {
                // The token rides in the query too, so a forwarded write is
                // recognised in the upstream's log, which records targets.
                let token = c.token();
                let body = format!("{{\"ecm\":\"{token}\"}}").into_bytes();
                let target = format!("{}?ec={token}", url.path());
                let req = Request::new(method.clone(), &target)
                    .header("Content-Type", "application/json")
                    .body(body);
                ev.push(c.send(&format!("{method} on a read route"), &req));
            }
        }
    });
    ev
}

const UPLOAD: &str = "legacy upload";
const AFTER: &str = "project page after the attempts";

fn multipart(boundary: &str, fields: &[(&str, &str)], file: (&str, &[u8])) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in fields {
        out.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n")
                .as_bytes(),
        );
    }
    out.extend_from_slice(
        format!("--{boundary}\r\nContent-Disposition: form-data; name=\"content\"; filename=\"{}\"\r\nContent-Type: application/octet-stream\r\n\r\n", file.0).as_bytes(),
    );
    out.extend_from_slice(file.1);
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    out
}

pub fn collect_legacy_upload(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(present), Ok(index)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return ev;
    };
    let Ok(version) = Version::new(UPLOAD_VERSION) else {
        return ev;
    };
    let wheel = egress_artifacts::build_wheel(&egress_artifacts::WheelSpec {
        name: present.name.clone(),
        version: version.clone(),
        summary: format!("upload attempt by egress-conformance {}", c.token()),
        description: String::new(),
        requires_python: None,
        files: vec![(
            format!("{}/__init__.py", present.name.wheel_component()),
            b"".to_vec(),
        )],
    });
    let boundary = format!("----egress{}", c.token());
    let sha = wheel.sha256.to_hex();
    let fields = [
        (":action", "file_upload"),
        ("protocol_version", "1"),
        ("name", present.name.as_str()),
        ("version", version.as_str()),
        ("filetype", "bdist_wheel"),
        ("pyversion", "py3"),
        ("metadata_version", "2.1"),
        ("sha256_digest", sha.as_str()),
    ];
    let body = multipart(&boundary, &fields, (&wheel.filename, &wheel.bytes));
    c.window("P6.legacy-upload", &mut ev, |ev| {
        for path in ["/", "/legacy/", index.path()] {
            for auth in [None, Some("Basic ZWdyZXNzOmVncmVzcw==")] {
                let mut req = Request::new(Method::Post, path)
                    .header(
                        "Content-Type",
                        &format!("multipart/form-data; boundary={boundary}"),
                    )
                    .body(body.clone());
                if let Some(a) = auth {
                    req = req.header("Authorization", a);
                }
                ev.push(c.send(UPLOAD, &req));
            }
        }
    });
    if let Some(u) = &f.project_url {
        ev.push(c.get(AFTER, u, Some(HTML_LEGACY)));
        ev.push(c.get(AFTER, u, Some(JSON_V1)));
    }
    ev
}

/// The uploaded version appearing on a page after the attempts.
fn upload_visible(rec: &ProbeRecord) -> Option<String> {
    let v = Version::new(UPLOAD_VERSION).ok()?;
    rec.exchanges
        .iter()
        .filter(|e| e.label == AFTER)
        .filter_map(success_body)
        .find_map(|b| {
            let page = egress_simple::parse_project_html(b)
                .or_else(|_| egress_simple::parse_project_json(b))
                .ok()?;
            page.files
                .iter()
                .find(|f| DistFilename::parse(&f.filename).is_ok_and(|d| d.version == v))
                .map(|f| f.filename.clone())
        })
}

pub fn judge_legacy_upload(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(name) = upload_visible(rec) {
        return fail(format!(
            "the upload was honoured: the project page now lists {name}"
        ));
    }
    let attempts = ProbeRecord {
        exchanges: rec
            .exchanges
            .iter()
            .filter(|e| e.label == UPLOAD)
            .cloned()
            .collect(),
        ..rec.clone()
    };
    refusals(j, &attempts, "C.index", PASSTHROUGH)
}

pub fn collect_user_routes(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    c.window("P6.user-routes", &mut ev, |ev| {
        let user = c.token();
        let json = |b: String| b.into_bytes();
        let attempts: Vec<(Method, String, Vec<u8>, &str)> = vec![
            (
                Method::Put,
                format!("/{user}"),
                json(format!(
                    "{{\"password\":\"{user}\",\"email\":\"{user}@example.invalid\"}}"
                )),
                "application/json",
            ),
            (
                Method::Post,
                "/+login".to_string(),
                json(format!("{{\"user\":\"{user}\",\"password\":\"{user}\"}}")),
                "application/json",
            ),
            (
                Method::Put,
                format!("/-/user/org.couchdb.user:{user}"),
                json(format!("{{\"name\":\"{user}\",\"password\":\"{user}\"}}")),
                "application/json",
            ),
            (
                Method::Post,
                "/account/register/".to_string(),
                format!("username={user}&password={user}").into_bytes(),
                "application/x-www-form-urlencoded",
            ),
            (
                Method::Post,
                "/account/login/".to_string(),
                format!("username={user}&password={user}").into_bytes(),
                "application/x-www-form-urlencoded",
            ),
            (
                Method::Post,
                "/login".to_string(),
                format!("username={user}&password={user}").into_bytes(),
                "application/x-www-form-urlencoded",
            ),
            (
                Method::Post,
                "/api/users".to_string(),
                json(format!("{{\"username\":\"{user}\"}}")),
                "application/json",
            ),
        ];
        for (method, path, body, ctype) in attempts {
            let req = Request::new(method, &path)
                .header("Content-Type", ctype)
                .body(body);
            ev.push(c.send("user creation or login", &req));
        }
    });
    ev
}

pub fn judge_refused(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.index", PASSTHROUGH)
}

pub const EFFECT_BEFORE: &str = "before the write attempts";
/// The same reads, repeated before any write: a resource that changes
/// between them is unstable on its own (P5's finding), not the writes'.
pub const EFFECT_AGAIN: &str = "before the write attempts, read again";
const EFFECT_AFTER: &str = "after the write attempts";

/// The effect check brackets every other P6 sub-probe: these fetches run
/// before them, [`collect_effect_after`] after them.
pub fn collect_effect_before(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    effect_fetches(c, f, &mut ev, EFFECT_BEFORE);
    effect_fetches(c, f, &mut ev, EFFECT_AGAIN);
    ev
}

pub fn collect_effect_after(c: &Collector, f: &Facts, ev: &mut Evidence) {
    effect_fetches(c, f, ev, EFFECT_AFTER);
}

fn effect_fetches(c: &Collector, f: &Facts, ev: &mut Evidence, when: &str) {
    if let Ok(i) = c.plan.index() {
        ev.push(c.get(&format!("{when}: index"), &i, Some(HTML_LEGACY)));
    }
    if let Some(u) = &f.project_url {
        ev.push(c.get(&format!("{when}: project page"), u, Some(HTML_LEGACY)));
        ev.push(c.get(&format!("{when}: project page JSON"), u, Some(JSON_V1)));
    }
    if let Some(u) = control_file(f).and_then(|l| l.url.clone()) {
        ev.push(c.get(&format!("{when}: file"), &u, None));
    }
}

pub fn judge_effect(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.index") {
        return v;
    }
    let compared = match unchanged(
        rec,
        (EFFECT_BEFORE, EFFECT_AGAIN, EFFECT_AFTER),
        "the write attempts",
        &["index", "project page", "project page JSON", "file"],
    ) {
        Ok(c) => c,
        Err(v) => return v,
    };
    if let Some(first) = compared.unstable.first() {
        return inconclusive(format!(
            "{first} changed without any write: see P5.stable-bytes; {} other resources unchanged",
            compared.unchanged
        ));
    }
    if compared.unchanged == 0 {
        return inconclusive("nothing was fetched before and after the write attempts");
    }
    pass(format!("index, project pages and file read the same twice before the write attempts and once after ({} compared)", compared.unchanged))
}

/// `P6.run-wide-writes`: see [`runwide::judge_writes`].
pub fn judge_run_wide_writes(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_writes(j, "C.index")
}

/// P6.vendor-routes: the vendor dictionary's PyPI and generic routes, with
/// the present project; a route's `then` read asks for HTML.
pub fn collect_vendor_routes(c: &Collector, _f: &Facts) -> Evidence {
    let (Some(present), Ok(index)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return Evidence::default();
    };
    let name = present.name.as_str().to_string();
    let vars = crate::common::routes::Vars {
        index: index.path().to_string(),
        package_path: name.clone(),
        project: name,
        version: present
            .version
            .as_ref()
            .map_or_else(|| "1.0.0".to_string(), |v| v.as_str().to_string()),
        marker: String::new(),
    };
    crate::common::vendor::collect(
        c,
        crate::common::vendor::Input {
            protocol: "pypi",
            vars,
            accept: Some(HTML_LEGACY),
        },
    )
}

pub fn judge_vendor_routes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::vendor::judge(j, rec, "C.index", "pypi")
}
