//! PEP 691 server-driven content negotiation.

use egress_model::Accept;

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
    let accept = Accept::parse(accept);
    let mut best: Option<(u16, Format, &'static str)> = None;
    for (format, content_type, names) in OFFERS {
        let q = accept.quality(names);
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
