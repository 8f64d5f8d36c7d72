//! Judges: pure functions from a plan and a check's recorded evidence to
//! its verdict, the reason and the paths out it names. The live scan and
//! `report verify` call the same functions.

use crate::dns;
use crate::evidence::{DnsAttempt, Evidence, ScanPlan, TcpAttempt, TcpOutcome};
use crate::names::{authority_of_host, authority_of_url, is_mirror, urls_in_line, urls_in_text};
use crate::net;
use egress_model::{Exchange, Status};

/// A verdict with its reason and the paths out it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub status: Status,
    pub reason: String,
    pub paths: Vec<String>,
}

impl Judged {
    fn pass(reason: impl Into<String>) -> Self {
        Self {
            status: Status::Pass,
            reason: reason.into(),
            paths: Vec::new(),
        }
    }
    /// An observation that names no path by itself: reported as SKIPPED,
    /// never PASS (a row that cannot fail must not read as a pass); the
    /// attempts that act on it carry the verdict.
    fn observed(reason: String, judged_by: &str) -> Self {
        Self::status(
            Status::Skipped,
            format!("{reason} (an observation, not a verdict: judged by {judged_by})"),
        )
    }
    fn status(status: Status, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
            paths: Vec::new(),
        }
    }
    /// FAIL naming `paths` when there are any, else PASS with `otherwise`.
    fn paths_or(paths: Vec<String>, what: &str, otherwise: String) -> Self {
        if paths.is_empty() {
            return Self::pass(otherwise);
        }
        let first = paths.first().cloned().unwrap_or_default();
        let more = match paths.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        Self {
            status: Status::Fail,
            reason: format!("{what}: {first}{more}"),
            paths,
        }
    }
}

fn files(ev: &[Evidence]) -> Vec<(&str, String)> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::File {
                path,
                bytes: Some(b),
                ..
            } => Some((path.as_str(), b.lossy())),
            _ => None,
        })
        .collect()
}

fn file(ev: &[Evidence], name: &str) -> Option<String> {
    files(ev)
        .into_iter()
        .find(|(p, _)| *p == name)
        .map(|(_, t)| t)
}

fn vars(ev: &[Evidence]) -> Vec<(&str, &str)> {
    ev.iter()
        .flat_map(|e| match e {
            Evidence::Env { vars } => vars
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
            _ => Vec::new(),
        })
        .collect()
}

fn tcps(ev: &[Evidence]) -> Vec<&TcpAttempt> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::Tcp(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn exchanges(ev: &[Evidence]) -> Vec<&Exchange> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::Http(x) => Some(x),
            _ => None,
        })
        .collect()
}

fn dnss(ev: &[Evidence]) -> Vec<&DnsAttempt> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::Dns(d) => Some(d),
            _ => None,
        })
        .collect()
}

/// `C.mirror`: the mirror answers its URL with a 2xx.
pub fn mirror_control(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    match exchanges(ev).first() {
        Some(x) if x.response.as_ref().is_some_and(|r| r.is_success()) => {
            Judged::pass(format!("the mirror answers: {}", x.summary()))
        }
        Some(x) => Judged::status(
            Status::Inconclusive,
            format!(
                "the mirror at {} did not answer with a 2xx ({}): a path found closed proves nothing",
                plan.mirror,
                x.summary()
            ),
        ),
        None => Judged::status(Status::Inconclusive, "the mirror was not asked"),
    }
}

/// `S.interfaces`: what the sandbox has; it names no path by itself.
pub fn interfaces(_plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let ifaces: Vec<String> = ev
        .iter()
        .find_map(|e| match e {
            Evidence::Dir { path, entries, .. } if path == "/sys/class/net" => {
                Some(entries.clone())
            }
            _ => None,
        })
        .unwrap_or_default();
    let v4: Vec<String> = file(ev, "/proc/net/fib_trie")
        .map(|t| net::local_addresses_v4(&t))
        .unwrap_or_default()
        .iter()
        .filter(|a| !a.is_loopback())
        .map(ToString::to_string)
        .collect();
    let v6: Vec<String> = file(ev, "/proc/net/if_inet6")
        .map(|t| net::addresses_v6(&t))
        .unwrap_or_default()
        .iter()
        .filter(|(dev, a, _)| dev != "lo" && !a.is_loopback())
        .map(|(dev, a, p)| format!("{a}/{p} ({dev})"))
        .collect();
    let list = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    Judged::observed(
        format!(
            "observed: interfaces {}; IPv4 addresses {}; IPv6 addresses {}",
            list(&ifaces),
            list(&v4),
            list(&v6)
        ),
        "S.routes and R.gateways",
    )
}

/// `S.routes`: every route the sandbox does not need to reach the mirror,
/// and every default route, is a path it is told it has.
pub fn routes(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let v4 = file(ev, "/proc/net/route");
    let v6 = file(ev, "/proc/net/ipv6_route");
    if v4.is_none() && v6.is_none() {
        return Judged::status(
            Status::Inconclusive,
            "neither /proc/net/route nor /proc/net/ipv6_route could be read",
        );
    }
    let mut all = v4.map(|t| net::routes_v4(&t)).unwrap_or_default();
    all.extend(v6.map(|t| net::routes_v6(&t)).unwrap_or_default());
    let live: Vec<&net::Route> = all.iter().filter(|r| !r.is_housekeeping()).collect();
    let paths: Vec<String> = live
        .iter()
        .filter(|r| r.is_default() || !plan.mirror_addrs.iter().any(|a| r.covers(*a)))
        .map(|r| {
            if r.is_default() {
                format!("{r} (every address)")
            } else {
                format!("{r} (not the mirror's)")
            }
        })
        .collect();
    let kept: Vec<String> = live.iter().map(ToString::to_string).collect();
    Judged::paths_or(
        paths,
        "the sandbox has a route beyond the mirror",
        format!(
            "every route leads only to the mirror's addresses: {}",
            if kept.is_empty() {
                "none besides loopback and link-local".into()
            } else {
                kept.join("; ")
            }
        ),
    )
}

/// `S.resolvers`: the resolvers the sandbox is told of (tried by `R.dns-*`).
pub fn resolvers(_plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    match file(ev, "/etc/resolv.conf") {
        Some(t) => {
            let ns: Vec<String> = net::nameservers(&t)
                .iter()
                .map(ToString::to_string)
                .collect();
            Judged::observed(
                if ns.is_empty() {
                    "observed: /etc/resolv.conf names no nameserver".to_string()
                } else {
                    format!("observed: nameservers {}", ns.join(", "))
                },
                "R.dns-public and R.dns-canary, which try each",
            )
        }
        None => Judged::observed(
            "observed: no /etc/resolv.conf".to_string(),
            "R.dns-public and R.dns-canary",
        ),
    }
}

const PROXY_VARS: [&str; 4] = ["http_proxy", "https_proxy", "all_proxy", "ftp_proxy"];

/// Whether `name` is a proxy variable (either case).
pub fn is_proxy_var(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    PROXY_VARS.contains(&l.as_str()) || l == "no_proxy"
}

/// `S.proxy-env`: a proxy variable that names anything but the mirror.
pub fn proxy_env(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let mut paths = Vec::new();
    let mut set = Vec::new();
    for (name, value) in vars(ev) {
        set.push(name.to_string());
        if !PROXY_VARS.contains(&name.to_ascii_lowercase().as_str()) || value.trim().is_empty() {
            continue;
        }
        let a = if value.contains("://") {
            authority_of_url(value.trim())
        } else {
            authority_of_host(value.trim())
        };
        match a {
            Some(a) if is_mirror(plan, &a) => {}
            Some(a) => paths.push(format!("{name}={value} sends clients through {}", a.host)),
            None => paths.push(format!(
                "{name}={value} (unreadable; clients may still use it)"
            )),
        }
    }
    Judged::paths_or(
        paths,
        "a proxy variable names something other than the mirror",
        if set.is_empty() {
            "no proxy variable is set".into()
        } else {
            format!(
                "the proxy variables set ({}) name only the mirror",
                set.join(", ")
            )
        },
    )
}

/// The hosts a configuration line names beyond its URLs: pip's
/// `trusted-host`, npm's `//host/:key`, go's `direct`.
fn special_hosts(key: &str, value: &str) -> Vec<Result<String, String>> {
    let k = key.trim().to_ascii_lowercase();
    let mut out = Vec::new();
    if k.ends_with("trusted-host")
        || k.ends_with("trusted_host")
        || k.ends_with("insecure_host")
        || k.ends_with("insecure-host")
    {
        out.extend(
            value
                .split([' ', ',', '\t'])
                .filter(|h| !h.is_empty() && !h.contains("://"))
                .map(|h| Ok(h.to_string())),
        );
    }
    if let Some(rest) = key.trim().strip_prefix("//") {
        let host = rest.split('/').next().unwrap_or(rest);
        out.push(Ok(host.to_string()));
    }
    if k == "goproxy"
        && value
            .split([',', '|'])
            .any(|p| p.trim().trim_matches('"') == "direct")
    {
        out.push(Err(format!(
            "GOPROXY {value} includes `direct`: go fetches modules from their origin hosts"
        )));
    }
    out
}

/// apt.conf files (`/etc/apt/apt.conf`, `apt.conf.d/*`) comment with `//`,
/// which elsewhere (.npmrc) starts a `//host/` key: blank those lines (line
/// numbers stay) so a comment is never read as a host.
fn without_apt_comments(path: &str, text: &str) -> String {
    if !path.contains("/apt.conf") {
        return text.to_string();
    }
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `S.pip`, `S.uv`, `S.npm`, `S.cargo`, `S.go`, `S.apt`: a client's
/// variables and files that name anything but the mirror.
pub fn client_config(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let mut paths = Vec::new();
    let mut named = 0usize;
    let mut check = |place: String, url: &str, paths: &mut Vec<String>| {
        named += 1;
        match authority_of_url(url) {
            Some(a) if is_mirror(plan, &a) => {}
            Some(_) | None => paths.push(format!("{place}: {url}")),
        }
    };
    for (name, value) in vars(ev) {
        for u in urls_in_line(value) {
            check(name.to_string(), &u, &mut paths);
        }
        for h in special_hosts(name, value) {
            match h {
                Ok(host) => match authority_of_host(&host) {
                    Some(a) if is_mirror(plan, &a) => {}
                    _ => paths.push(format!("{name}: host {host}")),
                },
                Err(why) => paths.push(format!("{name}: {why}")),
            }
        }
    }
    let mut read = Vec::new();
    for (path, text) in files(ev) {
        read.push(path.to_string());
        let text = without_apt_comments(path, &text);
        for (line, u) in urls_in_text(&text) {
            check(format!("{path} line {line}"), &u, &mut paths);
        }
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with('#') || t.starts_with(';') {
                continue;
            }
            let (k, v) = t
                .split_once(['=', ':'])
                .map_or((t, ""), |(k, v)| (k, v.trim()));
            // npm's `//host/:_authToken=...`: the key holds `:` itself.
            let k = if t.starts_with("//") {
                t.split(['=', ' ']).next().unwrap_or(t)
            } else {
                k
            };
            for h in special_hosts(k, v) {
                match h {
                    Ok(host) => match authority_of_host(&host) {
                        Some(a) if is_mirror(plan, &a) => {}
                        _ => paths.push(format!("{path} line {}: host {host}", i + 1)),
                    },
                    Err(why) => paths.push(format!("{path} line {}: {why}", i + 1)),
                }
            }
        }
    }
    Judged::paths_or(
        paths,
        "client configuration names something other than the mirror",
        format!(
            "{named} URL(s) named, all the mirror's; files read: {}",
            if read.is_empty() {
                "none present".to_string()
            } else {
                read.join(", ")
            }
        ),
    )
}

/// `S.lockfiles`: lockfile URLs that name another host.
pub fn lockfiles(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let Some(dir) = &plan.lockfiles else {
        return Judged::status(Status::Skipped, "no --lockfiles DIR given");
    };
    let mut paths = Vec::new();
    let mut unreadable = Vec::new();
    let mut count = 0usize;
    for (path, text) in files(ev) {
        let base = path.rsplit('/').next().unwrap_or(path);
        let Some(format) = egress_lock::LockFormat::of_file_name(base) else {
            continue;
        };
        count += 1;
        match egress_lock::lock_urls(format, path, &text) {
            Ok(urls) => {
                for u in urls {
                    let a = if u.field == "--trusted-host" {
                        authority_of_host(&u.url)
                    } else {
                        authority_of_url(&u.url)
                    };
                    match a {
                        Some(a) if is_mirror(plan, &a) => {}
                        Some(_) => paths.push(format!("{path} {}: {} {}", u.place, u.field, u.url)),
                        // A relative path or a bare name: no host.
                        None => {}
                    }
                }
            }
            Err(e) => unreadable.push(e.to_string()),
        }
    }
    if paths.is_empty() && !unreadable.is_empty() {
        return Judged::status(
            Status::Inconclusive,
            format!("a lockfile could not be read: {}", unreadable.join("; ")),
        );
    }
    Judged::paths_or(
        paths,
        "a lockfile sends its installer past the mirror",
        format!("{count} lockfile(s) under {dir} name only the mirror"),
    )
}

fn connected_paths(plan: &ScanPlan, ev: &[Evidence]) -> (Vec<String>, usize) {
    let xs = exchanges(ev);
    let tries = tcps(ev);
    let paths = tries
        .iter()
        .filter(|t| t.outcome == TcpOutcome::Connected && !plan.is_mirror_socket(&t.addr))
        .map(|t| {
            let http = xs
                .iter()
                .find(|x| x.peer == t.addr)
                .map(|x| match x.status() {
                    Some(s) => format!("; HTTP answered {s}"),
                    None => "; no HTTP answer".to_string(),
                })
                .unwrap_or_default();
            format!("{} ({}) accepts TCP connections{http}", t.addr, t.label)
        })
        .collect();
    (paths, tries.len())
}

fn outcomes(ev: &[Evidence]) -> String {
    tcps(ev)
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t.addr,
                match t.outcome {
                    TcpOutcome::Connected => "connected",
                    TcpOutcome::Refused => "refused",
                    TcpOutcome::Unreachable => "unreachable",
                    TcpOutcome::TimedOut => "timed out",
                    TcpOutcome::Failed => "failed",
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `R.canary`, `R.gateways`, `R.metadata`: an address that completes a
/// TCP handshake is reachable.
pub fn reachable(plan: &ScanPlan, ev: &[Evidence], none: Judged) -> Judged {
    let (paths, tried) = connected_paths(plan, ev);
    if tried == 0 {
        return none;
    }
    Judged::paths_or(
        paths,
        "reachable from the sandbox",
        format!("none of {tried} attempt(s) connected: {}", outcomes(ev)),
    )
}

pub fn canary(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    reachable(
        plan,
        ev,
        Judged::status(Status::Skipped, "no --canary address given"),
    )
}

pub fn gateways(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    reachable(plan, ev, Judged::pass("the routes name no gateway"))
}

pub fn metadata(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    reachable(
        plan,
        ev,
        Judged::status(Status::Inconclusive, "no metadata address was tried"),
    )
}

/// A DNS attempt as read back: (question name, type, reply) when the reply
/// answers the query (same id, a response).
fn answered(d: &DnsAttempt) -> Option<(String, u16, dns::Message)> {
    let q = dns::parse(d.query.as_bytes()).ok()?;
    let question = q.questions.first()?;
    let reply = dns::parse(d.reply.as_ref()?.as_bytes()).ok()?;
    (reply.is_response() && reply.id == q.id).then_some((
        question.name.clone(),
        question.qtype,
        reply,
    ))
}

fn dns_outcomes(ev: &[Evidence]) -> String {
    let ds = dnss(ev);
    let replied = ds.iter().filter(|d| d.reply.is_some()).count();
    format!("{} quer(ies), {replied} replied", ds.len())
}

/// `R.dns-public`: a configured resolver that resolves a public registry.
pub fn dns_public(_plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    if dnss(ev).is_empty() {
        return Judged::pass("no resolver is configured, so nothing was asked");
    }
    let paths: Vec<String> = dnss(ev)
        .iter()
        .filter_map(|d| {
            let (name, qtype, reply) = answered(d)?;
            let addrs = reply.addresses();
            (reply.rcode() == 0 && !reply.answers.is_empty()).then(|| {
                format!(
                    "resolver {} resolves {name} ({}) to {}",
                    d.server,
                    dns::type_name(qtype),
                    if addrs.is_empty() {
                        "a CNAME".to_string()
                    } else {
                        addrs
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                )
            })
        })
        .collect();
    Judged::paths_or(
        paths,
        "public names resolve from the sandbox",
        format!("no public name resolved: {}", dns_outcomes(ev)),
    )
}

/// `R.dns-canary`: a NOERROR answer for the unique name under the canary's
/// zone means the query reached the canary's DNS responder.
pub fn dns_canary(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let Some(unique) = plan.canary_name() else {
        return Judged::status(
            Status::Skipped,
            "no --canary-zone given (a zone whose names only the canary's DNS responder answers)",
        );
    };
    if dnss(ev).is_empty() {
        return Judged::pass(format!(
            "no resolver is configured, so {unique} was never asked"
        ));
    }
    let paths: Vec<String> = dnss(ev)
        .iter()
        .filter_map(|d| {
            let (name, _, reply) = answered(d)?;
            (name == unique && reply.rcode() == 0).then(|| {
                format!(
                    "resolver {} carried {unique} out to the canary's zone (answered NOERROR{}); the canary's DNS log shows it",
                    d.server,
                    reply
                        .addresses()
                        .first()
                        .map(|a| format!(", {a}"))
                        .unwrap_or_default()
                )
            })
        })
        .collect();
    Judged::paths_or(
        paths,
        "DNS carries data out of the sandbox",
        format!(
            "{unique} got no answer ({}); look for it in the canary's DNS log to be sure it never arrived",
            dns_outcomes(ev)
        ),
    )
}

/// `R.mirror-connect`: the mirror must never open a tunnel.
pub fn mirror_connect(_plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let xs = exchanges(ev);
    let Some(first) = xs.first() else {
        return Judged::status(Status::Inconclusive, "no CONNECT was sent");
    };
    let target = first.request_target();
    if first.response.as_ref().is_some_and(|r| r.is_success()) {
        let through = xs
            .get(1)
            .map(|x| format!("; through it: {}", x.summary()))
            .unwrap_or_default();
        return Judged::paths_or(
            vec![format!(
                "CONNECT {target} through the mirror -> {}{through}",
                first.status().unwrap_or(0)
            )],
            "the mirror opens tunnels",
            String::new(),
        );
    }
    Judged::pass(format!(
        "the mirror refused CONNECT {target}: {}",
        first.summary()
    ))
}

/// `R.mirror-absolute`: the mirror must never fetch an absolute-form
/// target. A 2xx counts as forwarded when its body differs from what the
/// mirror serves at the same path in origin form (a server that ignores
/// the host and answers its own page forwards nothing).
pub fn mirror_absolute(_plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let xs = exchanges(ev);
    let (Some(own), Some(abs)) = (xs.first(), xs.get(1)) else {
        return Judged::status(Status::Inconclusive, "no absolute-form request was sent");
    };
    let ok = |x: &Exchange| {
        x.response
            .as_ref()
            .filter(|r| r.is_success())
            .map(|r| r.body_sha256)
    };
    match (ok(abs), ok(own)) {
        (Some(a), Some(o)) if a == o => Judged::pass(format!(
            "the mirror answered with its own page, forwarding nothing: {}",
            abs.summary()
        )),
        (Some(_), _) => Judged::paths_or(
            vec![format!(
                "{} (another host's page, through the mirror)",
                abs.summary()
            )],
            "the mirror forwards absolute-form requests",
            String::new(),
        ),
        (None, _) => Judged::pass(format!("the mirror did not forward: {}", abs.summary())),
    }
}
