//! PEP 440 version specifiers (`>=1.2,!=1.3.*,<2`) and which versions they
//! admit, as `packaging`'s `Specifier` and `SpecifierSet` compute it.

use std::fmt;
use std::str::FromStr;

use super::text::{is_py_space, quoted, trim_py};
use super::version::{Pep440Version, VersionError};

/// A specifier's comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `~=`: compatible release.
    Compatible,
    /// `==` (with `.*`: prefix match).
    Equal,
    /// `!=` (with `.*`: prefix exclusion).
    NotEqual,
    /// `<=`.
    LessEqual,
    /// `>=`.
    GreaterEqual,
    /// `<`, exclusive: no pre-release of the named version.
    Less,
    /// `>`, exclusive: no post-release or local version of the named version.
    Greater,
    /// `===`: the version's text, compared case-insensitively.
    Arbitrary,
}

impl Operator {
    /// The operator as written (`~=`, `==`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Compatible => "~=",
            Operator::Equal => "==",
            Operator::NotEqual => "!=",
            Operator::LessEqual => "<=",
            Operator::GreaterEqual => ">=",
            Operator::Less => "<",
            Operator::Greater => ">",
            Operator::Arbitrary => "===",
        }
    }

    /// Longest spelling first, so `===` is not read as `==` then `=`.
    const ALL: [Operator; 8] = [
        Operator::Arbitrary,
        Operator::Compatible,
        Operator::Equal,
        Operator::NotEqual,
        Operator::LessEqual,
        Operator::GreaterEqual,
        Operator::Less,
        Operator::Greater,
    ];
}

/// What a specifier compares with.
#[derive(Debug, Clone)]
enum Operand {
    Version(Pep440Version),
    /// `==1.2.*` / `!=1.2.*`: an epoch and release prefix.
    Prefix {
        epoch: u64,
        release: Vec<u64>,
    },
    /// `===text`.
    Arbitrary(String),
}

/// One specifier: an operator and a version (`>=1.2`, `==1.4.*`, `===foo`).
#[derive(Debug, Clone)]
pub struct Specifier {
    op: Operator,
    operand: Operand,
    /// The version as written, without surrounding whitespace.
    written: String,
}

/// Why a text is not a PEP 440 specifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpecifierError {
    /// It does not start with an operator.
    NoOperator {
        /// The specifier as given.
        text: String,
    },
    /// What follows the operator is not a PEP 440 version.
    Version {
        /// The specifier as given.
        text: String,
        /// Why the version was refused.
        error: VersionError,
    },
    /// `.*` after an operator other than `==` and `!=`, or after more than
    /// a release.
    Wildcard {
        /// The specifier as given.
        text: String,
    },
    /// A local label (`+abc`) after an operator other than `==` and `!=`.
    Local {
        /// The specifier as given.
        text: String,
    },
    /// `~=` with a one-number release (`~=1`).
    CompatibleNeedsTwo {
        /// The specifier as given.
        text: String,
    },
}

const EXAMPLES: &str = "e.g. >=1.2, ==1.4.*, ~=2.2, !=1.5.1, <3";

impl fmt::Display for SpecifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecifierError::NoOperator { text } => write!(
                f,
                "{} is not a version specifier: it must start with ~=, ==, !=, <=, >=, <, > or === ({EXAMPLES})",
                quoted(text)
            ),
            SpecifierError::Version { text, error } => write!(
                f,
                "{} is not a version specifier: {error}",
                quoted(text)
            ),
            SpecifierError::Wildcard { text } => write!(
                f,
                "{} is not a version specifier: .* may only follow a release (1.2.*) after == or != ({EXAMPLES})",
                quoted(text)
            ),
            SpecifierError::Local { text } => write!(
                f,
                "{} is not a version specifier: a local label (+...) may only follow == or != ({EXAMPLES})",
                quoted(text)
            ),
            SpecifierError::CompatibleNeedsTwo { text } => write!(
                f,
                "{} is not a version specifier: ~= needs at least two release numbers, e.g. ~=2.2",
                quoted(text)
            ),
        }
    }
}

impl std::error::Error for SpecifierError {}

impl Specifier {
    /// Parses one specifier (`>= 1.2`); whitespace around it and after the
    /// operator is allowed, as `packaging` allows it.
    pub fn parse(text: &str) -> Result<Self, SpecifierError> {
        let trimmed = trim_py(text);
        let Some((op, after)) = Operator::ALL
            .iter()
            .find_map(|op| trimmed.strip_prefix(op.as_str()).map(|rest| (*op, rest)))
        else {
            return Err(SpecifierError::NoOperator {
                text: text.to_string(),
            });
        };
        let written = after.trim_start_matches(is_py_space);
        let version_error = |error| SpecifierError::Version {
            text: text.to_string(),
            error,
        };
        let operand = if op == Operator::Arbitrary {
            // Anything but whitespace, `;` and `)`; even nothing.
            if written.contains(|c: char| is_py_space(c) || c == ';' || c == ')') {
                return Err(version_error(VersionError::Invalid {
                    text: written.to_string(),
                }));
            }
            Operand::Arbitrary(written.to_string())
        } else {
            if written.contains(is_py_space) {
                return Err(version_error(VersionError::Invalid {
                    text: written.to_string(),
                }));
            }
            if let Some(prefix) = written.strip_suffix(".*") {
                if !matches!(op, Operator::Equal | Operator::NotEqual) {
                    return Err(SpecifierError::Wildcard {
                        text: text.to_string(),
                    });
                }
                let v = Pep440Version::parse(prefix).map_err(|e| match e {
                    VersionError::Invalid { .. } => SpecifierError::Wildcard {
                        text: text.to_string(),
                    },
                    other => version_error(other),
                })?;
                if v.pre().is_some()
                    || v.is_postrelease()
                    || v.is_devrelease()
                    || v.local().is_some()
                {
                    return Err(SpecifierError::Wildcard {
                        text: text.to_string(),
                    });
                }
                Operand::Prefix {
                    epoch: v.epoch(),
                    release: v.release().to_vec(),
                }
            } else {
                let v = Pep440Version::parse(written).map_err(version_error)?;
                if v.local().is_some() && !matches!(op, Operator::Equal | Operator::NotEqual) {
                    return Err(SpecifierError::Local {
                        text: text.to_string(),
                    });
                }
                if op == Operator::Compatible && v.release().len() < 2 {
                    return Err(SpecifierError::CompatibleNeedsTwo {
                        text: text.to_string(),
                    });
                }
                Operand::Version(v)
            }
        };
        Ok(Self {
            op,
            operand,
            written: written.to_string(),
        })
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.op
    }

    /// The version as written after the operator (`1.4.*` for `==1.4.*`).
    pub fn version_text(&self) -> &str {
        &self.written
    }

    /// Whether the specifier itself names a pre-release, which lets it admit
    /// pre-releases without being asked to: any operator but `!=`, with a
    /// pre-release or development version (`>=2.0b1`, `<3.0rc1`,
    /// `===1.0a1`). This is `packaging` 25's `Specifier.prereleases`;
    /// before 25 (pip 24 and older) `<` and `>` did not count.
    pub fn names_prerelease(&self) -> bool {
        match (&self.operand, self.op) {
            (_, Operator::NotEqual) => false,
            (Operand::Version(v), _) => v.is_prerelease(),
            (Operand::Prefix { .. }, _) => false,
            (Operand::Arbitrary(text), _) => {
                Pep440Version::parse(text).is_ok_and(|v| v.is_prerelease())
            }
        }
    }

    /// Whether `v` satisfies this specifier. With `prereleases` false, a
    /// pre-release is refused unless the specifier names one itself
    /// ([`Specifier::names_prerelease`]).
    pub fn contains(&self, v: &Pep440Version, prereleases: bool) -> bool {
        if v.is_prerelease() && !prereleases && !self.names_prerelease() {
            return false;
        }
        self.admits(v)
    }

    /// The comparison alone, with no pre-release rule.
    fn admits(&self, v: &Pep440Version) -> bool {
        match (&self.operand, self.op) {
            (Operand::Arbitrary(text), _) => v.to_string().to_lowercase() == text.to_lowercase(),
            (Operand::Prefix { epoch, release }, Operator::NotEqual) => {
                !prefix_match(v, *epoch, release)
            }
            (Operand::Prefix { epoch, release }, _) => prefix_match(v, *epoch, release),
            (Operand::Version(spec), op) => match op {
                Operator::Compatible => {
                    let prefix = spec.release().get(..spec.release().len().saturating_sub(1));
                    v.public() >= *spec && prefix.is_some_and(|p| prefix_match(v, spec.epoch(), p))
                }
                Operator::Equal => equal(v, spec),
                Operator::NotEqual => !equal(v, spec),
                Operator::LessEqual => v.public() <= *spec,
                Operator::GreaterEqual => v.public() >= *spec,
                Operator::Less => {
                    // `<3.1` admits no pre-release of 3.1 itself, unless it
                    // names a pre-release.
                    v < spec
                        && !(!spec.is_prerelease() && v.is_prerelease() && v.base() == spec.base())
                }
                Operator::Greater => {
                    // `>3.1` admits no post-release of 3.1 (unless it names
                    // one) and no local version of 3.1.
                    v > spec
                        && !(!spec.is_postrelease()
                            && v.is_postrelease()
                            && v.base() == spec.base())
                        && !(v.local().is_some() && v.base() == spec.base())
                }
                Operator::Arbitrary => false,
            },
        }
    }
}

/// `==V` without `.*`: the candidate's local label counts only when the
/// specifier has one.
fn equal(v: &Pep440Version, spec: &Pep440Version) -> bool {
    if spec.local().is_some() {
        v == spec
    } else {
        v.public() == *spec
    }
}

/// `==E!R.*`: same epoch, and the candidate's release, padded with zeros,
/// starts with `R` (so `1.0.*` admits `1`, `1.0.5`, `1.0a1`, `1.0.post1`).
fn prefix_match(v: &Pep440Version, epoch: u64, release: &[u64]) -> bool {
    v.epoch() == epoch
        && release
            .iter()
            .enumerate()
            .all(|(i, n)| v.release().get(i).copied().unwrap_or(0) == *n)
}

impl PartialEq for Specifier {
    /// Same operator and the same version as PEP 440 compares them (`==1.0`
    /// equals `==1.0.0`; `~=1.0` does not equal `~=1.0.0`, nor `==1.*`
    /// `==1.0.*`).
    fn eq(&self, other: &Self) -> bool {
        self.op == other.op
            && match (&self.operand, &other.operand) {
                (Operand::Version(a), Operand::Version(b)) => {
                    a == b
                        && (self.op != Operator::Compatible
                            || a.release().len() == b.release().len())
                }
                (
                    Operand::Prefix { epoch, release },
                    Operand::Prefix {
                        epoch: e2,
                        release: r2,
                    },
                ) => epoch == e2 && release == r2,
                (Operand::Arbitrary(a), Operand::Arbitrary(b)) => {
                    a.to_lowercase() == b.to_lowercase()
                }
                _ => false,
            }
    }
}

impl Eq for Specifier {}

impl fmt::Display for Specifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.op.as_str(), self.written)
    }
}

impl FromStr for Specifier {
    type Err = SpecifierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// A comma-separated set of specifiers (`>=1.2,!=1.3.*,<2`); a version must
/// satisfy all of them. The empty set admits every final release.
#[derive(Debug, Clone, Default)]
pub struct Specifiers {
    specs: Vec<Specifier>,
}

impl Specifiers {
    /// Parses a comma-separated set; empty items (`""`, `">=1,,<2"`) are
    /// skipped as `packaging` skips them, so `""` admits any version.
    pub fn parse(text: &str) -> Result<Self, SpecifierError> {
        let specs = text
            .split(',')
            .filter(|item| !trim_py(item).is_empty())
            .map(Specifier::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { specs })
    }

    /// Whether `v` satisfies every specifier. With `prereleases` false, a
    /// pre-release (or development release) is refused unless one of the
    /// specifiers names a pre-release itself, as `packaging`'s
    /// `SpecifierSet.contains(v, prereleases=None)` does; with `true`,
    /// pre-releases are judged like any version.
    pub fn contains(&self, v: &Pep440Version, prereleases: bool) -> bool {
        let allow = prereleases || self.specs.iter().any(Specifier::names_prerelease);
        if v.is_prerelease() && !allow {
            return false;
        }
        self.specs.iter().all(|s| s.admits(v))
    }

    /// Whether the set has no specifier.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// How many specifiers the set has.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// The specifiers, in the order written.
    pub fn iter(&self) -> impl Iterator<Item = &Specifier> {
        self.specs.iter()
    }
}

impl PartialEq for Specifiers {
    /// The same specifiers, in any order, repeats ignored.
    fn eq(&self, other: &Self) -> bool {
        self.specs.iter().all(|s| other.specs.contains(s))
            && other.specs.iter().all(|s| self.specs.contains(s))
    }
}

impl Eq for Specifiers {}

impl fmt::Display for Specifiers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.specs.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{s}")?;
        }
        Ok(())
    }
}

impl FromStr for Specifiers {
    type Err = SpecifierError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Pep440Version {
        Pep440Version::parse(s).unwrap()
    }

    fn spec(s: &str) -> Specifier {
        Specifier::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn set(s: &str) -> Specifiers {
        Specifiers::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    /// `(version, specifier, admitted)` with pre-releases allowed, so only
    /// the comparison itself is tested.
    #[test]
    fn comparisons_follow_pep_440() {
        let cases: &[(&str, &str, bool)] = &[
            // == and != without wildcard; trailing zeros do not matter.
            ("2.0", "==2", true),
            ("2.0", "==2.0.0", true),
            ("2.0.1", "==2", false),
            ("2.0+deadbeef", "==2", true),
            ("2.0+deadbeef", "==2.0+deadbeef", true),
            ("2.0+deadbeef", "==2.0+other", false),
            ("2.0", "==2.0+deadbeef", false),
            ("2.0", "!=2", false),
            ("2.0+local", "!=2.0", false),
            ("2.1", "!=2", true),
            // Prefix matching.
            ("2.0", "==2.*", true),
            ("2", "==2.0.*", true),
            ("2.0.5", "==2.0.*", true),
            ("2.1", "==2.0.*", false),
            ("2.10", "==2.1.*", false),
            ("2.1a1", "==2.1.*", true),
            ("2.1.post1", "==2.1.*", true),
            ("2.1.dev1", "==2.1.*", true),
            ("2.1+local", "==2.1.*", true),
            ("1!2.1", "==2.1.*", false),
            ("1!2.1", "==1!2.*", true),
            ("2.0", "!=2.*", false),
            ("3.0", "!=2.*", true),
            ("2.0.0", "!=2.0.*", false),
            // Compatible release.
            ("2.2", "~=2.2", true),
            ("2.9", "~=2.2", true),
            ("3.0", "~=2.2", false),
            ("2.1", "~=2.2", false),
            ("1.4.5", "~=1.4.5", true),
            ("1.4.9", "~=1.4.5", true),
            ("1.5.0", "~=1.4.5", false),
            ("1.4.5a4", "~=1.4.5a4", true),
            ("1.4.6", "~=1.4.5a4", true),
            ("1.5", "~=1.4.5a4", false),
            ("2.2.post3", "~=2.2.post3", true),
            ("2.3", "~=2.2.post3", true),
            ("2.2", "~=2.2.post3", false),
            ("3.0", "~=2.2.post3", false),
            ("2.2+local", "~=2.2", true),
            ("1!2.5", "~=2.2", false),
            ("1!2.5", "~=1!2.2", true),
            // Inclusive ordered comparisons ignore local labels.
            ("2.0+local", "<=2.0", true),
            ("2.0+local", ">=2.0", true),
            ("1.9", "<=2.0", true),
            ("2.0.post1", "<=2.0", false),
            ("2.0.dev1", ">=2.0", false),
            // < excludes pre-releases of the version it names...
            ("2.0.dev1", "<2.0", false),
            ("2.0a1", "<2.0", false),
            ("1.9a1", "<2.0", true),
            ("1.9", "<2.0", true),
            ("2.0", "<2.0", false),
            // ... unless it names a pre-release itself.
            ("2.0a1", "<2.0rc1", true),
            ("2.0rc1.dev1", "<2.0rc1", true),
            ("2.0.dev1", "<2.0rc1", true),
            // > excludes post-releases and local versions of the version it
            // names...
            ("2.0.post1", ">2.0", false),
            ("2.0+local", ">2.0", false),
            ("2.0.1", ">2.0", true),
            ("2.1.post1", ">2.0", true),
            ("2.0", ">2.0", false),
            // ... unless it names a post-release itself.
            ("2.0.post2", ">2.0.post1", true),
            ("2.0.post1", ">2.0.post1", false),
            ("2.0.post1.dev1", ">2.0.post0", true),
            // Pre-release ordering inside ordered comparisons.
            ("2.0b1", ">2.0a1", true),
            ("2.0.dev1", ">1.9", true),
            // Arbitrary equality: the normal form's text.
            ("1.0", "===1.0", true),
            ("1.0", "===1.0.0", false),
            ("1.0", "===1.0+downstream", false),
            ("1.0a1", "===1.0A1", true),
            ("1.0", "===foobar", false),
            // Epochs.
            ("1!1.0", ">2.0", true),
            ("1!1.0", "<2.0", false),
        ];
        for (version, s, want) in cases {
            assert_eq!(
                spec(s).contains(&v(version), true),
                *want,
                "{version} in {s}"
            );
        }
    }

    #[test]
    fn prerelease_rule_of_specifier_sets() {
        // Refused unless asked for...
        assert!(!set(">=1.0").contains(&v("2.0a1"), false));
        assert!(set(">=1.0").contains(&v("2.0a1"), true));
        assert!(!set("").contains(&v("2.0.dev1"), false));
        assert!(set("").contains(&v("2.0.dev1"), true));
        assert!(set("").contains(&v("2.0.post1"), false));
        // ... or named by a specifier of the set.
        assert!(set(">=1.0b1").contains(&v("2.0a1"), false));
        assert!(set(">=1.0,<=2.0a2").contains(&v("2.0a1"), false));
        assert!(set("==2.0rc1").contains(&v("2.0rc1"), false));
        assert!(set("~=2.0b1").contains(&v("2.0b2"), false));
        assert!(set("<3.0rc1").contains(&v("2.5b1"), false));
        assert!(set(">1.0b1").contains(&v("1.0b2"), false));
        assert!(set("===1.0a1").contains(&v("1.0a1"), false));
        // != naming a pre-release does not let pre-releases in; nor does a
        // wildcard.
        assert!(!set("!=2.0a1").contains(&v("2.0a2"), false));
        assert!(!set("==2.*").contains(&v("2.0a2"), false));
        // Post-releases and local versions are not pre-releases.
        assert!(set(">=1.0").contains(&v("1.0.post1+x"), false));
        // All must hold.
        assert!(set(">=1.0,!=1.5,<2").contains(&v("1.4"), false));
        assert!(!set(">=1.0,!=1.5,<2").contains(&v("1.5"), false));
        assert!(!set(">=1.0,!=1.5,<2").contains(&v("2.0"), false));
    }

    #[test]
    fn parses_what_packaging_parses() {
        for (given, shown) in [
            (">=1.0", ">=1.0"),
            (" >= 1.0 ", ">=1.0"),
            ("==1.0.*", "==1.0.*"),
            ("!= 1.0.*", "!=1.0.*"),
            ("==v1.0", "==v1.0"),
            ("==1.0+Local.1", "==1.0+Local.1"),
            ("~=1.0", "~=1.0"),
            ("<1!2.0.dev3", "<1!2.0.dev3"),
            ("===anything-goes,", "===anything-goes,"),
            ("===", "==="),
            ("> 1.0-1", ">1.0-1"),
        ] {
            // A trailing comma inside === is that specifier's text.
            let s = Specifier::parse(given);
            match s {
                Ok(s) => assert_eq!(s.to_string(), shown, "{given:?}"),
                Err(e) => panic!("{given:?}: {e}"),
            }
        }
        assert_eq!(set(" >=1.0 , <2 ,,").to_string(), ">=1.0,<2");
        assert!(set("").is_empty());
        assert!(set(" , ").is_empty());
        assert_eq!(set(">=1,<2").len(), 2);
    }

    #[test]
    fn refuses_what_packaging_refuses() {
        for bad in [
            "1.0",
            "=1.0",
            "=>1.0",
            ">=1.0.*",
            "<1.0.*",
            "~=1.0.*",
            "==1.0a1.*",
            "==1.0.post1.*",
            "==1.0+local.*",
            "==1.*.*",
            ">=1.0+local",
            "<1.0+local",
            "~=1.0+local",
            "~=1",
            "~=1.dev0",
            ">=1.0 2",
            ">=",
            "==",
            "=== a b",
            "===a;b",
            "===a)",
            ">=1.0junk",
            ">>1.0",
        ] {
            assert!(Specifier::parse(bad).is_err(), "{bad:?}");
        }
        assert!(Specifiers::parse(">=1.0,junk").is_err());
        let msg = Specifiers::parse(">=1.0.*").unwrap_err().to_string();
        assert!(msg.contains("\">=1.0.*\"") && !msg.contains('\n'), "{msg}");
    }

    #[test]
    fn equality_is_set_equality_with_pep_440_versions() {
        assert_eq!(set(">=1.0,<2"), set("<2.0, >=1"));
        assert_eq!(set("==1.0"), set("==1.0.0"));
        assert_ne!(set("~=1.0"), set("~=1.0.0"));
        assert_ne!(set("==1.*"), set("==1.0.*"));
        assert_ne!(set(">=1.0"), set(">1.0"));
        assert_eq!(set("===Foo"), set("===foo"));
        assert_eq!(set(""), Specifiers::default());
    }
}
