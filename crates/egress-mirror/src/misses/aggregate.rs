//! `egress-conformance snapshot misses LOG...`: the logs read back (every
//! line checked by [`Record::parse`]; one that is not the mirror's is an
//! error naming the file and line), aggregated, and rendered as a universe
//! file for `snapshot build --pypi-universe`/`--npm-universe` or as JSON.
//!
//! Everything printed is either a number, a name or version that passed
//! the same checks the writer applied (ASCII letters, digits and a few
//! punctuation marks), or fixed text: nothing a log holds can put a control
//! character on a reviewer's terminal. Output is sorted, so the same logs
//! give the same bytes.

use super::{printable, Counts, Kind, LineError, Protocol, Record, RunId, MAX_LINE};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// The JSON rendering's schema.
pub const SCHEMA: &str = "egress-conformance/misses/v1";

/// How to render the aggregate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// A universe file for one protocol: one project per line.
    Universe,
    /// Every name asked for and not served, both protocols unless one is
    /// chosen, with the counts.
    Json,
}

/// Why the logs cannot be aggregated.
#[derive(Debug, thiserror::Error)]
pub enum AggregateError {
    #[error("cannot read misses log {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} line {line}: not a line of egress-mirror's misses log: {why}")]
    Line {
        path: String,
        line: usize,
        why: LineError,
    },
    #[error("{path} line {line}: not UTF-8, so not a line of egress-mirror's misses log")]
    NotUtf8 { path: String, line: usize },
}

impl AggregateError {
    /// Whether the file was read but is not a misses log (rather than
    /// unreadable).
    pub fn is_bad_format(&self) -> bool {
        !matches!(self, AggregateError::Read { .. })
    }
}

/// What the logs say about one name.
#[derive(Debug, Default, Clone)]
struct Asked {
    kinds: BTreeSet<Kind>,
    versions: BTreeSet<String>,
    runs: BTreeSet<RunId>,
    clients: BTreeSet<IpAddr>,
    first: i64,
    last: i64,
}

/// The logs, aggregated.
#[derive(Debug, Default)]
pub struct Aggregate {
    logs: usize,
    runs: BTreeSet<RunId>,
    snapshots: BTreeSet<String>,
    clients: BTreeSet<IpAddr>,
    /// Each run's last counts (element-wise the largest: they only grow).
    counts: BTreeMap<RunId, Counts>,
    missed: BTreeMap<(Protocol, String), Asked>,
    served: BTreeSet<(Protocol, String)>,
}

/// Reads every log; the first line that is not the mirror's stops it.
pub fn aggregate_files(paths: &[PathBuf]) -> Result<Aggregate, AggregateError> {
    let mut agg = Aggregate::default();
    for path in paths {
        agg.read_file(path)?;
    }
    Ok(agg)
}

fn shown(path: &Path) -> String {
    printable(&path.display().to_string(), 4096)
}

impl Aggregate {
    fn read_file(&mut self, path: &Path) -> Result<(), AggregateError> {
        let read_err = |source| AggregateError::Read {
            path: shown(path),
            source,
        };
        let file = std::fs::File::open(path).map_err(read_err)?;
        if !file.metadata().map_err(read_err)?.is_file() {
            return Err(read_err(std::io::Error::other("not a regular file")));
        }
        let mut reader = std::io::BufReader::new(file);
        let mut buf = Vec::new();
        let mut n = 0usize;
        loop {
            buf.clear();
            let got = (&mut reader)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(read_err)?;
            if got == 0 {
                break;
            }
            n += 1;
            let bad = |why| AggregateError::Line {
                path: shown(path),
                line: n,
                why,
            };
            let line = match buf.strip_suffix(b"\n") {
                Some(line) => line,
                None if buf.len() > MAX_LINE => return Err(bad(LineError::TooLong)),
                None => buf.as_slice(),
            };
            let text = std::str::from_utf8(line).map_err(|_| AggregateError::NotUtf8 {
                path: shown(path),
                line: n,
            })?;
            let record = Record::parse(text).map_err(bad)?;
            self.take(record);
        }
        self.logs += 1;
        Ok(())
    }

    fn take(&mut self, record: Record) {
        self.runs.insert(record.run());
        match record {
            Record::Start { snapshot, .. } => {
                self.snapshots.insert(snapshot.to_hex());
            }
            Record::Miss {
                time,
                run,
                ask,
                client,
            } => {
                self.clients.insert(client);
                let a = self
                    .missed
                    .entry((ask.protocol, ask.name))
                    .or_insert_with(|| Asked {
                        first: time,
                        last: time,
                        ..Asked::default()
                    });
                a.kinds.insert(ask.kind);
                if let Some(v) = ask.version {
                    a.versions.insert(v);
                }
                a.runs.insert(run);
                a.clients.insert(client);
                a.first = a.first.min(time);
                a.last = a.last.max(time);
            }
            Record::Served { protocol, name, .. } => {
                self.served.insert((protocol, name));
            }
            Record::Summary { run, counts, .. } => {
                let c = self.counts.entry(run).or_default();
                *c = Counts {
                    misses: c.misses.max(counts.misses),
                    served: c.served.max(counts.served),
                    dropped_queue: c.dropped_queue.max(counts.dropped_queue),
                    dropped_per_client: c.dropped_per_client.max(counts.dropped_per_client),
                    dropped_full: c.dropped_full.max(counts.dropped_full),
                    dropped_long: c.dropped_long.max(counts.dropped_long),
                    write_errors: c.write_errors.max(counts.write_errors),
                };
            }
        }
    }

    /// Every run's counts added up.
    pub fn counts(&self) -> Counts {
        let mut total = Counts::default();
        for c in self.counts.values() {
            total.add(c);
        }
        total
    }

    /// Whether the snapshot holds `name`: some run served it, or a miss
    /// shows the project held (a version it lacks).
    fn held(&self, protocol: Protocol, name: &str, asked: &Asked) -> bool {
        self.served.contains(&(protocol, name.to_string())) || asked.kinds.contains(&Kind::Version)
    }

    /// `(asked, served)`: distinct names asked for (served or not) and
    /// distinct names served, for `protocol`.
    pub fn coverage(&self, protocol: Protocol) -> (usize, usize) {
        let served: BTreeSet<&str> = self
            .served
            .iter()
            .filter(|(p, _)| *p == protocol)
            .map(|(_, n)| n.as_str())
            .collect();
        let mut asked = served.clone();
        asked.extend(
            self.missed
                .keys()
                .filter(|(p, _)| *p == protocol)
                .map(|(_, n)| n.as_str()),
        );
        (asked.len(), served.len())
    }

    /// Names asked for and never served, and names held but asked for in
    /// a version the snapshot lacks, of `protocol` (or both), with whether
    /// the snapshot held the project.
    fn missing(&self, protocol: Option<Protocol>) -> Vec<(Protocol, &str, &Asked, bool)> {
        self.missed
            .iter()
            .filter(|((p, _), _)| protocol.is_none_or(|want| want == *p))
            .filter(|((p, n), a)| {
                !self.served.contains(&(*p, n.clone())) || a.kinds.contains(&Kind::Version)
            })
            .map(|((p, n), a)| (*p, n.as_str(), a, self.held(*p, n, a)))
            .collect()
    }

    /// The rendering; for [`OutputFormat::Universe`], `protocol` must be
    /// given (a universe file is of one protocol).
    pub fn render(&self, format: OutputFormat, protocol: Option<Protocol>) -> String {
        match (format, protocol) {
            (OutputFormat::Universe, Some(p)) => self.universe(p),
            (OutputFormat::Universe, None) | (OutputFormat::Json, _) => self.json(protocol),
        }
    }

    fn universe(&self, protocol: Protocol) -> String {
        let title = match protocol {
            Protocol::Pypi => "PyPI projects (snapshot build --pypi-universe)",
            Protocol::Npm => "npm packages (snapshot build --npm-universe)",
        };
        let mut out = format!(
            "# egress-conformance snapshot misses: the {title} asked for and not served\n# {} logs, {} runs, {} clients, {} snapshots\n",
            self.logs,
            self.runs.len(),
            self.clients.len(),
            self.snapshots.len()
        );
        let (asked, served) = self.coverage(protocol);
        out.push_str(&format!("# coverage: {}\n", coverage_text(asked, served)));
        out.push_str(&format!("# {}\n", dropped_text(&self.counts())));
        out.push_str(
            "# one name a line; after '#': how many runs and clients asked, the versions asked for\n",
        );
        let missing = self.missing(Some(protocol));
        for (_, name, a, _) in missing.iter().filter(|m| !m.3) {
            out.push_str(&format!("{name}  # {}\n", asked_text(a)));
        }
        let held: Vec<_> = missing.iter().filter(|m| m.3).collect();
        if !held.is_empty() {
            out.push_str("# held by the snapshot, asked for versions it lacks (not listed above; add a pin by hand to take one):\n");
            for (_, name, a, _) in held {
                out.push_str(&format!("# {name}  {}\n", asked_text(a)));
            }
        }
        out
    }

    fn json(&self, protocol: Option<Protocol>) -> String {
        let protocols: Vec<Protocol> = match protocol {
            Some(p) => vec![p],
            None => vec![Protocol::Pypi, Protocol::Npm],
        };
        let coverage: Vec<serde_json::Value> = protocols
            .iter()
            .map(|p| {
                let (asked, served) = self.coverage(*p);
                serde_json::json!({
                    "protocol": p.as_str(),
                    "asked": asked,
                    "served": served,
                    "ratio": if asked == 0 { serde_json::Value::Null } else {
                        serde_json::json!(served as f64 / asked as f64)
                    },
                })
            })
            .collect();
        let missing: Vec<serde_json::Value> = self
            .missing(protocol)
            .into_iter()
            .map(|(p, name, a, held)| {
                serde_json::json!({
                    "protocol": p.as_str(),
                    "name": name,
                    "held": held,
                    "kinds": a.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
                    "versions": a.versions,
                    "runs": a.runs.len(),
                    "clients": a.clients.len(),
                    "first": egress_model::Timestamp::from_unix(a.first, 0).to_rfc3339(),
                    "last": egress_model::Timestamp::from_unix(a.last, 0).to_rfc3339(),
                })
            })
            .collect();
        let doc = serde_json::json!({
            "schema": SCHEMA,
            "logs": self.logs,
            "runs": self.runs.len(),
            "clients": self.clients.len(),
            "snapshots": self.snapshots,
            "counts": self.counts(),
            "not_logged": self.counts().dropped(),
            "coverage": coverage,
            "missing": missing,
        });
        let mut text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        text.push('\n');
        text
    }
}

fn asked_text(a: &Asked) -> String {
    let mut t = format!("runs {}, clients {}", a.runs.len(), a.clients.len());
    if !a.versions.is_empty() {
        let versions: Vec<&str> = a.versions.iter().map(String::as_str).collect();
        t.push_str(&format!(", versions {}", versions.join(" ")));
    }
    t
}

fn coverage_text(asked: usize, served: usize) -> String {
    if asked == 0 {
        return "no names asked for".to_string();
    }
    let per_mille = served.saturating_mul(1000) / asked;
    format!(
        "{served} of {asked} names asked for were served ({}.{}%)",
        per_mille / 10,
        per_mille % 10
    )
}

fn dropped_text(c: &Counts) -> String {
    if c.dropped() == 0 {
        return "not logged: 0 asks (nothing was dropped)".to_string();
    }
    format!(
        "not logged: {} asks (queue full {}, client over its bound {}, log full {}, line too long {}, write errors {}): names may be missing from this list",
        c.dropped(),
        c.dropped_queue,
        c.dropped_per_client,
        c.dropped_full,
        c.dropped_long,
        c.write_errors
    )
}

#[cfg(test)]
mod tests {
    use super::super::{classify, Limits};
    use super::*;
    use egress_model::Sha256Digest;

    fn miss(run: u64, path: &str, client: &str, served: &[&str]) -> Record {
        Record::Miss {
            time: 1_796_000_000,
            run: RunId(run),
            ask: classify(path)
                .unwrap()
                .miss(|p| served.contains(&p))
                .unwrap(),
            client: client.parse().unwrap(),
        }
    }

    fn sample() -> Aggregate {
        let mut agg = Aggregate::default();
        for r in [
            Record::Start {
                time: 1_796_000_000,
                run: RunId(1),
                snapshot: Sha256Digest::of(b"a"),
                limits: Limits::default(),
            },
            miss(1, "/simple/zeta/", "10.0.0.1", &[]),
            miss(1, "/simple/alpha/", "10.0.0.1", &[]),
            miss(2, "/simple/alpha/", "10.0.0.2", &[]),
            miss(
                2,
                "/files/0000000000000000000000000000000000000000000000000000000000000000/held-2.0.tar.gz",
                "10.0.0.2",
                &["/simple/held/"],
            ),
            miss(2, "/left-pad", "10.0.0.2", &[]),
            miss(2, "/simple/later/", "10.0.0.2", &[]),
            Record::Served {
                time: 1_796_000_000,
                run: RunId(3),
                protocol: Protocol::Pypi,
                name: "later".into(),
            },
            Record::Served {
                time: 1_796_000_000,
                run: RunId(3),
                protocol: Protocol::Pypi,
                name: "present".into(),
            },
            Record::Summary {
                time: 1_796_000_000,
                run: RunId(2),
                counts: Counts {
                    dropped_full: 4,
                    ..Counts::default()
                },
            },
        ] {
            agg.take(r);
        }
        agg.logs = 2;
        agg
    }

    #[test]
    fn universe_lists_what_was_never_served_sorted() {
        let text = sample().render(OutputFormat::Universe, Some(Protocol::Pypi));
        let names: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(names, ["alpha", "zeta"]);
        assert!(text.contains("alpha  # runs 2, clients 2\n"), "{text}");
        assert!(
            text.contains("# held  runs 1, clients 1, versions 2.0\n"),
            "{text}"
        );
        // later and present served; alpha, zeta, held asked and not.
        assert!(
            text.contains("2 of 5 names asked for were served (40.0%)"),
            "{text}"
        );
        assert!(text.contains("not logged: 4 asks"), "{text}");
        let npm = sample().render(OutputFormat::Universe, Some(Protocol::Npm));
        assert!(npm.lines().any(|l| l.starts_with("left-pad  #")), "{npm}");
    }

    #[test]
    fn json_is_deterministic_and_complete() {
        let a = sample().render(OutputFormat::Json, None);
        assert_eq!(a, sample().render(OutputFormat::Json, None));
        let v: serde_json::Value = serde_json::from_str(&a).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        assert_eq!(v["runs"], 3);
        assert_eq!(v["not_logged"], 4);
        let missing = v["missing"].as_array().unwrap();
        let names: Vec<&str> = missing
            .iter()
            .map(|m| m["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["alpha", "held", "zeta", "left-pad"]);
        assert_eq!(missing[1]["held"], true);
        assert_eq!(v["coverage"][0]["asked"], 5);
    }
}
