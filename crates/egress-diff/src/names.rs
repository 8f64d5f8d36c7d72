//! Names a new project's name is close to: the names the old snapshot
//! already holds and the shipped lists of popular names
//! (`data/popular-pypi.txt`, `data/popular-npm.txt`).
//!
//! Names are compared normalised (PyPI: PEP 503; npm: as they are, npm
//! names are lower case), by optimal-string-alignment distance (an
//! insertion, a deletion, a substitution or a swap of two neighbours each
//! count 1: `reqeusts` is 1 from `requests`). A name is close at distance 1
//! when either name has at most 4 characters, and at 1 or 2 otherwise (at 2,
//! short names are close to too many others to be a signal). A name that
//! is itself popular, or equal to the other once normalised, is never close.

use egress_model::ProjectName;
use std::collections::BTreeSet;

const POPULAR_PYPI: &str = include_str!("../data/popular-pypi.txt");
const POPULAR_NPM: &str = include_str!("../data/popular-npm.txt");

/// At most this many close names are named per flag.
const MAX_MATCHES: usize = 3;

/// The PEP 503 form of a PyPI name; a name that is not valid stays as it
/// is, lower-cased.
pub(crate) fn normalize_pypi(name: &str) -> String {
    ProjectName::new(name)
        .map(|n| n.as_str().to_string())
        .unwrap_or_else(|_| name.to_ascii_lowercase())
}

fn list(text: &str, normalize: fn(&str) -> String) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .map(normalize)
        .collect()
}

/// The shipped popular PyPI names, PEP 503 normalised.
pub fn popular_pypi() -> BTreeSet<String> {
    list(POPULAR_PYPI, normalize_pypi)
}

/// The shipped popular npm names.
pub fn popular_npm() -> BTreeSet<String> {
    list(POPULAR_NPM, str::to_ascii_lowercase)
}

/// Where a close name comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    /// The old snapshot holds it.
    Held,
    /// The shipped list of popular names.
    Popular,
}

/// The names `name` is close to (see the module documentation), closest
/// first, at most [`MAX_MATCHES`]; none when `name` is itself popular.
pub(crate) fn close_names<'a>(
    name: &str,
    held: impl Iterator<Item = &'a String>,
    popular: &'a BTreeSet<String>,
) -> Vec<(usize, String, Source)> {
    if popular.contains(name) {
        return Vec::new();
    }
    let mut found: Vec<(usize, String, Source)> = Vec::new();
    let candidates = held
        .map(|n| (n, Source::Held))
        .chain(popular.iter().map(|n| (n, Source::Popular)));
    for (other, source) in candidates {
        if other == name {
            continue;
        }
        let limit = if name.len().min(other.len()) <= 4 {
            1
        } else {
            2
        };
        if let Some(d) = distance_within(name.as_bytes(), other.as_bytes(), limit) {
            found.push((d, other.clone(), source));
        }
    }
    found.sort();
    // A name both held and popular is named once, as held.
    let mut seen = BTreeSet::new();
    found.retain(|(_, n, _)| seen.insert(n.clone()));
    found.truncate(MAX_MATCHES);
    found
}

/// The optimal-string-alignment distance of `a` and `b` if it is at most
/// `limit`, else `None`; stops as soon as every entry of a row exceeds it.
pub(crate) fn distance_within(a: &[u8], b: &[u8], limit: usize) -> Option<usize> {
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let width = b.len() + 1;
    let mut two_back: Vec<usize> = vec![0; width];
    let mut prev: Vec<usize> = (0..width).collect();
    let mut row: Vec<usize> = vec![0; width];
    for (i, &ca) in a.iter().enumerate() {
        row.fill(0);
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
        let mut best = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let del = prev
                .get(j + 1)
                .copied()
                .unwrap_or(usize::MAX)
                .saturating_add(1);
            let ins = row.get(j).copied().unwrap_or(usize::MAX).saturating_add(1);
            let sub = prev
                .get(j)
                .copied()
                .unwrap_or(usize::MAX)
                .saturating_add(cost);
            let mut d = del.min(ins).min(sub);
            let swapped = i > 0 && j > 0 && a.get(i - 1) == Some(&cb) && b.get(j - 1) == Some(&ca);
            if swapped {
                d = d.min(
                    two_back
                        .get(j - 1)
                        .copied()
                        .unwrap_or(usize::MAX)
                        .saturating_add(1),
                );
            }
            if let Some(slot) = row.get_mut(j + 1) {
                *slot = d;
            }
            best = best.min(d);
        }
        if best > limit {
            return None;
        }
        std::mem::swap(&mut two_back, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev.last().copied().filter(|&d| d <= limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        let d = |a: &str, b: &str| distance_within(a.as_bytes(), b.as_bytes(), 2);
        assert_eq!(d("reqeusts", "requests"), Some(1));
        assert_eq!(d("requets", "requests"), Some(1));
        assert_eq!(d("requestss", "requests"), Some(1));
        assert_eq!(d("rekuest", "requests"), Some(2));
        assert_eq!(d("lodahs", "lodash"), Some(1));
        assert_eq!(d("abc", "abc"), Some(0));
        assert_eq!(d("django", "flask"), None);
        assert_eq!(d("", "ab"), Some(2));
        assert_eq!(d("a", "abcd"), None);
    }

    #[test]
    fn close_names_skip_popular_and_identical_names() {
        let popular = popular_pypi();
        assert!(popular.len() >= 300, "{}", popular.len());
        assert!(popular_npm().len() >= 300, "{}", popular_npm().len());
        assert!(popular.contains("charset-normalizer") && popular.contains("typing-extensions"));
        let held = ["my-lib".to_string(), "reqeusts".to_string()];
        let got = close_names("reqeusts", held.iter(), &popular);
        assert_eq!(got.first(), Some(&(1, "requests".into(), Source::Popular)));
        assert!(close_names("requests", held.iter(), &popular).is_empty());
        let got = close_names("my-lbi", held.iter(), &popular);
        assert_eq!(got, [(1, "my-lib".into(), Source::Held)]);
        // Short names: distance 1 only.
        assert!(close_names("sixx", [].iter(), &popular)
            .iter()
            .all(|m| m.0 == 1));
        assert!(close_names("zzzzzzzzzzzz", [].iter(), &popular).is_empty());
        assert_eq!(normalize_pypi("Typing_Extensions"), "typing-extensions");
    }
}
