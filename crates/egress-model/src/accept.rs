//! The one `Accept` header parser (RFC 9110 §12.5.1): a typed list of media
//! ranges with their q-values. Each server decides with it what it sends.

/// One element of an `Accept` header: `type/subtype`, lowercased, and its
/// q-value in thousandths (1000 when none is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaRange {
    pub kind: String,
    pub subtype: String,
    pub q: u16,
}

/// A parsed `Accept` header. Elements that are not a valid media range, or
/// whose q-value is malformed, are dropped rather than failing the header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accept {
    pub ranges: Vec<MediaRange>,
}

impl Accept {
    pub fn parse(header: &str) -> Self {
        Self {
            ranges: header.split(',').filter_map(MediaRange::parse).collect(),
        }
    }

    /// The q-value for an offer known by any of `names` (`type/subtype`):
    /// the most specific matching range decides (`type/subtype` over
    /// `type/*` over `*/*`); equally specific ones give their best. 0 when
    /// nothing matches.
    pub fn quality(&self, names: &[&str]) -> u16 {
        let mut best: Option<(u8, u16)> = None;
        for (kind, subtype) in names.iter().filter_map(|n| n.split_once('/')) {
            for range in &self.ranges {
                let Some(specificity) = range.specificity(kind, subtype) else {
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

    /// The best q-value of the ranges that name `media` exactly (a wildcard
    /// is a name here too: `*/*`, `application/*`), or `None`.
    pub fn named(&self, media: &str) -> Option<u16> {
        let (kind, subtype) = media.split_once('/')?;
        self.ranges
            .iter()
            .filter(|r| {
                r.kind.eq_ignore_ascii_case(kind) && r.subtype.eq_ignore_ascii_case(subtype)
            })
            .map(|r| r.q)
            .max()
    }
}

impl MediaRange {
    /// `None` for elements that are not a valid media range.
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

    /// 2 for `type/subtype`, 1 for `type/*`, 0 for `*/*`; `None` when the
    /// range does not match.
    fn specificity(&self, kind: &str, subtype: &str) -> Option<u8> {
        if self.kind == kind && self.subtype == subtype {
            Some(2)
        } else if self.kind == kind && self.subtype == "*" {
            Some(1)
        } else if self.kind == "*" && self.subtype == "*" {
            Some(0)
        } else {
            None
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_and_q_values() {
        let a = Accept::parse("Application/JSON;q=0.5, text/*;level=1, */*;q=0, bad, x/y;q=2");
        let got: Vec<(&str, &str, u16)> = a
            .ranges
            .iter()
            .map(|r| (r.kind.as_str(), r.subtype.as_str(), r.q))
            .collect();
        assert_eq!(
            got,
            [
                ("application", "json", 500),
                ("text", "*", 1000),
                ("*", "*", 0)
            ]
        );
        assert_eq!(a.quality(&["application/json"]), 500);
        assert_eq!(a.quality(&["text/html"]), 1000);
        assert_eq!(a.quality(&["image/png"]), 0);
        assert_eq!(a.named("application/json"), Some(500));
        assert_eq!(a.named("text/html"), None);
        assert_eq!(a.named("*/*"), Some(0));
    }

    #[test]
    fn q_values() {
        for (text, q) in [
            ("0", Some(0)),
            ("1", Some(1000)),
            ("0.8", Some(800)),
            ("1.000", Some(1000)),
        ] {
            assert_eq!(parse_q(text), q, "{text}");
        }
        for bad in ["1.001", "0.8888", "2", "", "-0", "0.x", "é"] {
            assert_eq!(parse_q(bad), None, "{bad}");
        }
    }
}
