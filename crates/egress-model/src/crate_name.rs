//! Cargo crate names, and where a sparse index keeps each one.

use std::fmt;

/// A crate name as crates.io accepts it: 1 to 64 bytes, an ASCII letter
/// first, then ASCII letters, digits, `-` and `_`.
///
/// So a name is safe in a URL path and a file name as it stands, and can
/// never spell a traversal. Case is kept (the index and the download URL
/// use the name as published), while [`CrateName::index_path`] lowercases
/// as cargo does. crates.io treats `-` and `_` as the same name; a lockfile
/// and an index spell one of them, and that spelling is kept.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CrateName(String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidCrateName(pub String);

impl fmt::Display for InvalidCrateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a valid crate name (1 to 64 ASCII letters, digits, '-' and '_', starting with a letter)",
            self.0
        )
    }
}

impl std::error::Error for InvalidCrateName {}

impl CrateName {
    pub fn new(raw: &str) -> Result<Self, InvalidCrateName> {
        let ok = raw.len() <= 64
            && raw.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if ok {
            Ok(Self(raw.to_string()))
        } else {
            Err(InvalidCrateName(raw.to_string()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The directory of this crate in an index, in the name's own case:
    /// `1`, `2`, `3/{first letter}` or `{first two}/{next two}` (cargo's
    /// `{prefix}` marker).
    pub fn prefix(&self) -> String {
        let n = &self.0;
        // ASCII only (the invariant), so these byte ranges are characters.
        match (n.len(), n.get(..1), n.get(..2), n.get(2..4)) {
            (1, _, _, _) => "1".to_string(),
            (2, _, _, _) => "2".to_string(),
            (3, Some(a), _, _) => format!("3/{a}"),
            (_, _, Some(ab), Some(cd)) => format!("{ab}/{cd}"),
            _ => String::new(),
        }
    }

    /// The file of this crate in a sparse or git index, relative to the
    /// index root, as cargo computes it: [`CrateName::prefix`] and the
    /// name, lowercased.
    pub fn index_path(&self) -> String {
        format!("{}/{}", self.prefix(), self.0).to_ascii_lowercase()
    }
}

impl fmt::Display for CrateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for CrateName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CrateName({:?})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_paths_as_cargo_computes_them() {
        for (name, path) in [
            ("a", "1/a"),
            ("io", "2/io"),
            ("Syn", "3/s/syn"),
            ("serde", "se/rd/serde"),
            ("tokio-rustls", "to/ki/tokio-rustls"),
            ("Inflector", "in/fl/inflector"),
            ("ab_c", "ab/_c/ab_c"),
        ] {
            assert_eq!(CrateName::new(name).unwrap().index_path(), path, "{name}");
            let prefix = CrateName::new(name).unwrap().prefix();
            assert_eq!(
                prefix.to_ascii_lowercase() + "/" + &name.to_ascii_lowercase(),
                path
            );
        }
    }

    #[test]
    fn names_that_are_not_crates() {
        let long = "a".repeat(65);
        for bad in [
            "", "1abc", "-a", "_a", "a/b", "a.b", "..", "a%2f", "a b", "é", &long,
        ] {
            assert!(CrateName::new(bad).is_err(), "{bad:?}");
        }
        assert!(CrateName::new(&"a".repeat(64)).is_ok());
    }
}
