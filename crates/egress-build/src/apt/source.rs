//! `--apt-source 'URL DIST [COMPONENT...]'`: an upstream archive, one of
//! its distributions and the components to read, and the name the
//! snapshot serves it under (`/apt/<name>/`, the URL's last path segment).
//! `--apt-sources FILE` gives the same from apt's own source lists (a
//! one-line `.list` or a deb822 `.sources` file, read by
//! [`egress_apt::sources`]), each entry with its own `Signed-By`.

use crate::error::BuildError;
use egress_apt::{SignedBy, SourceEntry};
use egress_model::Url;
use egress_snapshot::apt::is_archive_name;
use std::path::Path;

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
    /// Its own keys (a sources file's `Signed-By`); else `--apt-keyring`.
    pub(crate) signed_by: Option<SignedBy>,
    /// A sources file's `Architectures`; empty otherwise.
    pub(crate) architectures: Vec<String>,
    /// Where it was given, for messages: `--apt-source "..."` or
    /// `--apt-sources FILE line N`.
    pub(crate) given: String,
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
        let given = format!("--apt-source {text:?}");
        let usage = |why: String| BuildError::Usage(format!("{given}: {why}; {FIX}"));
        let mut words = text.split_whitespace();
        let (Some(url_text), Some(dist)) = (words.next(), words.next()) else {
            return Err(usage("expected a URL and a distribution".into()));
        };
        let components: Vec<String> = words.map(str::to_string).collect();
        Self::from_parts(url_text, dist, components, &given).map_err(usage)
    }

    /// An entry of a sources file (`shown` is the file as messages name
    /// it); a bad one is an input error naming its line.
    pub(crate) fn from_entry(shown: &str, e: SourceEntry) -> Result<Self, BuildError> {
        let given = format!("--apt-sources {shown} line {}", e.line);
        let mut s = Self::from_parts(&e.uri, &e.suite, e.components, &given)
            .map_err(|why| BuildError::Conflict(format!("{given}: {why}")))?;
        s.signed_by = e.signed_by;
        s.architectures = e.architectures;
        Ok(s)
    }

    fn from_parts(
        url_text: &str,
        dist: &str,
        components: Vec<String>,
        given: &str,
    ) -> Result<Self, String> {
        let base = url_text.trim_end_matches('/').to_string();
        let url = Url::parse(&format!("{base}/")).map_err(|e| format!("URL {url_text:?}: {e}"))?;
        if url.path_and_query().contains(['?', '#', '%']) {
            return Err(format!(
                "URL {url_text:?}: an archive root has no query, fragment or escapes"
            ));
        }
        let name = url
            .path()
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string();
        if !is_archive_name(&name) {
            return Err(format!(
                "URL {url_text:?}: its last path segment ({name:?}) names the archive on the mirror (/apt/<name>/), so it must be letters, digits and . _ + - (e.g. http://deb.debian.org/debian)"
            ));
        }
        if !is_word(dist) {
            return Err(format!(
                "distribution {dist:?} is not letters, digits and . _ + -"
            ));
        }
        if let Some(bad) = components.iter().find(|c| !is_word(c)) {
            return Err(format!(
                "component {bad:?} is not letters, digits and . _ + -"
            ));
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
            signed_by: None,
            architectures: Vec::new(),
            given: given.to_string(),
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

/// Parses every `--apt-source`, then checks them all together
/// ([`check_all`]).
pub(crate) fn parse_all(texts: &[String]) -> Result<Vec<AptSource>, BuildError> {
    let out = texts
        .iter()
        .map(|t| AptSource::parse(t))
        .collect::<Result<Vec<_>, _>>()?;
    check_all(&out)?;
    Ok(out)
}

/// The enabled `deb` entries of a sources file, in order: deb822 for a
/// `.sources` file, the one-line style for a `.list` file, and for any
/// other name the style its first line shows.
pub(crate) fn read_file(path: &Path, text: &str) -> Result<Vec<AptSource>, BuildError> {
    let shown = path.display().to_string();
    let deb822 = match path.extension().and_then(|e| e.to_str()) {
        Some("sources") => true,
        Some("list") => false,
        _ => !egress_apt::is_one_line_style(text),
    };
    let entries = if deb822 {
        egress_apt::parse_deb822_sources(text)
    } else {
        egress_apt::parse_sources_list(text)
    }
    .map_err(|e| {
        BuildError::Conflict(format!(
            "--apt-sources {shown}: {e}; give apt's sources as they stand (a one-line .list or a deb822 .sources file, sources.list(5))"
        ))
    })?;
    if entries.is_empty() {
        return Err(BuildError::Conflict(format!(
            "--apt-sources {shown}: no enabled deb entry; give the file that lists the archives the --apt-uris come from"
        )));
    }
    entries
        .into_iter()
        .map(|e| AptSource::from_entry(&shown, e))
        .collect()
}

/// Distributions of one archive share its name (and pool); two archives
/// whose URLs end in the same segment, or one archive and distribution
/// given twice, are refused.
pub(crate) fn check_all(sources: &[AptSource]) -> Result<(), BuildError> {
    for (i, s) in sources.iter().enumerate() {
        let earlier = sources.get(..i).unwrap_or_default();
        if let Some(other) = earlier
            .iter()
            .find(|o| o.name == s.name && o.base != s.base)
        {
            return Err(BuildError::Usage(format!(
                "{}: {} and {} would both be served at /apt/{}/; archives on the mirror are named by their URL's last path segment, so build archives that share one into separate snapshots",
                s.given, other.base, s.base, s.name
            )));
        }
        if earlier.iter().any(|o| o.base == s.base && o.dist == s.dist) {
            return Err(BuildError::Usage(format!(
                "{}: {} is given twice; give each distribution once, with all its components",
                s.given,
                s.label()
            )));
        }
    }
    Ok(())
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
