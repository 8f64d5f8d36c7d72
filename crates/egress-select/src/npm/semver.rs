//! Semantic versions as node-semver (the `semver` package npm uses) reads
//! and orders them.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// The largest number JavaScript holds exactly (2^53 - 1): node-semver
/// refuses a major, minor or patch above it.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;
/// node-semver's `MAX_LENGTH`: a longer version text is refused.
pub const MAX_LENGTH: usize = 256;

/// One dot-separated part of a pre-release: digits only (compared as a
/// number) or anything else (compared as text); numbers sort first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Identifier {
    /// Digits, without leading zeros (`0` itself allowed), any length.
    Numeric(String),
    /// Letters, digits and `-`, with at least one letter or `-`.
    Alpha(String),
}

impl Identifier {
    pub fn as_str(&self) -> &str {
        match self {
            Self::Numeric(s) | Self::Alpha(s) => s,
        }
    }

    /// `0`, the lowest pre-release (what `-0` in a desugared range names).
    pub(crate) fn zero() -> Self {
        Self::Numeric("0".into())
    }
}

impl Ord for Identifier {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            // No leading zeros: a longer number is a larger one.
            (Self::Numeric(a), Self::Numeric(b)) => a.len().cmp(&b.len()).then_with(|| a.cmp(b)),
            (Self::Numeric(_), Self::Alpha(_)) => Ordering::Less,
            (Self::Alpha(_), Self::Numeric(_)) => Ordering::Greater,
            (Self::Alpha(a), Self::Alpha(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for Identifier {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Identifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A semantic version, `1.2.3-beta.1+build.5`.
///
/// Parsed as node-semver's `new SemVer(text)` (not loose): surrounding
/// whitespace and one leading `v` are allowed, numbers have no leading
/// zeros and are at most [`MAX_SAFE_INTEGER`], the text at most
/// [`MAX_LENGTH`] bytes. Equality, order and hashing are semver's
/// precedence: the build is ignored (`1.0.0+a == 1.0.0+b`), a pre-release
/// sorts before its release (`1.0.0-rc.1 < 1.0.0`), numeric identifiers
/// compare as numbers and before text (`alpha.2 < alpha.10 < alpha.beta`).
#[derive(Debug, Clone)]
pub struct Semver {
    pub(crate) major: u64,
    pub(crate) minor: u64,
    pub(crate) patch: u64,
    pub(crate) pre: Vec<Identifier>,
    pub(crate) build: Vec<String>,
}

/// Why a text is not a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemverError {
    pub text: String,
    pub why: &'static str,
}

impl fmt::Display for SemverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not a semver version: {}",
            quoted(&self.text),
            self.why
        )
    }
}

impl std::error::Error for SemverError {}

/// `text` quoted for a one-line message, cut after 120 characters.
pub(crate) fn quoted(text: &str) -> String {
    const MAX: usize = 120;
    if text.chars().count() <= MAX {
        format!("{text:?}")
    } else {
        let head: String = text.chars().take(MAX).collect();
        format!("{head:?}…")
    }
}

/// A reader over the bytes of a version or range token.
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            at: 0,
        }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    pub(crate) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The bytes from `start` to here, as text (the cursor only stops on
    /// ASCII, so this is always on a character boundary).
    pub(crate) fn since(&self, start: usize) -> &'a str {
        self.bytes
            .get(start..self.at)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// A run of `[0-9A-Za-z-]`.
    fn word(&mut self) -> &'a str {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            self.at += 1;
        }
        self.since(start)
    }

    /// node-semver's `NUMERICIDENTIFIER`, `0|[1-9]\d*`: `0` alone, or digits
    /// not starting with `0`. Saturates at `u64::MAX` (too large either way).
    pub(crate) fn number(&mut self) -> Option<u64> {
        match self.peek() {
            Some(b'0') => {
                self.at += 1;
                Some(0)
            }
            Some(b'1'..=b'9') => {
                let mut n: u64 = 0;
                while let Some(d) = self.peek().filter(u8::is_ascii_digit) {
                    n = n.saturating_mul(10).saturating_add(u64::from(d - b'0'));
                    self.at += 1;
                }
                Some(n)
            }
            _ => None,
        }
    }

    /// `-<identifier>(.<identifier>)*`, if a `-` is next: node-semver's
    /// `PRERELEASE`. `Err` when the `-` is not followed by identifiers.
    pub(crate) fn prerelease(&mut self) -> Result<Vec<Identifier>, &'static str> {
        let mut out = Vec::new();
        if !self.eat(b'-') {
            return Ok(out);
        }
        loop {
            let w = self.word();
            if w.is_empty() {
                return Err("an empty pre-release identifier");
            }
            if w.bytes().all(|b| b.is_ascii_digit()) {
                if w.len() > 1 && w.starts_with('0') {
                    return Err("a numeric pre-release identifier with a leading zero");
                }
                out.push(Identifier::Numeric(w.to_string()));
            } else {
                out.push(Identifier::Alpha(w.to_string()));
            }
            if !self.eat(b'.') {
                return Ok(out);
            }
        }
    }

    /// `+<identifier>(.<identifier>)*`, if a `+` is next: `BUILD`.
    pub(crate) fn build(&mut self) -> Result<Vec<String>, &'static str> {
        let mut out = Vec::new();
        if !self.eat(b'+') {
            return Ok(out);
        }
        loop {
            let w = self.word();
            if w.is_empty() {
                return Err("an empty build identifier");
            }
            out.push(w.to_string());
            if !self.eat(b'.') {
                return Ok(out);
            }
        }
    }
}

impl Semver {
    /// Parses a version as node-semver does (see the type's documentation).
    pub fn parse(text: &str) -> Result<Self, SemverError> {
        let err = |why| SemverError {
            text: text.to_string(),
            why,
        };
        if text.len() > MAX_LENGTH {
            return Err(err("longer than 256 bytes"));
        }
        let trimmed = text.trim();
        let mut c = Cursor::new(trimmed);
        c.eat(b'v');
        let v = Self::read(&mut c).map_err(err)?;
        if !c.done() {
            return Err(err("unexpected text after the version"));
        }
        Ok(v)
    }

    /// `MAJOR.MINOR.PATCH[-PRE][+BUILD]` at the cursor.
    pub(crate) fn read(c: &mut Cursor<'_>) -> Result<Self, &'static str> {
        let mut parts = [0u64; 3];
        for (i, slot) in parts.iter_mut().enumerate() {
            if i > 0 && !c.eat(b'.') {
                return Err("not MAJOR.MINOR.PATCH");
            }
            *slot = c
                .number()
                .ok_or("not MAJOR.MINOR.PATCH, each a number without leading zeros")?;
        }
        let pre = c.prerelease()?;
        let build = c.build()?;
        let [major, minor, patch] = parts;
        Self::new(major, minor, patch, pre, build)
    }

    /// A version from its parts; numbers above [`MAX_SAFE_INTEGER`] are
    /// refused, as node-semver refuses them.
    pub(crate) fn new(
        major: u64,
        minor: u64,
        patch: u64,
        pre: Vec<Identifier>,
        build: Vec<String>,
    ) -> Result<Self, &'static str> {
        if major > MAX_SAFE_INTEGER || minor > MAX_SAFE_INTEGER || patch > MAX_SAFE_INTEGER {
            return Err("a number above 2^53 - 1");
        }
        Ok(Self {
            major,
            minor,
            patch,
            pre,
            build,
        })
    }

    pub fn major(&self) -> u64 {
        self.major
    }

    pub fn minor(&self) -> u64 {
        self.minor
    }

    pub fn patch(&self) -> u64 {
        self.patch
    }

    /// The pre-release identifiers; empty for a release.
    pub fn prerelease(&self) -> &[Identifier] {
        &self.pre
    }

    /// The build identifiers (ignored by every comparison).
    pub fn build(&self) -> &[String] {
        &self.build
    }

    pub fn is_prerelease(&self) -> bool {
        !self.pre.is_empty()
    }

    /// `[major, minor, patch]`.
    pub fn release(&self) -> [u64; 3] {
        [self.major, self.minor, self.patch]
    }
}

impl Ord for Semver {
    fn cmp(&self, other: &Self) -> Ordering {
        self.release().cmp(&other.release()).then_with(|| {
            match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                // Element by element; a prefix sorts first.
                (false, false) => self.pre.cmp(&other.pre),
            }
        })
    }
}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Hash for Semver {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.release().hash(state);
        self.pre.hash(state);
    }
}

impl fmt::Display for Semver {
    /// `1.2.3`, `1.2.3-beta.1`, `1.2.3+build`: the normal form, which
    /// parses back to an equal version.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        let join = |ids: &mut dyn Iterator<Item = &str>| ids.collect::<Vec<_>>().join(".");
        if !self.pre.is_empty() {
            write!(f, "-{}", join(&mut self.pre.iter().map(Identifier::as_str)))?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", join(&mut self.build.iter().map(String::as_str)))?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Semver {
    type Err = SemverError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Semver {
        Semver::parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn parses_what_node_semver_parses() {
        let x = v(" v1.2.3-beta.01a.0+build.007 ");
        assert_eq!(x.release(), [1, 2, 3]);
        assert_eq!(
            x.prerelease(),
            [
                Identifier::Alpha("beta".into()),
                Identifier::Alpha("01a".into()),
                Identifier::Numeric("0".into()),
            ]
        );
        assert_eq!(x.build(), ["build", "007"]);
        assert_eq!(x.to_string(), "1.2.3-beta.01a.0+build.007");
        assert_eq!(v("1.0.0-x-y-z.--").to_string(), "1.0.0-x-y-z.--");
        assert_eq!(v("9007199254740991.0.0").major(), MAX_SAFE_INTEGER);
        for bad in [
            "",
            "1",
            "1.2",
            "1.2.3.4",
            "01.2.3",
            "1.02.3",
            "1.2.03",
            "=1.2.3",
            "vv1.2.3",
            "v 1.2.3",
            "1.2.3-",
            "1.2.3-01",
            "1.2.3-a..b",
            "1.2.3+",
            "1.2.3+a+b",
            "1.2.3 x",
            "-1.2.3",
            "1.2.3-ä",
            "9007199254740992.0.0",
            "99999999999999999999999.0.0",
            "1.x.0",
        ] {
            assert!(Semver::parse(bad).is_err(), "{bad:?}");
        }
        let long = format!("1.2.3-{}", "a".repeat(251));
        assert!(Semver::parse(&long).is_err());
        let e = Semver::parse("1.2").unwrap_err().to_string();
        assert!(e.starts_with("\"1.2\" is not a semver version: "), "{e}");
    }

    #[test]
    fn precedence_is_semver_2s() {
        // The semver.org example chain, each before the next.
        let chain = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "1.10.0",
            "2.0.0-0",
            "2.0.0",
        ];
        for pair in chain.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
        assert_eq!(v("1.0.0+a"), v("1.0.0+b"));
        assert_eq!(v("v1.0.0"), v("1.0.0"));
        assert!(v("1.0.0-99999999999999999999") > v("1.0.0-9999999999"));
        assert!(v("1.0.0-99999999999999999999") < v("1.0.0-a"));
    }
}
