//! `--apt-source 'URL DIST [COMPONENT...]'`: an upstream archive, one of
//! its distributions and the components to read, and the name the
//! snapshot serves it under (`/apt/<name>/`, the URL's last path segment).

use crate::error::BuildError;
use egress_model::Url;
use egress_snapshot::apt::is_archive_name;

/// One `--apt-source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AptSource {
    /// The archive root as given, without a trailing `/`
    /// (`http://deb.debian.org/debian`).
    pub(crate) base: String,
    pub(crate) url: Url,
    /// `debian`: where the snapshot serves it, below `/apt/`.
    pub(crate) name: String,
    pub(crate) dist: String,
    /// `main` when none is given.
    pub(crate) components: Vec<String>,
}

/// A distribution or component name: what Debian archives use, and safe
/// in a URL path and a served path.
fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 100
        && s.as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
}

const FIX: &str = "give --apt-source 'URL DIST [COMPONENT...]', e.g. --apt-source 'http://deb.debian.org/debian bookworm main'";

impl AptSource {
    pub(crate) fn parse(text: &str) -> Result<Self, BuildError> {
        let usage = |why: String| BuildError::Usage(format!("--apt-source {text:?}: {why}; {FIX}"));
        let mut words = text.split_whitespace();
        let (Some(url_text), Some(dist)) = (words.next(), words.next()) else {
            return Err(usage("expected a URL and a distribution".into()));
        };
        let components: Vec<String> = words.map(str::to_string).collect();
        let base = url_text.trim_end_matches('/').to_string();
        let url =
            Url::parse(&format!("{base}/")).map_err(|e| usage(format!("URL {url_text:?}: {e}")))?;
        if url.path_and_query().contains(['?', '#', '%']) {
            return Err(usage(format!(
                "URL {url_text:?}: an archive root has no query, fragment or escapes"
            )));
        }
        let name = url
            .path()
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        if !is_archive_name(&name) {
            return Err(usage(format!(
                "URL {url_text:?}: its last path segment ({name:?}) names the archive on the mirror (/apt/<name>/), so it must be letters, digits and . _ + - (e.g. http://deb.debian.org/debian)"
            )));
        }
        if !is_word(dist) {
            return Err(usage(format!(
                "distribution {dist:?} is not letters, digits and . _ + -"
            )));
        }
        if let Some(bad) = components.iter().find(|c| !is_word(c)) {
            return Err(usage(format!(
                "component {bad:?} is not letters, digits and . _ + -"
            )));
        }
        let mut components = if components.is_empty() {
            vec!["main".to_string()]
        } else {
            components
        };
        let mut seen = std::collections::BTreeSet::new();
        components.retain(|c| seen.insert(c.clone()));
        Ok(Self {
            base,
            url,
            name,
            dist: dist.to_string(),
            components,
        })
    }

    /// `dists/<dist>/<rest>` under the archive root.
    pub(crate) fn dist_url(&self, rest: &str) -> Result<Url, BuildError> {
        let text = format!("{}/dists/{}/{rest}", self.base, self.dist);
        Url::parse(&text).map_err(|e| BuildError::Usage(format!("{text}: {e}")))
    }

    /// The part of `url` below this archive's root (`pool/...`), as it is
    /// written there, when `url` is under it.
    pub(crate) fn below<'a>(&self, url: &'a str) -> Option<&'a str> {
        url.strip_prefix(self.base.as_str())?
            .strip_prefix('/')
            .filter(|rest| !rest.is_empty())
    }

    /// How messages name it.
    pub(crate) fn label(&self) -> String {
        format!("{} {}", self.base, self.dist)
    }
}

/// Parses every `--apt-source`. Distributions of one archive share its
/// name (and pool); two archives whose URLs end in the same segment, or
/// one archive and distribution given twice, are a usage error.
pub(crate) fn parse_all(texts: &[String]) -> Result<Vec<AptSource>, BuildError> {
    let mut out: Vec<AptSource> = Vec::new();
    for text in texts {
        let s = AptSource::parse(text)?;
        if let Some(other) = out.iter().find(|o| o.name == s.name && o.base != s.base) {
            return Err(BuildError::Usage(format!(
                "--apt-source {text:?}: {} and {} would both be served at /apt/{}/; archives on the mirror are named by their URL's last path segment, so build archives that share one into separate snapshots",
                other.base, s.base, s.name
            )));
        }
        if out.iter().any(|o| o.base == s.base && o.dist == s.dist) {
            return Err(BuildError::Usage(format!(
                "--apt-source {text:?}: {} is given twice; give each distribution once, with all its components",
                s.label()
            )));
        }
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources() {
        let s = AptSource::parse("http://deb.debian.org/debian/ bookworm main contrib main")
            .expect("parses");
        assert_eq!(s.base, "http://deb.debian.org/debian");
        assert_eq!(s.name, "debian");
        assert_eq!(s.dist, "bookworm");
        assert_eq!(s.components, ["main", "contrib"]);
        assert_eq!(
            s.below("http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb"),
            Some("pool/main/h/hello/hello_2.10-3_amd64.deb")
        );
        assert_eq!(
            s.below("http://deb.debian.org/debian-security/pool/x.deb"),
            None
        );
        assert_eq!(
            s.dist_url("InRelease").expect("url").to_string(),
            "http://deb.debian.org/debian/dists/bookworm/InRelease"
        );
        let s = AptSource::parse("http://127.0.0.1:9/debian-security bookworm-security")
            .expect("parses");
        assert_eq!(
            (s.name.as_str(), s.components.len()),
            ("debian-security", 1)
        );
        for bad in [
            "",
            "http://x/debian",
            "ftp://x/debian bookworm",
            "http://x/ bookworm",
            "http://x/debian?x=1 bookworm",
            "http://x/debian ../x",
            "http://x/debian bookworm ma/in",
            "http://x/keyring.gpg bookworm",
        ] {
            let e = AptSource::parse(bad).expect_err(bad);
            assert!(e.to_string().starts_with("--apt-source "), "{e}");
        }
        let e = parse_all(&["http://a/debian x".into(), "http://b/debian y".into()])
            .expect_err("clash");
        assert!(e.to_string().contains("/apt/debian/"), "{e}");
        let e = parse_all(&["http://a/debian x".into(), "http://a/debian/ x c".into()])
            .expect_err("twice");
        assert!(e.to_string().contains("twice"), "{e}");
        let two = parse_all(&[
            "http://a/debian x".into(),
            "http://a/debian x-updates".into(),
        ])
        .expect("two distributions of one archive");
        assert_eq!(two.len(), 2);
    }
}
