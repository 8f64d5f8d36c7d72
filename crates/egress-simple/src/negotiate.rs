//! PEP 691 server-driven content negotiation.

use crate::{Format, HTML_LATEST, HTML_LEGACY, HTML_V1, JSON_LATEST, JSON_V1};

/// What the server can send, in its order of preference (ties go to the
/// earlier entry), with the media types a client may name to ask for it. The
/// `latest` aliases answer with the concrete v1 type, as PEP 691 requires.
const OFFERS: [(Format, &str, &[&str]); 3] = [
    (Format::Json, JSON_V1, &[JSON_V1, JSON_LATEST]),
    (Format::Html, HTML_V1, &[HTML_V1, HTML_LATEST]),
    (Format::Html, HTML_LEGACY, &[HTML_LEGACY]),
];

/// Picks the response format for an `Accept` header.
///
/// Each offer gets the q-value of the most specific media range matching it
/// (RFC 9110 §12.5.1: `type/subtype` over `type/*` over `*/*`); the highest
/// q above zero wins, ties going to the server order JSON v1, HTML v1,
/// text/html. A missing or blank header gets legacy `text/html`, which every
/// client that sends no `Accept` understands. `None` means nothing offered is
/// acceptable and the caller should answer 406. Returns the format and the
/// exact `Content-Type` to send.
pub fn negotiate(accept: Option<&str>) -> Option<(Format, &'static str)> {
    let accept = match accept {
        Some(a) if !a.trim().is_empty() => a,
        _ => return Some((Format::Html, HTML_LEGACY)),
    };
    let ranges: Vec<MediaRange> = accept.split(',').filter_map(MediaRange::parse).collect();
    let mut best: Option<(u16, Format, &'static str)> = None;
    for (format, content_type, names) in OFFERS {
        let q = quality(&ranges, names);
        let better = match best {
            None => true,
            Some((best_q, _, _)) => q > best_q,
        };
        if q > 0 && better {
            best = Some((q, format, content_type));
        }
    }
    best.map(|(_, format, content_type)| (format, content_type))
}

/// One element of an `Accept` header, lowercased, q in thousandths.
struct MediaRange {
    kind: String,
    subtype: String,
    q: u16,
}

impl MediaRange {
    /// `None` for elements that are not a valid media range; they are ignored
    /// rather than failing the whole header.
    fn parse(element: &str) -> Option<Self> {
        let mut parts = element.split(';');
        let media = parts.next()?.trim().to_ascii_lowercase();
        let (kind, subtype) = media.split_once('/')?;
        let valid = |s: &str| !s.is_empty() && !s.contains('/') && !s.contains(char::is_whitespace);
        if !valid(kind) || !valid(subtype) || (kind == "*" && subtype != "*") {
            return None;
        }
        let mut q = 1000;
        for param in parts {
            let Some((name, value)) = param.split_once('=') else {
                continue;
            };
            if name.trim().eq_ignore_ascii_case("q") {
                q = parse_q(value)?;
                // Parameters after q are accept-extensions; nothing to read.
                break;
            }
        }
        Some(MediaRange {
            kind: kind.to_string(),
            subtype: subtype.to_string(),
            q,
        })
    }
}

/// RFC 9110 qvalue (`0`, `0.xxx`, `1`, `1.000`) in thousandths; anything else
/// is malformed and drops its element.
fn parse_q(value: &str) -> Option<u16> {
    let value = value.trim();
    let (int, frac) = value.split_once('.').unwrap_or((value, ""));
    if frac.len() > 3 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut q: u16 = match int {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    for (digit, scale) in frac.bytes().zip([100, 10, 1]) {
        q += u16::from(digit - b'0') * scale;
    }
    (q <= 1000).then_some(q)
}

/// The q-value the header gives to an offer known by `names`: the most
/// specific matching range decides; equally specific ones give their best.
fn quality(ranges: &[MediaRange], names: &[&str]) -> u16 {
    let mut best: Option<(u8, u16)> = None;
    for name in names {
        let Some((kind, subtype)) = name.split_once('/') else {
            continue;
        };
        for range in ranges {
            let specificity = if range.kind == kind && range.subtype == subtype {
                2
            } else if range.kind == kind && range.subtype == "*" {
                1
            } else if range.kind == "*" && range.subtype == "*" {
                0
            } else {
                continue;
            };
            let better = match best {
                None => true,
                Some((s, q)) => specificity > s || (specificity == s && range.q > q),
            };
            if better {
                best = Some((specificity, range.q));
            }
        }
    }
    best.map_or(0, |(_, q)| q)
}
