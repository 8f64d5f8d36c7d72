//! pip's hashed requirements format, the subset lock generators write:
//!
//! ```text
//! # comment
//! --index-url https://pypi.org/simple
//! certifi==2024.2.2 \
//!     --hash=sha256:0569... \
//!     --hash=sha256:dc38...
//!     # via requests
//! colorama==0.4.6 ; sys_platform == "win32" \
//!     --hash=sha256:...
//! ```
//!
//! Lines are joined and comments stripped as pip does (`join_lines`,
//! `ignore_comments` in pip's `req_file.py`), so a file reads here as pip
//! reads it; whatever pip would accept but a snapshot cannot honour is an
//! error that says so.

use crate::{parse_hash, HashError, Lock, LockError, LockKind, Pin, PinnedFile};
use egress_model::name::InvalidName;
use egress_model::version::InvalidVersion;
use egress_model::{ProjectName, Version};

/// Options that only tell pip where to look; the snapshot's own `--index-url`
/// decides that, so they are noted and ignored.
const IGNORED_OPTIONS: &[&str] = &[
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--trusted-host",
    "--no-index",
    "--pre",
    "--prefer-binary",
    "--only-binary",
    "--no-binary",
    "--require-hashes",
];

/// Parses a hashed requirements file. `file` names it in messages.
pub fn parse_requirements(file: &str, text: &str) -> Result<Lock, LockError> {
    let mut lock = Lock {
        kind: LockKind::Requirements,
        file: file.to_string(),
        pins: Vec::new(),
        notes: Vec::new(),
    };
    for (line, logical) in logical_lines(text) {
        let content = strip_comment(&logical).trim();
        if content.is_empty() {
            continue;
        }
        let err = |e: RequirementError| LockError::new(file, line, e.to_string());
        if content.starts_with('-') {
            if let Some(note) = option_line(content).map_err(err)? {
                lock.notes.push(format!("{file}:{line}: {note}"));
            }
            continue;
        }
        lock.pins.push(requirement(content, line).map_err(err)?);
    }
    Ok(lock)
}

/// Options whose value names where pip looks (an index, a links page, a
/// host it trusts without TLS).
const URL_OPTIONS: &[&str] = &[
    "-i",
    "--index-url",
    "--extra-index-url",
    "-f",
    "--find-links",
    "--trusted-host",
];

/// Every URL a requirements file names (leniently: see [`crate::urls`]):
/// index options' values and direct URL requirements (`name @ URL`, or a
/// URL on its own).
pub(crate) fn urls(text: &str) -> Vec<crate::LockUrl> {
    let mut out = Vec::new();
    for (line, logical) in logical_lines(text) {
        let content = strip_comment(&logical).trim();
        let place = format!("line {line}");
        if content.starts_with('-') {
            let mut tokens = content.split_whitespace();
            let Some(token) = tokens.next() else { continue };
            let (name, glued) = match token.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v)),
                _ if !token.starts_with("--") && token.len() > 2 => {
                    (first_chars(token, 2), token.get(2..))
                }
                _ => (token, None),
            };
            if !URL_OPTIONS.contains(&name) {
                continue;
            }
            if let Some(value) = glued.filter(|v| !v.is_empty()).or_else(|| tokens.next()) {
                out.push(crate::LockUrl {
                    place,
                    field: name.to_string(),
                    url: value.to_string(),
                });
            }
            continue;
        }
        // The requirement proper ends where its options start.
        let spec: Vec<&str> = content
            .split_whitespace()
            .take_while(|t| !t.starts_with('-'))
            .collect();
        if let Some(url) = spec.iter().find(|t| t.contains("://")) {
            out.push(crate::LockUrl {
                place,
                field: "direct URL requirement".into(),
                url: url.trim_end_matches(';').to_string(),
            });
        }
    }
    out
}

/// pip's `join_lines`: a line ending in `\` continues on the next one,
/// unless it is a comment. Yields (first line number, joined text).
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let n = i + 1;
        // pip's COMMENT_RE matched at the start: `^\s*#`.
        let is_comment = raw.trim_start().starts_with('#');
        match raw.strip_suffix('\\') {
            Some(head) if !is_comment => match &mut pending {
                Some((_, acc)) => acc.push_str(head),
                None => pending = Some((n, head.to_string())),
            },
            _ => {
                // pip puts a space before a comment line so it stays a
                // comment once joined.
                let piece = if is_comment {
                    format!(" {raw}")
                } else {
                    raw.to_string()
                };
                match pending.take() {
                    Some((start, mut acc)) => {
                        acc.push_str(&piece);
                        out.push((start, acc));
                    }
                    None => out.push((n, piece)),
                }
            }
        }
    }
    if let Some(p) = pending {
        out.push(p);
    }
    out
}

/// Cuts a `#` comment that starts the line or follows whitespace (pip's
/// `(^|\s+)#.*$`); a `#` inside a token (a URL fragment) is not a comment.
fn strip_comment(line: &str) -> &str {
    let mut after_space = true;
    for (i, c) in line.char_indices() {
        if c == '#' && after_space {
            return line.get(..i).unwrap_or(line);
        }
        after_space = c.is_ascii_whitespace();
    }
    line
}

/// Why a requirements line cannot be used (before `file:line` is added).
#[derive(Debug, thiserror::Error)]
enum RequirementError {
    #[error("{0:?}: includes (-r) are not supported; pass each requirements file with its own --requirements")]
    Include(String),
    #[error("{0:?}: constraints files (-c) are not supported; a constraint pins no files, lock the requirements with hashes instead")]
    Constraint(String),
    #[error("{0:?}: an editable requirement has no files to mirror; drop it (install your own project from its source) or lock a released version with hashes")]
    Editable(String),
    #[error("a --hash line with no requirement before it; put the requirement and its hashes on one logical line (end lines with \\)")]
    LoneHash,
    #[error("unknown option {0:?}; a hashed requirements file holds requirements, --hash options and index options")]
    UnknownOption(String),
    #[error("{spec}: --hash without a value")]
    HashWithoutValue { spec: String },
    #[error("{spec}: option {option:?} on a requirement is not supported; only --hash is")]
    RequirementOption { spec: String, option: String },
    #[error("{spec}: {source}")]
    Hash {
        spec: String,
        #[source]
        source: HashError,
    },
    #[error("{0:?} is a URL or path requirement; a snapshot serves index files only, lock a released version as name==version with --hash")]
    UrlOrPath(String),
    #[error(transparent)]
    Name(#[from] InvalidName),
    #[error("{0:?}: unclosed [ in extras")]
    UnclosedExtras(String),
    #[error("{0:?} is not pinned with ==; a snapshot needs exact pins (name==version), as pip-compile and uv pip compile write them")]
    NotPinned(String),
    #[error("{req:?}: {source}")]
    Version {
        req: String,
        #[source]
        source: InvalidVersion,
    },
    #[error("{0:?} has no --hash; every requirement needs its sha256 (generate the file with `pip-compile --generate-hashes` or `uv pip compile --generate-hashes`)")]
    NoHash(String),
}

/// The first `n` characters of `s` (all of it when shorter).
fn first_chars(s: &str, n: usize) -> &str {
    s.char_indices()
        .nth(n)
        .and_then(|(i, _)| s.get(..i))
        .unwrap_or(s)
}

/// An option line: `Ok(Some(note))` when ignored, `Err` when unsupported.
fn option_line(content: &str) -> Result<Option<String>, RequirementError> {
    let token = content.split_whitespace().next().unwrap_or(content);
    let name = match token.split_once('=') {
        Some((n, _)) => n,
        // Short options may be glued to their value: `-ihttps://...`.
        None if !token.starts_with("--") => first_chars(token, 2),
        None => token,
    };
    match name {
        "-r" | "--requirement" => Err(RequirementError::Include(content.to_string())),
        "-c" | "--constraint" => Err(RequirementError::Constraint(content.to_string())),
        "-e" | "--editable" => Err(RequirementError::Editable(content.to_string())),
        "--hash" => Err(RequirementError::LoneHash),
        n if IGNORED_OPTIONS.contains(&n) => Ok(Some(format!(
            "{content:?} ignored: the snapshot is fetched from --index-url and served as one index"
        ))),
        n => Err(RequirementError::UnknownOption(n.to_string())),
    }
}

/// `name[extras]==version ; marker --hash=sha256:... ...`
fn requirement(content: &str, line: usize) -> Result<Pin, RequirementError> {
    use RequirementError as E;
    // pip's `break_args_options`: options start at the first token that
    // starts with `-`.
    let mut tokens = content.split_whitespace().peekable();
    let mut spec_tokens = Vec::new();
    while let Some(t) = tokens.next_if(|t| !t.starts_with('-')) {
        spec_tokens.push(t);
    }
    let spec = spec_tokens.join(" ");
    let mut files = Vec::new();
    while let Some(opt) = tokens.next() {
        let value = match opt.split_once('=') {
            Some(("--hash", v)) => v,
            None if opt == "--hash" => tokens
                .next()
                .ok_or_else(|| E::HashWithoutValue { spec: spec.clone() })?,
            _ => {
                return Err(E::RequirementOption {
                    spec,
                    option: opt.to_string(),
                })
            }
        };
        let sha256 = parse_hash(value).map_err(|source| E::Hash {
            spec: spec.clone(),
            source,
        })?;
        files.push(PinnedFile {
            sha256,
            url: None,
            filename: None,
            size: None,
            upload_time: None,
            line,
        });
    }

    let (req, marker) = match spec.split_once(';') {
        Some((r, m)) => (r.trim(), Some(m.trim().to_string())),
        None => (spec.trim(), None),
    };
    if req.contains("://") || req.contains('@') || req.starts_with(['.', '/', '~']) {
        return Err(E::UrlOrPath(req.to_string()));
    }
    let name_end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    let (name, rest) = req.split_at_checked(name_end).unwrap_or((req, ""));
    let name = ProjectName::new(name)?;
    let mut rest = rest.trim_start();
    let mut extras = Vec::new();
    if let Some(after) = rest.strip_prefix('[') {
        let (inside, tail) = after
            .split_once(']')
            .ok_or_else(|| E::UnclosedExtras(req.to_string()))?;
        extras = inside
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect();
        rest = tail.trim_start();
    }
    let not_pinned = || E::NotPinned(req.to_string());
    let version = rest
        .strip_prefix("==")
        .filter(|v| !v.starts_with('='))
        .map(str::trim)
        .ok_or_else(not_pinned)?;
    if version.contains([',', '*', ' ', '<', '>', '!', '~', '=']) {
        return Err(not_pinned());
    }
    let version = Version::new(version).map_err(|source| E::Version {
        req: req.to_string(),
        source,
    })?;
    if files.is_empty() {
        return Err(E::NoHash(req.to_string()));
    }
    Ok(Pin {
        name,
        version,
        files,
        extras,
        marker,
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_pip() {
        let lines = logical_lines("a \\\n  b \\\n  c\n# x \\\nd\\\n");
        assert_eq!(
            lines,
            vec![
                (1, "a   b   c".to_string()),
                (4, " # x \\".to_string()),
                (5, "d".to_string()),
            ]
        );
    }

    #[test]
    fn comments() {
        assert_eq!(strip_comment("a==1 # via b"), "a==1 ");
        assert_eq!(strip_comment("# all"), "");
        assert_eq!(strip_comment("http://x/#frag"), "http://x/#frag");
    }
}
