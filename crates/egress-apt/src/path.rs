//! The two kinds of relative path a Debian repository names: a package's
//! `Filename` (relative to the archive root, [`PoolPath`]) and an index
//! listed in a `Release` (relative to the `dists/<suite>/` directory,
//! [`IndexPath`]). Both are checked once, here, so that no caller joins an
//! unchecked path onto a directory or a URL.

use egress_model::Sha256Digest;
use std::fmt;

/// Why a path is not a safe repository path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty")]
    Empty,
    #[error("the path is longer than {MAX_PATH} bytes")]
    TooLong,
    #[error("the path is absolute (starts with `/`)")]
    Absolute,
    #[error("the path has an empty, `.` or `..` segment")]
    BadSegment,
    #[error("the path holds {0:?}, which Debian file names never use (allowed: letters, digits, `. + ~ _ : -` and `/`)")]
    BadCharacter(char),
}

/// Longest path accepted. Debian's longest pool paths are about 150 bytes.
pub const MAX_PATH: usize = 1024;

fn check(text: &str, extra: &[char]) -> Result<(), PathError> {
    if text.is_empty() {
        return Err(PathError::Empty);
    }
    if text.len() > MAX_PATH {
        return Err(PathError::TooLong);
    }
    if let Some(bad) = text
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || ".+~_:-/".contains(c) || extra.contains(&c)))
    {
        return Err(PathError::BadCharacter(bad));
    }
    if text.starts_with('/') {
        return Err(PathError::Absolute);
    }
    if text
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(PathError::BadSegment);
    }
    Ok(())
}

macro_rules! path_type {
    ($(#[$doc:meta])* $name:ident, $extra:expr) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn new(text: &str) -> Result<Self, PathError> {
                check(text, $extra)?;
                Ok(Self(text.to_string()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The last segment.
            pub fn file_name(&self) -> &str {
                self.0.rsplit('/').next().unwrap_or(&self.0)
            }

            /// Everything before the last `/`, or `""` for a bare name.
            pub fn dir(&self) -> &str {
                self.0.rsplit_once('/').map_or("", |(dir, _)| dir)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl std::str::FromStr for $name {
            type Err = PathError;
            fn from_str(s: &str) -> Result<Self, PathError> {
                Self::new(s)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

path_type!(
    /// A package file's path relative to the archive root, as a `Packages`
    /// stanza's `Filename` gives it (`pool/main/h/hello/hello_2.10-3_amd64.deb`):
    /// relative, no empty, `.` or `..` segment, only the characters Debian
    /// file names use (letters, digits, `. + ~ _ : -`) and `/`. So no `%`
    /// (no second decoding can turn it into something else), no `\`, NUL,
    /// space or control character.
    PoolPath,
    &[]
);

path_type!(
    /// An index's path relative to `dists/<suite>/`, as a `Release` lists it
    /// (`main/binary-amd64/Packages.gz`). The rules of [`PoolPath`], plus `@`,
    /// which Ubuntu's `dep11/icons-64x64@2.tar.gz` uses.
    IndexPath,
    &['@']
);

/// Where apt fetches `index` when the Release announces `Acquire-By-Hash`:
/// `<dir>/by-hash/SHA256/<hex>`, relative to `dists/<suite>/`.
pub fn by_hash_path(index: &IndexPath, digest: &Sha256Digest) -> String {
    match index.dir() {
        "" => format!("by-hash/SHA256/{}", digest.to_hex()),
        dir => format!("{dir}/by-hash/SHA256/{}", digest.to_hex()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_paths() {
        for p in [
            "pool/main/h/hello/hello_2.10-3_amd64.deb",
            "pool/updates/main/j/jq/jq_1.6-2.1+deb12u3_amd64.deb",
            "pool/main/v/vim/vim_2:9.0~rc1_amd64.deb",
            "a",
            "a..b/c",
        ] {
            let path = PoolPath::new(p).unwrap();
            assert_eq!(path.as_str(), p);
        }
        let path = PoolPath::new("pool/main/h/hello/hello_2.10-3_amd64.deb").unwrap();
        assert_eq!(path.file_name(), "hello_2.10-3_amd64.deb");
        assert_eq!(path.dir(), "pool/main/h/hello");
        assert!(IndexPath::new("main/dep11/icons-64x64@2.tar.gz").is_ok());
        assert!(PoolPath::new("main/dep11/icons-64x64@2.tar.gz").is_err());
    }

    #[test]
    fn hostile_paths() {
        for p in [
            "",
            "/etc/passwd",
            "../x",
            "pool/../../x",
            "pool/./x",
            "pool//x",
            "pool/x/",
            "%2e%2e/x",
            "pool/%2e%2e/x",
            "..%2fx",
            "pool\\..\\x",
            "pool/x\0.deb",
            "pool/x .deb",
            "pool/x\n.deb",
            "pool/é.deb",
            "C:\\x",
            "pool/x?.deb",
            "pool/x#.deb",
            "./pool/x",
            "..",
            ".",
        ] {
            assert!(PoolPath::new(p).is_err(), "{p:?}");
            assert!(IndexPath::new(p).is_err(), "{p:?}");
        }
        assert_eq!(
            PoolPath::new(&"a".repeat(MAX_PATH + 1)),
            Err(PathError::TooLong)
        );
    }

    #[test]
    fn by_hash() {
        let d = Sha256Digest::of(b"");
        let i = IndexPath::new("main/binary-amd64/Packages").unwrap();
        assert_eq!(
            by_hash_path(&i, &d),
            format!("main/binary-amd64/by-hash/SHA256/{}", d.to_hex())
        );
        let i = IndexPath::new("Contents-all").unwrap();
        assert_eq!(
            by_hash_path(&i, &d),
            format!("by-hash/SHA256/{}", d.to_hex())
        );
    }
}
