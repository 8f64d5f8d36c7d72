//! P6.vendor-routes, shared by every protocol: each route of the vendor
//! dictionary ([`super::routes`]) that applies to the protocol is sent, and
//! judged by refusal and by effect.
//!
//! Per entry, in its own upstream window `{id}`: the route, then the
//! entry's `then` read (when it has one). Before it, in the window
//! `{id}: baseline`, the same read alone. An upstream contact in the
//! route's window that the baseline did not show is the route's effect: it
//! was honoured, whatever the target answered.

use super::routes::{dictionary, selected, Route, Vars};
use crate::classify::{self, Answer};
use crate::collect::{Collector, Evidence};
use crate::facts::ControlFacts;
use crate::judge::{fail, inconclusive, pass, short, tally, Judge, Verdict};
use egress_model::{Exchange, Observation, ProbeRecord, UpstreamRequest};
use egress_transcript::Request;

/// Labels: the route itself, and the read before and after it.
fn route_label(r: &Route) -> String {
    format!("vendor route {}", r.id)
}
fn baseline_label(r: &Route) -> String {
    format!("vendor route {}: baseline read", r.id)
}
fn after_label(r: &Route) -> String {
    format!("vendor route {}: read after", r.id)
}
fn baseline_window(r: &Route) -> String {
    format!("{}: baseline", r.id)
}

/// What a protocol hands the shared collector: the values its entries'
/// placeholders take (the marker aside) and the `Accept` of the `then` read.
pub struct Input<'a> {
    pub protocol: &'a str,
    pub vars: Vars,
    pub accept: Option<&'a str>,
}

pub fn collect<P>(c: &Collector<P>, input: Input) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(routes) = dictionary() else {
        return ev;
    };
    for r in selected(routes, input.protocol, c.plan.destructive) {
        let vars = Vars {
            marker: c.token(),
            ..input.vars.clone()
        };
        let then = r.then_target(&vars);
        if let Some(t) = &then {
            c.window(&baseline_window(r), &mut ev, |ev| {
                ev.push(c.client.get(&baseline_label(r), t, input.accept));
            });
        }
        c.window(&r.id, &mut ev, |ev| {
            let mut req = Request::new(r.method.clone(), &r.target(&vars));
            for (k, v) in r.headers(&vars) {
                req = req.header(&k, &v);
            }
            if let Some(b) = r.body(&vars) {
                req = req.body(b);
            }
            ev.push(c.send(&route_label(r), &req));
            if let Some(t) = &then {
                ev.push(c.client.get(&after_label(r), t, input.accept));
            }
        });
    }
    ev
}

fn window<'a>(rec: &'a ProbeRecord, name: &str) -> Option<&'a [UpstreamRequest]> {
    rec.observations.iter().find_map(|o| match o {
        Observation::UpstreamLog { window, requests } if window == name => {
            Some(requests.as_slice())
        }
        _ => None,
    })
}

fn find<'a>(rec: &'a ProbeRecord, label: &str) -> Option<&'a Exchange> {
    rec.exchanges.iter().find(|e| e.label == label)
}

/// The finding for one entry's evidence, if any.
fn finding(
    r: &Route,
    rec: &ProbeRecord,
    ex: &Exchange,
    origin: &egress_model::Url,
) -> Option<String> {
    let name = format!("{} {}", r.vendor, r.shape());
    let what = format!("{} {}", ex.request_method(), short(&ex.request_target()));
    let tokens = classify::tokens_in(ex.request.as_bytes());
    let log = window(rec, &r.id).unwrap_or_default();
    // Forwarded: the upstream received the route's own marker.
    if let Some(u) = log
        .iter()
        .find(|u| tokens.iter().any(|t| u.target.contains(t.as_str())))
    {
        return Some(format!(
            "{name}: {what} was forwarded to the upstream: it received {} {}",
            u.method,
            short(&u.target)
        ));
    }
    // Honoured by effect: upstream contact in the route's window that the
    // same read alone did not cause.
    let baseline_quiet = window(rec, &baseline_window(r)).is_none_or(<[_]>::is_empty);
    if let Some(u) = log.first() {
        if baseline_quiet {
            return Some(format!(
                "honoured: {name} made the target fetch {} from its upstream ({what} -> {})",
                short(&u.target),
                answer(ex)
            ));
        }
    }
    let r_resp = ex.response.as_ref();
    match classify::classify(origin, ex) {
        Answer::Served(s) => Some(format!("{name}: {what} was answered {s}: it {}", r.changes)),
        Answer::RedirectOffOrigin(loc) => Some(format!(
            "{name}: {what} was redirected off the mirror's origin to {}",
            short(&loc)
        )),
        Answer::RedirectSameOrigin(loc) if r_resp.is_some_and(|x| x.header("set-cookie").is_some()) => {
            Some(format!(
                "{name}: {what} was redirected to {} with a session cookie: the route let the client in",
                short(&loc)
            ))
        }
        Answer::Gateway(s) => Some(format!(
            "{name}: {what} was answered {s}: the target tried to reach another server"
        )),
        Answer::Refused(s) if r.upstream_failure.contains(&s) => Some(format!(
            "{name}: {what} was answered {s}, which is how this route reports a failed fetch from its upstream: the target tried to reach another server ({})",
            r.changes
        )),
        _ => None,
    }
}

fn answer(ex: &Exchange) -> String {
    ex.response
        .as_ref()
        .and_then(|r| r.status)
        .map_or_else(|| "no answer".to_string(), |s| s.to_string())
}

/// Judges the record of P6.vendor-routes for `protocol`, requiring
/// `control` (the route shape every vendor route shares: the origin
/// answers).
pub fn judge<P, F: ControlFacts>(
    j: &Judge<P, F>,
    rec: &ProbeRecord,
    control: &str,
    protocol: &str,
) -> Verdict {
    let routes = match dictionary() {
        Ok(r) => r,
        Err(e) => return inconclusive(format!("the vendor route dictionary is malformed: {e}")),
    };
    if let Some(v) = j.require(control) {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    let sent: Vec<(&Route, &Exchange)> = selected(routes, protocol, j.plan.destructive)
        .filter_map(|r| find(rec, &route_label(r)).map(|ex| (r, ex)))
        .collect();
    if sent.is_empty() {
        return inconclusive("no vendor route was sent");
    }
    let findings: Vec<(&str, String)> = sent
        .iter()
        .filter_map(|(r, ex)| finding(r, rec, ex, &origin).map(|f| (r.id.as_str(), f)))
        .collect();
    if let Some(((_, first), rest)) = findings.split_first() {
        if rest.is_empty() {
            return fail(first.clone());
        }
        let ids: Vec<&str> = rest.iter().map(|(id, _)| *id).collect();
        return fail(format!(
            "{first} (and {} more vendor routes: {})",
            rest.len(),
            ids.join(", ")
        ));
    }
    let mut vendors: Vec<&str> = sent.iter().map(|(r, _)| r.vendor.as_str()).collect();
    vendors.sort_unstable();
    vendors.dedup();
    let codes: Vec<String> = sent.iter().map(|(_, ex)| answer(ex)).collect();
    let held_back = if j.plan.destructive {
        String::new()
    } else {
        let n = routes
            .iter()
            .filter(|r| r.protocol.applies_to(protocol) && !r.safe)
            .count();
        format!("; {n} destructive routes not sent (give --destructive)")
    };
    pass(format!(
        "{} vendor routes of {} vendors refused ({}), none with an effect upstream{held_back}",
        sent.len(),
        vendors.len(),
        tally(&codes)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::{BodyEnd, Method, ResponseRecord, Sha256Digest, Status, Url, WireBytes};

    const MARKER: &str = "ecm0123456789abcdef";

    fn route(id: &str) -> &'static Route {
        dictionary()
            .unwrap_or_else(|e| panic!("{e}"))
            .iter()
            .find(|r| r.id == id)
            .unwrap()
    }

    fn ex(label: &str, target: &str, status: u16, headers: &[(&str, &str)]) -> Exchange {
        Exchange {
            label: label.into(),
            peer: "127.0.0.1:1".into(),
            request: WireBytes(format!("POST {target} HTTP/1.1\r\n\r\n").into_bytes()),
            response: Some(ResponseRecord {
                status_line: format!("HTTP/1.1 {status} X"),
                status: Some(status),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                body_len: 0,
                body_sha256: Sha256Digest::of(b""),
                body_prefix: WireBytes(Vec::new()),
                body_end: BodyEnd::Complete,
            }),
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        }
    }

    fn log(window: &str, targets: &[&str]) -> Observation {
        Observation::UpstreamLog {
            window: window.into(),
            requests: targets
                .iter()
                .enumerate()
                .map(|(i, t)| UpstreamRequest {
                    seq: i as u64,
                    method: Method::Get,
                    target: t.to_string(),
                    tripwire: false,
                    authorization: false,
                    body: None,
                })
                .collect(),
        }
    }

    fn rec(exchanges: Vec<Exchange>, observations: Vec<Observation>) -> ProbeRecord {
        ProbeRecord {
            id: "P6.vendor-routes".into(),
            status: Status::Inconclusive,
            reason: String::new(),
            exchanges,
            observations,
        }
    }

    fn origin() -> Url {
        Url::parse("http://127.0.0.1:1/simple/").unwrap()
    }

    #[test]
    fn a_refusal_with_a_refetch_behind_it_is_honoured() {
        let r = route("proxpi-cache-project");
        let e = ex(&route_label(r), &format!("/cache/x?ec={MARKER}"), 404, &[]);
        let quiet = rec(
            vec![e.clone()],
            vec![
                log("proxpi-cache-project: baseline", &[]),
                log("proxpi-cache-project", &["/simple/x/"]),
            ],
        );
        let f = finding(r, &quiet, &e, &origin()).expect("honoured");
        assert!(
            f.starts_with(
                "honoured: proxpi DELETE /cache/{project} made the target fetch /simple/x/"
            ),
            "{f}"
        );
        // The same contact without the route (a busy baseline) is not the route's.
        let busy = rec(
            vec![e.clone()],
            vec![
                log("proxpi-cache-project: baseline", &["/simple/x/"]),
                log("proxpi-cache-project", &["/simple/x/"]),
            ],
        );
        assert_eq!(finding(r, &busy, &e, &origin()), None);
        // Its own marker at the upstream is forwarding.
        let fwd = rec(
            vec![e.clone()],
            vec![log(
                "proxpi-cache-project",
                &[&format!("/cache/x?ec={MARKER}")],
            )],
        );
        assert!(finding(r, &fwd, &e, &origin())
            .unwrap()
            .contains("forwarded to the upstream"));
    }

    #[test]
    fn answers_that_fail_and_answers_that_refuse() {
        let login = route("devpi-root-login-empty-password");
        let t = format!("/+login?ec={MARKER}");
        let judge =
            |r: &Route, e: Exchange| finding(r, &rec(vec![e.clone()], vec![]), &e, &origin());
        assert!(judge(login, ex("l", &t, 200, &[]))
            .unwrap()
            .contains("answered 200"));
        assert!(judge(
            login,
            ex("l", &t, 302, &[("Location", "/"), ("Set-Cookie", "s=1")])
        )
        .unwrap()
        .contains("session cookie"));
        assert_eq!(judge(login, ex("l", &t, 302, &[("Location", "/")])), None);
        assert!(judge(
            login,
            ex("l", &t, 302, &[("Location", "http://elsewhere.invalid/")])
        )
        .unwrap()
        .contains("off the mirror's origin"));
        assert!(judge(login, ex("l", &t, 502, &[]))
            .unwrap()
            .contains("another server"));
        assert_eq!(judge(login, ex("l", &t, 401, &[])), None);
        assert_eq!(judge(login, ex("l", &t, 500, &[])), None);
        // 500 is a refusal, except where the entry says it is this route's
        // failed upstream fetch.
        let audit = route("verdaccio-audit-quick");
        assert!(
            judge(audit, ex("a", "/-/npm/v1/security/audits/quick", 500, &[]))
                .unwrap()
                .contains("failed fetch from its upstream")
        );
        assert_eq!(
            judge(audit, ex("a", "/-/npm/v1/security/audits/quick", 404, &[])),
            None
        );
    }
}
