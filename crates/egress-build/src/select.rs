//! What a build selects, shared by every protocol: the cutoff and the
//! universe rules ([`Rules`]), and the tally of what each rule dropped
//! ([`Dropped`]), which the final report prints.
//!
//! The target filters themselves are each protocol's (PyPI's wheel tags,
//! npm's `os`/`cpu`/`libc`); they only report here, by rule name.

use crate::error::BuildError;
use egress_model::Timestamp;
use std::collections::BTreeMap;

/// The selection rules every protocol applies to a universe (and the
/// cutoff, to locks too).
#[derive(Clone, Debug, Default)]
pub struct Rules {
    /// `--exclude-newer`: nothing uploaded after it enters the snapshot.
    pub exclude_newer: Option<Cutoff>,
    /// `--versions-per-project N`: the newest N admissible versions.
    pub versions_per_project: Option<u32>,
    /// `--max-file-bytes`: larger files are dropped.
    pub max_file_bytes: Option<u64>,
    /// `--closure`: dependencies are followed under the same rules.
    pub closure: bool,
    /// `--strict`: a project the registry lacks, or a file whose bytes do
    /// not match the registry's hash, stops the build instead of being
    /// reported.
    pub strict: bool,
}

/// A cutoff as given and as an instant.
#[derive(Clone, Debug)]
pub struct Cutoff {
    pub text: String,
    pub at: Timestamp,
}

impl Cutoff {
    /// Reads `--exclude-newer`; a time that does not parse or lies after
    /// `now` is a usage error (a cutoff in the future would promise a
    /// snapshot that later uploads could still change).
    pub fn parse(text: &str, now: Timestamp) -> Result<Self, BuildError> {
        let at = Timestamp::parse(text)
            .map_err(|e| BuildError::Usage(format!("--exclude-newer: {e}")))?;
        if at > now {
            return Err(BuildError::Usage(format!(
                "--exclude-newer: {text} lies in the future (now is {now}); give a time in the past"
            )));
        }
        Ok(Self {
            text: at.to_rfc3339(),
            at,
        })
    }

    /// Whether an upload at `time` is after the cutoff.
    pub fn excludes(&self, time: Timestamp) -> bool {
        time > self.at
    }
}

/// What a universe's selection found, each protocol's chosen files `C`.
pub(crate) struct Selected<C> {
    pub(crate) files: Vec<C>,
    pub(crate) dropped: Dropped,
    pub(crate) projects: usize,
    pub(crate) versions: usize,
    /// Lines for the report (what was not followed, and why).
    pub(crate) notes: Vec<String>,
}

impl<C> Default for Selected<C> {
    fn default() -> Self {
        Self {
            files: Vec::new(),
            dropped: Dropped::default(),
            projects: 0,
            versions: 0,
            notes: Vec::new(),
        }
    }
}

/// Files, and their bytes where known, one rule dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub files: u64,
    pub bytes: u64,
    /// The first few things dropped, for the report.
    pub examples: Vec<String>,
}

/// How many examples a rule keeps for the report.
const EXAMPLES: usize = 3;

/// What each rule dropped, by rule name (`platform`, `sdist`,
/// `exclude-newer`, `max-file-bytes`, `versions-per-project`, `yanked`,
/// `prerelease`, `marker`, `hash-mismatch`, …).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dropped {
    by_rule: BTreeMap<&'static str, Tally>,
}

impl Dropped {
    /// Counts one file (or version, or project: `what` says which) dropped
    /// by `rule`.
    pub fn drop(&mut self, rule: &'static str, what: &str, bytes: Option<u64>) {
        let t = self.by_rule.entry(rule).or_default();
        t.files += 1;
        t.bytes += bytes.unwrap_or(0);
        if t.examples.len() < EXAMPLES {
            t.examples.push(what.to_string());
        }
    }

    pub fn merge(&mut self, other: Dropped) {
        for (rule, t) in other.by_rule {
            let mine = self.by_rule.entry(rule).or_default();
            mine.files += t.files;
            mine.bytes += t.bytes;
            for e in t.examples {
                if mine.examples.len() < EXAMPLES {
                    mine.examples.push(e);
                }
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_rule.is_empty()
    }

    pub fn get(&self, rule: &str) -> Option<&Tally> {
        self.by_rule.get(rule)
    }

    /// One line per rule, in rule order: `dropped by platform: 612 files
    /// (1.2 GB), e.g. numpy-2.1.0-cp312-...whl, ...`.
    pub fn lines(&self) -> Vec<String> {
        self.by_rule
            .iter()
            .map(|(rule, t)| {
                let bytes = if t.bytes > 0 {
                    format!(" ({})", crate::progress::human(t.bytes))
                } else {
                    String::new()
                };
                let more = if t.files as usize > t.examples.len() {
                    ", ..."
                } else {
                    ""
                };
                format!(
                    "dropped by {rule}: {} {}{bytes}, e.g. {}{more}",
                    t.files,
                    if t.files == 1 { "item" } else { "items" },
                    t.examples.join(", ")
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cutoff_in_the_future_or_unreadable_is_refused() {
        let now = Timestamp::parse("2026-01-01T00:00:00Z").unwrap();
        assert!(Cutoff::parse("2026-01-02T00:00:00Z", now).is_err());
        assert!(Cutoff::parse("last tuesday", now).is_err());
        let c = Cutoff::parse("2025-06-01T02:00:00+02:00", now).unwrap();
        assert_eq!(c.text, "2025-06-01T00:00:00Z");
        assert!(c.excludes(Timestamp::parse("2025-06-01T00:00:00.1Z").unwrap()));
        assert!(!c.excludes(Timestamp::parse("2025-06-01T00:00:00Z").unwrap()));
    }

    #[test]
    fn tallies_merge_and_print_one_line_per_rule() {
        let mut a = Dropped::default();
        a.drop("platform", "x-1-cp311-cp311-win_amd64.whl", Some(1000));
        let mut b = Dropped::default();
        b.drop("platform", "y", Some(2000));
        b.drop("sdist", "x-1.tar.gz", None);
        a.merge(b);
        assert_eq!(a.get("platform").unwrap().files, 2);
        let lines = a.lines();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("dropped by platform: 2 items (3.0 kB)"),
            "{}",
            lines[0]
        );
    }
}
