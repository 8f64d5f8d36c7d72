//! Whether a URL or host names the mirror, and the URLs a configuration
//! text names: one lenient reader for every client's files and variables
//! (pip.conf, uv.toml, .npmrc, cargo's config.toml, go's env, apt's
//! sources and proxies), since what matters is the host each one names.

use crate::evidence::ScanPlan;
use std::net::IpAddr;

/// A host (lower case, no brackets) and the port a URL names or implies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    pub host: String,
    pub port: Option<u16>,
}

/// The authority of `url` (`scheme://[user@]host[:port]/...`); the port
/// defaults to the scheme's (`git+https`, `mirror+http`: the last part).
pub fn authority_of_url(url: &str) -> Option<Authority> {
    let (scheme, rest) = url.split_once("://")?;
    let base = scheme
        .rsplit('+')
        .next()
        .unwrap_or(scheme)
        .to_ascii_lowercase();
    let default = match base.as_str() {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    };
    let mut a = authority_of_host(rest)?;
    if a.port.is_none() {
        a.port = default;
    }
    Some(a)
}

/// The authority of `host[:port][/...]` (a proxy variable without a
/// scheme, a trusted host, an npmrc `//host/` key).
pub fn authority_of_host(text: &str) -> Option<Authority> {
    let end = text.find(['/', '?', '#']).unwrap_or(text.len());
    let auth = text.get(..end)?;
    let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let (host, port) = if let Some(rest) = auth.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        (h, tail.strip_prefix(':'))
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (auth, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    Some(Authority {
        host: host.trim_end_matches('.').to_ascii_lowercase(),
        port: port.and_then(|p| p.parse().ok()),
    })
}

/// Whether `a` names the mirror: its host (or one of its addresses) and,
/// when a port is known, its port.
pub fn is_mirror(plan: &ScanPlan, a: &Authority) -> bool {
    let host_ok = a.host == plan.mirror_host
        || a.host
            .parse::<IpAddr>()
            .is_ok_and(|ip| plan.mirror_addrs.contains(&ip));
    host_ok && a.port.is_none_or(|p| p == plan.mirror_port)
}

/// Every URL (`scheme://...`) in `text`, with its 1-based line, outside
/// lines that are comments (`#` or `;` first).
pub fn urls_in_text(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        out.extend(urls_in_line(line).into_iter().map(|u| (i + 1, u)));
    }
    out
}

/// Every `scheme://...` in one line: the scheme is the run of letters,
/// digits, `+`, `-` and `.` before `://`; the URL ends at white space, a
/// quote, a comma, `|` or a closing bracket.
pub fn urls_in_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = line
        .get(from..)
        .and_then(|s| s.find("://"))
        .map(|i| i + from)
    {
        let before = line.get(..at).unwrap_or("");
        let scheme_len = before
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
            .count();
        let start = at - scheme_len;
        let after = line.get(at + 3..).unwrap_or("");
        let len = after
            .find(|c: char| {
                c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '|' | ']' | ')' | '>')
            })
            .unwrap_or(after.len());
        if scheme_len > 0 && len > 0 {
            if let Some(u) = line.get(start..at + 3 + len) {
                out.push(u.to_string());
            }
        }
        from = at + 3 + len.max(1);
        if from >= line.len() {
            break;
        }
    }
    out
}

/// Key names whose values are secrets.
fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "auth",
        "token",
        "password",
        "secret",
        "passwd",
        "credential",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// `text` with the password of every URL's user info, and the value of
/// every `key = value` line whose key names a secret, replaced by
/// `<redacted>`, so that reports can be shared.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let mut l = line.to_string();
        if let Some((k, _)) = l.split_once('=') {
            if is_secret_name(k) {
                let nl = if l.ends_with('\n') { "\n" } else { "" };
                l = format!("{k}=<redacted>{nl}");
            }
        }
        for u in urls_in_line(&l.clone()) {
            let Some((scheme, rest)) = u.split_once("://") else {
                continue;
            };
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            let (auth, tail) = rest.split_at_checked(end).unwrap_or((rest, ""));
            let Some((userinfo, host)) = auth.rsplit_once('@') else {
                continue;
            };
            let Some((user, _)) = userinfo.split_once(':') else {
                continue;
            };
            l = l.replace(&u, &format!("{scheme}://{user}:<redacted>@{host}{tail}"));
        }
        out.push_str(&l);
    }
    out
}

/// An environment variable's value as recorded.
pub fn redact_var(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        "<redacted>".into()
    } else {
        redact(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn authorities() {
        let a = authority_of_url("https://user:pw@PyPI.org/simple").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("pypi.org", Some(443)));
        let a = authority_of_url("git+https://[2001:db8::1]:8443/x").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("2001:db8::1", Some(8443)));
        let a = authority_of_host("203.0.113.1:3128").unwrap();
        assert_eq!((a.host.as_str(), a.port), ("203.0.113.1", Some(3128)));
        assert!(authority_of_url("nothing").is_none());
        let p = plan();
        assert!(is_mirror(
            &p,
            &authority_of_url("http://198.51.100.1:8080/simple/").unwrap()
        ));
        assert!(!is_mirror(
            &p,
            &authority_of_url("http://198.51.100.1/simple/").unwrap()
        ));
        assert!(is_mirror(&p, &authority_of_host("198.51.100.1").unwrap()));
        assert!(!is_mirror(
            &p,
            &authority_of_url("https://pypi.org/simple").unwrap()
        ));
    }

    #[test]
    fn urls_in_config_text() {
        let text = "[global]\nindex-url = http://198.51.100.1:8080/simple/\nextra-index-url =\n    https://pypi.org/simple\n# https://commented.example/\nregistry=\"https://registry.npmjs.org/\"\nGOPROXY=https://proxy.golang.org,direct\n";
        let urls: Vec<String> = urls_in_text(text).into_iter().map(|(_, u)| u).collect();
        assert_eq!(
            urls,
            [
                "http://198.51.100.1:8080/simple/",
                "https://pypi.org/simple",
                "https://registry.npmjs.org/",
                "https://proxy.golang.org"
            ]
        );
        assert!(urls_in_line("://x a:// ://").is_empty());
    }

    #[test]
    fn secrets_are_redacted() {
        let t = redact("//registry.npmjs.org/:_authToken=abc\nindex-url = https://u:pw@h.example/simple\nplain=1");
        assert_eq!(
            t,
            "//registry.npmjs.org/:_authToken=<redacted>\nindex-url = https://u:<redacted>@h.example/simple\nplain=1"
        );
        assert_eq!(redact_var("UV_PUBLISH_TOKEN", "x"), "<redacted>");
    }
}
