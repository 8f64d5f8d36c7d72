//! ASCII armor (RFC 4880 section 6) and the cleartext signature framework
//! (section 7), read the way apt's `SplitClearSignedFile` and gpgv read
//! an InRelease file.

use super::error::OpenPgpError;
use egress_model::base64;

pub(crate) const SIGNATURE: &str = "SIGNATURE";
pub(crate) const PUBLIC_KEY_BLOCK: &str = "PUBLIC KEY BLOCK";
const SIGNED_MESSAGE_BEGIN: &str = "-----BEGIN PGP SIGNED MESSAGE-----";
const SIGNATURE_BEGIN: &str = "-----BEGIN PGP SIGNATURE-----";

/// CRC-24 of RFC 4880 section 6.1.
pub(crate) fn crc24(data: &[u8]) -> u32 {
    let mut crc: u32 = 0x00B7_04CE;
    for &b in data {
        crc ^= u32::from(b) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x0100_0000 != 0 {
                crc ^= 0x0186_4CFB;
            }
        }
    }
    crc & 0x00FF_FFFF
}

/// Armors `data` under `-----BEGIN PGP {label}-----`, base64 lines of 64
/// characters and the CRC-24 checksum line, as gpg writes it.
pub(crate) fn armor(label: &str, data: &[u8]) -> String {
    let encoded = base64::encode(data);
    let mut out = format!("-----BEGIN PGP {label}-----\n\n");
    let mut rest = encoded.as_str();
    while !rest.is_empty() {
        // base64 is ASCII: every offset is a char boundary.
        let (line, tail) = rest.split_at(rest.len().min(64));
        out.push_str(line);
        out.push('\n');
        rest = tail;
    }
    let [_, a, b, c] = crc24(data).to_be_bytes();
    out.push('=');
    out.push_str(&base64::encode(&[a, b, c]));
    out.push('\n');
    out.push_str(&format!("-----END PGP {label}-----\n"));
    out
}

/// Lines of `text` split on `\n`, each with its trailing whitespace
/// (spaces, tabs, `\r`) removed, numbered from 1.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .map(|l| l.trim_end_matches([' ', '\t', '\r']))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

/// Decodes every armored block labelled `label` in `text`. With `strict`,
/// anything but blank lines outside the blocks is an error (a signature
/// file); without, it is ignored as gpg does (a keyring with comments).
pub(crate) fn dearmor_all(
    text: &str,
    label: &str,
    strict: bool,
) -> Result<Vec<Vec<u8>>, OpenPgpError> {
    let begin = format!("-----BEGIN PGP {label}-----");
    let mut out = Vec::new();
    let mut it = lines(text);
    while let Some((n, line)) = it.next() {
        if line == begin {
            out.push(block_body(&mut it, label, n)?);
        } else if strict && !line.is_empty() {
            return Err(OpenPgpError::Armor {
                line: n,
                detail: format!("text outside the `{begin}` block"),
            });
        }
    }
    if out.is_empty() {
        return Err(OpenPgpError::Armor {
            line: 1,
            detail: format!("no `{begin}` line"),
        });
    }
    Ok(out)
}

/// Reads the headers, base64 body, checksum and END line of one block whose
/// BEGIN line (number `begin_line`) was just consumed.
fn block_body<'a>(
    it: &mut impl Iterator<Item = (usize, &'a str)>,
    label: &str,
    begin_line: usize,
) -> Result<Vec<u8>, OpenPgpError> {
    let end = format!("-----END PGP {label}-----");
    let mut last = begin_line;
    // Armor headers ("Version: ...", "Comment: ..."), up to a blank line.
    loop {
        let Some((n, line)) = it.next() else {
            return Err(OpenPgpError::Armor {
                line: last,
                detail: "armor ends inside its headers".into(),
            });
        };
        last = n;
        if line.is_empty() {
            break;
        }
        if !line.contains(": ") {
            return Err(OpenPgpError::Armor {
                line: n,
                detail: "expected an armor header `Key: value` or a blank line".into(),
            });
        }
    }
    let mut body = String::new();
    let mut checksum: Option<(usize, &str)> = None;
    loop {
        let Some((n, line)) = it.next() else {
            return Err(OpenPgpError::Armor {
                line: last,
                detail: format!("no `{end}` line"),
            });
        };
        last = n;
        if line == end {
            break;
        }
        if checksum.is_some() {
            return Err(OpenPgpError::Armor {
                line: n,
                detail: format!("expected `{end}` after the checksum line"),
            });
        }
        if let Some(crc) = line.strip_prefix('=') {
            checksum = Some((n, crc));
        } else if line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=')
        {
            body.push_str(line);
        } else {
            return Err(OpenPgpError::Armor {
                line: n,
                detail: "not a base64 line".into(),
            });
        }
    }
    let data = base64::decode(&body).ok_or_else(|| OpenPgpError::Armor {
        line: last,
        detail: "the armored body is not valid base64".into(),
    })?;
    if data.is_empty() {
        return Err(OpenPgpError::Armor {
            line: last,
            detail: "the armored block is empty".into(),
        });
    }
    if let Some((n, crc)) = checksum {
        let bytes = base64::decode(crc).unwrap_or_default();
        let [a, b, c] = <[u8; 3]>::try_from(bytes).map_err(|_| OpenPgpError::Armor {
            line: n,
            detail: "the checksum line is not `=` and four base64 characters".into(),
        })?;
        let expected = u32::from_be_bytes([0, a, b, c]);
        let actual = crc24(&data);
        if expected != actual {
            return Err(OpenPgpError::ArmorChecksum { expected, actual });
        }
    }
    Ok(data)
}

/// A parsed cleartext-signed message.
#[derive(Debug)]
pub(crate) struct Cleartext {
    /// The text as apt reads it: dash-unescaped lines, trailing whitespace
    /// removed, each ending in `\n`.
    pub(crate) text: Vec<u8>,
    /// The bytes a type 0x01 signature covers: the same lines joined by
    /// CRLF, without the line break before the signature armor.
    pub(crate) signed: Vec<u8>,
    /// Digest names from the `Hash:` headers (uppercase), if any.
    pub(crate) hashes: Vec<String>,
    /// The binary signature packets.
    pub(crate) signature: Vec<u8>,
}

/// Splits an InRelease into text and signature. As apt does, the file must
/// start with the BEGIN line and hold nothing after the signature but blank
/// lines; as gpg does, a line starting with `-` in the text must be
/// dash-escaped.
pub(crate) fn parse_cleartext(input: &[u8]) -> Result<Cleartext, OpenPgpError> {
    let text = std::str::from_utf8(input).map_err(|e| OpenPgpError::Cleartext {
        line: line_of(input, e.valid_up_to()),
        detail: "not UTF-8 text".into(),
    })?;
    let mut it = lines(text);
    match it.next() {
        Some((_, l)) if l == SIGNED_MESSAGE_BEGIN => {}
        _ => {
            return Err(OpenPgpError::Cleartext {
                line: 1,
                detail: format!("the first line is not `{SIGNED_MESSAGE_BEGIN}`"),
            })
        }
    }
    let mut hashes = Vec::new();
    let mut last = 1;
    loop {
        let Some((n, line)) = it.next() else {
            return Err(OpenPgpError::Cleartext {
                line: last,
                detail: "the message ends inside its headers".into(),
            });
        };
        last = n;
        if line.is_empty() {
            break;
        }
        let Some(list) = line.strip_prefix("Hash: ") else {
            return Err(OpenPgpError::Cleartext {
                line: n,
                detail: "only `Hash:` headers are allowed before the blank line".into(),
            });
        };
        hashes.extend(list.split(',').map(|h| h.trim().to_ascii_uppercase()));
    }
    let mut body_lines: Vec<&str> = Vec::new();
    loop {
        let Some((n, line)) = it.next() else {
            return Err(OpenPgpError::Cleartext {
                line: last,
                detail: format!("no `{SIGNATURE_BEGIN}` line"),
            });
        };
        last = n;
        if line == SIGNATURE_BEGIN {
            break;
        }
        if let Some(unescaped) = line.strip_prefix("- ") {
            body_lines.push(unescaped);
        } else if line.starts_with('-') {
            return Err(OpenPgpError::Cleartext {
                line: n,
                detail: "a text line starting with `-` is not dash-escaped (`- `)".into(),
            });
        } else {
            body_lines.push(line);
        }
    }
    let signature = block_body(&mut it, SIGNATURE, last)?;
    if let Some((n, _)) = it.find(|(_, l)| !l.is_empty()) {
        return Err(OpenPgpError::Cleartext {
            line: n,
            detail: "text after the signature (a second block or appended data)".into(),
        });
    }
    let mut plain = Vec::with_capacity(input.len());
    let mut signed = Vec::with_capacity(input.len());
    for (i, line) in body_lines.iter().enumerate() {
        // Unescaping may have exposed trailing whitespace after "- ".
        let line = line.trim_end_matches([' ', '\t', '\r']);
        if i > 0 {
            signed.extend_from_slice(b"\r\n");
        }
        signed.extend_from_slice(line.as_bytes());
        plain.extend_from_slice(line.as_bytes());
        plain.push(b'\n');
    }
    Ok(Cleartext {
        text: plain,
        signed,
        hashes,
        signature,
    })
}

/// Writes the cleartext framework around `text` (dash-escaping lines that
/// start with `-`) and returns it with the bytes a type 0x01 signature must
/// cover, computed from the written text by the reader's own rules.
pub(crate) fn cleartext_body(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    out.push_str(SIGNED_MESSAGE_BEGIN);
    out.push_str("\nHash: SHA512\n\n");
    let body = text.strip_suffix('\n').unwrap_or(text);
    for line in body.split('\n') {
        if line.starts_with('-') {
            out.push_str("- ");
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The bytes a text-mode signature covers over the lines of `text`, by the
/// rules [`parse_cleartext`] reads them back with.
pub(crate) fn cleartext_signed_bytes(text: &str) -> Vec<u8> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut signed = Vec::with_capacity(text.len() + 64);
    for (i, line) in body.split('\n').enumerate() {
        if i > 0 {
            signed.extend_from_slice(b"\r\n");
        }
        signed.extend_from_slice(line.trim_end_matches([' ', '\t', '\r']).as_bytes());
    }
    signed
}

/// Text mode canonical form for a detached type 0x01 signature: every line
/// ending becomes CRLF.
pub(crate) fn canonical_text(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() + data.len() / 32);
    let mut prev = 0u8;
    for &b in data {
        if b == b'\n' && prev != b'\r' {
            out.push(b'\r');
        }
        out.push(b);
        prev = b;
    }
    out
}

fn line_of(input: &[u8], offset: usize) -> usize {
    input.iter().take(offset).filter(|&&b| b == b'\n').count() + 1
}
