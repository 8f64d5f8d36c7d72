//! `Range: bytes=...` (RFC 9110 section 14): one range of a blob, as a
//! client resuming a download or reading a file's middle asks it. What is
//! not one valid range of the `bytes` unit is ignored (the whole blob is
//! sent, as the RFC allows), so a malformed header can never make the
//! mirror answer anything but the bytes it serves whole.

/// What the mirror does with a request's `Range` for a blob of `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranged {
    /// Send the whole blob (no range, or one the mirror does not honour:
    /// malformed, another unit, several ranges).
    Whole,
    /// Send bytes `start..start + len` with `206` and
    /// `Content-Range: bytes start-(start+len-1)/size`.
    Part { start: u64, len: u64 },
    /// `416` with `Content-Range: bytes */size`: the range starts at or
    /// after the end, or asks for the last 0 bytes.
    Unsatisfiable,
}

/// The longest `Range` value read; longer ones are ignored.
const MAX_VALUE: usize = 256;

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The answer to `value` (the request's one `Range` field) for a blob of
/// `size` bytes.
pub fn parse(value: &str, size: u64) -> Ranged {
    if value.len() > MAX_VALUE {
        return Ranged::Whole;
    }
    let Some(spec) = value.trim().strip_prefix("bytes=") else {
        return Ranged::Whole;
    };
    let spec = spec.trim();
    if spec.contains(',') {
        return Ranged::Whole;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Ranged::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    match (first.is_empty(), last.is_empty()) {
        // `-N`: the last N bytes.
        (true, false) => match number(last) {
            Some(0) => Ranged::Unsatisfiable,
            Some(_) if size == 0 => Ranged::Unsatisfiable,
            Some(n) => {
                let len = n.min(size);
                Ranged::Part {
                    start: size - len,
                    len,
                }
            }
            None => Ranged::Whole,
        },
        // `N-` and `N-M`.
        (false, _) => {
            let Some(start) = number(first) else {
                return Ranged::Whole;
            };
            let end = if last.is_empty() {
                None
            } else {
                match number(last) {
                    Some(e) if e >= start => Some(e),
                    _ => return Ranged::Whole,
                }
            };
            if start >= size {
                return Ranged::Unsatisfiable;
            }
            let end = end.map_or(size - 1, |e| e.min(size - 1));
            Ranged::Part {
                start,
                len: end - start + 1,
            }
        }
        (true, true) => Ranged::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_of_bytes() {
        let p = |start, len| Ranged::Part { start, len };
        for (v, want) in [
            ("bytes=0-0", p(0, 1)),
            ("bytes=0-", p(0, 100)),
            ("bytes=10-19", p(10, 10)),
            ("bytes=90-1000", p(90, 10)),
            ("bytes=-10", p(90, 10)),
            ("bytes=-1000", p(0, 100)),
            (" bytes= 5 - 6 ", p(5, 2)),
            ("bytes=99-99", p(99, 1)),
            ("bytes=100-", Ranged::Unsatisfiable),
            ("bytes=100-200", Ranged::Unsatisfiable),
            ("bytes=-0", Ranged::Unsatisfiable),
        ] {
            assert_eq!(parse(v, 100), want, "{v:?}");
        }
    }

    #[test]
    fn anything_else_is_the_whole_blob() {
        for v in [
            "",
            "bytes",
            "bytes=",
            "bytes=-",
            "items=0-1",
            "bytes=5-3",
            "bytes=0-1,5-6",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes=-+1",
            "bytes=0x10-",
            "bytes=99999999999999999999-",
            "bytes=1-99999999999999999999",
            "bytes=١-٢",
            "bytes=0-1 2",
            &format!("bytes={}-", "0".repeat(300)),
        ] {
            assert_eq!(parse(v, 100), Ranged::Whole, "{v:?}");
        }
        // An empty blob has no byte to give.
        assert_eq!(parse("bytes=0-", 0), Ranged::Unsatisfiable);
        assert_eq!(parse("bytes=-5", 0), Ranged::Unsatisfiable);
        // The largest sizes do not overflow.
        assert_eq!(
            parse("bytes=18446744073709551614-", u64::MAX),
            Ranged::Part {
                start: u64::MAX - 1,
                len: 1
            }
        );
    }
}
