//! apt's source lists, read as apt reads them (sources.list(5)): the
//! one-line style (`deb [opts] URI SUITE COMPONENT...`, a `.list` file) and
//! the deb822 style (`Types`, `URIs`, `Suites`, `Components`, `Signed-By`,
//! `Architectures`, `Enabled`; a `.sources` file). Only what a build of
//! binary packages needs is kept: enabled `deb` entries, one per URI and
//! suite. `deb-src` entries and `Enabled: no` paragraphs are skipped;
//! comments are dropped where apt drops them (a `#` line in deb822, and
//! from `#` to the line's end in the one-line style).

use crate::deb822::parse_paragraphs_with_comments;
use crate::{quote, AptFormatError};

/// The keys a source's signatures are checked against (`Signed-By`,
/// `signed-by=`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedBy {
    /// Keyring files (binary `.gpg` or armoured `.asc`).
    Files(Vec<String>),
    /// An armoured public key block written in the file itself (deb822).
    Key(String),
}

/// One `deb` entry: an archive, one of its suites and the components read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceEntry {
    /// The 1-based line where its paragraph or line starts.
    pub line: usize,
    pub uri: String,
    pub suite: String,
    pub components: Vec<String>,
    pub signed_by: Option<SignedBy>,
    /// `Architectures` / `arch=`; empty when not given.
    pub architectures: Vec<String>,
}

/// Why a sources file cannot be read, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct SourcesError {
    pub line: usize,
    pub why: String,
}

impl From<AptFormatError> for SourcesError {
    fn from(e: AptFormatError) -> Self {
        let line = e.line();
        let text = e.to_string();
        let why = text
            .strip_prefix(&format!("line {line}: "))
            .unwrap_or(&text)
            .to_string();
        Self { line, why }
    }
}

/// Whether `text` is in the one-line style: its first line that is not
/// empty or a comment starts with a type word (`deb`, `deb-src`). apt
/// tells the two by the file's extension; a caller that has one should
/// use it.
pub fn is_one_line_style(text: &str) -> bool {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .find(|l| !l.is_empty())
        .is_some_and(|l| {
            let word = l.split([' ', '\t', '[']).next().unwrap_or_default();
            word == "deb" || word == "deb-src"
        })
}

/// Reads a one-line-style sources list.
pub fn parse_sources_list(text: &str) -> Result<Vec<SourceEntry>, SourcesError> {
    let mut out = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let bad = |why: String| SourcesError { line, why };
        let content = raw.split('#').next().unwrap_or_default().trim();
        if content.is_empty() {
            continue;
        }
        let type_end = content.find([' ', '\t', '[']).unwrap_or(content.len());
        let (kind, rest) = content.split_at_checked(type_end).unwrap_or((content, ""));
        let rest = rest.trim_start();
        let (opts, words_text) = match rest.strip_prefix('[') {
            Some(r) => r
                .split_once(']')
                .ok_or_else(|| bad("an option list `[` without its `]`".into()))?,
            None => ("", rest),
        };
        match kind {
            "deb" => {}
            "deb-src" => continue,
            other => {
                return Err(bad(format!(
                    "type {:?} is not deb or deb-src",
                    quote(other)
                )))
            }
        }
        let mut words = words_text.split_whitespace();
        let (Some(uri), Some(suite)) = (words.next(), words.next()) else {
            return Err(bad("expected `deb [options] URI SUITE COMPONENT...`".into()));
        };
        let components: Vec<String> = words.map(str::to_string).collect();
        let mut signed_by = None;
        let mut architectures = Vec::new();
        for opt in opts.split_whitespace() {
            let Some((key, value)) = opt.split_once('=') else {
                return Err(bad(format!("option {:?} is not key=value", quote(opt))));
            };
            match key {
                "signed-by" => signed_by = Some(signed_by_files(value, line)?),
                "arch" => architectures = list(value),
                // Others (lang, target, trusted, ...) do not change what a
                // build reads: the signature is always checked.
                _ => {}
            }
        }
        out.push(entry(
            line,
            uri,
            suite,
            components,
            signed_by,
            architectures,
        )?);
    }
    Ok(out)
}

/// Reads a deb822 `.sources` file.
pub fn parse_deb822_sources(text: &str) -> Result<Vec<SourceEntry>, SourcesError> {
    let mut out = Vec::new();
    for p in parse_paragraphs_with_comments(text)? {
        let line = p.line();
        let bad = |why: String| SourcesError { line, why };
        let words = |name: &str| p.get(name).map(list).unwrap_or_default();
        if !enabled(&p)? {
            continue;
        }
        let types = words("Types");
        if types.is_empty() {
            return Err(bad("the paragraph has no Types field".into()));
        }
        if let Some(other) = types.iter().find(|t| *t != "deb" && *t != "deb-src") {
            return Err(bad(format!(
                "type {:?} is not deb or deb-src",
                quote(other)
            )));
        }
        if !types.iter().any(|t| t == "deb") {
            continue;
        }
        let uris = words("URIs");
        let suites = words("Suites");
        if uris.is_empty() || suites.is_empty() {
            return Err(bad("a source needs URIs and Suites".into()));
        }
        let signed_by = match p.get("Signed-By") {
            None => None,
            Some(v) if v.contains("BEGIN PGP PUBLIC KEY BLOCK") => Some(SignedBy::Key(
                v.lines()
                    .map(|l| match l.trim() {
                        "." => "",
                        t => t,
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            )),
            Some(v) => Some(signed_by_files(v, line)?),
        };
        for uri in &uris {
            for suite in &suites {
                out.push(entry(
                    line,
                    uri,
                    suite,
                    words("Components"),
                    signed_by.clone(),
                    words("Architectures"),
                )?);
            }
        }
    }
    Ok(out)
}

/// Whether a deb822 paragraph is enabled (`Enabled`, yes unless it says no).
fn enabled(p: &crate::Paragraph) -> Result<bool, SourcesError> {
    match p.get("Enabled").map(str::to_ascii_lowercase).as_deref() {
        None | Some("yes" | "true" | "with" | "on" | "enable") => Ok(true),
        Some("no" | "false" | "without" | "off" | "disable") => Ok(false),
        Some(other) => Err(SourcesError {
            line: p.line(),
            why: format!("Enabled: {:?} is not yes or no", quote(other)),
        }),
    }
}

/// Every URI apt would fetch from, with its 1-based line: the `deb` and
/// `deb-src` entries of a one-line list (`deb822` false) or of the enabled
/// paragraphs of a `.sources` file, read leniently (a line or paragraph
/// that is not a source is skipped, not refused): what a sandbox is told
/// to reach, whatever a build would make of it.
pub fn source_uris(text: &str, deb822: bool) -> Result<Vec<(usize, String)>, SourcesError> {
    let mut out = Vec::new();
    if deb822 {
        for p in parse_paragraphs_with_comments(text)? {
            let types = p.get("Types").map(list).unwrap_or_default();
            if !enabled(&p)? || !types.iter().any(|t| t == "deb" || t == "deb-src") {
                continue;
            }
            let uris = p.get("URIs").map(list).unwrap_or_default();
            out.extend(uris.into_iter().map(|u| (p.line(), u)));
        }
        return Ok(out);
    }
    for (index, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or_default().trim();
        let type_end = content.find([' ', '\t', '[']).unwrap_or(content.len());
        let (kind, rest) = content.split_at_checked(type_end).unwrap_or((content, ""));
        if kind != "deb" && kind != "deb-src" {
            continue;
        }
        let rest = rest.trim_start();
        let words = match rest.strip_prefix('[') {
            Some(r) => r.split_once(']').map_or("", |(_, w)| w),
            None => rest,
        };
        if let Some(uri) = words.split_whitespace().next() {
            out.push((index + 1, uri.to_string()));
        }
    }
    Ok(out)
}

/// Words separated by blanks or commas.
fn list(text: &str) -> Vec<String> {
    text.split([' ', '\t', '\n', ','])
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// `signed-by` naming files; a fingerprint (apt also takes those, to pick
/// keys from its trusted keyrings) has no file a build could read.
fn signed_by_files(value: &str, line: usize) -> Result<SignedBy, SourcesError> {
    let files = list(value);
    if files.is_empty() {
        return Err(SourcesError {
            line,
            why: "Signed-By is empty".into(),
        });
    }
    if let Some(f) = files.iter().find(|f| !f.contains('/')) {
        return Err(SourcesError {
            line,
            why: format!(
                "Signed-By {:?} is not a keyring file's path (a fingerprint names a key in apt's own keyrings, which a build does not read); give the keyring file, e.g. /usr/share/keyrings/debian-archive-keyring.gpg",
                quote(f)
            ),
        });
    }
    Ok(SignedBy::Files(files))
}

fn entry(
    line: usize,
    uri: &str,
    suite: &str,
    components: Vec<String>,
    signed_by: Option<SignedBy>,
    architectures: Vec<String>,
) -> Result<SourceEntry, SourcesError> {
    if suite.ends_with('/') {
        return Err(SourcesError {
            line,
            why: format!(
                "suite {:?} is a flat repository (ends in /); a build reads dists/<suite>/ archives",
                quote(suite)
            ),
        });
    }
    if components.is_empty() {
        return Err(SourcesError {
            line,
            why: format!(
                "{} {} names no component; apt needs one (e.g. main)",
                quote(uri),
                quote(suite)
            ),
        });
    }
    Ok(SourceEntry {
        line,
        uri: uri.to_string(),
        suite: suite.to_string(),
        components,
        signed_by,
        architectures,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stock_debian_sources_file() {
        let text = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n\nEnabled: no\nTypes: deb\nURIs: http://x/debian\nSuites: x\nComponents: main\n";
        assert!(!is_one_line_style(text));
        let e = parse_deb822_sources(text).unwrap();
        let got: Vec<_> = e
            .iter()
            .map(|e| (e.line, e.uri.as_str(), e.suite.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "http://deb.debian.org/debian", "bookworm"),
                (1, "http://deb.debian.org/debian", "bookworm-updates"),
                (
                    8,
                    "http://deb.debian.org/debian-security",
                    "bookworm-security"
                ),
            ]
        );
        assert_eq!(
            e[2].signed_by,
            Some(SignedBy::Files(vec![
                "/usr/share/keyrings/debian-archive-keyring.gpg".into()
            ]))
        );
    }

    #[test]
    fn every_uri_apt_fetches_from() {
        let text = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb-src\nURIs: http://src.example/debian https://two.example/d\nSuites: bookworm\n\nEnabled: no\nTypes: deb\nURIs: http://off.example/debian\nSuites: x\n";
        assert_eq!(
            source_uris(text, true).unwrap(),
            [
                (1, "http://deb.debian.org/debian".to_string()),
                (7, "http://src.example/debian".to_string()),
                (7, "https://two.example/d".to_string()),
            ]
        );
        let list = "# deb http://commented.example/ x main\ndeb [arch=amd64 signed-by=/k.gpg] http://a.example/debian bookworm main # http://tail.example/\ndeb-src http://b.example/debian ./\ndeb cdrom:[Debian]/ bookworm main\nnonsense\n";
        assert_eq!(
            source_uris(list, false).unwrap(),
            [
                (2, "http://a.example/debian".to_string()),
                (3, "http://b.example/debian".to_string()),
                (4, "cdrom:[Debian]/".to_string()),
            ]
        );
        assert!(source_uris("Enabled: maybe\nTypes: deb\n", true).is_err());
    }

    #[test]
    fn an_inline_key_and_architectures() {
        let text = "Types: deb\nURIs: http://x/debian\nSuites: s\nComponents: main contrib\nArchitectures: amd64 arm64\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n mDMEabc\n -----END PGP PUBLIC KEY BLOCK-----\n";
        let e = parse_deb822_sources(text).unwrap();
        assert_eq!(e[0].components, ["main", "contrib"]);
        assert_eq!(e[0].architectures, ["amd64", "arm64"]);
        assert_eq!(
            e[0].signed_by,
            Some(SignedBy::Key(
                "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEabc\n-----END PGP PUBLIC KEY BLOCK-----"
                    .into()
            ))
        );
    }

    #[test]
    fn one_line_style() {
        let text = "# stock\ndeb http://deb.debian.org/debian bookworm main contrib # trailing\ndeb-src http://deb.debian.org/debian bookworm main\ndeb [ arch=amd64,arm64 signed-by=/k.gpg ] http://deb.debian.org/debian-security bookworm-security main\ndeb [signed-by=/k.asc] http://x/d s main\n";
        assert!(is_one_line_style(text));
        let e = parse_sources_list(text).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].components, ["main", "contrib"]);
        assert_eq!((e[1].line, e[1].suite.as_str()), (4, "bookworm-security"));
        assert_eq!(e[1].architectures, ["amd64", "arm64"]);
        assert_eq!(e[1].signed_by, Some(SignedBy::Files(vec!["/k.gpg".into()])));
        assert_eq!(e[2].uri, "http://x/d");
    }

    #[test]
    fn refusals_name_the_line() {
        for (text, want) in [
            ("deb http://x/d\n", "line 1: expected"),
            ("\nrpm http://x/d s main\n", "line 2: type"),
            ("deb [arch=amd64 http://x/d s main\n", "without its `]`"),
            ("deb http://x/d s\n", "names no component"),
            ("deb http://x/d ./ main\n", "flat repository"),
            (
                "deb [signed-by=ABCDEF0123] http://x/d s main\n",
                "fingerprint",
            ),
        ] {
            let e = parse_sources_list(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        for (text, want) in [
            (
                "URIs: http://x/d\nSuites: s\nComponents: main\n",
                "line 1: the paragraph has no Types",
            ),
            ("Types: deb\nSuites: s\n", "needs URIs and Suites"),
            ("Types: deb\nEnabled: maybe\n", "Enabled"),
            ("Types: deb\n URIs\n", ""),
            (
                "Types: deb\nTypes: deb\n",
                "line 2: field \"Types\" appears twice",
            ),
        ] {
            let e = parse_deb822_sources(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
