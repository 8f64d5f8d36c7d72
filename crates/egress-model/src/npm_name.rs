//! npm package names, as a registry serves them.

use std::fmt;

/// An npm package name: `name` or `@scope/name`.
///
/// Invariant: each part is non-empty, starts with an ASCII letter or digit,
/// and holds only ASCII letters, digits, `-`, `.`, `_` and `~`; the whole is
/// at most 214 bytes. So the name, with its one `/` encoded or not, is safe
/// in a URL path as it stands and can never spell a traversal. Upper case is
/// accepted because the registry still serves legacy names that have it.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NpmName(String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidNpmName(pub String);

impl fmt::Display for InvalidNpmName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a valid npm package name (`name` or `@scope/name`: letters, digits, '-', '.', '_', '~', each part starting with a letter or digit)",
            self.0
        )
    }
}

impl std::error::Error for InvalidNpmName {}

fn valid_part(p: &str) -> bool {
    p.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

impl NpmName {
    pub fn new(raw: &str) -> Result<Self, InvalidNpmName> {
        let ok = match raw.strip_prefix('@') {
            Some(scoped) => scoped
                .split_once('/')
                .is_some_and(|(scope, pkg)| valid_part(scope) && valid_part(pkg)),
            None => valid_part(raw),
        };
        if ok && raw.len() <= 214 {
            Ok(Self(raw.to_string()))
        } else {
            Err(InvalidNpmName(raw.to_string()))
        }
    }

    /// A name a new package may take: [`NpmName::new`]'s rule, and lower
    /// case only, as npm has required since 2016 (old names keep theirs).
    pub fn new_package(raw: &str) -> Result<Self, InvalidNpmName> {
        let name = Self::new(raw)?;
        if name.0.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(InvalidNpmName(raw.to_string()));
        }
        Ok(name)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `Some("@scope")` for a scoped name.
    pub fn scope(&self) -> Option<&str> {
        self.0.split_once('/').map(|(s, _)| s)
    }

    /// The name without its scope: `x` for `@ec/x`.
    pub fn bare(&self) -> &str {
        self.0.rsplit_once('/').map_or(&self.0, |(_, n)| n)
    }

    /// The packument path as npm asks for it: `/name`, or `/@scope%2fname`.
    pub fn packument_path(&self) -> String {
        match self.0.split_once('/') {
            Some((scope, pkg)) => format!("/{scope}%2f{pkg}"),
            None => format!("/{}", self.0),
        }
    }

    /// The packument path with the scope's slash left raw: `/@scope/name`.
    pub fn packument_path_raw(&self) -> String {
        format!("/{}", self.0)
    }

    /// Where registries conventionally serve a version's tarball:
    /// `/<name>/-/<bare>-<version>.tgz`.
    pub fn tarball_path(&self, version: &str) -> String {
        format!("/{}/-/{}-{version}.tgz", self.0, self.bare())
    }
}

crate::newtype::string_newtype!(NpmName, InvalidNpmName);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_scoped_and_legacy_names() {
        for ok in [
            "left-pad",
            "@ec/scoped",
            "JSONStream",
            "a.b_c~d",
            "@types/node",
            "1x",
        ] {
            assert!(NpmName::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_anything_that_could_leave_the_namespace() {
        for bad in [
            "",
            "@",
            "@/x",
            "@ec/",
            "@ec/a/b",
            "..",
            ".hidden",
            "_private",
            "-x",
            "a/b",
            "a%2fb",
            "a b",
            "a\\b",
            "@ec/..",
            "ä",
            "a?b",
            "a#b",
            &"x".repeat(215),
        ] {
            assert!(NpmName::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn new_packages_are_lower_case() {
        assert!(NpmName::new_package("@ec/x.y_z~1").is_ok());
        for bad in ["JSONStream", "@EC/x", "-x", ""] {
            assert!(NpmName::new_package(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn paths() {
        let s = NpmName::new("@ec/scoped").unwrap();
        assert_eq!(s.scope(), Some("@ec"));
        assert_eq!(s.bare(), "scoped");
        assert_eq!(s.packument_path(), "/@ec%2fscoped");
        assert_eq!(s.packument_path_raw(), "/@ec/scoped");
        assert_eq!(s.tarball_path("1.0.0"), "/@ec/scoped/-/scoped-1.0.0.tgz");
        let p = NpmName::new("ec-present").unwrap();
        assert_eq!(p.packument_path(), "/ec-present");
        assert_eq!(
            p.tarball_path("1.1.0"),
            "/ec-present/-/ec-present-1.1.0.tgz"
        );
    }
}
