//! Points in time as registries write them: RFC 3339 (PEP 700
//! `upload-time`, npm's `time`, `--exclude-newer`).
//!
//! A [`Timestamp`] is an instant (seconds and nanoseconds since the Unix
//! epoch, UTC), so `2024-01-31T12:00:00Z`, `2024-01-31T12:00:00.000Z` and
//! `2024-01-31T13:00:00+01:00` are equal. The text a registry served is
//! kept by whoever needs it verbatim; this type only orders and compares.

use std::fmt;

/// An instant, UTC, to the nanosecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp {
    secs: i64,
    nanos: u32,
}

/// Why a text is not an RFC 3339 time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidTimestamp(pub String);

impl fmt::Display for InvalidTimestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not an RFC 3339 time (give e.g. 2025-06-01T00:00:00Z or 2025-06-01T02:00:00+02:00)",
            self.0
        )
    }
}

impl std::error::Error for InvalidTimestamp {}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `(year, month, day)` of a count of days since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A small reader over the bytes of a time.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn digits(&mut self, n: usize) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..n {
            let b = *self.bytes.get(self.at)?;
            if !b.is_ascii_digit() {
                return None;
            }
            v = v * 10 + u32::from(b - b'0');
            self.at += 1;
        }
        Some(v)
    }

    fn byte(&mut self, want: &[u8]) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        if want.contains(&b) {
            self.at += 1;
            Some(b)
        } else {
            None
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }
}

impl Timestamp {
    /// Seconds since the epoch, UTC, and nanoseconds.
    pub fn from_unix(secs: i64, nanos: u32) -> Self {
        Self {
            secs: secs + i64::from(nanos / 1_000_000_000),
            nanos: nanos % 1_000_000_000,
        }
    }

    /// Now, from the system clock.
    pub fn now() -> Self {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Self::from_unix(
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        )
    }

    pub fn unix_secs(&self) -> i64 {
        self.secs
    }

    /// Parses RFC 3339: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of up to
    /// nine digits (more are refused), then `Z` or `±HH:MM`. `t` and `z`
    /// in lower case and a space for `T` are accepted, as RFC 3339 allows.
    pub fn parse(text: &str) -> Result<Self, InvalidTimestamp> {
        Self::read(text.as_bytes()).ok_or_else(|| InvalidTimestamp(text.to_string()))
    }

    fn read(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > 64 {
            return None;
        }
        let mut r = Reader { bytes, at: 0 };
        let year = r.digits(4)?;
        r.byte(b"-")?;
        let month = r.digits(2)?;
        r.byte(b"-")?;
        let day = r.digits(2)?;
        r.byte(b"Tt ")?;
        let hour = r.digits(2)?;
        r.byte(b":")?;
        let minute = r.digits(2)?;
        r.byte(b":")?;
        let second = r.digits(2)?;
        let mut nanos = 0u32;
        if r.byte(b".").is_some() {
            let mut n = 0;
            while r.peek().is_some_and(|b| b.is_ascii_digit()) {
                if n == 9 {
                    return None;
                }
                nanos = nanos * 10 + r.digits(1)?;
                n += 1;
            }
            if n == 0 {
                return None;
            }
            nanos *= 10u32.pow(9 - n);
        }
        let offset_secs: i64 = match r.byte(b"Zz+-")? {
            b'Z' | b'z' => 0,
            sign => {
                let h = r.digits(2)?;
                r.byte(b":")?;
                let m = r.digits(2)?;
                if h > 23 || m > 59 {
                    return None;
                }
                let s = i64::from(h * 3600 + m * 60);
                if sign == b'-' {
                    -s
                } else {
                    s
                }
            }
        };
        if r.at != bytes.len() {
            return None;
        }
        let y = i64::from(year);
        // A leap second (:60) is read as the second after :59.
        let valid = (1..=12).contains(&month)
            && day >= 1
            && day <= days_in_month(y, month)
            && hour <= 23
            && minute <= 59
            && second <= 60;
        if !valid {
            return None;
        }
        let secs = days_from_civil(y, month, day) * 86_400
            + i64::from(hour * 3600 + minute * 60 + second)
            - offset_secs;
        Some(Self { secs, nanos })
    }

    /// RFC 3339 UTC, `Z`, with the fraction only when there is one
    /// (`2025-06-01T00:00:00Z`, `2025-06-01T00:00:00.5Z`).
    pub fn to_rfc3339(&self) -> String {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let mut out = format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        );
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            out.push('.');
            out.push_str(frac.trim_end_matches('0'));
        }
        out.push('Z');
        out
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_registries_write() {
        let t = |s| Timestamp::parse(s).unwrap();
        // PyPI's PEP 700 upload-time, npm's time, and an offset.
        assert_eq!(t("2024-01-31T12:00:00.123456Z").unix_secs(), 1_706_702_400);
        assert_eq!(
            t("2024-01-31T12:00:00.123Z"),
            t("2024-01-31T12:00:00.123000Z")
        );
        assert_eq!(t("2024-01-31T13:00:00+01:00"), t("2024-01-31T12:00:00Z"));
        assert_eq!(t("1970-01-01T00:00:00Z").unix_secs(), 0);
        assert_eq!(t("1969-12-31T23:59:59Z").unix_secs(), -1);
        assert!(t("2025-06-01T00:00:00Z") < t("2025-06-01T00:00:00.000001Z"));
        assert_eq!(
            t("2024-02-29T00:00:00Z").to_rfc3339(),
            "2024-02-29T00:00:00Z"
        );
        assert_eq!(
            t("2024-02-29T00:00:00.50Z").to_rfc3339(),
            "2024-02-29T00:00:00.5Z"
        );
    }

    #[test]
    fn round_trips_every_day_of_four_centuries() {
        let mut secs = -12_219_292_800i64; // 1582-10-15
        while secs < 4_102_444_800 {
            let ts = Timestamp::from_unix(secs, 0);
            assert_eq!(Timestamp::parse(&ts.to_rfc3339()), Ok(ts), "{ts}");
            secs += 86_400 * 7 + 3_601;
        }
    }

    #[test]
    fn refuses_what_is_not_rfc_3339() {
        for bad in [
            "",
            "2024-01-31",
            "2024-01-31T12:00:00",
            "2024-01-31T12:00Z",
            "2024-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-31T24:00:00Z",
            "2024-01-31T12:00:00.Z",
            "2024-01-31T12:00:00.1234567890Z",
            "2024-01-31T12:00:00+1:00",
            "2024-01-31T12:00:00Zjunk",
            "２０２４-01-31T12:00:00Z",
            "yesterday",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
    }
}
