//! P6 no control channel, in npm's terms: publish, unpublish, dist-tag
//! changes, adduser, login and token routes are never honoured, judged by
//! status and by effect (nothing new published or deleted afterwards).

use super::doc::Packument;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{at, packument_url, ABBREVIATED, FULL};
use crate::collect::Evidence;
use crate::common::runwide;
use crate::facts::{find, success_body};
use crate::judge::{fail, inconclusive, pass, refusals, Verdict, PASSTHROUGH};
use egress_model::{base64, Exchange, NpmName, ProbeRecord};
use egress_transcript::{Method, Request};

/// The version every publish attempt claims; the effect check looks for it.
pub const PUBLISH_VERSION: &str = "6.6.6";

pub fn judge_refused(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.packument", PASSTHROUGH)
}

/// Which credentials a recorded publish attempt carried.
fn credentials(ex: &Exchange) -> &'static str {
    let head = ex.request.lossy();
    // The head ends at the first empty line; lines end in CRLF.
    let auth = head
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("authorization")
                .then(|| v.trim().to_string())
        });
    match auth {
        None => "no credentials",
        Some(a) if a.starts_with("Bearer npm_ecm") => "a made-up token",
        Some(_) => "the token the target handed out to adduser",
    }
}

/// A publish that is accepted is the finding, whatever else the target did
/// on the way (such as asking its upstream for the name first), so it is
/// named first; otherwise the passthrough judge decides.
pub fn judge_publish(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    if let Some(origin) = j.origin() {
        for ex in &rec.exchanges {
            if let crate::classify::Answer::Served(s) = crate::classify::classify(&origin, ex) {
                return fail(format!(
                    "{} {} was answered {s}: a publish with {} was accepted",
                    ex.request_method(),
                    crate::judge::short(&ex.request_target()),
                    credentials(ex)
                ));
            }
        }
    }
    refusals(j, rec, "C.packument", PASSTHROUGH)
}

/// A bearer token of the shape npm sends, carrying a marker.
fn bearer(c: &Collector) -> String {
    format!("Bearer npm_{}", c.token())
}

/// npm's publish document: the version, its dist and the tarball attached.
fn publish_body(c: &Collector, name: &NpmName) -> Vec<u8> {
    // The tarball builder takes only names valid for new packages; a legacy
    // name (upper case) gets a tarball under a valid one, which is still a
    // publish attempt for `name`.
    let spec_name = if egress_artifacts::is_valid_npm_name(name.as_str()) {
        name.as_str()
    } else {
        "egress-conformance-publish-probe"
    };
    let spec = egress_artifacts::NpmPackageSpec::new(
        spec_name,
        PUBLISH_VERSION,
        &format!("publish attempt by egress-conformance {}", c.token()),
        "module.exports = {};\n",
    );
    let tarball = egress_artifacts::build_npm_tarball(&spec);
    let file = tarball.filename.clone();
    let origin = c.client.base().origin();
    let doc = serde_json::json!({
        "_id": name.as_str(),
        "name": name.as_str(),
        "description": spec.description,
        "dist-tags": { "latest": PUBLISH_VERSION },
        "versions": { PUBLISH_VERSION: {
            "name": name.as_str(),
            "version": PUBLISH_VERSION,
            "dist": {
                "integrity": egress_artifacts::sri_sha512(&tarball.bytes),
                "tarball": format!("{origin}{}", name.tarball_path(PUBLISH_VERSION)),
            },
        }},
        "access": null,
        "_attachments": { file: {
            "content_type": "application/octet-stream",
            "data": base64::encode(&tarball.bytes),
            "length": tarball.bytes.len(),
        }},
    });
    serde_json::to_vec(&doc).unwrap_or_default()
}

fn json_req(method: Method, target: &str, body: Vec<u8>) -> Request {
    Request::new(method, target)
        .header("Content-Type", "application/json")
        .header("Npm-Command", "publish")
        .body(body)
}

/// Tokens that answers handed out (`{"token": "..."}` in a 2xx JSON body,
/// as npm's adduser and login answer), at most two.
pub fn tokens_handed_out(exchanges: &[Exchange]) -> Vec<String> {
    exchanges
        .iter()
        .filter_map(success_body)
        .filter_map(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        .filter_map(|v| v.get("token")?.as_str().map(str::to_string))
        // A token is sent in a header: anything that could split it is not one.
        .filter(|t| !t.is_empty() && t.len() <= 512 && t.bytes().all(|b| b.is_ascii_graphic()))
        .take(2)
        .collect()
}

/// Publish attempts: a new version of a present package, and a package
/// that exists nowhere (`fresh`), each anonymous, with a made-up token, and
/// with every token the target handed out to the adduser attempts.
/// The package the write attempts try to create: the run's fresh marker, a
/// name that exists nowhere, so that any sign of it afterwards is the
/// attempts' effect.
fn fresh(c: &Collector) -> Option<NpmName> {
    NpmName::new(c.fresh).ok()
}

/// Publishes after adduser: each token the target handed out to
/// `P6.adduser` is then used to publish, as anyone who can register would.
pub fn collect_publish(c: &Collector, _f: &Facts, records: &[ProbeRecord]) -> Evidence {
    let Some(name) = fresh(c) else {
        return Evidence::default();
    };
    let tokens = records
        .iter()
        .find(|r| r.id == "P6.adduser")
        .map(|r| tokens_handed_out(&r.exchanges))
        .unwrap_or_default();
    publish(c, &name, &tokens)
}

fn publish(c: &Collector, fresh: &NpmName, tokens: &[String]) -> Evidence {
    let mut ev = Evidence::default();
    let (p, Ok(registry)) = (&c.plan.packages, c.plan.index()) else {
        return ev;
    };
    let mut names = vec![fresh.clone()];
    names.extend(p.present.first().cloned());
    c.window("P6.publish", &mut ev, |ev| {
        for name in &names {
            let path = at(&registry, &name.packument_path()).path().to_string();
            let handed_out = tokens.iter().map(|t| Some(format!("Bearer {t}")));
            for auth in [None, Some(bearer(c))].into_iter().chain(handed_out) {
                let mut req = json_req(Method::Put, &path, publish_body(c, name));
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                ev.push(c.send("npm publish", &req));
            }
        }
    });
    ev
}

pub fn collect_unpublish(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Ok(registry)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return ev;
    };
    c.window("P6.unpublish", &mut ev, |ev| {
        let rev = format!("1-{}", c.token());
        let base = at(&registry, &name.packument_path()).path().to_string();
        let tarball = at(&registry, &name.tarball_path("1.0.0")).path().to_string();
        let attempts = vec![
            Request::new(Method::Delete, &format!("{base}/-rev/{rev}")),
            Request::new(Method::Delete, &format!("{tarball}/-rev/{rev}")),
            json_req(
                Method::Put,
                &format!("{base}/-rev/{rev}"),
                format!("{{\"_id\":\"{name}\",\"name\":\"{name}\",\"versions\":{{}},\"dist-tags\":{{}}}}")
                    .into_bytes(),
            ),
            Request::new(Method::Delete, &base),
        ];
        for req in attempts {
            for auth in [None, Some(bearer(c))] {
                let mut r = req.clone();
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                ev.push(c.send("npm unpublish", &r));
            }
        }
    });
    ev
}

pub fn collect_dist_tags(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(name), Ok(registry)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return ev;
    };
    c.window("P6.dist-tags", &mut ev, |ev| {
        let tags = at(
            &registry,
            &format!("/-/package/{}/dist-tags", name.as_str()),
        )
        .path()
        .to_string();
        let attempts = vec![
            json_req(
                Method::Put,
                &format!("{tags}/{}", c.token()),
                b"\"1.0.0\"".to_vec(),
            ),
            json_req(
                Method::Put,
                &format!("{tags}/latest"),
                format!("\"{PUBLISH_VERSION}\"").into_bytes(),
            ),
            Request::new(Method::Delete, &format!("{tags}/latest")),
            json_req(
                Method::Post,
                &tags,
                format!("{{\"{}\":\"1.0.0\"}}", c.token()).into_bytes(),
            ),
        ];
        for req in attempts {
            ev.push(c.send("npm dist-tag", &req.header("Authorization", &bearer(c))));
        }
    });
    ev
}

pub fn collect_adduser(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(registry) = c.plan.index() else {
        return ev;
    };
    c.window("P6.adduser", &mut ev, |ev| {
        for auth in [None, Some(bearer(c))] {
            let user = c.token();
            let body = serde_json::json!({
                "_id": format!("org.couchdb.user:{user}"),
                "name": user,
                "password": user,
                "email": format!("{user}@example.invalid"),
                "type": "user",
                "roles": [],
            });
            let path = at(&registry, &format!("/-/user/org.couchdb.user:{user}"))
                .path()
                .to_string();
            let mut req = json_req(
                Method::Put,
                &path,
                serde_json::to_vec(&body).unwrap_or_default(),
            );
            if let Some(a) = &auth {
                req = req.header("Authorization", a);
            }
            ev.push(c.send("npm adduser", &req));
        }
    });
    ev
}

pub fn collect_login_tokens(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(registry) = c.plan.index() else {
        return ev;
    };
    c.window("P6.login-tokens", &mut ev, |ev| {
        let t = c.token();
        let p = |s: &str| at(&registry, s).path().to_string();
        let attempts = vec![
            json_req(
                Method::Post,
                &p(&format!("/-/v1/login?ec={t}")),
                b"{}".to_vec(),
            ),
            Request::new(Method::Get, &p(&format!("/-/npm/v1/tokens?ec={t}"))),
            json_req(
                Method::Post,
                &p(&format!("/-/npm/v1/tokens?ec={t}")),
                format!("{{\"password\":\"{t}\",\"readonly\":false,\"cidr_whitelist\":[]}}")
                    .into_bytes(),
            ),
            Request::new(Method::Delete, &p(&format!("/-/npm/v1/tokens/token/{t}"))),
            Request::new(Method::Delete, &p(&format!("/-/user/token/{t}"))),
            Request::new(Method::Get, &p(&format!("/-/npm/v1/user?ec={t}"))),
            json_req(
                Method::Post,
                &p(&format!("/-/npm/v1/user?ec={t}")),
                b"{\"tfa\":{}}".to_vec(),
            ),
        ];
        for req in attempts {
            ev.push(c.send(
                "npm login or token route",
                &req.header("Authorization", &bearer(c)),
            ));
        }
    });
    ev
}

pub const BEFORE: &str = "before the write attempts";
/// The same reads, repeated before any write: a resource that changes
/// between them is unstable on its own (P5's finding), not the writes'.
pub const AGAIN: &str = "before the write attempts, read again";
const AFTER: &str = "after the write attempts";

/// The effect check brackets every other P6 sub-probe: these fetches run
/// before them, [`collect_effect_after`] after them.
pub fn collect_effect_before(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    if let Some(name) = fresh(c) {
        effect_fetches(c, f, &name, &mut ev, BEFORE);
        effect_fetches(c, f, &name, &mut ev, AGAIN);
    }
    ev
}

pub fn collect_effect_after(c: &Collector, f: &Facts, ev: &mut Evidence) {
    if let Some(name) = fresh(c) {
        effect_fetches(c, f, &name, ev, AFTER);
    }
}

const FRESH: &str = "package that publish attempts named";

fn effect_fetches(c: &Collector, f: &Facts, fresh: &NpmName, ev: &mut Evidence, when: &str) {
    let npm = f;
    if let Some(u) = &npm.packument_url {
        ev.push(c.get(&format!("{when}: packument"), u, Some(FULL)));
        ev.push(c.get(
            &format!("{when}: abbreviated packument"),
            u,
            Some(ABBREVIATED),
        ));
    }
    if let Some(t) = &npm.control_tarball {
        ev.push(c.get(&format!("{when}: tarball"), &t.url, None));
    }
    if let Some(u) = packument_url(c, fresh) {
        ev.push(c.get(&format!("{when}: {FRESH}"), &u, Some(FULL)));
    }
}

pub fn judge_effect(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    if let Some(ex) = find(rec, &format!("{AFTER}: {FRESH}")) {
        if let Some(p) = success_body(ex).and_then(|b| Packument::parse(b).ok()) {
            if !p.versions.is_empty() {
                return fail(format!(
                    "a publish attempt was honoured: {} is now served with {} versions",
                    ex.request_target(),
                    p.versions.len()
                ));
            }
        }
    }
    for ex in rec.exchanges.iter().filter(|e| e.label.starts_with(AFTER)) {
        if let Some(p) = success_body(ex).and_then(|b| Packument::parse(b).ok()) {
            if p.version(PUBLISH_VERSION).is_some() {
                return fail(format!(
                    "a publish attempt was honoured: the packument now lists {PUBLISH_VERSION}"
                ));
            }
        }
    }
    let compared = match crate::common::writes::unchanged(
        rec,
        (BEFORE, AGAIN, AFTER),
        "the write attempts",
        &["packument", "abbreviated packument", "tarball"],
    ) {
        Ok(c) => c,
        Err(v) => return v,
    };
    if let Some(first) = compared.unstable.first() {
        return inconclusive(format!(
            "{first} changed without any write: see P5.stable-bytes; {} other resources unchanged; nothing new published",
            compared.unchanged
        ));
    }
    if compared.unchanged == 0 {
        return inconclusive("nothing was fetched before and after the write attempts");
    }
    pass(format!(
        "packuments and tarball read the same twice before the write attempts and once after ({} compared); nothing new published",
        compared.unchanged
    ))
}

/// `P6.run-wide-writes`: see [`runwide::judge_writes`].
pub fn judge_run_wide_writes(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_writes(j, "C.packument")
}

/// P6.vendor-routes: the vendor dictionary's npm and generic routes, with
/// the control package; a route's `then` read asks for the full packument.
pub fn collect_vendor_routes(c: &Collector, f: &Facts) -> Evidence {
    let (Some(present), Ok(index)) = (c.plan.packages.present.first(), c.plan.index()) else {
        return Evidence::default();
    };
    let vars = crate::common::routes::Vars {
        index: index.path().to_string(),
        project: present.as_str().to_string(),
        package_path: present.as_str().replace('/', "%2f"),
        version: f
            .control_tarball
            .as_ref()
            .map_or_else(|| "1.0.0".to_string(), |t| t.version.clone()),
        marker: String::new(),
    };
    crate::common::vendor::collect(
        c,
        crate::common::vendor::Input {
            protocol: "npm",
            vars,
            accept: Some(FULL),
        },
    )
}

pub fn judge_vendor_routes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::vendor::judge(j, rec, "C.packument", "npm")
}
