//! Judges: pure functions from a plan and a check's recorded evidence to
//! its verdict, the reason and the paths out it names. The live scan and
//! `report verify` call the same functions.

use crate::dns;
use crate::doors;
use crate::evidence::{
    dnss, exchanges, file, files, tcps, vars, Evidence, Notice, NoticeKind, ScanPlan, TcpAttempt,
    TcpOutcome,
};
use crate::names::{authority_of_host, authority_of_url, is_mirror};
use crate::net;
use egress_model::{Exchange, Status};

/// A verdict with its reason and the paths out it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub status: Status,
    pub reason: String,
    pub paths: Vec<String>,
    /// What is configured but leads nowhere (check ids filled in by
    /// `judge_all`).
    pub notices: Vec<Notice>,
}

impl Judged {
    fn pass(reason: impl Into<String>) -> Self {
        Self {
            status: Status::Pass,
            reason: reason.into(),
            paths: Vec::new(),
            notices: Vec::new(),
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
            notices: Vec::new(),
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
            notices: Vec::new(),
        }
    }
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

/// Whether `name` is a proxy variable (either case).
pub fn is_proxy_var(name: &str) -> bool {
    doors::is_proxy_var(name)
}

/// `S.proxy-env`: a proxy variable whose proxy answers, on any address but
/// the mirror's own, is a door past the mirror whatever it claims to be.
pub fn proxy_env(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let set: Vec<&str> = vars(ev).into_iter().map(|(n, _)| n).collect();
    let none = if set.is_empty() {
        "no proxy variable is set".to_string()
    } else {
        format!("proxy variables set: {}", set.join(", "))
    };
    judge_doors(
        plan,
        &doors::proxies(plan, ev),
        ev,
        "=",
        "a proxy variable names a proxy that answers",
        none,
    )
}

/// `S.pip`, `S.uv`, `S.npm`, `S.cargo`, `S.go`, `S.apt`: a client's
/// variables and files that send it to a door that answers and is not the
/// mirror. A door that leads nowhere from the sandbox is a notice.
pub fn client_config(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let read: Vec<&str> = doors::config_files(ev)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let mut j = judge_doors(
        plan,
        &doors::client_doors(plan, ev),
        ev,
        ": ",
        "client configuration sends clients to a door that answers and is not the mirror",
        format!(
            "files read: {}",
            if read.is_empty() {
                "none present".to_string()
            } else {
                read.join(", ")
            }
        ),
    );
    j.notices.extend(unread(ev));
    j
}

/// `S.cargo`: [`client_config`], and a registry token anywhere cargo
/// would find one (a credentials file, `token` in a config, a
/// `CARGO_REGISTRY_TOKEN` or `CARGO_REGISTRIES_<NAME>_TOKEN` variable) is
/// a finding of its own: a credential for a registry's write routes
/// inside the sandbox, whatever door it is for. Its value is never
/// recorded (the evidence holds `<redacted>`).
pub fn cargo_config(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let mut j = client_config(plan, ev);
    let tokens = cargo_tokens(ev);
    if tokens.is_empty() {
        return j;
    }
    let first = tokens.first().cloned().unwrap_or_default();
    let found = format!("a registry token in the sandbox: {first}");
    j.reason = match j.status {
        Status::Fail => format!("{}; {found}", j.reason),
        _ => found,
    };
    j.status = Status::Fail;
    j.paths.extend(tokens);
    j
}

/// Where cargo would find a registry token, from the recorded (redacted)
/// variables and files.
fn cargo_tokens(ev: &[Evidence]) -> Vec<String> {
    let mut out: Vec<String> = vars(ev)
        .into_iter()
        .filter(|(n, v)| {
            let n = n.to_ascii_uppercase();
            !v.is_empty()
                && (n == "CARGO_REGISTRY_TOKEN"
                    || (n.starts_with("CARGO_REGISTRIES_") && n.ends_with("_TOKEN")))
        })
        .map(|(n, _)| format!("${n}"))
        .collect();
    for (path, text) in doors::config_files(ev) {
        for (i, line) in text.lines().enumerate() {
            let key = line.split_once('=').map(|(k, _)| k.trim());
            if key.is_some_and(|k| k == "token" || k.ends_with(".token")) {
                out.push(format!("{path} line {}", i + 1));
            }
        }
    }
    out
}

/// `S.hf`: [`client_config`] (`HF_ENDPOINT` and any URL in the client's
/// variables), and a Hugging Face token anywhere `huggingface_hub` would
/// find one (`HF_TOKEN`, `HUGGING_FACE_HUB_TOKEN`, a token file) is a
/// finding of its own: a credential a model can use against the Hub's
/// write routes, whatever door it is for. Its value is never recorded.
pub fn hf_config(plan: &ScanPlan, ev: &[Evidence]) -> Judged {
    let mut j = client_config(plan, ev);
    // A token file's bytes are never recorded, so nothing in it is a door.
    let mut tokens: Vec<String> = vars(ev)
        .into_iter()
        .filter(|(n, v)| {
            !v.is_empty() && matches!(*n, "HF_TOKEN" | "HUGGING_FACE_HUB_TOKEN" | "HF_API_TOKEN")
        })
        .map(|(n, _)| format!("${n}"))
        .collect();
    tokens.extend(
        doors::config_files(ev)
            .into_iter()
            .filter(|(_, text)| text == crate::collect::SECRET_FILE)
            .map(|(p, _)| format!("{p} (a token file)")),
    );
    let Some(first) = tokens.first().cloned() else {
        return j;
    };
    let found = format!("a Hugging Face token in the sandbox: {first}");
    j.reason = match j.status {
        Status::Fail => format!("{}; {found}", j.reason),
        _ => found,
    };
    j.status = Status::Fail;
    j.paths.extend(tokens);
    j
}

/// A configuration file or directory that exists but could not be read.
fn unread(ev: &[Evidence]) -> Vec<Notice> {
    ev.iter()
        .filter_map(|e| match e {
            Evidence::File {
                path,
                bytes: None,
                error: Some(err),
            }
            | Evidence::Dir {
                path,
                error: Some(err),
                ..
            } if err != "absent" && path != doors::HOSTS_FILE && path != doors::RESOLV_CONF => {
                Some(notice(
                    NoticeKind::Unread,
                    String::new(),
                    path.clone(),
                    format!("cannot read: {err}"),
                ))
            }
            _ => None,
        })
        .collect()
}

fn notice(kind: NoticeKind, configured: String, place: String, attempt: String) -> Notice {
    Notice {
        check: String::new(),
        kind,
        configured,
        place,
        attempt,
    }
}

/// Judges each door that is not the mirror's from the attempts recorded
/// for it (`collect::try_doors`): one that accepted a TCP connection is a
/// path out (FAIL); one whose name did not resolve or whose every
/// connection failed is a notice with that attempt; one not tried, or a
/// value the scan cannot read, is INCONCLUSIVE.
fn judge_doors(
    plan: &ScanPlan,
    named: &[doors::Door],
    ev: &[Evidence],
    sep: &str,
    what: &str,
    otherwise: String,
) -> Judged {
    let asked = ev
        .iter()
        .any(|e| matches!(e, Evidence::File { path, .. } if path == doors::RESOLV_CONF));
    let tries = tcps(ev);
    let xs = exchanges(ev);
    let mut paths = Vec::new();
    let mut notices = Vec::new();
    let mut unsure = Vec::new();
    let mut mirror = 0usize;
    for d in named {
        let shown = format!("{}{sep}{}", d.place, d.configured);
        if d.mirror {
            mirror += 1;
            continue;
        }
        let (host, ports) = match &d.target {
            doors::Target::Host { host, ports } => (host, ports),
            doors::Target::Unknown {
                why,
                inconclusive: true,
            } => {
                unsure.push(format!("{shown}: {why}"));
                continue;
            }
            doors::Target::Unknown { why, .. } => {
                notices.push(notice(
                    NoticeKind::NoHost,
                    d.configured.clone(),
                    d.place.clone(),
                    why.clone(),
                ));
                continue;
            }
        };
        let r = doors::resolve(host, ev);
        if r.addrs.is_empty() {
            if asked && r.tried {
                notices.push(notice(
                    NoticeKind::Unreachable,
                    d.configured.clone(),
                    d.place.clone(),
                    format!("name resolution failed: {}", r.how),
                ));
            } else {
                unsure.push(format!("{shown}: not tried"));
            }
            continue;
        }
        let sockets: Vec<String> = r
            .addrs
            .iter()
            .flat_map(|a| {
                ports
                    .iter()
                    .map(|p| std::net::SocketAddr::new(*a, *p).to_string())
            })
            .filter(|s| !plan.is_mirror_socket(s))
            .collect();
        if sockets.is_empty() {
            mirror += 1;
            continue;
        }
        let found: Vec<Option<&&TcpAttempt>> = sockets
            .iter()
            .map(|s| tries.iter().find(|t| &t.addr == s))
            .collect();
        if let Some(t) = found
            .iter()
            .flatten()
            .find(|t| t.outcome == TcpOutcome::Connected)
        {
            let http = xs
                .iter()
                .find(|x| x.peer == t.addr)
                .map(|x| match x.status() {
                    Some(s) => format!(", HTTP answered {s}"),
                    None => ", no HTTP answer".to_string(),
                })
                .unwrap_or_default();
            let kind = if d.proxy { "a proxy" } else { "a door" };
            paths.push(format!(
                "{shown}: {kind} that answers at {} ({host}: {}){http}",
                t.addr, r.how
            ));
        } else if found.iter().any(Option::is_none) {
            unsure.push(format!("{shown}: not tried"));
        } else {
            let attempts: Vec<String> = found
                .iter()
                .flatten()
                .take(4)
                .map(|t| Evidence::Tcp((**t).clone()).summary())
                .collect();
            notices.push(notice(
                NoticeKind::Unreachable,
                d.configured.clone(),
                d.place.clone(),
                format!(
                    "{}no connection completed: {}",
                    if host.parse::<std::net::IpAddr>().is_ok() {
                        String::new()
                    } else {
                        format!(
                            "{host} is {} ({}); ",
                            r.addrs
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join(", "),
                            r.how
                        )
                    },
                    attempts.join("; ")
                ),
            ));
        }
    }
    let mut j = if !paths.is_empty() {
        Judged::paths_or(paths, what, String::new())
    } else if !unsure.is_empty() {
        Judged::status(
            Status::Inconclusive,
            format!("cannot tell: {}", unsure.join("; ")),
        )
    } else {
        Judged::pass(format!(
            "{} door(s) named: {mirror} the mirror's, {} leading nowhere from here (notices); {otherwise}",
            named.len(),
            notices.len()
        ))
    };
    j.notices = notices;
    j
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
            let (name, qtype, reply) = d.answer()?;
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
            let (name, _, reply) = d.answer()?;
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
