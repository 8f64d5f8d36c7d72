//! cargo content of a snapshot: a sparse registry under [`CARGO_PREFIX`].
//!
//! Served paths:
//! - [`CONFIG_PATH`] (`/cargo/index/config.json`): `{"dl": ...}` naming the
//!   mirror's own download route, and no `api` (nothing can be published);
//! - `/cargo/index/<index path>` (`1/a`, `2/io`, `3/s/syn`, `se/rd/serde`,
//!   see [`egress_model::CrateName::index_path`]): the upstream's index lines
//!   of exactly the snapshot's versions, byte for byte, in the upstream's
//!   order, one per line;
//! - `/cargo/files/<sha256 hex>/<name>-<version>.crate` ([`crate_path`]):
//!   each `.crate`, addressed by the digest its index line and the lock
//!   give.
//!
//! A sandbox names the registry `sparse+<mirror>/cargo/index/`. Every byte
//! is rendered by the builder (`egress-build`'s cargo part) and added with
//! [`crate::SnapshotBuilder::add_cargo_file`]; nothing is computed when a
//! path is served.

use egress_model::{CrateName, Sha256Digest};
use serde::Deserialize;

/// Where every cargo path is served.
pub const CARGO_PREFIX: &str = "/cargo/";
/// The sparse index's root, as a sandbox names it after `sparse+<mirror>`.
pub const INDEX_PREFIX: &str = "/cargo/index/";
/// The registry's configuration.
pub const CONFIG_PATH: &str = "/cargo/index/config.json";
/// Where `.crate` files are served.
pub const FILES_PREFIX: &str = "/cargo/files/";
/// An index file: JSON lines.
pub const INDEX_TYPE: &str = "text/plain";
/// `config.json`.
pub const JSON: &str = "application/json";
/// Longest index line read (the largest on crates.io are tens of kB).
pub const MAX_LINE: usize = 1 << 20;

/// Whether `path` may be served as a cargo file: below [`CARGO_PREFIX`],
/// every segment non-empty and not `.` or `..`, visible ASCII without `?`,
/// `#`, `%` or `\`, at most 1,024 bytes.
pub fn is_cargo_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix(CARGO_PREFIX) else {
        return false;
    };
    path.len() <= 1024
        && crate::is_servable_path(path)
        && !path.contains(['\\', '%'])
        && rest
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// The served path of a crate's index file.
pub fn index_file_path(name: &CrateName) -> String {
    format!("{INDEX_PREFIX}{}", name.index_path())
}

/// The served path of a `.crate`: addressed by its digest.
pub fn crate_path(name: &CrateName, version: &str, sha256: &Sha256Digest) -> String {
    format!("{FILES_PREFIX}{}/{name}-{version}.crate", sha256.to_hex())
}

/// `config.json` for a mirror whose base URL is `mirror` (no trailing
/// slash): `dl` names the mirror's own files route with cargo's markers.
pub fn render_config(mirror: &str) -> Vec<u8> {
    let dl = format!("{mirror}{FILES_PREFIX}{{sha256-checksum}}/{{crate}}-{{version}}.crate");
    let mut out = serde_json::to_vec_pretty(&serde_json::json!({ "dl": dl })).unwrap_or_default();
    out.push(b'\n');
    out
}

/// One version of a crate in an index file, as read; the line's own bytes
/// are kept to be served unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLine {
    pub name: String,
    pub vers: String,
    pub cksum: Sha256Digest,
    pub yanked: bool,
    /// `pubtime`, where the index has it (crates.io since 2025).
    pub pubtime: Option<String>,
    pub bytes: Vec<u8>,
}

#[derive(Deserialize)]
struct RawLine {
    name: String,
    vers: String,
    cksum: String,
    #[serde(default)]
    yanked: bool,
    pubtime: Option<String>,
}

/// Why an index file was refused; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexLineError {
    #[error("line {line} is {len} bytes, more than the {MAX_LINE} an index line may be")]
    TooLong { line: usize, len: usize },
    #[error("line {line} is not an index entry: {why}")]
    Json { line: usize, why: String },
    #[error("line {line}: cksum {cksum:?} is not 64 hexadecimal digits")]
    Cksum { line: usize, cksum: String },
    #[error("line {line} is for crate {found:?}, not {wanted:?}")]
    OtherCrate {
        line: usize,
        found: String,
        wanted: String,
    },
}

/// Reads a sparse index file of `name` (crate names compare as cargo
/// compares them: ASCII case-insensitively). Empty lines are skipped;
/// every other line must be a bounded JSON object with `name`, `vers` and
/// a 64-hex `cksum`.
pub fn parse_index_file(bytes: &[u8], name: &CrateName) -> Result<Vec<IndexLine>, IndexLineError> {
    let mut out = Vec::new();
    for (n, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = n + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if raw.len() > MAX_LINE {
            return Err(IndexLineError::TooLong {
                line,
                len: raw.len(),
            });
        }
        let r: RawLine = serde_json::from_slice(raw).map_err(|e| IndexLineError::Json {
            line,
            why: e.to_string(),
        })?;
        if !r.name.eq_ignore_ascii_case(name.as_str()) {
            return Err(IndexLineError::OtherCrate {
                line,
                found: r.name,
                wanted: name.to_string(),
            });
        }
        let cksum = Sha256Digest::from_hex(&r.cksum).map_err(|_| IndexLineError::Cksum {
            line,
            cksum: r.cksum.chars().take(80).collect(),
        })?;
        out.push(IndexLine {
            name: r.name,
            vers: r.vers,
            cksum,
            yanked: r.yanked,
            pubtime: r.pubtime,
            bytes: raw.to_vec(),
        });
    }
    Ok(out)
}

/// An index file of `lines`, one per line, each ending in `\n`.
pub fn render_index_file<'a>(lines: impl IntoIterator<Item = &'a IndexLine>) -> Vec<u8> {
    let mut out = Vec::new();
    for l in lines {
        out.extend_from_slice(&l.bytes);
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUM: &str = "4a5f13b858c8d314ee3e8f639011f7ccefe71f97f96e50151fb991f267928e2c";

    fn name(n: &str) -> CrateName {
        CrateName::new(n).unwrap()
    }

    #[test]
    fn reads_index_lines_and_keeps_their_bytes() {
        let l1 = format!(
            r#"{{"name":"itoa","vers":"1.0.14","deps":[],"cksum":"{SUM}","features":{{}},"yanked":false}}"#
        );
        let l2 = format!(
            r#"{{"name":"itoa","vers":"1.0.15","deps":[],"cksum":"{SUM}","features":{{}},"yanked":true,"rust_version":"1.36","pubtime":"2025-03-07T18:13:48Z","v":2}}"#
        );
        let file = format!("{l1}\n\n{l2}\n");
        let lines = parse_index_file(file.as_bytes(), &name("itoa")).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].vers, "1.0.15");
        assert!(lines[1].yanked);
        assert_eq!(lines[1].pubtime.as_deref(), Some("2025-03-07T18:13:48Z"));
        assert_eq!(lines[0].bytes, l1.as_bytes());
        assert_eq!(
            render_index_file(&lines),
            format!("{l1}\n{l2}\n").into_bytes()
        );
    }

    #[test]
    fn hostile_index_files_are_refused() {
        let ok = format!(r#"{{"name":"itoa","vers":"1.0.0","cksum":"{SUM}"}}"#);
        let long = format!("{}\n", "x".repeat(MAX_LINE + 1));
        for (bad, want) in [
            ("{\"name\":".to_string(), "not an index entry"),
            (ok.replace(SUM, "abc"), "cksum"),
            (ok.replace("itoa", "serde"), "not \"itoa\""),
            (format!("{ok}\n[1,2]"), "line 2"),
            (long, "more than"),
        ] {
            let e = parse_index_file(bad.as_bytes(), &name("itoa")).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
        // Names compare as cargo compares them.
        assert_eq!(
            parse_index_file(ok.as_bytes(), &name("ITOA"))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn paths_and_config() {
        let sum = Sha256Digest::from_hex(SUM).unwrap();
        assert_eq!(
            crate_path(&name("libgit2-sys"), "0.14.2+1.5.1", &sum),
            format!("/cargo/files/{SUM}/libgit2-sys-0.14.2+1.5.1.crate")
        );
        assert!(is_cargo_path(&crate_path(&name("a"), "1.0.0", &sum)));
        assert_eq!(index_file_path(&name("Serde")), "/cargo/index/se/rd/serde");
        for bad in [
            "/cargo/",
            "/cargo//x",
            "/cargo/../x",
            "/cargo/a%2e",
            "/cargo/a?b",
            "/npm/x",
        ] {
            assert!(!is_cargo_path(bad), "{bad}");
        }
        let config: serde_json::Value =
            serde_json::from_slice(&render_config("http://m:8080")).unwrap();
        assert_eq!(
            config,
            serde_json::json!({"dl": "http://m:8080/cargo/files/{sha256-checksum}/{crate}-{version}.crate"})
        );
    }
}
