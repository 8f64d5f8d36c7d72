//! What `apt-get install --print-uris -qq PKG...` prints: one line per
//! package file apt would download,
//!
//! ```text
//! 'http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb' hello_2.10-3_amd64.deb 53080 MD5Sum:d04c2e9639dee67aa836d8232b1ca658
//! ```
//!
//! the URL in single quotes (percent-encoded as apt wrote it, `%2b` for
//! `+`), the file name apt stores it under (`%3a` for an epoch's `:`), the
//! size and one hash. Which hash depends on the apt version and the index:
//! Debian 12's apt prints `MD5Sum:` when the Packages stanza has one and
//! nothing at all (the line ends in a space) when it does not, as for
//! bookworm-security; other versions print `SHA256:`, `SHA512:` or `SHA1:`.
//! The hash here is only what apt said: the SHA256 that binds a snapshot
//! comes from the signed `InRelease` and `Packages` chain.
//!
//! Every line must be a package download: a line apt prints for anything
//! else (progress text without `-qq`, the indexes of `apt-get update
//! --print-uris`, the sources of `apt-get source --print-uris`) is an error
//! naming the line, never skipped.

use crate::LockError;
use egress_apt::PoolPath;
use egress_model::{Sha256Digest, Url};
use std::collections::HashMap;

/// The `file` that [`parse_print_uris`] errors name; callers reading a file
/// put its path in [`LockError::file`] instead.
pub const PRINT_URIS_INPUT: &str = "--print-uris output";

const FORMAT: &str = "expected 'URL' FILE SIZE HASH as printed by apt-get install --print-uris -qq";

/// The hash apt printed for a package file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AptHash {
    /// 32 lowercase hex digits.
    Md5(String),
    /// 40 lowercase hex digits.
    Sha1(String),
    Sha256(Sha256Digest),
    /// 128 lowercase hex digits.
    Sha512(String),
    /// A hash name this reader does not know, kept as written.
    Unknown {
        name: String,
        value: String,
    },
    /// apt printed no hash (Debian 12's apt, for a stanza without `MD5sum`).
    Missing,
}

/// One package download apt would make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AptUri {
    /// As written, percent-encoding kept (`%2b` for `+`).
    pub url: String,
    /// The name apt stores the file under, as written (`%3a` for `:`).
    pub file_name: String,
    pub size: u64,
    pub hash: AptHash,
    /// 1-based line of the input.
    pub line: usize,
}

/// Reads every line of `apt-get install --print-uris -qq` output. Blank
/// lines are skipped; anything else that is not a package download is an
/// error naming the line, what is wrong and how to get the right input.
///
/// A file name or URL given twice is an error too: apt prints each download
/// once, and two URLs saved under one name would leave which bytes were meant
/// to whoever wrote last.
pub fn parse_print_uris(text: &str) -> Result<Vec<AptUri>, LockError> {
    let mut out: Vec<AptUri> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let uri = parse_line(raw, line).map_err(|m| LockError::new(PRINT_URIS_INPUT, line, m))?;
        for key in [
            format!("file name {:?}", uri.file_name),
            format!("URL {:?}", uri.url),
        ] {
            if let Some(first) = seen.insert(key.clone(), line) {
                return Err(LockError::new(
                    PRINT_URIS_INPUT,
                    line,
                    format!(
                        "{} is already on line {first}; give each package once (concatenated outputs of several apt-get runs need de-duplicating)",
                        short(&key)
                    ),
                ));
            }
        }
        out.push(uri);
    }
    Ok(out)
}

fn parse_line(raw: &str, line: usize) -> Result<AptUri, String> {
    let Some(rest) = raw.strip_prefix('\'') else {
        return Err(format!(
            "{FORMAT}; this line does not start with a quoted URL (run apt-get with -qq so it prints no progress text): {:?}",
            short(raw)
        ));
    };
    let Some((url, rest)) = rest.split_once("' ") else {
        if rest.ends_with('\'') {
            return Err(format!("{FORMAT}; nothing follows the URL"));
        }
        return Err(format!("{FORMAT}; the URL's closing quote is missing"));
    };
    let parsed =
        Url::parse(url).map_err(|e| format!("{e}; apt prints http:// or https:// URLs"))?;
    if url.contains(['\'', '\\']) || parsed.path_and_query().contains('?') {
        return Err(format!(
            "URL {:?} holds a quote, backslash or query, which apt's package URLs never do",
            short(url)
        ));
    }
    let words: Vec<&str> = rest.split(' ').collect();
    let (file_name, size, hash) = match words.as_slice() {
        [file, size, hash] => (*file, *size, *hash),
        [file, size] => (*file, *size, ""),
        _ => return Err(format!("{FORMAT}; after the URL found {:?}", short(rest))),
    };
    check_file_name(file_name)?;
    let size = egress_apt::parse_size(size)
        .filter(|&s| s > 0)
        .ok_or_else(|| format!("size {:?} is not a positive decimal number", short(size)))?;
    Ok(AptUri {
        url: url.to_string(),
        file_name: file_name.to_string(),
        size,
        hash: parse_hash(hash)?,
        line,
    })
}

/// A `.deb` name as apt writes it: Debian's file name characters, with `:`
/// quoted as `%3a`; nothing that could leave the directory it is saved in.
fn check_file_name(name: &str) -> Result<(), String> {
    let unquoted = name.replace("%3a", ":").replace("%3A", ":");
    let safe = unquoted
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || ".+~_:-".contains(c))
        && !unquoted.starts_with('.');
    if !safe {
        return Err(format!(
            "file name {:?} is not a safe Debian file name (letters, digits, `. + ~ _ -`, `%3a`)",
            short(name)
        ));
    }
    if !unquoted.ends_with(".deb") || unquoted.len() <= 4 {
        return Err(format!(
            "file name {:?} is not a .deb; only apt-get install (or download) --print-uris output lists packages (apt-get update and apt-get source print other files)",
            short(name)
        ));
    }
    Ok(())
}

fn parse_hash(text: &str) -> Result<AptHash, String> {
    if text.is_empty() {
        return Ok(AptHash::Missing);
    }
    let Some((name, value)) = text.split_once(':') else {
        return Err(format!(
            "hash {:?} is not NAME:HEX (e.g. MD5Sum:<32 hex digits>)",
            short(text)
        ));
    };
    let hex = |len: usize| -> Result<String, String> {
        if value.len() == len && value.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(value.to_ascii_lowercase())
        } else {
            Err(format!(
                "{name} value {:?} is not {len} hex digits",
                short(value)
            ))
        }
    };
    Ok(match name.to_ascii_lowercase().as_str() {
        "md5sum" | "md5" => AptHash::Md5(hex(32)?),
        "sha1" => AptHash::Sha1(hex(40)?),
        "sha256" => AptHash::Sha256(
            Sha256Digest::from_hex(value)
                .map_err(|_| format!("SHA256 value {:?} is not 64 hex digits", short(value)))?,
        ),
        "sha512" => AptHash::Sha512(hex(128)?),
        _ if !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !value.is_empty()
            && value.bytes().all(|b| b.is_ascii_graphic()) =>
        {
            AptHash::Unknown {
                name: name.to_string(),
                value: value.to_string(),
            }
        }
        _ => {
            return Err(format!(
                "hash {:?} is not NAME:HEX (e.g. MD5Sum:<32 hex digits>)",
                short(text)
            ))
        }
    })
}

fn short(text: &str) -> String {
    text.chars().take(120).collect()
}

/// The pool path of `url` below `archive_root` (`http://deb.debian.org/debian`
/// gives `pool/main/h/hello/hello_2.10-3_amd64.deb`), percent-decoded. `None`
/// when the URL is not below the root, or when a decoded character is not one
/// Debian file names use (an encoded `/`, `\`, `%` or NUL never passes), or
/// the result is not a [`PoolPath`].
pub fn pool_path_of(url: &str, archive_root: &str) -> Option<PoolPath> {
    let root = archive_root.trim_end_matches('/');
    let rest = url.strip_prefix(root)?.strip_prefix('/')?;
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            let pair: String = [chars.next()?, chars.next()?].iter().collect();
            let byte = u8::from_str_radix(&pair, 16).ok()?;
            let decoded = char::from(byte);
            if !(decoded.is_ascii_alphanumeric() || ".+~_:-".contains(decoded)) {
                return None;
            }
            out.push(decoded);
        } else {
            out.push(c);
        }
    }
    PoolPath::new(&out).ok()
}

/// Where a [`AptUri`]'s URL points, split at its `pool/` directory: the
/// archive root (`http://deb.debian.org/debian`) and the pool path. `None`
/// when the URL has no `/pool/` segment or its path is not a [`PoolPath`].
pub fn split_at_pool(url: &str) -> Option<(String, PoolPath)> {
    let at = url.find("/pool/")?;
    let root = url.get(..at)?;
    Some((root.to_string(), pool_path_of(url, root)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELLO: &str = "'http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb' hello_2.10-3_amd64.deb 53080 MD5Sum:d04c2e9639dee67aa836d8232b1ca658";

    #[test]
    fn one_line() {
        let u = &parse_print_uris(HELLO).unwrap()[0];
        assert_eq!(
            u.url,
            "http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb"
        );
        assert_eq!(u.file_name, "hello_2.10-3_amd64.deb");
        assert_eq!(u.size, 53080);
        assert_eq!(
            u.hash,
            AptHash::Md5("d04c2e9639dee67aa836d8232b1ca658".into())
        );
        assert_eq!(u.line, 1);
    }

    #[test]
    fn pool_paths() {
        let url = "http://deb.debian.org/debian-security/pool/updates/main/j/jq/jq_1.6-2.1%2bdeb12u3_amd64.deb";
        assert_eq!(
            pool_path_of(url, "http://deb.debian.org/debian-security/")
                .unwrap()
                .as_str(),
            "pool/updates/main/j/jq/jq_1.6-2.1+deb12u3_amd64.deb"
        );
        let (root, path) = split_at_pool(url).unwrap();
        assert_eq!(root, "http://deb.debian.org/debian-security");
        assert_eq!(path.file_name(), "jq_1.6-2.1+deb12u3_amd64.deb");
        assert!(pool_path_of(url, "http://deb.debian.org/debian").is_none());
        for evil in [
            "http://h/d/pool/%2e%2e/%2e%2e/etc/passwd",
            "http://h/d/pool/a%2fb.deb",
            "http://h/d/pool/a%5cb.deb",
            "http://h/d/pool/a%00.deb",
            "http://h/d/pool/a%252e.deb",
            "http://h/d/pool/a%2",
            "http://h/d/pool/../x.deb",
            "http://h/d/pool/x.deb?a=b",
            "http://h/d//pool/x.deb",
        ] {
            assert!(pool_path_of(evil, "http://h/d").is_none(), "{evil}");
        }
    }
}
