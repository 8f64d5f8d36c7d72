//! `Release` files: the top of a Debian repository, which names every index
//! with its size and digest ([`Release::parse`]), and the writer of one that
//! apt accepts ([`render_release`]).
//!
//! Only the `SHA256` section is read and written: apt 2.x needs one hash it
//! trusts, and SHA256 is the one the project addresses files by. `MD5Sum` and
//! `SHA1` sections are kept in [`Release::paragraph`] and otherwise ignored.

use crate::deb822::{parse_paragraphs, Paragraph};
use crate::path::IndexPath;
use crate::{parse_size, quote, AptFormatError};
use egress_model::Sha256Digest;
use std::collections::HashSet;

/// One index a `Release` lists: path relative to `dists/<suite>/`, size and
/// SHA256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub path: IndexPath,
    pub size: u64,
    pub digest: Sha256Digest,
}

/// A parsed `Release` (the text of an `InRelease` between its signature
/// armour, or a `Release` file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub origin: Option<String>,
    pub label: Option<String>,
    pub suite: Option<String>,
    pub codename: Option<String>,
    /// As written (RFC 2822, e.g. `Mon, 30 Nov 2026 02:21:41 UTC`).
    pub date: Option<String>,
    pub valid_until: Option<String>,
    pub architectures: Vec<String>,
    pub components: Vec<String>,
    /// `Acquire-By-Hash: yes`.
    pub acquire_by_hash: bool,
    /// The `SHA256` section in order. Empty when the section is absent.
    pub sha256: Vec<IndexEntry>,
    /// Every field as written.
    pub paragraph: Paragraph,
}

impl Release {
    /// Reads a `Release`: exactly one paragraph; a `SHA256` section of
    /// `<64 hex> <size> <path>` lines with safe, distinct paths;
    /// `Acquire-By-Hash` `yes` or `no` if present.
    pub fn parse(text: &str) -> Result<Self, AptFormatError> {
        let mut paragraphs = parse_paragraphs(text)?.into_iter();
        let Some(paragraph) = paragraphs.next() else {
            return Err(AptFormatError::ParagraphCount { line: 1, found: 0 });
        };
        if let Some(second) = paragraphs.next() {
            return Err(AptFormatError::ParagraphCount {
                line: second.line(),
                found: 2 + paragraphs.count(),
            });
        }
        let text_of = |name: &str| paragraph.get(name).map(str::to_string);
        let words = |name: &str| {
            paragraph
                .get(name)
                .map(|v| v.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default()
        };
        let acquire_by_hash = match paragraph.get("Acquire-By-Hash") {
            None | Some("no") => false,
            Some("yes") => true,
            Some(other) => {
                return Err(AptFormatError::BadValue {
                    line: paragraph.field_line("Acquire-By-Hash").unwrap_or(0),
                    field: "Acquire-By-Hash".into(),
                    why: format!("{:?} is neither yes nor no", quote(other)),
                })
            }
        };
        let sha256 = match paragraph.value_lines("SHA256") {
            Some(lines) => parse_sha256_section(&lines)?,
            None => Vec::new(),
        };
        Ok(Self {
            origin: text_of("Origin"),
            label: text_of("Label"),
            suite: text_of("Suite"),
            codename: text_of("Codename"),
            date: text_of("Date"),
            valid_until: text_of("Valid-Until"),
            architectures: words("Architectures"),
            components: words("Components"),
            acquire_by_hash,
            sha256,
            paragraph,
        })
    }

    /// Whether a source's `component` is one this Release serves, as apt
    /// reads it: any, when it lists no `Components`; else a listed one, or
    /// the part after the last `/` of a listed one (Debian's security
    /// archive lists `updates/main` for what every source calls `main`,
    /// and its indexes are `main/binary-<arch>/...`; apt's
    /// `debReleaseIndex::Load` keeps both spellings).
    pub fn has_component(&self, component: &str) -> bool {
        self.components.is_empty()
            || self.components.iter().any(|c| {
                c == component
                    || c.rsplit_once('/')
                        .is_some_and(|(_, last)| last == component)
            })
    }

    /// The `SHA256` entry for `path` (relative to `dists/<suite>/`).
    pub fn find(&self, path: &str) -> Option<&IndexEntry> {
        self.sha256.iter().find(|e| e.path.as_str() == path)
    }
}

fn parse_sha256_section(lines: &[(usize, &str)]) -> Result<Vec<IndexEntry>, AptFormatError> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for &(line, text) in lines {
        let bad = |why: String| AptFormatError::BadValue {
            line,
            field: "SHA256".into(),
            why,
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        let (hex, size, path) = match words.as_slice() {
            [] => continue,
            [hex, size, path] => (*hex, *size, *path),
            _ => {
                return Err(bad(format!(
                    "expected `<sha256 hex> <size> <path>`, got {:?}",
                    quote(text.trim())
                )))
            }
        };
        let digest = Sha256Digest::from_hex(hex)
            .map_err(|_| bad(format!("{:?} is not 64 hex digits", quote(hex))))?;
        let size = parse_size(size)
            .ok_or_else(|| bad(format!("size {:?} is not a decimal u64", quote(size))))?;
        let path = IndexPath::new(path).map_err(|e| bad(format!("path {:?}: {e}", quote(path))))?;
        if !seen.insert(path.clone()) {
            return Err(AptFormatError::DuplicateEntry {
                line,
                section: "SHA256",
                path: path.to_string(),
            });
        }
        out.push(IndexEntry { path, size, digest });
    }
    Ok(out)
}

/// What [`render_release`] writes besides the index list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseFields {
    pub origin: String,
    pub label: String,
    pub suite: String,
    pub codename: String,
    /// Seconds since the Unix epoch, written as RFC 2822 UTC.
    pub date: u64,
    /// Written as `Valid-Until` when set (apt then refuses the Release
    /// after that instant).
    pub valid_until: Option<u64>,
    pub architectures: Vec<String>,
    pub components: Vec<String>,
    pub description: Option<String>,
}

/// A `Release` that apt accepts: Origin, Label, Suite, Codename, Date (and
/// Valid-Until if set), Architectures, Components, Description if set,
/// `Acquire-By-Hash: yes` and the `SHA256` section, one
/// ` <hex> <size> <path>` line per entry in the order given.
///
/// Values are the caller's, not a server's; any line break or control
/// character in one is written as a space so it cannot add a field.
pub fn render_release(fields: &ReleaseFields, entries: &[IndexEntry]) -> String {
    let one_line = |s: &str| -> String {
        s.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect::<String>()
            .trim()
            .to_string()
    };
    let list = |items: &[String]| {
        items
            .iter()
            .map(|s| one_line(s))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut out = String::new();
    let mut field = |name: &str, value: String| {
        out.push_str(name);
        out.push_str(": ");
        out.push_str(&value);
        out.push('\n');
    };
    field("Origin", one_line(&fields.origin));
    field("Label", one_line(&fields.label));
    field("Suite", one_line(&fields.suite));
    field("Codename", one_line(&fields.codename));
    field("Date", rfc2822_utc(fields.date));
    if let Some(until) = fields.valid_until {
        field("Valid-Until", rfc2822_utc(until));
    }
    field("Architectures", list(&fields.architectures));
    field("Components", list(&fields.components));
    if let Some(description) = &fields.description {
        field("Description", one_line(description));
    }
    field("Acquire-By-Hash", "yes".into());
    out.push_str("SHA256:\n");
    for entry in entries {
        out.push_str(&format!(
            " {} {:>8} {}\n",
            entry.digest.to_hex(),
            entry.size,
            entry.path
        ));
    }
    out
}

/// `Mon, 30 Nov 2026 02:21:41 UTC`: the form Debian's archive writes and apt
/// reads, for `seconds` since the Unix epoch.
pub fn rfc2822_utc(seconds: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = seconds / 86_400;
    let rest = seconds % 86_400;
    let (year, month, day) = civil_from_days(days);
    let weekday = DAYS.get((days % 7) as usize).copied().unwrap_or("Thu");
    let month_name = MONTHS
        .get(month.saturating_sub(1) as usize)
        .copied()
        .unwrap_or("Jan");
    format!(
        "{weekday}, {day:02} {month_name} {year} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Seconds since the Unix epoch of a `Date` or `Valid-Until` value as
/// Debian's archives write them (`Mon, 30 Nov 2026 02:21:41 UTC`): an
/// optional weekday and comma, day, English month abbreviation, four-digit
/// year, `HH:MM:SS`, and `UTC`, `GMT`, `Z` or a `+HHMM`/`-HHMM` offset.
/// `None` for anything else, and for dates before 1970.
pub fn parse_rfc2822(text: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut words: Vec<&str> = text.split_whitespace().collect();
    if words.first().is_some_and(|w| w.ends_with(',')) {
        words.remove(0);
    }
    let [day, month, year, time, zone] = words.as_slice() else {
        return None;
    };
    let number = |s: &str, digits: std::ops::RangeInclusive<usize>| {
        (digits.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i64>().ok())
            .flatten()
    };
    let day = number(day, 1..=2)?;
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let year = number(year, 4..=4)?;
    let mut hms = time.split(':');
    let (Some(h), Some(m), Some(sec), None) = (hms.next(), hms.next(), hms.next(), hms.next())
    else {
        return None;
    };
    let (h, m, sec) = (number(h, 2..=2)?, number(m, 2..=2)?, number(sec, 2..=2)?);
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    let offset = match *zone {
        "UTC" | "GMT" | "Z" => 0,
        z => {
            let (sign, rest) = match z.as_bytes().first()? {
                b'+' => (1, z.get(1..)?),
                b'-' => (-1, z.get(1..)?),
                _ => return None,
            };
            let hhmm = number(rest, 4..=4)?;
            sign * ((hhmm / 100) * 3600 + (hhmm % 100) * 60)
        }
    };
    // Howard Hinnant's days-from-civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + m * 60 + sec - offset;
    u64::try_from(secs).ok()
}

/// Howard Hinnant's days-to-civil algorithm, for days since 1970-01-01.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The security archive's `Components: updates/main ...` serves the
    /// `main` every stock source names, as apt reads it.
    #[test]
    fn components_as_apt_reads_them() {
        let text = "Suite: bookworm-security\nComponents: updates/main updates/contrib\n";
        let r = Release::parse(text).unwrap();
        for c in ["main", "contrib", "updates/main"] {
            assert!(r.has_component(c), "{c}");
        }
        for c in ["non-free", "updates", "main/x"] {
            assert!(!r.has_component(c), "{c}");
        }
        let none = Release::parse("Suite: x\n").unwrap();
        assert!(none.has_component("anything"));
    }

    #[test]
    fn dates() {
        assert_eq!(rfc2822_utc(0), "Thu, 01 Jan 1970 00:00:00 UTC");
        // date -u -d @1796005301 -R
        assert_eq!(rfc2822_utc(1_796_005_301), "Mon, 30 Nov 2026 02:21:41 UTC");
        assert_eq!(rfc2822_utc(951_782_400), "Tue, 29 Feb 2000 00:00:00 UTC");
        assert_eq!(rfc2822_utc(4_133_980_799), "Fri, 31 Dec 2100 23:59:59 UTC");
        assert_eq!(rfc2822_utc(4_107_542_399), "Sun, 28 Feb 2100 23:59:59 UTC");
        for secs in [0, 951_782_400, 1_796_005_301, 4_107_542_399, 4_133_980_799] {
            assert_eq!(parse_rfc2822(&rfc2822_utc(secs)), Some(secs));
        }
        assert_eq!(
            parse_rfc2822("30 Nov 2026 03:21:41 +0100"),
            Some(1_796_005_301)
        );
        assert_eq!(
            parse_rfc2822("Mon, 30 Nov 2026 02:21:41 GMT"),
            Some(1_796_005_301)
        );
        for bad in [
            "",
            "Mon, 30 Nov 2026 02:21:41",
            "Mon, 30 Nvb 2026 02:21:41 UTC",
            "Mon, 32 Nov 2026 02:21:41 UTC",
            "Mon, 30 Nov 26 02:21:41 UTC",
            "Mon, 30 Nov 2026 2:21:41 UTC",
            "Mon, 30 Nov 2026 02:21:41 CET",
            "Mon, 30 Nov 1969 02:21:41 UTC",
            "Mon, 30 Nov 2026 02:21:41 UTC extra",
        ] {
            assert_eq!(parse_rfc2822(bad), None, "{bad}");
        }
    }

    #[test]
    fn render_then_parse() {
        let entries = vec![
            IndexEntry {
                path: IndexPath::new("main/binary-amd64/Packages").unwrap(),
                size: 1234,
                digest: Sha256Digest::of(b"p"),
            },
            IndexEntry {
                path: IndexPath::new("main/binary-amd64/Packages.gz").unwrap(),
                size: 123_456_789_012,
                digest: Sha256Digest::of(b"g"),
            },
        ];
        let fields = ReleaseFields {
            origin: "egress".into(),
            label: "egress\nSuite: evil".into(),
            suite: "stable".into(),
            codename: "bookworm".into(),
            date: 1_796_005_301,
            valid_until: None,
            architectures: vec!["amd64".into(), "all".into()],
            components: vec!["main".into()],
            description: Some("snapshot".into()),
        };
        let text = render_release(&fields, &entries);
        let r = Release::parse(&text).unwrap();
        assert_eq!(r.origin.as_deref(), Some("egress"));
        assert_eq!(r.label.as_deref(), Some("egress Suite: evil"));
        assert_eq!(r.suite.as_deref(), Some("stable"));
        assert_eq!(r.codename.as_deref(), Some("bookworm"));
        assert_eq!(r.date.as_deref(), Some("Mon, 30 Nov 2026 02:21:41 UTC"));
        assert_eq!(r.architectures, ["amd64", "all"]);
        assert_eq!(r.components, ["main"]);
        assert!(r.acquire_by_hash);
        assert_eq!(r.sha256, entries);
        assert_eq!(r.find("main/binary-amd64/Packages.gz"), entries.get(1));
        assert_eq!(r.find("main/binary-amd64/Packages.xz"), None);
        assert_eq!(r.paragraph.render(), text);
        assert!(text.contains(&format!(
            "\n {}     1234 main/binary-amd64/Packages\n",
            Sha256Digest::of(b"p")
        )));
    }
}
