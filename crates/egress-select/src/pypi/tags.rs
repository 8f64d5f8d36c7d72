//! PEP 425 compatibility tags (`cp311-abi3-manylinux_2_17_x86_64`) and the
//! tag sets wheel filenames carry.

use std::collections::HashSet;
use std::fmt;

use super::text::quoted;

/// One `interpreter-abi-platform` triple, lowercased as `packaging`'s
/// `Tag` lowercases it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag {
    interpreter: String,
    abi: String,
    platform: String,
}

impl Tag {
    /// A tag from its three parts (lowercased).
    pub fn new(interpreter: &str, abi: &str, platform: &str) -> Self {
        Self {
            interpreter: interpreter.to_lowercase(),
            abi: abi.to_lowercase(),
            platform: platform.to_lowercase(),
        }
    }

    /// The interpreter part (`cp311`, `py3`).
    pub fn interpreter(&self) -> &str {
        &self.interpreter
    }

    /// The ABI part (`cp311`, `abi3`, `none`).
    pub fn abi(&self) -> &str {
        &self.abi
    }

    /// The platform part (`manylinux_2_17_x86_64`, `any`).
    pub fn platform(&self) -> &str {
        &self.platform
    }
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.interpreter, self.abi, self.platform)
    }
}

/// Why a text is not a tag set or a wheel filename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagError {
    /// Not `interpreter-abi-platform` (each part dot-separated values).
    NotATag {
        /// The text as given.
        text: String,
    },
    /// Not `name-version[-build]-interpreter-abi-platform.whl`.
    NotAWheel {
        /// The filename as given.
        filename: String,
    },
}

impl fmt::Display for TagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TagError::NotATag { text } => write!(
                f,
                "{} is not a compatibility tag set (interpreter-abi-platform, each part one or more dot-separated values, e.g. py2.py3-none-any)",
                quoted(text)
            ),
            TagError::NotAWheel { filename } => write!(
                f,
                "{} is not a wheel filename (name-version[-build]-interpreter-abi-platform.whl, e.g. six-1.16.0-py2.py3-none-any.whl)",
                quoted(filename)
            ),
        }
    }
}

impl std::error::Error for TagError {}

/// The values of one part of a tag set (`py2.py3`), or `None` when a value
/// is empty or has whitespace.
fn values(part: &str) -> Option<Vec<&str>> {
    let values: Vec<&str> = part.split('.').collect();
    values
        .iter()
        .all(|v| !v.is_empty() && !v.contains(char::is_whitespace))
        .then_some(values)
}

/// How many tags a compressed tag set may expand to (real wheels carry a
/// handful; the bound keeps `a.b.c...` sets from asking for billions).
const MAX_TAGS: usize = 1024;

fn expand(interpreters: &str, abis: &str, platforms: &str) -> Option<Vec<Tag>> {
    let (interpreters, abis, platforms) =
        (values(interpreters)?, values(abis)?, values(platforms)?);
    let count = interpreters
        .len()
        .checked_mul(abis.len())?
        .checked_mul(platforms.len())?;
    if count > MAX_TAGS {
        return None;
    }
    let mut seen = HashSet::new();
    let mut tags: Vec<Tag> = Vec::new();
    for i in &interpreters {
        for a in &abis {
            for p in &platforms {
                let tag = Tag::new(i, a, p);
                if seen.insert(tag.clone()) {
                    tags.push(tag);
                }
            }
        }
    }
    Some(tags)
}

/// Expands a (possibly compressed) tag set: `py2.py3-none-any` gives
/// `py2-none-any` and `py3-none-any`, in the order written (interpreters,
/// then ABIs, then platforms), repeats removed; at most 1024 tags.
pub fn parse_tag(text: &str) -> Result<Vec<Tag>, TagError> {
    let not_a_tag = || TagError::NotATag {
        text: text.to_string(),
    };
    let mut parts = text.split('-');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(i), Some(a), Some(p), None) => expand(i, a, p).ok_or_else(not_a_tag),
        _ => Err(not_a_tag()),
    }
}

/// The tags a wheel filename declares, compressed sets expanded:
/// `cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64` gives two.
/// The filename must end in `.whl` and have five or six `-`-separated
/// parts, a sixth (the build tag) starting with a digit, as pip requires.
pub fn wheel_tags(filename: &str) -> Result<Vec<Tag>, TagError> {
    let not_a_wheel = || TagError::NotAWheel {
        filename: filename.to_string(),
    };
    let stem = filename.strip_suffix(".whl").ok_or_else(not_a_wheel)?;
    if stem.contains(char::is_whitespace) {
        return Err(not_a_wheel());
    }
    let parts: Vec<&str> = stem.split('-').collect();
    let (i, a, p) = match parts.as_slice() {
        [name, version, i, a, p] if !name.is_empty() && !version.is_empty() => (i, a, p),
        [name, version, build, i, a, p]
            if !name.is_empty()
                && !version.is_empty()
                && build.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            (i, a, p)
        }
        _ => return Err(not_a_wheel()),
    };
    expand(i, a, p).ok_or_else(not_a_wheel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(tags: &[Tag]) -> Vec<String> {
        tags.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn expands_compressed_tag_sets() {
        assert_eq!(
            shown(&parse_tag("py2.py3-none-any").unwrap()),
            ["py2-none-any", "py3-none-any"]
        );
        assert_eq!(
            shown(
                &wheel_tags(
                    "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl"
                )
                .unwrap()
            ),
            [
                "cp311-cp311-manylinux_2_27_x86_64",
                "cp311-cp311-manylinux_2_28_x86_64"
            ]
        );
        assert_eq!(
            shown(
                &wheel_tags("foo-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
                    .unwrap()
            ),
            [
                "cp311-cp311-manylinux_2_17_x86_64",
                "cp311-cp311-manylinux2014_x86_64"
            ]
        );
        assert_eq!(
            shown(&wheel_tags("six-1.16.0-py2.py3-none-any.whl").unwrap()),
            ["py2-none-any", "py3-none-any"]
        );
        assert_eq!(
            shown(&wheel_tags("x-1.0-1build-py3.py2-none.abi3-ANY.whl").unwrap()),
            [
                "py3-none-any",
                "py3-abi3-any",
                "py2-none-any",
                "py2-abi3-any"
            ]
        );
        assert_eq!(
            shown(&parse_tag("py3.py3-none-any").unwrap()),
            ["py3-none-any"]
        );
        let t = Tag::new("CP311", "Abi3", "Win_AMD64");
        assert_eq!(
            (t.interpreter(), t.abi(), t.platform()),
            ("cp311", "abi3", "win_amd64")
        );
    }

    #[test]
    fn refuses_what_pip_refuses() {
        for bad in [
            "foo-1.0-py3-none-any.tar.gz",
            "foo-1.0-py3-none-any.WHL",
            "foo-1.0-py3-none.whl",
            "foo-1.0-x-y-py3-none-any.whl",
            "foo-1.0-build-py3-none-any.whl",
            "-1.0-py3-none-any.whl",
            "foo--py3-none-any.whl",
            "foo-1.0-py3..py2-none-any.whl",
            "foo-1.0-py3-none-.whl",
            "foo 1.0-py3-none-any.whl",
            ".whl",
            "",
        ] {
            assert!(wheel_tags(bad).is_err(), "{bad:?}");
        }
        let huge = format!("{0}-{0}-{0}", ["x"; 11].join("."));
        for bad in [
            huge.as_str(),
            "py3-none",
            "py3-none-any-x",
            "",
            "py3--any",
            "py3-none-an y",
        ] {
            assert!(parse_tag(bad).is_err(), "{bad:?}");
        }
        let msg = wheel_tags("x.zip").unwrap_err().to_string();
        assert!(
            msg.starts_with("\"x.zip\" is not a wheel filename"),
            "{msg}"
        );
    }
}
