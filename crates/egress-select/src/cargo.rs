//! cargo's version requirements (`serde = "1.0"`, `"^0.4, <0.4.9"`,
//! `"~1.2"`, `"=1.2.3"`, `"1.*"`), which versions they admit.
//!
//! cargo's comparators are node-semver's but for two rules: a bare version
//! means a caret (`"1.2"` is `^1.2`), and comparators are joined with
//! commas (all must hold). So a requirement is read comparator by
//! comparator, a bare one given its caret, and matched with
//! [`crate::npm::Range`]; pre-releases match as in both tools: only when a
//! comparator names the same `major.minor.patch` with a pre-release.

use crate::npm::{Range, Semver};
use std::fmt;

/// A requirement as a dependency line of an index writes it.
#[derive(Debug, Clone)]
pub struct VersionReq {
    text: String,
    range: Range,
}

/// Why a text is not a cargo version requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReqError {
    pub text: String,
    pub why: String,
}

impl fmt::Display for ReqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a cargo version requirement: {}",
            self.text, self.why
        )
    }
}

impl std::error::Error for ReqError {}

impl VersionReq {
    /// `*` (any version), as an empty requirement means in a universe line.
    pub fn any() -> Self {
        Self::parse("*").unwrap_or_else(|_| unreachable_any())
    }

    pub fn parse(text: &str) -> Result<Self, ReqError> {
        let bad = |why: &str| ReqError {
            text: text.chars().take(200).collect(),
            why: why.to_string(),
        };
        if text.len() > 1024 {
            return Err(bad("longer than 1,024 bytes"));
        }
        if text.contains("||") || text.contains(" - ") {
            return Err(bad(
                "cargo joins comparators with commas; `||` and hyphen ranges are npm's",
            ));
        }
        let mut parts = Vec::new();
        for comparator in text.split(',') {
            let c = comparator.trim();
            if c.is_empty() {
                return Err(bad("an empty comparator"));
            }
            if c.contains(char::is_whitespace) && !c.starts_with(['<', '>', '=', '~', '^']) {
                return Err(bad("a comparator is one version with an optional operator"));
            }
            // A wildcard (`1.2.*`) is its own range, with no caret.
            let bare = c.as_bytes().first().is_some_and(u8::is_ascii_digit) && !c.contains('*');
            parts.push(if bare { format!("^{c}") } else { c.to_string() });
        }
        let range = Range::parse(&parts.join(" ")).map_err(|e| bad(&e.to_string()))?;
        Ok(Self {
            text: text.to_string(),
            range,
        })
    }

    pub fn matches(&self, v: &Semver) -> bool {
        self.range.satisfies(v, false)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// `*` always parses; kept out of line so `any` has no panic path.
#[cold]
fn unreachable_any() -> VersionReq {
    VersionReq {
        text: "*".into(),
        range: Range::parse("*").unwrap_or_else(|_| unreachable_any().range),
    }
}

impl fmt::Display for VersionReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admits(req: &str, v: &str) -> bool {
        VersionReq::parse(req)
            .unwrap()
            .matches(&Semver::parse(v).unwrap())
    }

    /// The cargo book's table ("Specifying Dependencies"), each bound
    /// checked on both sides.
    #[test]
    fn as_the_cargo_book_says() {
        for (req, yes, no) in [
            ("1.2.3", &["1.2.3", "1.9.0"][..], &["1.2.2", "2.0.0"][..]),
            ("1.2", &["1.2.0", "1.99.9"], &["1.1.9", "2.0.0"]),
            ("1", &["1.0.0", "1.9.9"], &["0.9.9", "2.0.0"]),
            ("0.2.3", &["0.2.3", "0.2.99"], &["0.2.2", "0.3.0"]),
            ("0.2", &["0.2.0", "0.2.9"], &["0.1.9", "0.3.0"]),
            ("0.0.3", &["0.0.3"], &["0.0.4", "0.0.2"]),
            ("0.0", &["0.0.0", "0.0.9"], &["0.1.0"]),
            ("0", &["0.0.0", "0.9.9"], &["1.0.0"]),
            ("^1.2.3", &["1.2.3", "1.3.0"], &["2.0.0"]),
            ("~1.2.3", &["1.2.3", "1.2.9"], &["1.3.0"]),
            ("~1.2", &["1.2.0", "1.2.9"], &["1.3.0"]),
            ("~1", &["1.0.0", "1.9.0"], &["2.0.0"]),
            ("*", &["0.0.1", "9.9.9"], &[]),
            ("1.*", &["1.0.0", "1.9.9"], &["2.0.0", "0.9.0"]),
            ("1.2.*", &["1.2.0", "1.2.9"], &["1.3.0"]),
            (">= 1.2.0", &["1.2.0", "5.0.0"], &["1.1.9"]),
            ("> 1", &["2.0.0"], &["1.9.9"]),
            ("< 2", &["1.9.9"], &["2.0.0"]),
            ("= 1.2.3", &["1.2.3"], &["1.2.4"]),
            (">= 1.2, < 1.5", &["1.2.0", "1.4.9"], &["1.5.0", "1.1.0"]),
            (
                "1.0.0-alpha.2",
                &["1.0.0-alpha.2", "1.0.0-beta", "1.0.0"],
                &["1.0.0-alpha.1", "1.0.1-alpha"],
            ),
        ] {
            for v in yes {
                assert!(admits(req, v), "{req} should admit {v}");
            }
            for v in no {
                assert!(!admits(req, v), "{req} should not admit {v}");
            }
        }
        // A pre-release matches only a requirement that names one.
        assert!(!admits("1", "1.5.0-rc.1"));
        assert_eq!(VersionReq::any().as_str(), "*");
    }

    #[test]
    fn npm_syntax_is_not_cargos() {
        for bad in ["1 || 2", "1.0.0 - 2.0.0", "", "1,", "abc", "1.2.3 1.2.4"] {
            assert!(VersionReq::parse(bad).is_err(), "{bad:?}");
        }
    }
}
