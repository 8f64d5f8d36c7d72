//! The dictionary of vendor control routes (`data/control-routes.toml`):
//! the known admin and control routes of real mirrors, kept as data. This
//! module reads and validates it and expands an entry into a request;
//! [`super::vendor`] sends and judges them (P6.vendor-routes).
//!
//! The file is compiled in. A malformed entry is a test failure
//! (`dictionary_is_valid` below), never a panic: at run time
//! [`dictionary`] returns the error, and the sub-probe is INCONCLUSIVE
//! saying so.

use egress_model::Method;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The dictionary's text, as shipped.
pub const SOURCE: &str = include_str!("../../data/control-routes.toml");

/// Which protocol's suite sends an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteProtocol {
    Pypi,
    Npm,
    Apt,
    /// Every protocol: the route does not depend on the protocol the mirror serves.
    Any,
}

impl RouteProtocol {
    /// Whether a run of `protocol` (`"pypi"`, `"npm"`) sends this entry.
    pub fn applies_to(self, protocol: &str) -> bool {
        match self {
            RouteProtocol::Any => true,
            RouteProtocol::Pypi => protocol == "pypi",
            RouteProtocol::Npm => protocol == "npm",
            RouteProtocol::Apt => protocol == "apt",
        }
    }
}

/// One vendor route.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    /// Stable id, `[a-z0-9-]+`: exchanges and windows are labelled by it.
    pub id: String,
    pub vendor: String,
    pub protocol: RouteProtocol,
    pub method: Method,
    /// Path template: starts with `/` or `{index}`.
    pub path: String,
    /// Body template, sent as is after expansion.
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub content_type: Option<String>,
    /// Further request headers (values are templates).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// What honouring the route changes, in a sentence.
    pub changes: String,
    /// Non-destructive: safe to send to a production mirror. `check` sends
    /// only these unless `--destructive` is given.
    pub safe: bool,
    /// A read whose upstream contact shows the route's effect (a cache drop
    /// makes the target refetch it): fetched before the route (the
    /// baseline) and after it.
    #[serde(default)]
    pub then: Option<String>,
    /// Statuses by which this vendor's route says that its own fetch from
    /// an upstream failed: the target tried to reach another server.
    #[serde(default)]
    pub upstream_failure: Vec<u16>,
    /// The public documentation (or source) the entry comes from.
    pub doc: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    route: Vec<Route>,
}

/// The dictionary does not parse, or an entry is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutesError {
    #[error("data/control-routes.toml does not parse: {0}")]
    Parse(String),
    #[error("data/control-routes.toml, route {id:?}: {problem}")]
    Entry { id: String, problem: String },
}

/// The placeholders a template may use.
pub const PLACEHOLDERS: &[&str] = &[
    "index", "project", "package", "version", "marker", "user", "token",
];

/// The values a template's placeholders expand to, for one entry.
#[derive(Debug, Clone)]
pub struct Vars {
    /// The path of the URL under test, ending in `/`.
    pub index: String,
    pub project: String,
    /// The npm package as it appears in a path (`/` encoded as `%2f`);
    /// bodies get [`Vars::project`]'s raw name instead.
    pub package_path: String,
    pub version: String,
    /// A fresh marker token; also `{user}` and `{token}`.
    pub marker: String,
}

/// Where a template is expanded: a path, or a body or header value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spot {
    Path,
    Text,
}

fn placeholders(template: &str) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = rest.get(open + 1..).unwrap_or_default();
        let Some(close) = after.find('}') else {
            return Err(format!("unclosed '{{' in {template:?}"));
        };
        let name = after.get(..close).unwrap_or_default();
        // JSON bodies carry braces of their own: only `{word}` is a
        // placeholder, and it must be a known one.
        if !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase()) {
            if !PLACEHOLDERS.contains(&name) {
                return Err(format!(
                    "unknown placeholder {{{name}}} in {template:?} (known: {})",
                    PLACEHOLDERS.join(", ")
                ));
            }
            out.push(name);
        }
        rest = after.get(close + 1..).unwrap_or_default();
    }
    Ok(out)
}

fn expand(template: &str, v: &Vars, spot: Spot) -> String {
    let package = if spot == Spot::Path {
        v.package_path.as_str()
    } else {
        v.project.as_str()
    };
    template
        .replace("{index}", &v.index)
        .replace("{project}", &v.project)
        .replace("{package}", package)
        .replace("{version}", &v.version)
        .replace("{marker}", &v.marker)
        .replace("{user}", &v.marker)
        .replace("{token}", &v.marker)
}

impl Route {
    /// `METHOD path-template`, as reasons name the route.
    pub fn shape(&self) -> String {
        format!("{} {}", self.method, self.path)
    }

    /// The request target: the path expanded, with `ec={marker}` added to
    /// its query when the path carries no marker of its own.
    pub fn target(&self, v: &Vars) -> String {
        let mut t = expand(&self.path, v, Spot::Path);
        let marked = ["{marker}", "{user}", "{token}"]
            .iter()
            .any(|p| self.path.contains(p));
        if !marked {
            t.push(if t.contains('?') { '&' } else { '?' });
            t.push_str("ec=");
            t.push_str(&v.marker);
        }
        t
    }

    pub fn body(&self, v: &Vars) -> Option<Vec<u8>> {
        self.body
            .as_ref()
            .map(|b| expand(b, v, Spot::Text).into_bytes())
    }

    /// Content-Type first, then the other headers, expanded.
    pub fn headers(&self, v: &Vars) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Some(ct) = &self.content_type {
            out.push(("Content-Type".to_string(), expand(ct, v, Spot::Text)));
        }
        for (k, val) in &self.headers {
            out.push((k.clone(), expand(val, v, Spot::Text)));
        }
        out
    }

    pub fn then_target(&self, v: &Vars) -> Option<String> {
        self.then.as_ref().map(|t| expand(t, v, Spot::Path))
    }

    fn validate(&self) -> Result<(), String> {
        let id_ok = !self.id.is_empty()
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !id_ok {
            return Err("the id must be lower-case letters, digits and '-'".into());
        }
        if self.vendor.trim().is_empty() || self.changes.trim().is_empty() {
            return Err("vendor and changes must not be empty".into());
        }
        if !self.doc.starts_with("https://") {
            return Err(format!("doc must be an https:// URL, not {:?}", self.doc));
        }
        for (what, t) in [("path", Some(&self.path)), ("then", self.then.as_ref())] {
            let Some(t) = t else { continue };
            if !(t.starts_with('/') || t.starts_with("{index}")) {
                return Err(format!("{what} must start with '/' or {{index}}: {t:?}"));
            }
            placeholders(t)?;
            if t.bytes()
                .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
            {
                return Err(format!("{what} must not contain spaces or controls: {t:?}"));
            }
        }
        if let Some(b) = &self.body {
            placeholders(b)?;
        }
        for (k, val) in self
            .content_type
            .iter()
            .map(|c| ("Content-Type", c))
            .chain(self.headers.iter().map(|(k, v)| (k.as_str(), v)))
        {
            if !egress_model::is_token(k.as_bytes()) {
                return Err(format!("header name {k:?} is not a token"));
            }
            if val.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(format!("header {k} must not contain a line break"));
            }
            placeholders(val)?;
        }
        if let Some(s) = self
            .upstream_failure
            .iter()
            .find(|s| !(400..=599).contains(*s))
        {
            return Err(format!("upstream_failure {s} is not a 4xx or 5xx status"));
        }
        Ok(())
    }
}

/// Parses and validates a dictionary's text.
pub fn parse(text: &str) -> Result<Vec<Route>, RoutesError> {
    let file: File = toml::from_str(text).map_err(|e| RoutesError::Parse(one_line(&e)))?;
    let mut seen: Vec<&str> = Vec::new();
    for r in &file.route {
        r.validate().map_err(|problem| RoutesError::Entry {
            id: r.id.clone(),
            problem,
        })?;
        if seen.contains(&r.id.as_str()) {
            return Err(RoutesError::Entry {
                id: r.id.clone(),
                problem: "the id is used twice".into(),
            });
        }
        seen.push(&r.id);
    }
    Ok(file.route)
}

fn one_line(e: &toml::de::Error) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The shipped dictionary, parsed once.
pub fn dictionary() -> Result<&'static [Route], &'static RoutesError> {
    static DICT: OnceLock<Result<Vec<Route>, RoutesError>> = OnceLock::new();
    DICT.get_or_init(|| parse(SOURCE))
        .as_ref()
        .map(Vec::as_slice)
}

/// The entries a run of `protocol` sends: every one that applies to it,
/// the destructive ones only when `destructive`.
pub fn selected(
    routes: &'static [Route],
    protocol: &str,
    destructive: bool,
) -> impl Iterator<Item = &'static Route> + 'static {
    let protocol = protocol.to_string();
    routes
        .iter()
        .filter(move |r| r.protocol.applies_to(&protocol) && (destructive || r.safe))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        Vars {
            index: "/root/pypi/+simple/".into(),
            project: "ec-present".into(),
            package_path: "ec-present".into(),
            version: "1.0.0".into(),
            marker: "ecm0123456789abcdef".into(),
        }
    }

    #[test]
    fn dictionary_is_valid() {
        let routes = dictionary().unwrap_or_else(|e| panic!("{e}"));
        assert!(routes.len() >= 20);
        for vendor in [
            "proxpi",
            "devpi",
            "pypiserver",
            "Verdaccio",
            "Nexus",
            "Artifactory",
            "Pulp",
            "Gitea/Forgejo",
        ] {
            assert!(
                routes.iter().any(|r| r.vendor == vendor),
                "no entry for {vendor}"
            );
        }
        for id in [
            "proxpi-cache-list",
            "proxpi-cache-project",
            "devpi-refresh",
            "devpi-root-login-empty-password",
            "devpi-user-create",
            "devpi-index-create",
            "pypiserver-remove-pkg",
            "verdaccio-audit-quick",
            "verdaccio-token-create",
            "verdaccio-web-login",
        ] {
            assert!(routes.iter().any(|r| r.id == id), "no entry {id}");
        }
        // Every protocol has safe entries, so a `check` without
        // --destructive still sends something.
        for p in ["pypi", "npm"] {
            assert!(selected(routes, p, false).next().is_some());
            assert!(selected(routes, p, true).count() > selected(routes, p, false).count());
        }
    }

    #[test]
    fn expands_templates_and_marks_targets() {
        let routes = dictionary().unwrap_or_else(|e| panic!("{e}"));
        let find = |id: &str| routes.iter().find(|r| r.id == id).unwrap();
        let v = vars();
        assert_eq!(
            find("devpi-refresh").target(&v),
            "/root/pypi/+simple/ec-present/refresh?ec=ecm0123456789abcdef"
        );
        assert_eq!(
            find("proxpi-cache-list").target(&v),
            "/cache/list?ec=ecm0123456789abcdef"
        );
        assert_eq!(find("devpi-user-create").target(&v), "/ecm0123456789abcdef");
        assert_eq!(
            find("devpi-login").body(&v).unwrap(),
            br#"{"user": "ecm0123456789abcdef", "password": "ecm0123456789abcdef"}"#
        );
        assert_eq!(
            find("proxpi-cache-project").then_target(&v).as_deref(),
            Some("/root/pypi/+simple/ec-present/")
        );
    }

    #[test]
    fn malformed_entries_are_errors_not_panics() {
        let base = |extra: &str| {
            format!(
                "[[route]]\nid = \"x\"\nvendor = \"v\"\nprotocol = \"pypi\"\nmethod = \"POST\"\npath = \"/a\"\nchanges = \"c\"\nsafe = true\ndoc = \"https://example.invalid/\"\n{extra}"
            )
        };
        assert!(parse(&base("")).is_ok());
        let cases = [
            (base("body = \"{nope}\""), "unknown placeholder"),
            (base("then = \"relative\""), "must start with"),
            (base("upstream_failure = [200]"), "not a 4xx"),
            (base("colour = \"red\""), "does not parse"),
            (base("headers = { \"X Y\" = \"z\" }"), "not a token"),
            (base("").replace("POST", "PO ST"), "does not parse"),
            (
                base("").replace("protocol = \"pypi\"", "protocol = \"maven\""),
                "does not parse",
            ),
            (base("").replace("https://", "http://"), "https://"),
            (base("").replace("id = \"x\"", "id = \"X!\""), "lower-case"),
            (format!("{}\n{}", base(""), base("")), "used twice"),
            ("not toml at all [".to_string(), "does not parse"),
        ];
        for (text, want) in cases {
            let e = parse(&text).expect_err(&text).to_string();
            assert!(e.contains(want), "{want:?} not in {e:?}");
            assert!(!e.contains('\n'), "not one line: {e:?}");
        }
    }
}
