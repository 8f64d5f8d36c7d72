//! The doors a client configuration names, and what the sandbox's own
//! resolver says about their hosts. A door is where a variable or file
//! sends a client: an index or registry URL, a proxy, a trusted host, apt's
//! source URIs. Pure functions of recorded evidence: the collectors call
//! them to know what to try, the judges to read the attempts back.

use crate::evidence::{dnss, file, files, vars, Evidence, ScanPlan};
use crate::names::{authority_of_host, is_mirror, urls_in_line, urls_in_text, Authority};
use crate::net;
use std::net::IpAddr;

/// Files a config check records to resolve names as a client would; never
/// read as configuration.
pub const HOSTS_FILE: &str = "/etc/hosts";
pub const RESOLV_CONF: &str = "/etc/resolv.conf";

/// Ports tried for a host named without a port or a known scheme.
const ANY_WEB: [u16; 2] = [443, 80];
/// curl's port for a proxy named without one.
const PROXY_PORT: u16 = 1080;

/// Where a door leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A host (name or address) and the ports a client would use.
    Host { host: String, ports: Vec<u16> },
    /// No one host a scan could try; `inconclusive` when a client may still
    /// reach something (a proxy value the scan cannot read).
    Unknown { why: String, inconclusive: bool },
}

/// One door a configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Door {
    /// A variable's name, or `FILE line N`.
    pub place: String,
    /// What is configured there, as written.
    pub configured: String,
    pub target: Target,
    /// Whether it names the mirror (host or address, and port if given),
    /// as the `--mirror` URL identifies it.
    pub mirror: bool,
    /// Whether clients use it as a proxy.
    pub proxy: bool,
}

fn scheme_ports(scheme: &str, proxy: bool) -> Vec<u16> {
    let base = scheme.rsplit('+').next().unwrap_or(scheme);
    let mut ports: Vec<u16> = match base.to_ascii_lowercase().as_str() {
        "http" => vec![80],
        "https" => vec![443],
        "ftp" => vec![21],
        "ssh" => vec![22],
        "git" => vec![9418],
        s if s.starts_with("socks") => vec![PROXY_PORT],
        _ => ANY_WEB.to_vec(),
    };
    if proxy && !ports.contains(&PROXY_PORT) {
        ports.push(PROXY_PORT);
    }
    ports
}

fn door(place: String, configured: &str, a: Authority, ports: Vec<u16>, proxy: bool) -> Door {
    Door {
        place,
        configured: configured.to_string(),
        mirror: false,
        target: Target::Host {
            ports: a.port.map_or(ports, |p| vec![p]),
            host: a.host,
        },
        proxy,
    }
}

/// The door a URL names, if it names a host (`file:` and `cdrom:` name none:
/// they are the sandbox's own disks).
fn url_door(plan: &ScanPlan, place: String, url: &str, proxy: bool) -> Option<Door> {
    let (scheme, rest) = url.split_once("://")?;
    let a = authority_of_host(rest)?;
    let defaults = scheme_ports(scheme, false);
    let implied = match defaults.as_slice() {
        [one] => a.port.or(Some(*one)),
        _ => a.port,
    };
    let mirror = is_mirror(
        plan,
        &Authority {
            host: a.host.clone(),
            port: implied,
        },
    );
    let mut d = door(place, url, a, scheme_ports(scheme, proxy), proxy);
    d.mirror = mirror;
    Some(d)
}

/// The door a bare `host[:port]` names.
fn host_door(plan: &ScanPlan, place: String, host: &str, proxy: bool) -> Option<Door> {
    let a = authority_of_host(host)?;
    let ports = if proxy {
        scheme_ports("http", true)
    } else {
        ANY_WEB.to_vec()
    };
    let mirror = is_mirror(plan, &a);
    let mut d = door(place, host, a, ports, proxy);
    d.mirror = mirror;
    Some(d)
}

const PROXY_VARS: [&str; 4] = ["http_proxy", "https_proxy", "all_proxy", "ftp_proxy"];

/// Whether `name` is a proxy variable (either case), `no_proxy` included.
pub fn is_proxy_var(name: &str) -> bool {
    let l = name.to_ascii_lowercase();
    PROXY_VARS.contains(&l.as_str()) || l == "no_proxy"
}

/// `S.proxy-env`: the proxies the variables name.
pub fn proxies(plan: &ScanPlan, ev: &[Evidence]) -> Vec<Door> {
    let mut out = Vec::new();
    for (name, value) in vars(ev) {
        let v = value.trim();
        if !PROXY_VARS.contains(&name.to_ascii_lowercase().as_str()) || v.is_empty() {
            continue;
        }
        let d = if v.contains("://") {
            url_door(plan, name.to_string(), v, true)
        } else {
            host_door(plan, name.to_string(), v, true)
        };
        out.push(d.unwrap_or_else(|| Door {
            place: name.to_string(),
            configured: value.to_string(),
            target: Target::Unknown {
                why: "the scan cannot read this value; clients may still use it".into(),
                inconclusive: true,
            },
            mirror: false,
            proxy: true,
        }));
    }
    out
}

/// The hosts a configuration line names beyond its URLs: pip's
/// `trusted-host`, npm's `//host/:key`; go's `direct` names none.
fn special(plan: &ScanPlan, place: &str, key: &str, value: &str) -> Vec<Door> {
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
                .filter_map(|h| host_door(plan, place.to_string(), h, false)),
        );
    }
    if let Some(rest) = key.trim().strip_prefix("//") {
        let host = rest.split('/').next().unwrap_or(rest);
        out.extend(host_door(plan, place.to_string(), host, false));
    }
    if k == "goproxy"
        && value
            .split([',', '|'])
            .any(|p| p.trim().trim_matches('"') == "direct")
    {
        out.push(Door {
            place: place.to_string(),
            configured: value.to_string(),
            target: Target::Unknown {
                why: "`direct`: go fetches each module from its own origin, no one host to try (S.routes, R.canary and R.gateways judge whether origins are reachable)".into(),
                inconclusive: false,
            },
            mirror: false,
            proxy: false,
        });
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

/// Whether `path` is an apt source list, and whether in the deb822 style.
fn apt_sources(path: &str) -> Option<bool> {
    let one_line = path.ends_with("/sources.list")
        || (path.contains("sources.list.d/") && path.ends_with(".list"));
    if path.ends_with(".sources") {
        Some(true)
    } else {
        one_line.then_some(false)
    }
}

/// `S.pip`, `S.uv`, `S.npm`, `S.cargo`, `S.go`, `S.apt`: every door a
/// client's variables and files name, the mirror's included. apt's source
/// lists are read as apt reads them (`deb` and `deb-src`, `Enabled: no`
/// honoured); a list apt's reader refuses is read for every URL instead.
pub fn client_doors(plan: &ScanPlan, ev: &[Evidence]) -> Vec<Door> {
    let mut out = Vec::new();
    for (name, value) in vars(ev) {
        let proxy = name.to_ascii_lowercase().contains("proxy") && name != "GOPROXY";
        out.extend(
            urls_in_line(value)
                .iter()
                .filter_map(|u| url_door(plan, name.to_string(), u, proxy)),
        );
        out.extend(special(plan, name, name, value));
    }
    for (path, text) in config_files(ev) {
        let text = without_apt_comments(path, &text);
        let urls = match apt_sources(path).map(|deb822| egress_apt::source_uris(&text, deb822)) {
            Some(Ok(uris)) => uris,
            Some(Err(_)) | None => urls_in_text(&text),
        };
        for (line, u) in urls {
            out.extend(url_door(plan, format!("{path} line {line}"), &u, false));
        }
        // apt's Acquire::*::Proxy, npm's proxy=, pip's proxy =: the URLs
        // on a line that says proxy before its first URL are proxies.
        let proxy_line = |l: &str| {
            l.split("://")
                .next()
                .is_some_and(|head| head.to_ascii_lowercase().contains("proxy"))
        };
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
            out.extend(special(plan, &format!("{path} line {}", i + 1), k, v));
            if proxy_line(t) {
                let place = format!("{path} line {}", i + 1);
                for d in out.iter_mut().filter(|d| d.place == place) {
                    d.proxy = true;
                }
            }
        }
    }
    out
}

/// The configuration files recorded (the resolver's own files excluded).
pub fn config_files(ev: &[Evidence]) -> Vec<(&str, String)> {
    files(ev)
        .into_iter()
        .filter(|(p, _)| *p != HOSTS_FILE && *p != RESOLV_CONF)
        .collect()
}

/// What the sandbox's resolver gave a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub addrs: Vec<IpAddr>,
    /// False when the resolver was not asked although it could have been
    /// (no lookup recorded for a valid name): nothing can be told.
    pub tried: bool,
    /// How: an address literal, /etc/hosts, the DNS replies; or why not.
    pub how: String,
}

/// The addresses `host` has for a client of this sandbox, from the
/// recorded /etc/hosts, else the recorded DNS replies (A and AAAA through
/// the resolvers of /etc/resolv.conf), as glibc's `files dns` order has it.
pub fn resolve(host: &str, ev: &[Evidence]) -> Resolved {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Resolved {
            addrs: vec![ip],
            tried: true,
            how: "an address".into(),
        };
    }
    let listed = file(ev, HOSTS_FILE)
        .map(|t| net::hosts_lookup(&t, host))
        .unwrap_or_default();
    if !listed.is_empty() {
        return Resolved {
            addrs: listed,
            tried: true,
            how: HOSTS_FILE.to_string(),
        };
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    let asked: Vec<_> = dnss(ev)
        .into_iter()
        .filter(|d| {
            crate::dns::parse(d.query.as_bytes())
                .ok()
                .and_then(|q| q.questions.first().map(|q| q.name == name))
                .unwrap_or(false)
        })
        .collect();
    let mut addrs: Vec<IpAddr> = Vec::new();
    for d in &asked {
        if let Some((_, _, reply)) = d.answer() {
            if reply.rcode() == 0 {
                for a in reply.addresses() {
                    if !addrs.contains(&a) {
                        addrs.push(a);
                    }
                }
            }
        }
    }
    if !addrs.is_empty() {
        return Resolved {
            addrs,
            tried: true,
            how: "DNS".into(),
        };
    }
    let servers = file(ev, RESOLV_CONF)
        .map(|t| net::nameservers(&t))
        .unwrap_or_default();
    let valid = crate::dns::Name::new(host).is_ok();
    let tried = !asked.is_empty() || servers.is_empty() || !valid;
    let how = if !valid {
        format!("{host:?} is not a host name a resolver can look up")
    } else if asked.is_empty() && servers.is_empty() {
        let unread = ev.iter().find_map(|e| match e {
            Evidence::File {
                path,
                error: Some(err),
                ..
            } if path == RESOLV_CONF => Some(err.as_str()),
            _ => None,
        });
        match unread {
            Some(err) => format!("not in {HOSTS_FILE}, and {RESOLV_CONF}: {err}"),
            None => format!("not in {HOSTS_FILE}, and {RESOLV_CONF} names no nameserver"),
        }
    } else if asked.is_empty() {
        "not asked".into()
    } else {
        let shown: Vec<String> = asked.iter().take(1).map(|d| d.summary()).collect();
        let more = asked.len().saturating_sub(1);
        format!(
            "not in {HOSTS_FILE}; {}{}",
            shown.join("; "),
            if more > 0 {
                format!(" (and {more} more)")
            } else {
                String::new()
            }
        )
    };
    Resolved {
        addrs: Vec::new(),
        tried,
        how,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::WireBytes;

    fn plan() -> ScanPlan {
        ScanPlan {
            mirror: "http://198.51.100.1:8080/simple/".into(),
            mirror_host: "198.51.100.1".into(),
            mirror_port: 8080,
            mirror_addrs: vec!["198.51.100.1".parse().unwrap()],
            canaries: vec![],
            canary_zone: None,
            token: "t".into(),
            lockfiles: None,
            public_names: vec![],
            gateway_ports: vec![],
        }
    }

    fn file(path: &str, text: &str) -> Evidence {
        Evidence::File {
            path: path.into(),
            bytes: Some(WireBytes(text.as_bytes().to_vec())),
            error: None,
        }
    }

    fn hosts(d: &[Door]) -> Vec<(String, String, Vec<u16>, bool, bool)> {
        d.iter()
            .map(|d| match &d.target {
                Target::Host { host, ports } => (
                    d.place.clone(),
                    host.clone(),
                    ports.clone(),
                    d.mirror,
                    d.proxy,
                ),
                Target::Unknown { why, .. } => {
                    (d.place.clone(), why.clone(), vec![], d.mirror, d.proxy)
                }
            })
            .collect()
    }

    #[test]
    fn apt_sources_as_apt_reads_them() {
        let p = plan();
        let stock = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nEnabled: no\nTypes: deb\nURIs: http://off.example/\nSuites: x\nComponents: main\n";
        let list = "deb [signed-by=/k.gpg] http://198.51.100.1:8080/debian bookworm main\ndeb https://ftp.example:8443/debian bookworm main\ndeb file:///srv/repo ./\n";
        let conf =
            "// http://commented.example/\nAcquire::http::Proxy \"http://203.0.113.9:3128/\";\n";
        let d = client_doors(
            &p,
            &[
                file("/etc/apt/sources.list.d/debian.sources", stock),
                file("/etc/apt/sources.list", list),
                file("/etc/apt/apt.conf.d/01proxy", conf),
            ],
        );
        let s = |x: &str| x.to_string();
        assert_eq!(
            hosts(&d),
            [
                (
                    s("/etc/apt/sources.list.d/debian.sources line 1"),
                    s("deb.debian.org"),
                    vec![80],
                    false,
                    false
                ),
                (
                    s("/etc/apt/sources.list line 1"),
                    s("198.51.100.1"),
                    vec![8080],
                    true,
                    false
                ),
                (
                    s("/etc/apt/sources.list line 2"),
                    s("ftp.example"),
                    vec![8443],
                    false,
                    false
                ),
                (
                    s("/etc/apt/apt.conf.d/01proxy line 2"),
                    s("203.0.113.9"),
                    vec![3128],
                    false,
                    true
                ),
            ]
        );
    }

    #[test]
    fn proxies_and_special_hosts() {
        let p = plan();
        let env = Evidence::Env {
            vars: vec![
                ("HTTPS_PROXY".into(), "http://198.51.100.1:8080".into()),
                ("http_proxy".into(), "proxy.lab".into()),
                ("all_proxy".into(), "socks5h://203.0.113.5".into()),
                ("ftp_proxy".into(), ":3128".into()),
                ("no_proxy".into(), "example.com".into()),
            ],
        };
        let d = proxies(&p, &[env]);
        let h = hosts(&d);
        assert!(h[0].3, "the mirror's own socket: {h:?}");
        assert_eq!(h[1].2, vec![80, 1080]);
        assert_eq!(h[2].2, vec![1080]);
        assert!(matches!(
            d[3].target,
            Target::Unknown {
                inconclusive: true,
                ..
            }
        ));
        assert_eq!(d.len(), 4);
        let vars = Evidence::Env {
            vars: vec![
                ("PIP_TRUSTED_HOST".into(), "pypi.org 198.51.100.1".into()),
                ("GOPROXY".into(), "http://198.51.100.1:8080,direct".into()),
            ],
        };
        let npmrc = file(
            "/root/.npmrc",
            "//registry.npmjs.org/:_authToken=<redacted>\n",
        );
        let d = client_doors(&p, &[vars, npmrc]);
        let h = hosts(&d);
        assert_eq!(h[0].1, "pypi.org");
        assert_eq!(h[0].2, vec![443, 80]);
        assert!(h[1].3, "a trusted host that is the mirror's");
        assert!(h[2].3, "GOPROXY's URL is the mirror's");
        assert!(h[3].1.contains("direct"));
        assert_eq!(h[4].0, "/root/.npmrc line 1");
        assert_eq!(h[4].1, "registry.npmjs.org");
    }

    #[test]
    fn resolution_reads_hosts_then_dns() {
        let hosts_file = file(HOSTS_FILE, "198.51.100.7 deb.debian.org\n");
        let r = resolve("deb.debian.org", &[hosts_file]);
        assert_eq!(r.addrs, vec!["198.51.100.7".parse::<IpAddr>().unwrap()]);
        let r = resolve("deb.debian.org", &[file(RESOLV_CONF, "# none\n")]);
        assert!(r.addrs.is_empty());
        assert!(r.how.contains("names no nameserver"), "{}", r.how);
        let name = crate::dns::Name::new("deb.debian.org").unwrap();
        let q = crate::dns::encode_query(7, &name, crate::dns::TYPE_A);
        let query = crate::dns::parse(&q).unwrap();
        let reply = crate::dns::encode_reply(&query, &["203.0.113.80".parse().unwrap()], 60);
        let asked = |reply: Option<Vec<u8>>| {
            Evidence::Dns(crate::evidence::DnsAttempt {
                server: "192.0.2.53:53".into(),
                query: WireBytes(q.clone()),
                error: reply
                    .is_none()
                    .then(|| "cannot send: Network is unreachable".into()),
                reply: reply.map(WireBytes),
                elapsed_ms: 0,
            })
        };
        let r = resolve("deb.debian.org", &[asked(Some(reply))]);
        assert_eq!(r.addrs, vec!["203.0.113.80".parse::<IpAddr>().unwrap()]);
        let r = resolve("deb.debian.org", &[asked(None)]);
        assert!(r.addrs.is_empty());
        assert!(r.how.contains("Network is unreachable"), "{}", r.how);
    }
}
