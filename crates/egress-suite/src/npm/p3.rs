//! P3 no path passthrough, in npm's terms: absolute-form targets, CONNECT,
//! traversal in every encoding (scoped names included), forged `Host` and
//! `X-Forwarded-*` headers reflected into tarball URLs, the registry routes
//! that npm proxies forward upstream (`/-/all`, `/-/v1/search`, `/-/whoami`,
//! audits), unknown routes, and redirects to another origin.

use super::doc::Packument;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{at, packument_url, ABBREVIATED, FULL};
use crate::classify::tokens_in;
use crate::collect::Evidence;
use crate::common::passthrough::{
    elsewhere, same_origin_redirects, traversal_steps, TRAVERSAL_TARGETS,
};
use crate::common::{h2_smuggling, runwide, smuggling};
use crate::facts::success_body;
use crate::judge::{
    fail, forwarded_fail, inconclusive, pass, refusals, short, skipped, Verdict, PASSTHROUGH,
};
use egress_model::ProbeRecord;
use egress_transcript::{Method, Request};

pub fn judge_passthrough(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.packument", PASSTHROUGH)
}

fn raw_get(target: &str, host: &str) -> Vec<u8> {
    format!(
        "GET {target} HTTP/1.1\r\nHost: {host}\r\nAccept: {FULL}\r\nUser-Agent: egress-conformance/{}\r\nConnection: close\r\n\r\n",
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes()
}

/// Traversal from the registry root and from a tarball directory, where a
/// registry that maps paths onto its storage would resolve it.
pub fn collect_traversal(c: &Collector, class: &str) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(registry) = c.plan.index() else {
        return ev;
    };
    let host = c.client.base().host_header();
    let mut bases = vec![registry.path().to_string()];
    if let Some(name) = c.plan.packages.present.first() {
        bases.push(at(&registry, &format!("/{name}/-/")).path().to_string());
    }
    c.window(&format!("P3.traversal-{class}"), &mut ev, |ev| {
        for step in traversal_steps(class) {
            for base in &bases {
                for aim in TRAVERSAL_TARGETS {
                    let target = format!("{base}{}{aim}?ec={}", step.repeat(8), c.token());
                    ev.push(c.send_raw(&format!("traversal ({class})"), &raw_get(&target, &host)));
                }
            }
        }
    });
    ev
}

pub fn collect_scoped_encodings(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (p, Ok(registry)) = (&c.plan.packages, c.plan.index()) else {
        return ev;
    };
    let Some(scoped) = &p.scoped else { return ev };
    let host = c.client.base().host_header();
    let root = registry.path().trim_end_matches('/').to_string();
    let scope = scoped.scope().unwrap_or("@ec").to_string();
    let bare = scoped.bare().to_string();
    c.window("P3.scoped-encodings", &mut ev, |ev| {
        let (t, n) = (c.token(), c.token());
        let s = format!("@{t}");
        let mut targets = vec![
            format!("{root}/{s}%2f{n}"),
            format!("{root}/{s}%2F{n}"),
            format!("{root}/{s}/{n}"),
            format!("{root}/%40{t}%2f{n}"),
            format!("{root}/%40{t}/{n}"),
            format!("{root}/{s}%252f{n}"),
            format!("{root}/{s}%5c{n}"),
            format!("{root}/{s}/{n}/-/{n}-1.0.0.tgz"),
            format!("{root}/{s}%2f{n}/-/{n}-1.0.0.tgz"),
        ];
        // Traversal that starts inside a scope the snapshot holds.
        let t = c.token();
        for step in ["..%2f", "%2e%2e%2f", "..%252f", "../"] {
            targets.push(format!("{root}/{scope}%2f{}{t}", step.repeat(3)));
            targets.push(format!("{root}/{scope}/{bare}/-/{}{t}.tgz", step.repeat(3)));
        }
        for target in targets {
            ev.push(c.send_raw("scoped name in another encoding", &raw_get(&target, &host)));
        }
    });
    ev
}

pub fn judge_scoped_encodings(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.scoped.is_none() {
        return skipped("no scoped package is known to be in the snapshot");
    }
    refusals(j, rec, "C.scoped", PASSTHROUGH)
}

const FORGED: &str = "packument with forged host headers";

pub fn collect_host_headers(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(url) = c
        .plan
        .packages
        .present
        .first()
        .and_then(|n| packument_url(c, n))
    else {
        return ev;
    };
    c.window("P3.host-headers", &mut ev, |ev| {
        let target = url.path_and_query().to_string();
        let forged = |name: &str, value: String| {
            Request::new(Method::Get, &target)
                .header("Accept", FULL)
                .header(name, &value)
        };
        for req in [
            forged("X-Forwarded-Host", format!("{}.invalid", c.token())),
            forged("X-Forwarded-Host", format!("{}.invalid", c.token()))
                .header("X-Forwarded-Proto", "https")
                .header("X-Forwarded-Port", "8443"),
            forged("Forwarded", format!("host={}.invalid;proto=https", c.token())),
            forged("X-Original-URL", format!("/{}", c.token())),
            forged("X-Forwarded-Prefix", format!("/{}", c.token())),
        ] {
            ev.push(c.send(FORGED, &req));
        }
        for accept in [FULL, ABBREVIATED] {
            let raw = format!(
                "GET {target} HTTP/1.1\r\nHost: {}.invalid\r\nAccept: {accept}\r\nConnection: close\r\n\r\n",
                c.token()
            );
            ev.push(c.send_raw(FORGED, raw.as_bytes()));
        }
        // With a controlled upstream, the same headers name it (host:port),
        // a marker in the query: a target that routes by them is observed
        // when the request arrives there.
        if c.plan.upstream.is_some() {
            let other = elsewhere(c);
            let marked = |name: &str| {
                Request::new(Method::Get, &format!("{target}?ec={}", c.token()))
                    .header("Accept", FULL)
                    .header(name, &other)
            };
            for req in [
                marked("X-Forwarded-Host"),
                marked("X-Forwarded-Server"),
                Request::new(Method::Get, &format!("{target}?ec={}", c.token()))
                    .header("Accept", FULL)
                    .header("Forwarded", &format!("host=\"{other}\"")),
            ] {
                ev.push(c.send(FORGED, &req));
            }
            let raw = format!(
                "GET {target}?ec={} HTTP/1.1\r\nHost: {other}\r\nAccept: {FULL}\r\nConnection: close\r\n\r\n",
                c.token()
            );
            ev.push(c.send_raw(FORGED, raw.as_bytes()));
        }
    });
    ev
}

pub fn judge_host_headers(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    if rec.exchanges.is_empty() {
        return inconclusive("no request was recorded");
    }
    if let Some(v) = forwarded_fail(rec) {
        return v;
    }
    let mut served = 0;
    for ex in &rec.exchanges {
        let Some(body) = success_body(ex) else {
            continue;
        };
        served += 1;
        let sent = tokens_in(ex.request.as_bytes());
        let echoed = tokens_in(body);
        if let Some(t) = echoed.iter().find(|t| sent.contains(t)) {
            let place = Packument::parse(body)
                .ok()
                .and_then(|p| {
                    p.versions
                        .into_iter()
                        .find_map(|v| v.tarball.filter(|u| u.contains(t.as_str())))
                })
                .map_or_else(
                    || "in the body".to_string(),
                    |u| format!("into dist.tarball {}", short(&u)),
                );
            return fail(format!("a forged host header was reflected {place}"));
        }
    }
    pass(format!(
        "{} requests with forged Host or X-Forwarded-* headers: {served} served, none reflects them",
        rec.exchanges.len()
    ))
}

pub fn collect_registry_routes(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(registry) = c.plan.index() else {
        return ev;
    };
    c.window("P3.registry-routes", &mut ev, |ev| {
        let gets = [
            format!("/-/all?ec={}", c.token()),
            format!("/-/all/since?stale=update_after&startkey=0&ec={}", c.token()),
            format!("/-/v1/search?text={}&size=20", c.token()),
            format!("/-/whoami?ec={}", c.token()),
            format!("/-/ping?write=true&ec={}", c.token()),
            format!("/-/org/{}/package", c.token()),
            format!("/-/package/{}/access", c.token()),
        ];
        for path in gets {
            let u = at(&registry, &path);
            ev.push(c.get("registry route that proxies forward", &u, Some("application/json")));
        }
        for path in [
            "/-/npm/v1/security/audits/quick",
            "/-/npm/v1/security/audits",
            "/-/npm/v1/security/advisories/bulk",
        ] {
            let token = c.token();
            let target = format!("{}?ec={token}", at(&registry, path).path());
            let body = format!("{{\"name\":\"{token}\",\"version\":\"1.0.0\",\"requires\":{{}},\"dependencies\":{{}}}}");
            let req = Request::new(Method::Post, &target)
                .header("Content-Type", "application/json")
                .body(body.into_bytes());
            ev.push(c.send("audit request", &req));
        }
    });
    ev
}

pub fn collect_unknown(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(registry) = c.plan.index() else {
        return ev;
    };
    let present = c.plan.packages.present.first().cloned();
    c.window("P3.unknown-route", &mut ev, |ev| {
        let mut paths = vec![
            format!("/-/{}", c.token()),
            format!("/-/v1/{}", c.token()),
            format!("/{}/{}/{}", c.token(), c.token(), c.token()),
            format!("/_design/app/_rewrite/{}", c.token()),
            format!("/-/verdaccio/{}", c.token()),
            format!("/.git/config?{}", c.token()),
        ];
        if let Some(p) = present {
            paths.push(format!("{}/-/{}.tgz", p.packument_path_raw(), c.token()));
            paths.push(format!(
                "{}/{}/{}",
                p.packument_path(),
                c.token(),
                c.token()
            ));
        }
        for p in paths {
            ev.push(c.get("unknown route", &at(&registry, &p), Some(FULL)));
        }
    });
    ev
}

const REDIRECT_PROBE: &str = "request that registries commonly redirect";

/// Collected first, while caches are cold: a pull-through cache hands the
/// client to its upstream on a slow first fetch.
pub fn collect_offsite_redirect(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (p, Ok(registry)) = (&c.plan.packages, c.plan.index()) else {
        return ev;
    };
    c.window("P3.offsite-redirect", &mut ev, |ev| {
        let mut names = p.present.iter().take(2).cloned().collect::<Vec<_>>();
        names.extend(p.scoped.iter().cloned());
        for name in &names {
            let Some(page) = packument_url(c, name) else {
                continue;
            };
            let ex = c.get(REDIRECT_PROBE, &page, Some(ABBREVIATED));
            let doc = success_body(&ex).and_then(|b| Packument::parse(b).ok());
            ev.push(ex);
            for v in doc
                .map(|d| d.versions)
                .unwrap_or_default()
                .iter()
                .rev()
                .take(4)
            {
                if let Some(u) = v.tarball.as_deref().and_then(|t| page.join(t).ok()) {
                    ev.push(c.get(REDIRECT_PROBE, &u, None));
                }
            }
        }
        for name in p.absent.iter().take(1) {
            if let Some(u) = packument_url(c, name) {
                ev.push(c.get(REDIRECT_PROBE, &u, Some(ABBREVIATED)));
            }
        }
        if let Some(up) = &c.plan.upstream {
            for path in &up.upstream_only_paths {
                ev.push(c.get(REDIRECT_PROBE, &at(&registry, path), None));
            }
        }
    });
    ev
}

pub fn judge_offsite_redirect(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's registry URL does not parse");
    };
    let redirects = match same_origin_redirects(&origin, rec) {
        Ok(n) => n,
        Err(v) => return v,
    };
    if rec.exchanges.len() < 2 {
        return inconclusive("too few requests were recorded");
    }
    pass(format!(
        "{} requests, none redirected off the mirror's origin ({redirects} same-origin redirects)",
        rec.exchanges.len()
    ))
}

/// `P3.run-wide-redirects`: see [`runwide::judge_offsite`].
pub fn judge_run_wide_offsite(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_offsite(j, "C.packument", super::p1::listings)
}

/// `P3.request-smuggling`: the corpus hides a GET of the control packument
/// (see [`smuggling`]).
pub fn collect_smuggling(c: &Collector, _f: &Facts) -> Evidence {
    smuggling::collect(c, hidden(c).as_ref())
}

/// The page every smuggling case hides: the control packument.
fn hidden(c: &Collector) -> Option<smuggling::Hidden> {
    c.plan
        .packages
        .present
        .first()
        .and_then(|n| packument_url(c, n))
        .map(|u| smuggling::Hidden {
            path: u.path_and_query().to_string(),
            accept: FULL,
            bare_control: false,
        })
}

pub fn judge_smuggling(j: &Judge, rec: &ProbeRecord) -> Verdict {
    smuggling::judge(j, rec, "C.packument")
}

/// `P3.h2-smuggling`: the HTTP/2 cases, each after a GET of the control
/// packument on the same connection (see [`h2_smuggling`]).
pub fn collect_h2_smuggling(c: &Collector, _f: &Facts) -> Evidence {
    h2_smuggling::collect(c, hidden(c).as_ref())
}

pub fn judge_h2_smuggling(j: &Judge, rec: &ProbeRecord) -> Verdict {
    h2_smuggling::judge(j, rec, "C.packument")
}
