//! How a judge reads one answer to a request that a conformant mirror must
//! refuse, and how it tells that a request was forwarded upstream.

use egress_model::{Exchange, Observation, ProbeRecord, UpstreamRequest, Url};

/// What an answer amounts to, from the point of view of a refusal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the target served something.
    Served(u16),
    /// 3xx whose `Location` leaves the target's origin.
    RedirectOffOrigin(String),
    /// 3xx that stays on the target's origin.
    RedirectSameOrigin(String),
    /// 502 or 504: the target tried to reach another server for us.
    Gateway(u16),
    /// Any other status: a refusal.
    Refused(u16),
    /// No valid HTTP answer (reset, timeout, garbage): the request was not
    /// honoured, so it counts as refused once a control showed the target alive.
    NoAnswer,
}

pub fn classify(origin: &Url, ex: &Exchange) -> Answer {
    let Some(r) = &ex.response else {
        return Answer::NoAnswer;
    };
    let Some(status) = r.status else {
        return Answer::NoAnswer;
    };
    match status {
        200..=299 => Answer::Served(status),
        300..=399 => {
            let loc = r.header("location").unwrap_or_default().to_string();
            let base = crate::facts::request_url(origin, ex);
            match base.join(&loc) {
                Ok(u) if u.same_origin(origin) => Answer::RedirectSameOrigin(loc),
                _ if loc.is_empty() => Answer::RedirectSameOrigin(loc),
                _ => Answer::RedirectOffOrigin(loc),
            }
        }
        502 | 504 => Answer::Gateway(status),
        _ => Answer::Refused(status),
    }
}

/// Marker tokens look like `ecm` followed by 16 hex digits; each probe puts
/// fresh ones in the requests it sends so that a forwarded request is
/// recognised at the controlled upstream without guessing.
pub fn tokens_in(bytes: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(window) = bytes.get(i..i + 19) {
        let is_token = window
            .strip_prefix(b"ecm")
            .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit));
        if is_token {
            out.push(String::from_utf8_lossy(window).into_owned());
            i += 19;
        } else {
            i += 1;
        }
    }
    out
}

pub fn upstream_log(record: &ProbeRecord) -> impl Iterator<Item = &UpstreamRequest> {
    record.observations.iter().flat_map(|o| match o {
        Observation::UpstreamLog { requests, .. } => requests.as_slice(),
        _ => &[],
    })
}

pub fn has_upstream_log(record: &ProbeRecord) -> bool {
    record
        .observations
        .iter()
        .any(|o| matches!(o, Observation::UpstreamLog { .. }))
}

/// Upstream requests that carry a token from one of this record's requests.
pub fn forwarded(record: &ProbeRecord) -> Vec<&UpstreamRequest> {
    let tokens: Vec<String> = record
        .exchanges
        .iter()
        .flat_map(|e| tokens_in(e.request.as_bytes()))
        .collect();
    if tokens.is_empty() {
        return Vec::new();
    }
    upstream_log(record)
        .filter(|u| tokens.iter().any(|t| u.target.contains(t.as_str())))
        .collect()
}

/// The first upstream request that carries a token from one of this
/// record's requests, with the exchange that sent that token: a forwarded
/// request observed when it arrived.
pub fn forwarded_by(record: &ProbeRecord) -> Option<(&Exchange, &UpstreamRequest)> {
    upstream_log(record).find_map(|u| {
        record.exchanges.iter().find_map(|e| {
            tokens_in(e.request.as_bytes())
                .iter()
                .any(|t| u.target.contains(t.as_str()))
                .then_some((e, u))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tokens() {
        let t = tokens_in(b"GET /simple/ecm0123456789abcdef/?x=ecmffffffffffffffff HTTP/1.1 ecmzz");
        assert_eq!(t, ["ecm0123456789abcdef", "ecmffffffffffffffff"]);
    }
}
