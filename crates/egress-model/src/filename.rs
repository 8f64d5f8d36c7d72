//! Distribution filenames: wheels (PEP 427 / binary distribution format) and
//! sdists (PEP 625 `.tar.gz`, legacy `.zip`).

use crate::{ProjectName, Version};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistKind {
    Wheel,
    Sdist,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistFilename {
    pub name: ProjectName,
    pub version: Version,
    pub kind: DistKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidFilename(pub String);

impl fmt::Display for InvalidFilename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not a wheel or sdist filename", self.0)
    }
}

impl std::error::Error for InvalidFilename {}

impl DistFilename {
    pub fn parse(filename: &str) -> Result<Self, InvalidFilename> {
        let err = || InvalidFilename(filename.to_string());
        if filename.contains(['/', '\\']) || filename.starts_with('.') {
            return Err(err());
        }
        if let Some(stem) = filename.strip_suffix(".whl") {
            let parts: Vec<&str> = stem.split('-').collect();
            let [name, version, ..] = parts.as_slice() else {
                return Err(err());
            };
            if !(parts.len() == 5 || parts.len() == 6) {
                return Err(err());
            }
            let name = ProjectName::new(name).map_err(|_| err())?;
            let version = Version::new(version).map_err(|_| err())?;
            return Ok(Self {
                name,
                version,
                kind: DistKind::Wheel,
            });
        }
        let stem = filename
            .strip_suffix(".tar.gz")
            .or_else(|| filename.strip_suffix(".zip"))
            .ok_or_else(err)?;
        // The version is the part after the last '-' (PEP 625 names use '_').
        let (name, version) = stem.rsplit_once('-').ok_or_else(err)?;
        Ok(Self {
            name: ProjectName::new(name).map_err(|_| err())?,
            version: Version::new(version).map_err(|_| err())?,
            kind: DistKind::Sdist,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_wheels_and_sdists() {
        let w = DistFilename::parse("ec_present-1.0.0-py3-none-any.whl").unwrap();
        assert_eq!(
            (w.name.as_str(), w.version.as_str(), w.kind),
            ("ec-present", "1.0.0", DistKind::Wheel)
        );
        let s = DistFilename::parse("ec_tripwire-0.1.0.tar.gz").unwrap();
        assert_eq!(
            (s.name.as_str(), s.version.as_str(), s.kind),
            ("ec-tripwire", "0.1.0", DistKind::Sdist)
        );
    }

    #[test]
    fn rejects_paths_and_junk() {
        for f in [
            "../x-1.0.tar.gz",
            "a/b-1.0-py3-none-any.whl",
            "x.txt",
            "x.whl",
            ".x-1.tar.gz",
        ] {
            assert!(DistFilename::parse(f).is_err(), "{f}");
        }
    }
}
