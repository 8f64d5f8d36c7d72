//! Every URL a lockfile names, read leniently: what a sandbox scan needs to
//! tell whether a lock sends its installer past the mirror (an index
//! option, a direct URL requirement, a `uv.lock` source or file URL, an npm
//! `resolved`). Unlike the strict readers that feed `snapshot build`, these
//! accept unhashed and unpinned entries: a lock that a snapshot could not be
//! built from still names hosts an installer would contact.

use crate::LockError;

/// Which lockfile format a file is, by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockFormat {
    /// `requirements*.txt`, `constraints*.txt` (pip's requirements format).
    Requirements,
    /// `uv.lock`.
    UvLock,
    /// `package-lock.json`, `npm-shrinkwrap.json`.
    PackageLock,
}

impl LockFormat {
    /// The format a file of this name holds, if it is a lockfile.
    pub fn of_file_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "uv.lock" => Some(Self::UvLock),
            "package-lock.json" | "npm-shrinkwrap.json" => Some(Self::PackageLock),
            n if n.ends_with(".txt")
                && (n.contains("requirements") || n.starts_with("constraints")) =>
            {
                Some(Self::Requirements)
            }
            _ => None,
        }
    }
}

/// One URL (or, for `--trusted-host`, one host) a lockfile names, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockUrl {
    /// Where in the file: `line N` or, for package-lock.json, the package key.
    pub place: String,
    /// What names it: `--index-url`, `source.registry`, `wheels.url`,
    /// `resolved`, a direct URL requirement...
    pub field: String,
    /// The URL as written (a bare host for `--trusted-host`).
    pub url: String,
}

/// Every URL `text` (a lockfile of `format`, named `file` in messages) names.
pub fn lock_urls(format: LockFormat, file: &str, text: &str) -> Result<Vec<LockUrl>, LockError> {
    match format {
        LockFormat::Requirements => Ok(crate::requirements::urls(text)),
        LockFormat::UvLock => crate::uvlock::urls(file, text),
        LockFormat::PackageLock => crate::npmlock::urls(file, text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(format: LockFormat, text: &str) -> Vec<(String, String, String)> {
        lock_urls(format, "f", text)
            .unwrap()
            .into_iter()
            .map(|u| (u.place, u.field, u.url))
            .collect()
    }

    #[test]
    fn file_names() {
        assert_eq!(
            LockFormat::of_file_name("uv.lock"),
            Some(LockFormat::UvLock)
        );
        assert_eq!(
            LockFormat::of_file_name("requirements-dev.txt"),
            Some(LockFormat::Requirements)
        );
        assert_eq!(
            LockFormat::of_file_name("npm-shrinkwrap.json"),
            Some(LockFormat::PackageLock)
        );
        assert_eq!(LockFormat::of_file_name("notes.txt"), None);
    }

    #[test]
    fn requirements_index_options_and_direct_urls() {
        let text = "--index-url http://198.51.100.1:8080/simple/\n\
                    --extra-index-url=https://pypi.org/simple # more\n\
                    -ihttp://a.example/simple\n\
                    --trusted-host pypi.org\n\
                    --find-links https://b.example/wheels/\n\
                    x==1 --hash=sha256:00\n\
                    y @ https://files.pythonhosted.org/y-1-py3-none-any.whl\n\
                    https://c.example/z-1.tar.gz#egg=z\n\
                    # https://not.example/ in a comment\n";
        assert_eq!(
            urls(LockFormat::Requirements, text),
            [
                ("line 1", "--index-url", "http://198.51.100.1:8080/simple/"),
                ("line 2", "--extra-index-url", "https://pypi.org/simple"),
                ("line 3", "-i", "http://a.example/simple"),
                ("line 4", "--trusted-host", "pypi.org"),
                ("line 5", "--find-links", "https://b.example/wheels/"),
                (
                    "line 7",
                    "direct URL requirement",
                    "https://files.pythonhosted.org/y-1-py3-none-any.whl"
                ),
                (
                    "line 8",
                    "direct URL requirement",
                    "https://c.example/z-1.tar.gz#egg=z"
                ),
            ]
            .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        );
    }

    #[test]
    fn uv_lock_sources_and_files() {
        let text = r#"version = 1
[[package]]
name = "idna"
version = "3.7"
source = { registry = "https://pypi.org/simple" }
sdist = { url = "https://files.pythonhosted.org/idna-3.7.tar.gz", hash = "sha256:00" }
wheels = [{ url = "https://files.pythonhosted.org/idna-3.7-py3-none-any.whl" }]

[[package]]
name = "g"
version = "1"
source = { git = "https://github.com/x/g?rev=1" }

[[package]]
name = "me"
source = { editable = "." }
"#;
        let got = urls(LockFormat::UvLock, text);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(got[0].1, "source.registry");
        assert_eq!(
            got[1],
            (
                "line 6".into(),
                "sdist.url".into(),
                "https://files.pythonhosted.org/idna-3.7.tar.gz".into()
            )
        );
        assert_eq!(got[2].1, "wheels.url");
        assert_eq!(got[3].1, "source.git");
        assert!(lock_urls(LockFormat::UvLock, "f", "version = [").is_err());
    }

    #[test]
    fn package_lock_resolved() {
        let text = r#"{"lockfileVersion": 3, "packages": {
            "": {"name": "p"},
            "node_modules/a": {"version": "1.0.0", "resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz"},
            "node_modules/w": {"resolved": "packages/w", "link": true},
            "node_modules/b": {"version": "1.0.0"}
        }}"#;
        assert_eq!(
            urls(LockFormat::PackageLock, text),
            [(
                "node_modules/a".to_string(),
                "resolved".to_string(),
                "https://registry.npmjs.org/a/-/a-1.0.0.tgz".to_string()
            )]
        );
        assert!(lock_urls(LockFormat::PackageLock, "f", "[").is_err());
    }
}
