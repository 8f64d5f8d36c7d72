//! PEP 440 versions: parsed with the spec's normalisation rules, ordered as
//! the spec orders them, displayed in normal form.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use super::text::{quoted, trim_py};

/// A PEP 440 version (`1!2.0rc1.post2.dev3+local.7`).
///
/// Parsing accepts every spelling PEP 440 normalises (`v1.0`, `1.0-ALPHA.1`,
/// `1.0c1`, `1.0-1`, `1.0_post`, surrounding whitespace) and [`Display`]
/// prints the normal form (`1.0a1`, `1.0rc1`, `1.0.post1`). Equality and
/// order are PEP 440's: trailing zeros of the release do not count
/// (`1.0 == 1.0.0`), `1.0.dev0 < 1.0a0 < 1.0 < 1.0+local < 1.0.post0`.
#[derive(Clone)]
pub struct Pep440Version {
    epoch: u64,
    release: Vec<u64>,
    pre: Option<(PreKind, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
    /// Empty when the version has no local label.
    local: Vec<LocalSegment>,
}

/// The kind of a pre-release: `a`, `b` or `rc`, in that order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreKind {
    /// `a` (also spelt `alpha`).
    Alpha,
    /// `b` (also spelt `beta`).
    Beta,
    /// `rc` (also spelt `c`, `pre`, `preview`).
    Rc,
}

impl PreKind {
    fn as_str(self) -> &'static str {
        match self {
            PreKind::Alpha => "a",
            PreKind::Beta => "b",
            PreKind::Rc => "rc",
        }
    }
}

/// One dot-separated part of a local label: numbers sort after text and
/// compare as numbers (kept as digits without leading zeros, so any length
/// compares right).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum LocalSegment {
    Number(String),
    Text(String),
}

impl Ord for LocalSegment {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (LocalSegment::Number(a), LocalSegment::Number(b)) => {
                a.len().cmp(&b.len()).then_with(|| a.cmp(b))
            }
            (LocalSegment::Number(_), LocalSegment::Text(_)) => Ordering::Greater,
            (LocalSegment::Text(_), LocalSegment::Number(_)) => Ordering::Less,
            (LocalSegment::Text(a), LocalSegment::Text(b)) => a.cmp(b),
        }
    }
}

impl PartialOrd for LocalSegment {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for LocalSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LocalSegment::Number(s) | LocalSegment::Text(s) => f.write_str(s),
        }
    }
}

/// Why a text is not a PEP 440 version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionError {
    /// The text does not follow PEP 440's grammar.
    Invalid {
        /// The text as given.
        text: String,
    },
    /// A release, epoch, pre, post or dev number does not fit in 64 bits.
    NumberTooLarge {
        /// The text as given.
        text: String,
    },
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionError::Invalid { text } => write!(
                f,
                "{} is not a PEP 440 version (e.g. 1.2.3, 2.0rc1, 1!3.0.post1.dev2+local)",
                quoted(text)
            ),
            VersionError::NumberTooLarge { text } => write!(
                f,
                "{} has a number larger than 18446744073709551615, which this reader does not take",
                quoted(text)
            ),
        }
    }
}

impl std::error::Error for VersionError {}

/// A byte cursor over the lowercased version text.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.pos + ahead).copied()
    }

    fn rest(&self) -> &[u8] {
        self.bytes.get(self.pos..).unwrap_or_default()
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Digits at the cursor, consumed; `None` when there are none.
    fn digits(&mut self) -> Option<&[u8]> {
        let start = self.pos;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        (self.pos > start)
            .then(|| self.bytes.get(start..self.pos))
            .flatten()
    }

    /// `[-_.]?` then one of `labels` (tried in the order given; give the
    /// longer spellings first). Consumes nothing when none matches.
    fn label(&mut self, labels: &[&'static str]) -> Option<&'static str> {
        let sep = usize::from(matches!(self.peek(), Some(b'-' | b'_' | b'.')));
        let after = self.bytes.get(self.pos + sep..).unwrap_or_default();
        let found = labels.iter().find(|l| after.starts_with(l.as_bytes()))?;
        self.pos += sep + found.len();
        Some(found)
    }

    /// `[-_.]?[0-9]*` after a label: the number, 0 when absent. A separator
    /// with no digits after it is consumed too, as PEP 440's grammar allows.
    fn label_number(&mut self, text: &str) -> Result<u64, VersionError> {
        if matches!(self.peek(), Some(b'-' | b'_' | b'.')) {
            self.pos += 1;
        }
        match self.digits() {
            Some(d) => number(d, text),
            None => Ok(0),
        }
    }
}

fn number(digits: &[u8], text: &str) -> Result<u64, VersionError> {
    let mut n: u64 = 0;
    for d in digits {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(d - b'0')))
            .ok_or_else(|| VersionError::NumberTooLarge {
                text: text.to_string(),
            })?;
    }
    Ok(n)
}

impl Pep440Version {
    /// Parses `text` as PEP 440 does, normalising alternative spellings.
    pub fn parse(text: &str) -> Result<Self, VersionError> {
        let invalid = || VersionError::Invalid {
            text: text.to_string(),
        };
        let trimmed = trim_py(text);
        if !trimmed.is_ascii() {
            return Err(invalid());
        }
        let lower = trimmed.to_ascii_lowercase();
        let mut c = Cursor {
            bytes: lower.as_bytes(),
            pos: 0,
        };
        c.eat(b'v');

        // Epoch and release.
        let first = number(c.digits().ok_or_else(invalid)?, text)?;
        let mut epoch = 0;
        let mut release = Vec::new();
        if c.eat(b'!') {
            epoch = first;
            let d = c.digits().ok_or_else(invalid)?;
            release.push(number(d, text)?);
        } else {
            release.push(first);
        }
        while c.peek() == Some(b'.') && c.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            c.pos += 1;
            let d = c.digits().ok_or_else(invalid)?;
            release.push(number(d, text)?);
        }

        // Pre-release: the longer spellings first, so that `alpha` is not
        // read as `a` followed by junk.
        let mut pre = None;
        if let Some(label) = c.label(&["preview", "alpha", "beta", "pre", "rc", "a", "b", "c"]) {
            let kind = match label {
                "alpha" | "a" => PreKind::Alpha,
                "beta" | "b" => PreKind::Beta,
                _ => PreKind::Rc,
            };
            pre = Some((kind, c.label_number(text)?));
        }

        // Post-release: `-N` (implicit), or a label.
        let mut post = None;
        if c.peek() == Some(b'-') && c.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            c.pos += 1;
            let d = c.digits().ok_or_else(invalid)?;
            post = Some(number(d, text)?);
        } else if c.label(&["post", "rev", "r"]).is_some() {
            post = Some(c.label_number(text)?);
        }

        // Development release.
        let mut dev = None;
        if c.label(&["dev"]).is_some() {
            dev = Some(c.label_number(text)?);
        }

        // Local label: `+` then alphanumeric runs separated by `-`, `_`, `.`.
        let mut local = Vec::new();
        if c.eat(b'+') {
            let label = std::str::from_utf8(c.rest()).map_err(|_| invalid())?;
            for part in label.split(['-', '_', '.']) {
                if part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(invalid());
                }
                local.push(if part.bytes().all(|b| b.is_ascii_digit()) {
                    let stripped = part.trim_start_matches('0');
                    LocalSegment::Number(if stripped.is_empty() {
                        "0".to_string()
                    } else {
                        stripped.to_string()
                    })
                } else {
                    LocalSegment::Text(part.to_string())
                });
            }
            c.pos = c.bytes.len();
        }

        if c.pos != c.bytes.len() {
            return Err(invalid());
        }
        Ok(Self {
            epoch,
            release,
            pre,
            post,
            dev,
            local,
        })
    }

    /// The epoch (`1` in `1!2.0`; 0 when not written).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// The release numbers as written (`[1, 10, 0]` for `1.10.0rc1`).
    pub fn release(&self) -> &[u64] {
        &self.release
    }

    /// The pre-release kind and number (`Some((Rc, 1))` for `2.0rc1`).
    pub fn pre(&self) -> Option<(PreKind, u64)> {
        self.pre
    }

    /// The post-release number (`Some(1)` for `1.0.post1` and `1.0-1`).
    pub fn post(&self) -> Option<u64> {
        self.post
    }

    /// The development release number (`Some(0)` for `1.0.dev0`).
    pub fn dev(&self) -> Option<u64> {
        self.dev
    }

    /// The local label in normal form (`Some("ubuntu.1")` for
    /// `1.0+Ubuntu-1`).
    pub fn local(&self) -> Option<String> {
        if self.local.is_empty() {
            None
        } else {
            Some(join_local(&self.local))
        }
    }

    /// Whether this is a pre-release as PEP 440 (and pip) count one: it has
    /// a pre-release or a development segment.
    pub fn is_prerelease(&self) -> bool {
        self.pre.is_some() || self.dev.is_some()
    }

    /// Whether it has a post-release segment.
    pub fn is_postrelease(&self) -> bool {
        self.post.is_some()
    }

    /// Whether it has a development segment.
    pub fn is_devrelease(&self) -> bool {
        self.dev.is_some()
    }

    /// The same version without its local label (`1.0` for `1.0+abc`).
    pub fn public(&self) -> Self {
        Self {
            local: Vec::new(),
            ..self.clone()
        }
    }

    /// Epoch and release only (`1!2.0` for `1!2.0rc1.post3`).
    pub fn base(&self) -> Self {
        Self {
            epoch: self.epoch,
            release: self.release.clone(),
            pre: None,
            post: None,
            dev: None,
            local: Vec::new(),
        }
    }

    /// Release numbers without trailing zeros: what equality and order see.
    fn release_key(&self) -> &[u64] {
        let len = self
            .release
            .iter()
            .rposition(|&n| n != 0)
            .map_or(0, |i| i + 1);
        self.release.get(..len).unwrap_or_default()
    }

    fn pre_key(&self) -> PreKey {
        match self.pre {
            // `1.0.dev0` sorts before `1.0a0`.
            None if self.post.is_none() && self.dev.is_some() => PreKey::Before,
            None => PreKey::After,
            Some((kind, n)) => PreKey::Pre(kind, n),
        }
    }
}

/// Where the pre-release part puts a version among its release's versions.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum PreKey {
    Before,
    Pre(PreKind, u64),
    After,
}

fn join_local(local: &[LocalSegment]) -> String {
    local
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

impl Ord for Pep440Version {
    fn cmp(&self, other: &Self) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then_with(|| self.release_key().cmp(other.release_key()))
            .then_with(|| self.pre_key().cmp(&other.pre_key()))
            // No post-release sorts before any post-release.
            .then_with(|| self.post.cmp(&other.post))
            // No dev segment sorts after any dev segment.
            .then_with(|| match (self.dev, other.dev) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(a), Some(b)) => a.cmp(&b),
            })
            // No local label sorts before any; labels compare part by part,
            // a longer label after its own prefix.
            .then_with(|| self.local.cmp(&other.local))
    }
}

impl PartialOrd for Pep440Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pep440Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pep440Version {}

impl Hash for Pep440Version {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.epoch.hash(state);
        self.release_key().hash(state);
        self.pre.hash(state);
        self.post.hash(state);
        self.dev.hash(state);
        self.local.hash(state);
    }
}

impl fmt::Display for Pep440Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch != 0 {
            write!(f, "{}!", self.epoch)?;
        }
        let mut first = true;
        for n in &self.release {
            if !first {
                f.write_str(".")?;
            }
            write!(f, "{n}")?;
            first = false;
        }
        if let Some((kind, n)) = self.pre {
            write!(f, "{}{n}", kind.as_str())?;
        }
        if let Some(n) = self.post {
            write!(f, ".post{n}")?;
        }
        if let Some(n) = self.dev {
            write!(f, ".dev{n}")?;
        }
        if !self.local.is_empty() {
            write!(f, "+{}", join_local(&self.local))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Pep440Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pep440Version({:?})", self.to_string())
    }
}

impl FromStr for Pep440Version {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Pep440Version {
        Pep440Version::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn normalises_alternative_spellings() {
        for (given, normal) in [
            ("1.0", "1.0"),
            ("v1.0", "1.0"),
            ("V1.0", "1.0"),
            ("  1.0\n", "1.0"),
            ("01.002.0", "1.2.0"),
            ("1!2.0", "1!2.0"),
            ("0!2.0", "2.0"),
            ("1.0a1", "1.0a1"),
            ("1.0A1", "1.0a1"),
            ("1.0alpha1", "1.0a1"),
            ("1.0-alpha.1", "1.0a1"),
            ("1.0.a1", "1.0a1"),
            ("1.0_a_1", "1.0a1"),
            ("1.0a", "1.0a0"),
            ("1.0a-", "1.0a0"),
            ("1.0beta2", "1.0b2"),
            ("1.0b", "1.0b0"),
            ("1.0c3", "1.0rc3"),
            ("1.0pre3", "1.0rc3"),
            ("1.0preview3", "1.0rc3"),
            ("1.0RC3", "1.0rc3"),
            ("1.0-1", "1.0.post1"),
            ("1.0post1", "1.0.post1"),
            ("1.0.post", "1.0.post0"),
            ("1.0-r4", "1.0.post4"),
            ("1.0rev4", "1.0.post4"),
            ("1.0-post-2", "1.0.post2"),
            ("1.0a-1", "1.0a1"),
            ("1.0a.-1", "1.0a0.post1"),
            ("1.0dev", "1.0.dev0"),
            ("1.0-dev3", "1.0.dev3"),
            ("1.0_DEV_3", "1.0.dev3"),
            ("1.0rc1.post2.dev3", "1.0rc1.post2.dev3"),
            ("1.0+Ubuntu-1", "1.0+ubuntu.1"),
            ("1.0+abc_007.X", "1.0+abc.7.x"),
            ("1!1.0rc1.post2.dev3+local.1", "1!1.0rc1.post2.dev3+local.1"),
        ] {
            assert_eq!(v(given).to_string(), normal, "{given:?}");
        }
    }

    #[test]
    fn refuses_what_pep_440_does_not_define() {
        for bad in [
            "",
            " ",
            "v",
            "a1",
            "1.",
            ".1",
            "1..0",
            "1.0-",
            "1.0+",
            "1.0+a..b",
            "1.0+a_",
            "1.0+ä",
            "1.0 a1",
            "1.0prev",
            "1.0alphabet",
            "1.0.dev1.post1",
            "1.0.post1a1",
            "1.0a1a2",
            "1.0!",
            "1!",
            "!1.0",
            "1.0.*",
            "1.0é",
            "1.0_-1",
        ] {
            assert!(Pep440Version::parse(bad).is_err(), "{bad:?}");
        }
        // A separator is allowed before a label, and a dangling one after.
        assert_eq!(v("2.0-beta").to_string(), "2.0b0");
        assert_eq!(v("1.0-dev-").to_string(), "1.0.dev0");
    }

    #[test]
    fn numbers_larger_than_64_bits_are_an_error_not_a_panic() {
        let e = Pep440Version::parse("1.99999999999999999999999").unwrap_err();
        assert!(matches!(e, VersionError::NumberTooLarge { .. }));
        assert_eq!(v("18446744073709551615").release(), [u64::MAX]);
        // Local numbers have no limit.
        assert_eq!(
            v("1.0+000123456789012345678901234567890").to_string(),
            "1.0+123456789012345678901234567890"
        );
    }

    #[test]
    fn orders_as_pep_440_does() {
        // PEP 440's summary of permitted suffixes and relative ordering,
        // plus epochs and local labels, ascending.
        let ascending = [
            "1.0.dev456",
            "1.0a1",
            "1.0a2.dev456",
            "1.0a12.dev456",
            "1.0a12",
            "1.0b1.dev456",
            "1.0b2",
            "1.0b2.post345.dev456",
            "1.0b2.post345",
            "1.0rc1.dev456",
            "1.0rc1",
            "1.0",
            "1.0+abc.5",
            "1.0+abc.7",
            "1.0+5",
            "1.0.post456.dev34",
            "1.0.post456",
            "1.0.15",
            "1.1.dev1",
            "1.1a1",
            "1.1",
            "1.2+123abc",
            "1.2+123abc456",
            "1.2+abc",
            "1.2+abc123",
            "1.2+abc123def",
            "1.2+1234.abc",
            "1.2+123456",
            "1.10",
            "2013.10",
            "2014.04",
            "1!0.1",
            "1!1.0",
        ];
        for pair in ascending.windows(2) {
            let (a, b) = (v(pair[0]), v(pair[1]));
            assert!(a < b, "{a} < {b}");
            assert!(b > a, "{b} > {a}");
            assert_ne!(a, b);
        }
        let mut shuffled: Vec<_> = ascending.iter().rev().map(|s| v(s)).collect();
        shuffled.sort();
        let expected: Vec<Pep440Version> = ascending.iter().map(|s| v(s)).collect();
        assert_eq!(shuffled, expected);
    }

    #[test]
    fn equality_ignores_trailing_zeros_and_spelling() {
        for (a, b) in [
            ("1.0", "1"),
            ("1.0", "1.0.0.0"),
            ("1.0a1", "1.0.0-alpha1"),
            ("1.0-1", "1.0.post1"),
            ("0!1.0", "1"),
            ("1.0+a.01", "1.0+A-1"),
        ] {
            assert_eq!(v(a), v(b), "{a} == {b}");
            let hash = |x: &Pep440Version| {
                use std::collections::hash_map::DefaultHasher;
                let mut h = DefaultHasher::new();
                x.hash(&mut h);
                h.finish()
            };
            assert_eq!(hash(&v(a)), hash(&v(b)), "hash {a} {b}");
        }
        assert_ne!(v("1.0"), v("1.0+0"));
        assert_ne!(v("1.0.post0"), v("1.0"));
        assert_ne!(v("1.0.dev0"), v("1.0"));
    }

    #[test]
    fn prerelease_and_parts() {
        assert!(v("1.0a1").is_prerelease());
        assert!(v("1.0.dev1").is_prerelease());
        assert!(v("1.0.post1.dev1").is_prerelease());
        assert!(!v("1.0.post1").is_prerelease());
        assert!(!v("1.0+dev").is_prerelease());
        let x = v("2!1.2.3rc4.post5.dev6+Loc.7");
        assert_eq!(x.epoch(), 2);
        assert_eq!(x.release(), [1, 2, 3]);
        assert_eq!(x.pre(), Some((PreKind::Rc, 4)));
        assert_eq!(x.post(), Some(5));
        assert_eq!(x.dev(), Some(6));
        assert_eq!(x.local().as_deref(), Some("loc.7"));
        assert_eq!(x.public().to_string(), "2!1.2.3rc4.post5.dev6");
        assert_eq!(x.base().to_string(), "2!1.2.3");
        assert_eq!("1.0".parse::<Pep440Version>().unwrap(), v("1"));
        assert_eq!(format!("{:?}", v("1.0A")), "Pep440Version(\"1.0a0\")");
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "1.0",
            "1!2.0a1.post3.dev4+x.5",
            "0.0.0",
            "1.0.post0",
            "3.dev0",
        ] {
            let once = v(s).to_string();
            assert_eq!(v(&once).to_string(), once);
        }
    }
}
