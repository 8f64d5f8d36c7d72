//! Pointing a `uv.lock` at a mirror.
//!
//! `uv sync --frozen` downloads each file from the absolute `url` the lock
//! records, so a lock made against PyPI would leave the sandbox. The rewrite
//! replaces only string values, in place: each file's `url` (on the line that
//! also carries that file's `hash`, as uv writes every sdist and wheel) and
//! each `registry`. Hashes, sizes, order and formatting stay byte for byte,
//! so the lock still pins exactly what it pinned. The result is parsed again
//! and must lock the same files, each at its mirror URL; anything the textual
//! rewrite could not reach is an error naming its line.

use crate::{parse_hash, parse_uv_lock, LockError};
use egress_model::Sha256Digest;

/// Rewrites `text` (a `uv.lock` named `file`): every `registry` value becomes
/// `registry`, every file `url` becomes `url_for(its sha256)`.
pub fn rewrite_uv_lock(
    file: &str,
    text: &str,
    registry: &str,
    url_for: &dyn Fn(&Sha256Digest) -> Option<String>,
) -> Result<String, LockError> {
    let before = parse_uv_lock(file, text)?;
    check_string(file, registry)?;
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for line in text.split_inclusive('\n') {
        let mut line = line.to_string();
        for range in values(&line, "registry").into_iter().rev() {
            line = replaced(&line, range, registry);
        }
        let urls = values(&line, "url");
        let hashes = values(&line, "hash");
        if let ([url], [hash]) = (urls.as_slice(), hashes.as_slice()) {
            if let Some(new) = line
                .get(hash.clone())
                .and_then(|h| parse_hash(h).ok())
                .and_then(|d| url_for(&d))
            {
                check_string(file, &new)?;
                line = replaced(&line, url.clone(), &new);
            }
        }
        out.push_str(&line);
    }

    // The rewrite must have changed where files come from and nothing else.
    let after = parse_uv_lock(file, &out)?;
    let same =
        before.pins.len() == after.pins.len()
            && before.pins.iter().zip(&after.pins).all(|(a, b)| {
                a.name == b.name && a.version == b.version && a.hashes() == b.hashes()
            });
    if !same {
        return Err(LockError::new(
            file,
            0,
            "rewriting the URLs changed what the lock pins; this lock is laid out unlike uv's, re-lock it with uv",
        ));
    }
    for pin in &after.pins {
        for f in &pin.files {
            let wanted = url_for(&f.sha256).ok_or_else(|| {
                LockError::new(
                    file,
                    f.line,
                    format!(
                        "{} {}: the snapshot holds no file with sha256 {}",
                        pin.name, pin.version, f.sha256
                    ),
                )
            })?;
            if f.url.as_deref() != Some(wanted.as_str()) {
                return Err(LockError::new(
                    file,
                    f.line,
                    format!(
                        "{} {}: cannot rewrite this file's url (it needs `url = \"...\"` and `hash = \"sha256:...\"` on one line, as uv writes them); re-lock it with uv",
                        pin.name, pin.version
                    ),
                ));
            }
        }
    }
    Ok(out)
}

/// `line` with `range` replaced by `new`; unchanged if `range` is not on
/// character boundaries (the ranges [`values`] finds always are).
fn replaced(line: &str, range: std::ops::Range<usize>, new: &str) -> String {
    match (line.get(..range.start), line.get(range.end..)) {
        (Some(head), Some(tail)) => format!("{head}{new}{tail}"),
        _ => line.to_string(),
    }
}

/// A value goes into a TOML basic string unescaped, so it must need no escape.
fn check_string(file: &str, value: &str) -> Result<(), LockError> {
    if value
        .chars()
        .any(|c| c == '"' || c == '\\' || c.is_control())
    {
        return Err(LockError::new(
            file,
            0,
            format!("{value:?} cannot be written into uv.lock unescaped"),
        ));
    }
    Ok(())
}

/// Byte ranges of the values of `key = "value"` on a line, where `key` is a
/// whole bare key (not the tail of a longer one) and the value is a basic
/// string without escapes.
fn values(line: &str, key: &str) -> Vec<std::ops::Range<usize>> {
    let bare = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((before, found)) = line
        .get(from..)
        .and_then(|tail| tail.find(key))
        .and_then(|at| line.split_at_checked(from + at))
    {
        from = before.len() + key.len();
        if before.chars().next_back().is_some_and(bare) {
            continue;
        }
        let Some(rest) = found.get(key.len()..) else {
            break;
        };
        let Some(after_eq) = rest.trim_start().strip_prefix('=') else {
            continue;
        };
        let Some(value) = after_eq.trim_start().strip_prefix('"') else {
            continue;
        };
        let value_start = line.len() - value.len();
        let Some((text, _)) = value.split_once('"') else {
            continue;
        };
        if text.contains('\\') {
            continue;
        }
        out.push(value_start..value_start + text.len());
        from = value_start + text.len() + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_whole_keys_only() {
        let line = r#"{ url = "a", source-url = "b", hash = "c", x = { url = "d\"" } }"#;
        let found: Vec<&str> = values(line, "url").into_iter().map(|r| &line[r]).collect();
        assert_eq!(found, vec!["a"]);
        assert_eq!(values("registry=\"r\"", "registry").len(), 1);
    }
}
