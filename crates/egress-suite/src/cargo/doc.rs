//! What the suite reads in a sparse registry: `config.json` and index
//! lines, leniently (a line without a `cksum` is read, so that a judge can
//! name it), bounded by the size of the body recorded.

use egress_model::{Sha256Digest, Url};

/// `config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub dl: String,
    pub api: Option<String>,
    pub auth_required: bool,
}

pub fn config(body: &[u8]) -> Option<Config> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Some(Config {
        dl: v.get("dl")?.as_str()?.to_string(),
        api: v.get("api").and_then(|a| a.as_str()).map(str::to_string),
        auth_required: v.get("auth-required").and_then(|a| a.as_bool()) == Some(true),
    })
}

/// One index line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub name: String,
    pub vers: String,
    /// The `cksum` as written (may be missing or not 64 hex).
    pub cksum: Option<String>,
    pub yanked: bool,
}

impl Line {
    pub fn digest(&self) -> Option<Sha256Digest> {
        let c = self.cksum.as_deref()?;
        (c.len() == 64)
            .then(|| Sha256Digest::from_hex(c).ok())
            .flatten()
    }
}

/// Every non-empty line of an index file; `None` when one is not a JSON
/// object with a `name` and `vers`.
pub fn lines(body: &[u8]) -> Option<Vec<Line>> {
    let mut out = Vec::new();
    for raw in body.split(|&b| b == b'\n') {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(raw).ok()?;
        out.push(Line {
            name: v.get("name")?.as_str()?.to_string(),
            vers: v.get("vers")?.as_str()?.to_string(),
            cksum: v.get("cksum").and_then(|c| c.as_str()).map(str::to_string),
            yanked: v.get("yanked").and_then(|y| y.as_bool()) == Some(true),
        });
    }
    Some(out)
}

/// The download URL of `line` by cargo's rules: the `dl` template with its
/// markers replaced, or `{dl}/{crate}/{version}/download` when it has none.
pub fn download(dl: &str, line: &Line) -> String {
    let markers = [
        "{crate}",
        "{version}",
        "{prefix}",
        "{lowerprefix}",
        "{sha256-checksum}",
    ];
    if !markers.iter().any(|m| dl.contains(m)) {
        return format!(
            "{}/{}/{}/download",
            dl.trim_end_matches('/'),
            line.name,
            line.vers
        );
    }
    let prefix = egress_model::CrateName::new(&line.name)
        .map(|n| n.prefix())
        .unwrap_or_default();
    dl.replace("{crate}", &line.name)
        .replace("{version}", &line.vers)
        .replace("{lowerprefix}", &prefix.to_ascii_lowercase())
        .replace("{prefix}", &prefix)
        .replace(
            "{sha256-checksum}",
            line.cksum.as_deref().unwrap_or_default(),
        )
}

/// The origins `config.json` hands cargo to, as listings for the run-wide
/// offsite judge.
pub fn listings(url: &Url, body: &[u8]) -> Vec<crate::common::runwide::Listing> {
    if !url.path().ends_with("/config.json") {
        return Vec::new();
    }
    let Some(c) = config(body) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (what, u) in [("dl", Some(c.dl)), ("api", c.api)] {
        if let Some(u) = u.and_then(|u| url.join(&u).ok()) {
            out.push(crate::common::runwide::Listing {
                name: format!("config.json's {what}"),
                url: u,
                expected: Vec::new(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_and_expands_dl() {
        let body = b"{\"name\":\"ec-x\",\"vers\":\"1.0.0\",\"cksum\":\"ab\",\"yanked\":true}\n\n";
        let l = lines(body).unwrap();
        assert_eq!(l.len(), 1);
        assert!(l[0].yanked);
        assert!(l[0].digest().is_none());
        assert_eq!(
            download(
                "http://h/f/{sha256-checksum}/{crate}-{version}.crate",
                &l[0]
            ),
            "http://h/f/ab/ec-x-1.0.0.crate"
        );
        assert_eq!(
            download("http://h/api/v1/crates", &l[0]),
            "http://h/api/v1/crates/ec-x/1.0.0/download"
        );
        assert!(lines(b"not json\n").is_none());
    }
}
