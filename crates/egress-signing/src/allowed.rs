//! The `ALLOWED SIGNERS` file format of ssh-keygen(1):
//!
//! ```text
//! # comment
//! principal[,principal...] [option[,option...]] keytype base64-key [comment]
//! ```
//!
//! Principals and `namespaces` are OpenSSH pattern lists (`*`, `?`, `!`
//! negation). The principals field may be double-quoted to contain spaces.
//! Options: `namespaces="a,b"` restricts the namespaces a key may sign for;
//! `cert-authority` lines name a certificate authority and, as this crate
//! verifies only plain keys (never certificates), they are parsed but never
//! match, exactly as ssh-keygen treats a plain key on a CA line;
//! `valid-after`/`valid-before` are rejected as unsupported, so that a key
//! meant to be time-limited is never trusted without its limit.
//! Lines for key types other than ssh-ed25519 are accepted (so a shared file
//! still parses) but never match.

use crate::wire::Reader;
use crate::{base64, PublicKey, SigningError, KEY_TYPE, MAX_KEY_BLOB, MAX_NAME};

/// A parsed allowed signers file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedSigners {
    entries: Vec<AllowedSignersEntry>,
}

/// One key line of an allowed signers file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedSignersEntry {
    line: usize,
    principals: String,
    namespaces: Option<String>,
    cert_authority: bool,
    key_type: String,
    /// `None` for key types other than ssh-ed25519.
    key: Option<PublicKey>,
}

impl AllowedSignersEntry {
    /// 1-based line number in the parsed text.
    pub fn line(&self) -> usize {
        self.line
    }
    /// The principals pattern list, as written (without quotes).
    pub fn principals(&self) -> &str {
        &self.principals
    }
    /// The `namespaces` pattern list, if the line restricts namespaces.
    pub fn namespaces(&self) -> Option<&str> {
        self.namespaces.as_deref()
    }
    pub fn is_cert_authority(&self) -> bool {
        self.cert_authority
    }
    pub fn key_type(&self) -> &str {
        &self.key_type
    }
    /// The key, for ssh-ed25519 lines.
    pub fn key(&self) -> Option<&PublicKey> {
        self.key.as_ref()
    }
}

pub(crate) enum Lookup<'a> {
    Found(&'a AllowedSignersEntry),
    /// The key is listed, but every such line excludes the namespace.
    NamespaceNotPermitted,
    Absent,
}

impl AllowedSigners {
    pub fn parse(text: &str) -> Result<Self, SigningError> {
        let mut entries = Vec::new();
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let content = raw.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            let entry = parse_line(line, content).map_err(|e| SigningError::AllowedSigners {
                line,
                detail: e.to_string(),
            })?;
            entries.push(entry);
        }
        Ok(Self { entries })
    }

    /// Reads and parses the allowed_signers file at `path`; the error
    /// says which file and why, for a flag's one-line error
    /// (`--allowed-signers {e}`).
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let shown = path.display();
        let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
        Self::parse(&text).map_err(|e| format!("{shown}: {e}"))
    }

    pub fn entries(&self) -> &[AllowedSignersEntry] {
        &self.entries
    }

    /// A line trusting `key` for `principal` in every namespace. The
    /// principal is written as a pattern list (so `*` and `,` keep their
    /// meaning); it is quoted if it contains whitespace, and characters that
    /// no allowed signers line can hold (double quotes, control characters
    /// such as newlines) are dropped so the result is always one line.
    pub fn line_for(principal: &str, key: &PublicKey) -> String {
        format!("{} {}", field(principal), key.to_openssh(""))
    }

    /// Like [`AllowedSigners::line_for`], restricted to one namespace
    /// pattern list with `namespaces="..."`.
    pub fn line_for_namespace(principal: &str, key: &PublicKey, namespace: &str) -> String {
        let ns: String = namespace
            .chars()
            .filter(|c| !c.is_control() && *c != '"')
            .collect();
        format!(
            "{} namespaces=\"{ns}\" {}",
            field(principal),
            key.to_openssh("")
        )
    }

    /// The first line (in file order) that lists `key`, matches `principal`
    /// if given, and permits `namespace`.
    pub(crate) fn find(
        &self,
        key: &PublicKey,
        namespace: &str,
        principal: Option<&str>,
    ) -> Lookup<'_> {
        let mut restricted = false;
        for entry in &self.entries {
            if entry.cert_authority || entry.key.as_ref() != Some(key) {
                continue;
            }
            if let Some(p) = principal {
                if !match_pattern_list(p, &entry.principals) {
                    continue;
                }
            }
            match &entry.namespaces {
                Some(ns) if !match_pattern_list(namespace, ns) => restricted = true,
                _ => return Lookup::Found(entry),
            }
        }
        if restricted {
            Lookup::NamespaceNotPermitted
        } else {
            Lookup::Absent
        }
    }
}

fn field(principal: &str) -> String {
    let p: String = principal
        .chars()
        .filter(|c| !c.is_control() && *c != '"')
        .collect();
    if p.is_empty() || p.starts_with('#') || p.contains([' ', '\t']) {
        format!("\"{p}\"")
    } else {
        p
    }
}

/// What is wrong with one line; [`SigningError::AllowedSigners`] names the
/// line and says where the format is described.
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("unterminated quote in principals")]
    UnterminatedPrincipals,
    #[error("empty principals field")]
    EmptyPrincipals,
    #[error("unterminated quote in options")]
    UnterminatedOptions,
    #[error("unknown option `{0}`")]
    UnknownOption(String),
    #[error("option `{0}` needs a double-quoted value")]
    UnquotedValue(String),
    #[error("more than one namespaces option")]
    SecondNamespaces,
    /// `valid-after` or `valid-before`.
    #[error("option `{0}` is not supported; remove it, or remove the key once it expires")]
    Validity(String),
    #[error("expected `keytype base64-key` after the principals and options")]
    NoKey,
    #[error("key is too long")]
    KeyTooLong,
    #[error("key is not valid base64")]
    NotBase64,
    /// The key data is malformed.
    #[error(transparent)]
    Key(#[from] SigningError),
    #[error("key type `{0}` does not match the key data")]
    TypeMismatch(String),
}

fn parse_line(line: usize, content: &str) -> Result<AllowedSignersEntry, LineError> {
    let (principals, rest) = take_field(content)?;
    if principals.is_empty() {
        return Err(LineError::EmptyPrincipals);
    }
    let rest = rest.trim_start_matches([' ', '\t']);

    // Key type names never contain '=', ',' or '"', and every option except
    // the `cert-authority` flag has a value, so this tells options from key.
    let first = rest.split([' ', '\t']).next().unwrap_or("");
    let has_options =
        first.contains(['=', ',', '"']) || first.eq_ignore_ascii_case("cert-authority");
    let (options, rest) = if has_options {
        split_options(rest)?
    } else {
        ("", rest)
    };

    let mut cert_authority = false;
    let mut namespaces = None;
    for option in split_unquoted(options, ',') {
        if option.eq_ignore_ascii_case("cert-authority") {
            cert_authority = true;
            continue;
        }
        let Some((name, value)) = option.split_once('=') else {
            return Err(LineError::UnknownOption(option.to_owned()));
        };
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .filter(|v| !v.contains('"'))
            .ok_or_else(|| LineError::UnquotedValue(name.to_owned()))?;
        if name.eq_ignore_ascii_case("namespaces") {
            if namespaces.is_some() {
                return Err(LineError::SecondNamespaces);
            }
            namespaces = Some(value.to_owned());
        } else if name.eq_ignore_ascii_case("valid-after")
            || name.eq_ignore_ascii_case("valid-before")
        {
            return Err(LineError::Validity(name.to_owned()));
        } else {
            return Err(LineError::UnknownOption(name.to_owned()));
        }
    }

    let mut fields = rest.split_ascii_whitespace();
    let (Some(key_type), Some(encoded)) = (fields.next(), fields.next()) else {
        return Err(LineError::NoKey);
    };
    // The rest of the line is a free-form comment.
    if key_type.len() > MAX_NAME || encoded.len() > MAX_KEY_BLOB * 2 {
        return Err(LineError::KeyTooLong);
    }
    let blob = base64::decode(encoded).ok_or(LineError::NotBase64)?;
    let mut r = Reader::new(&blob, "public key");
    let inner_type = r.string(MAX_NAME)?;
    if inner_type != key_type.as_bytes() {
        return Err(LineError::TypeMismatch(key_type.to_owned()));
    }
    let key = if key_type == KEY_TYPE {
        Some(PublicKey::from_blob(&blob)?)
    } else {
        None
    };
    Ok(AllowedSignersEntry {
        line,
        principals: principals.to_owned(),
        namespaces,
        cert_authority,
        key_type: key_type.to_owned(),
        key,
    })
}

/// The first field: either `"..."` (up to the next quote, no escapes, as
/// OpenSSH's strdelimw) or everything up to the first space or tab.
fn take_field(s: &str) -> Result<(&str, &str), LineError> {
    if let Some(quoted) = s.strip_prefix('"') {
        quoted
            .split_once('"')
            .ok_or(LineError::UnterminatedPrincipals)
    } else {
        Ok(s.split_once([' ', '\t']).unwrap_or((s, "")))
    }
}

/// The options field runs to the first space or tab outside double quotes.
fn split_options(s: &str) -> Result<(&str, &str), LineError> {
    let mut in_quote = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => in_quote = !in_quote,
            ' ' | '\t' if !in_quote => return Ok(s.split_at(i)),
            _ => {}
        }
    }
    if in_quote {
        Err(LineError::UnterminatedOptions)
    } else {
        Ok((s, ""))
    }
}

/// Splits on `sep` outside double quotes; yields nothing for "".
fn split_unquoted(s: &str, sep: char) -> impl Iterator<Item = &str> {
    let mut in_quote = false;
    s.split(move |c| {
        if c == '"' {
            in_quote = !in_quote;
        }
        c == sep && !in_quote
    })
    .filter(|part| !part.is_empty())
}

/// OpenSSH `match_pattern_list`: comma-separated patterns, `!` negates.
/// True if some positive pattern matches and no negated one does.
pub(crate) fn match_pattern_list(s: &str, list: &str) -> bool {
    let mut positive = false;
    for pattern in list.split(',') {
        let (negated, pattern) = match pattern.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, pattern),
        };
        if match_pattern(s.as_bytes(), pattern.as_bytes()) {
            if negated {
                return false;
            }
            positive = true;
        }
    }
    positive
}

/// OpenSSH `match_pattern`: `*` any run of bytes, `?` one byte, otherwise
/// exact (case-sensitive). Iterative, with backtracking only to the last
/// `*`, so the cost is O(len(s) * len(p)) whatever the input.
fn match_pattern(s: &[u8], p: &[u8]) -> bool {
    let (mut si, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while let Some(&c) = s.get(si) {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&pc) if pc == b'?' || pc == c => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    while p.get(pi) == Some(&b'*') {
        pi += 1;
    }
    pi == p.len()
}
