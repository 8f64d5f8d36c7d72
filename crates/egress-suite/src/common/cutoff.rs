//! P5.cutoff, shared by PyPI and npm: the upload times a mirror serves
//! agree with the ones its signed `SNAPSHOT.json` records, and none lies
//! after the snapshot's signed cutoff (`selection.exclude_newer`).
//!
//! The collector reads the snapshot document P5.manifest recorded and
//! fetches the pages it lists (PyPI's PEP 691 JSON project pages, npm's
//! full packuments), at most [`MAX_PAGES`], spread evenly over the sorted
//! list so that a universe of a million pages costs 64 requests. The judge
//! picks the same pages from the same recorded document, so that it is a
//! pure function of the plan and the records and `report verify` derives
//! the same verdict.
//!
//! Times are compared as text: `SNAPSHOT.json` records each time exactly
//! as the mirror serves it, so any other text (even for the same instant)
//! is served content the signed snapshot does not hold. Against the cutoff
//! they are compared as instants ([`Timestamp`]).

use crate::collect::{Collector, Evidence};
use crate::common::snapshot::{verified_manifest, ManifestProblem};
use crate::facts::{find, success_body, ControlFacts};
use crate::judge::{fail, inconclusive, pass, short, skipped, Judge, Verdict};
use egress_model::{ProbeRecord, Timestamp, Url};
use egress_snapshot::SnapshotDoc;

/// The most pages one run fetches.
pub const MAX_PAGES: usize = 64;

/// What one served page says of one file: its name, where the page lists
/// it, and the upload time the page gives it, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedFile {
    /// The file as the page names it (PyPI's filename, npm's `name@version`).
    pub file: String,
    /// Its URL as the page lists it (an href or `dist.tarball`), if any.
    pub url: Option<String>,
    /// Its upload time as the page writes it (a value that is not a JSON
    /// string is kept as its JSON text, so that it compares unequal).
    pub time: Option<String>,
}

/// A page's time value as text: a string as it stands, `null` as none,
/// anything else as its JSON text (which no recorded time equals).
pub fn time_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// A protocol's part of P5.cutoff.
pub struct Pages {
    /// The control whose success shows that this kind of page is served.
    pub control: &'static str,
    /// What a page is called in reasons ("JSON project page", "packument").
    pub what: &'static str,
    /// The `Accept` each page is asked for with.
    pub accept: &'static str,
    /// The paths of the pages `SNAPSHOT.json` serves, given the path of the
    /// plan's URL (PyPI's index path).
    pub pages: fn(&SnapshotDoc, &str) -> Vec<String>,
    /// The files a page body lists, with their times; `Err` says why the
    /// body is not such a page.
    pub files: fn(&[u8]) -> Result<Vec<ServedFile>, String>,
}

/// The pages a run fetches out of `all`: every one up to [`MAX_PAGES`],
/// else [`MAX_PAGES`] of them spread evenly over the sorted list (the
/// first, then every `len / MAX_PAGES`-th or so). Deterministic.
pub fn pick(mut all: Vec<String>) -> Vec<String> {
    all.sort();
    all.dedup();
    let n = all.len();
    if n <= MAX_PAGES {
        return all;
    }
    (0..MAX_PAGES)
        .filter_map(|i| all.get(i * n / MAX_PAGES).cloned())
        .collect()
}

/// The label of the exchange that fetched the page at `path`.
fn label(path: &str) -> String {
    format!("page {path}")
}

/// The pages `kind` takes from a document, all of them and those fetched.
fn pages_of(kind: &Pages, doc: &SnapshotDoc, plan_path: &str) -> (usize, Vec<String>) {
    let mut all = (kind.pages)(doc, plan_path);
    all.sort();
    all.dedup();
    (all.len(), pick(all))
}

/// Fetches the pages the snapshot document of P5.manifest's record lists
/// (nothing when that record holds no verified manifest).
pub fn collect<P>(c: &Collector<P>, records: &[ProbeRecord], kind: &Pages) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(base) = c.plan.index() else { return ev };
    let Some(mrec) = records.iter().find(|r| r.id == "P5.manifest") else {
        return ev;
    };
    let Ok((_, doc, _)) = verified_manifest(mrec) else {
        return ev;
    };
    if cutoff_text(&doc).is_none() && doc.upload_times.is_empty() {
        return ev;
    }
    let (_, pages) = pages_of(kind, &doc, base.path());
    for path in pages {
        ev.push(c.get(&label(&path), &base.with_path(&path), Some(kind.accept)));
    }
    ev
}

fn cutoff_text(doc: &SnapshotDoc) -> Option<&str> {
    doc.selection
        .as_ref()
        .and_then(|s| s.exclude_newer.as_deref())
}

/// One disagreement.
#[derive(Debug)]
enum Problem {
    /// A served time after the cutoff, or one that cannot be read as a time
    /// while there is a cutoff to hold it to.
    Cutoff(String),
    /// A served time the manifest does not record exactly, or a time on
    /// one side only.
    Manifest(String),
}

impl Problem {
    fn text(&self) -> &str {
        match self {
            Problem::Cutoff(s) | Problem::Manifest(s) => s,
        }
    }
}

/// The counts a PASS reports.
#[derive(Default)]
struct Tally {
    read: usize,
    compared: usize,
    problems: Vec<Problem>,
    /// Why the first page that was not read was not.
    unread: Option<String>,
}

/// Judges one served file against the cutoff and `SNAPSHOT.json`.
fn judge_file(
    t: &mut Tally,
    doc: &SnapshotDoc,
    cutoff: Option<(Timestamp, &str)>,
    origin: &Url,
    page: &str,
    f: &ServedFile,
) {
    let page_url = origin.with_path(page);
    let path = f
        .url
        .as_deref()
        .and_then(|u| page_url.join(u).ok())
        .filter(|u| u.same_origin(origin))
        .map(|u| u.path().to_string());
    let recorded = path.as_ref().and_then(|p| doc.upload_times.get(p));
    let file = short(&f.file);
    if let (Some(served), Some((limit, limit_text))) = (&f.time, cutoff) {
        let also = match recorded {
            Some(m) => format!("; SNAPSHOT.json records {m}"),
            None => String::new(),
        };
        match Timestamp::parse(served) {
            Ok(at) if at > limit => t.problems.push(Problem::Cutoff(format!(
                "{page} serves {file} with upload time {}, after the signed cutoff {limit_text}{also}",
                short(served)
            ))),
            Ok(_) => {}
            Err(_) => t.problems.push(Problem::Cutoff(format!(
                "{page} serves {file} with upload time {:?}, which is no RFC 3339 time, so it is not shown to be before the signed cutoff {limit_text}{also}",
                short(served)
            ))),
        }
    }
    let Some(path) = path else {
        // Off the origin or no URL: no path for SNAPSHOT.json to record a
        // time under (P3 and P2 judge such links).
        return;
    };
    match (&f.time, recorded) {
        (Some(served), Some(m)) if served == m => t.compared += 1,
        (Some(served), Some(m)) => {
            let same = matches!(
                (Timestamp::parse(served), Timestamp::parse(m)),
                (Ok(a), Ok(b)) if a == b
            );
            let note = if same {
                " (the same instant, written otherwise: SNAPSHOT.json records the text served)"
            } else {
                ""
            };
            t.problems.push(Problem::Manifest(format!(
                "{page} serves {file} with upload time {}, SNAPSHOT.json records {m} for {}{note}",
                short(served),
                short(&path)
            )));
        }
        (Some(served), None) => t.problems.push(Problem::Manifest(format!(
            "{page} serves {file} with upload time {}, SNAPSHOT.json records none for {}",
            short(served),
            short(&path)
        ))),
        (None, Some(m)) => t.problems.push(Problem::Manifest(format!(
            "{page} serves {file} without an upload time, SNAPSHOT.json records {m} for {}",
            short(&path)
        ))),
        (None, None) => {}
    }
}

/// P5.cutoff: requires `kind.control` (the pages are served), then holds
/// every page fetched to the cutoff and the upload times of the verified
/// `SNAPSHOT.json` (P5.manifest's record).
pub fn judge<P, F: ControlFacts>(j: &Judge<P, F>, rec: &ProbeRecord, kind: &Pages) -> Verdict {
    if let Some(v) = j.require(kind.control) {
        return v;
    }
    let Some(mrec) = j.record("P5.manifest") else {
        return inconclusive("P5.manifest was not run");
    };
    let doc = match verified_manifest(mrec) {
        Ok((_, doc, _)) => doc,
        Err(e @ (ManifestProblem::NotServed(_) | ManifestProblem::NotRead)) => {
            return skipped(format!(
                "{e}: the run has no signed cutoff or upload time to hold the {}s to",
                kind.what
            ))
        }
        Err(e) => return inconclusive(format!("no verified manifest to compare with: {e}")),
    };
    let cutoff_text = cutoff_text(&doc);
    if cutoff_text.is_none() && doc.upload_times.is_empty() {
        return skipped(
            "SNAPSHOT.json records neither a cutoff (selection.exclude_newer) nor any upload time",
        );
    }
    let cutoff = match cutoff_text.map(|c| (Timestamp::parse(c), c)) {
        None => None,
        Some((Ok(t), text)) => Some((t, text)),
        Some((Err(e), _)) => return fail(format!("SNAPSHOT.json's signed cutoff: {e}")),
    };
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's URL does not parse");
    };
    let (total, pages) = pages_of(kind, &doc, origin.path());
    if pages.is_empty() {
        return inconclusive(format!(
            "SNAPSHOT.json lists no {} to read upload times on",
            kind.what
        ));
    }
    let mut t = Tally::default();
    for page in &pages {
        let Some(ex) = find(rec, &label(page)) else {
            t.unread
                .get_or_insert_with(|| format!("{page} was not requested"));
            continue;
        };
        let Some(body) = success_body(ex) else {
            t.unread
                .get_or_insert_with(|| format!("{page} was not served whole: {}", ex.summary()));
            continue;
        };
        let files = match (kind.files)(body) {
            Ok(files) => files,
            Err(e) => {
                t.unread
                    .get_or_insert_with(|| format!("{page} is not a {}: {e}", kind.what));
                continue;
            }
        };
        t.read += 1;
        for f in &files {
            judge_file(&mut t, &doc, cutoff, &origin, page, f);
        }
    }
    let listed = format!("{} SNAPSHOT.json lists", count(total, kind.what));
    let sample = if total > pages.len() {
        format!(
            "{} of the {listed} (at most {MAX_PAGES}, spread over the list)",
            pages.len()
        )
    } else {
        format!("the {listed}")
    };
    // The cutoff's findings first, each kind in page order.
    t.problems
        .sort_by_key(|p| matches!(p, Problem::Manifest(_)));
    if let Some(first) = t.problems.first() {
        let more = match t.problems.len() {
            1 => String::new(),
            2 => " (and 1 more disagreement)".to_string(),
            n => format!(" (and {} more disagreements)", n - 1),
        };
        return fail(format!("{}{more}", first.text()));
    }
    if t.read == 0 {
        return inconclusive(format!(
            "none of {sample} was read: {}",
            t.unread.unwrap_or_default()
        ));
    }
    if t.compared == 0 {
        return inconclusive(format!(
            "no served upload time to compare: {} read of {sample} list no time that SNAPSHOT.json records either",
            t.read
        ));
    }
    let against = match cutoff_text {
        Some(c) => format!(", none after the signed cutoff {c}"),
        None => ", and SNAPSHOT.json records no cutoff".to_string(),
    };
    let unread = match t.unread {
        Some(why) => format!("; {} not read ({why})", pages.len() - t.read),
        None => String::new(),
    };
    pass(format!(
        "{} served on {} read of {sample} {} exactly as SNAPSHOT.json records{against}{unread}",
        count(t.compared, "upload time"),
        t.read,
        if t.compared == 1 { "is" } else { "are" },
    ))
}

/// `n word` or `n words`.
fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// What the protocols' tests of P5.cutoff share: a judged run made of a
/// manifest, a snapshot document and the pages served.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::facts::Controls;
    use crate::plan::{ManifestSource, Plan};
    use egress_model::{
        BodyEnd, Exchange, Observation, ResponseRecord, Sha256Digest, Status, WireBytes,
    };
    use egress_snapshot::manifest::{blob_path, SNAPSHOT_JSON, SNAPSHOT_SCHEMA};
    use egress_snapshot::{Manifest, Selection, ServedEntry};
    use std::collections::BTreeMap;

    pub(crate) const ORIGIN: &str = "http://127.0.0.1:8080";

    /// Control statuses, as the judges read them.
    pub(crate) struct Facts(pub(crate) Controls);
    impl ControlFacts for Facts {
        fn status(&self, control: &str) -> Status {
            self.0.status(control)
        }
        fn served_artifact(&self) -> Option<Url> {
            None
        }
    }

    /// A snapshot document serving `pages` (path, content type) with these
    /// upload times and cutoff.
    pub(crate) fn doc(
        pages: &[(&str, &str)],
        times: &[(&str, &str)],
        cutoff: Option<&str>,
    ) -> SnapshotDoc {
        SnapshotDoc {
            schema: SNAPSHOT_SCHEMA.into(),
            builder: "test".into(),
            created: "2026-01-01T00:00:00Z".into(),
            sources: BTreeMap::new(),
            served: pages
                .iter()
                .map(|(path, ct)| ServedEntry {
                    path: path.to_string(),
                    content_type: ct.to_string(),
                    sha256: Sha256Digest::of(path.as_bytes()),
                })
                .collect(),
            upload_times: times
                .iter()
                .map(|(p, t)| (p.to_string(), t.to_string()))
                .collect(),
            layer: None,
            selection: cutoff.map(|c| Selection {
                exclude_newer: Some(c.to_string()),
                ..Default::default()
            }),
        }
    }

    /// P5.manifest's record holding `doc` (or no manifest at all).
    pub(crate) fn manifest_record(doc: Option<&SnapshotDoc>) -> ProbeRecord {
        let mut observations = Vec::new();
        if let Some(doc) = doc {
            let bytes = doc.to_canonical_json();
            let mut m = Manifest::new();
            for e in &doc.served {
                m.insert(&blob_path(&e.sha256), e.sha256).expect("blob");
            }
            m.insert(SNAPSHOT_JSON, Sha256Digest::of(&bytes))
                .expect("doc");
            observations.push(Observation::Input {
                name: "MANIFEST".into(),
                bytes: WireBytes(m.render().into_bytes()),
            });
            observations.push(Observation::Input {
                name: SNAPSHOT_JSON.into(),
                bytes: WireBytes(bytes),
            });
        }
        ProbeRecord {
            id: "P5.manifest".into(),
            status: Status::Inconclusive,
            reason: String::new(),
            exchanges: Vec::new(),
            observations,
        }
    }

    /// A GET of `path`, labelled `label`, answered `status` with `body`.
    pub(crate) fn exchange(label: &str, path: &str, status: u16, body: &[u8]) -> Exchange {
        Exchange {
            label: label.to_string(),
            peer: ORIGIN.trim_start_matches("http://").into(),
            request: WireBytes(format!("GET {path} HTTP/1.1\r\n\r\n").into_bytes()),
            response: Some(ResponseRecord {
                status_line: format!("HTTP/1.1 {status}"),
                status: Some(status),
                headers: Vec::new(),
                body_len: body.len() as u64,
                body_sha256: Sha256Digest::of(body),
                body_prefix: WireBytes(body.to_vec()),
                body_end: BodyEnd::Complete,
            }),
            error: None,
            elapsed_ms: 0,
            after: None,
            h2: None,
        }
    }

    /// The plan of a run against `{ORIGIN}{plan_path}`, the manifest at
    /// its well-known path.
    pub(crate) fn plan(plan_path: &str, allowed_signers: bool) -> Plan<()> {
        Plan {
            index_url: format!("{ORIGIN}{plan_path}"),
            packages: (),
            present_source: "test".into(),
            upstream: None,
            manifest: ManifestSource::WellKnown,
            allowed_signers,
            destructive: false,
            expect: Default::default(),
        }
    }

    /// P5.cutoff's record: each page path answered `status` with `body`.
    pub(crate) fn pages_record(pages: &[(&str, u16, &[u8])]) -> ProbeRecord {
        let exchanges = pages
            .iter()
            .map(|(path, status, body)| exchange(&label(path), path, *status, body))
            .collect();
        ProbeRecord {
            id: "P5.cutoff".into(),
            status: Status::Inconclusive,
            reason: String::new(),
            exchanges,
            observations: Vec::new(),
        }
    }

    /// `kind`'s verdict on a run whose plan URL is `{ORIGIN}{plan_path}`,
    /// whose control passed (or not) and whose records are these.
    pub(crate) fn verdict(
        kind: &Pages,
        plan_path: &str,
        control_passed: bool,
        manifest: ProbeRecord,
        pages: ProbeRecord,
    ) -> Verdict {
        let plan = plan(plan_path, false);
        let status = if control_passed {
            Status::Pass
        } else {
            Status::Fail
        };
        let facts = Facts(Controls(vec![(kind.control.to_string(), status)]));
        let records = [manifest, pages];
        let judge = Judge {
            plan: &plan,
            facts: &facts,
            records: &records,
        };
        super::judge(&judge, &records[1], kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_takes_all_or_a_deterministic_spread() {
        let few: Vec<String> = (0..5).map(|i| format!("/p{i}")).collect();
        assert_eq!(pick(few.clone()), few);
        let many: Vec<String> = (0..1000).map(|i| format!("/p{i:04}")).collect();
        let picked = pick(many.clone());
        assert_eq!(picked.len(), MAX_PAGES);
        assert_eq!(picked.first().map(String::as_str), Some("/p0000"));
        // Spread over the whole list, not its head.
        assert!(picked.last().is_some_and(|p| p.as_str() > "/p0980"));
        let mut reversed = many;
        reversed.reverse();
        assert_eq!(pick(reversed), picked);
    }
}
