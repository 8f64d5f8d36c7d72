//! The conformance kit: the probe packages a lab adds to the snapshot under
//! test, so that every snapshot-side sub-probe can run against the mirror it
//! deploys (`egress-conformance kit --protocol pypi|npm --out DIR`).
//!
//! They are the same probe packages the canaries serve (a present project
//! with a wheel and an sdist, an sdist-only project, a tripwire whose build
//! or install code calls a canary, text carrying template expressions),
//! built by the same code (each protocol's `kit.rs`, which its canary
//! uses), under a name prefix of their own so that `check` finds them in a
//! snapshot's `SNAPSHOT.json`: [`PREFIX`] (npm's scoped package under
//! [`NPM_SCOPE`]).
//!
//! The standalone canary serves the kit's packages as well, built by the
//! same functions with the tripwire aimed at its own origin
//! ([`crate::control::ServeOptions::kit`]), so that a snapshot holding
//! `kit --canary URL` and the canary at URL hold the same bytes.
//!
//! The same inputs give the same bytes: every file is reproducible.

use egress_model::{Url, TRIPWIRE_PATH};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The kit's names, where `check` looks for them.
pub use egress_suite::kit::{NPM_SCOPE, PREFIX};
/// The canary the tripwire calls when none is given: an address from
/// TEST-NET-1 (RFC 5737), reserved for documentation, which no real host
/// ever has. A tripwire aimed at it can fire, but nobody will hear it.
pub const DOCUMENTATION_CANARY: &str = "http://192.0.2.1/";

/// One file of a kit: its name in the output directory and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KitFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// Why a kit could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum KitError {
    #[error("--canary {0:?}: give an http:// or https:// URL of letters, digits and -._~:/%[] only (it is written into the tripwire's code)")]
    Canary(String),
    #[error("--out {0}: it exists and is not an empty directory; remove it or choose another")]
    Exists(PathBuf),
    #[error("--out {path}: cannot {what}: {cause}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        cause: std::io::Error,
    },
}

/// The URL a tripwire named `name_version` (e.g. `egress-kit-tripwire-0.1.0`)
/// calls on the canary at `canary` (a base URL; its path is kept).
pub fn tripwire_url(canary: &str, name_version: &str) -> String {
    format!(
        "{}{TRIPWIRE_PATH}{name_version}",
        canary.trim_end_matches('/')
    )
}

/// `canary` checked to be a URL that can be written into code as a string
/// literal (Python and JavaScript, in single or double quotes) unchanged.
pub fn check_canary(canary: &str) -> Result<String, KitError> {
    let safe = canary
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~:/%[]".contains(&b));
    if !safe || Url::parse(canary).is_err() {
        return Err(KitError::Canary(canary.to_string()));
    }
    Ok(canary.to_string())
}

/// Writes `files` into a new directory `out`, atomically: they are written
/// into a sibling work directory that is renamed to `out` only once every
/// file is on disk, so an error leaves nothing at `out`. An existing empty
/// directory at `out` is replaced; anything else there is refused.
pub fn write(out: &Path, files: &[KitFile]) -> Result<(), KitError> {
    let io = |what, path: &Path| {
        let path = path.to_path_buf();
        move |cause| KitError::Io { what, path, cause }
    };
    if let Ok(mut entries) = fs::read_dir(out) {
        if entries.next().is_some() {
            return Err(KitError::Exists(out.to_path_buf()));
        }
    } else if out.exists() {
        return Err(KitError::Exists(out.to_path_buf()));
    }
    let name = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "kit".into());
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let work = parent.join(format!(".{name}.kit-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    let result = (|| {
        fs::create_dir_all(&work).map_err(io("create", &work))?;
        for f in files {
            let path = work.join(&f.name);
            let mut file = fs::File::create(&path).map_err(io("create", &path))?;
            file.write_all(&f.bytes).map_err(io("write", &path))?;
            file.sync_all().map_err(io("write", &path))?;
        }
        if out.is_dir() {
            fs::remove_dir(out).map_err(io("replace", out))?;
        }
        fs::rename(&work, out).map_err(io("create", out))
    })();
    if result.is_err() {
        let _ = fs::remove_dir_all(&work);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canary_urls_that_code_can_carry() {
        assert!(check_canary("http://127.0.0.1:8080/").is_ok());
        assert!(check_canary("https://canary.example/x/").is_ok());
        for bad in [
            "ftp://x/",
            "http://x/\"+1",
            "http://x/'",
            "http://x/ y",
            "x",
        ] {
            assert!(check_canary(bad).is_err(), "{bad}");
        }
        assert_eq!(
            tripwire_url("http://h:1/", "egress-kit-tripwire-0.1.0"),
            "http://h:1/tripwire/egress-kit-tripwire-0.1.0"
        );
    }

    #[test]
    fn writing_is_all_or_nothing() {
        let dir = std::env::temp_dir().join(format!("egress-kit-write-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("mkdir");
        let out = dir.join("kit");
        let files = [KitFile {
            name: "a".into(),
            bytes: b"x".to_vec(),
        }];
        write(&out, &files).expect("written");
        assert_eq!(fs::read(out.join("a")).expect("read"), b"x");
        assert!(matches!(write(&out, &files), Err(KitError::Exists(_))));
        // A file that cannot be created leaves nothing behind.
        let bad = [KitFile {
            name: "no/such/dir".into(),
            bytes: Vec::new(),
        }];
        let out2 = dir.join("kit2");
        assert!(write(&out2, &bad).is_err());
        assert!(!out2.exists());
        let left: Vec<_> = fs::read_dir(&dir).expect("dir").collect();
        assert_eq!(left.len(), 1, "{left:?}");
        let _ = fs::remove_dir_all(&dir);
    }
}
