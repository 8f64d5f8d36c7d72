//! Run-wide rules: every exchange recorded in a run, whichever sub-probe
//! made it (the positive controls' included), judged against the rules that
//! hold for any answer of a conformant mirror:
//!
//! - P3: no answer redirects off the target's origin, and no listing the
//!   target serves names a file or tarball on another origin;
//! - P1: bytes served for a URL match a digest the target itself listed for
//!   that URL somewhere in the run;
//! - P6: no state-changing request is answered 2xx.
//!
//! Each rule is a sub-probe of its predicate that collects nothing of its
//! own ([`collect_nothing`]) and reads every record's evidence through
//! [`Judge::records`], never another record's verdict. A FAIL names the
//! sub-probe and the exchange that showed it; a PASS says how many answers
//! were examined, and needs a passed positive control (a target that answers
//! 404 to everything never passes). The protocol says how to read its
//! listings ([`ListFn`]); the rest is shared.

use crate::classify::{self, Answer};
use crate::collect::{Collector, Evidence};
use crate::facts::{request_url, ControlFacts};
use crate::judge::{fail, inconclusive, pass, short, tally, Judge, Verdict};
use egress_model::{BodyEnd, Exchange, Integrity, Method, ProbeRecord, Sha256Digest, Url};

/// A run-wide rule sends nothing: it judges what the others recorded.
pub fn collect_nothing<P, F>(_c: &Collector<P>, _f: &F) -> Evidence {
    Evidence::default()
}

/// A digest a listing gives for the bytes at a URL.
#[derive(Debug, Clone)]
pub enum Expected {
    /// PyPI: a sha256 (file hashes, PEP 658 metadata hashes).
    Sha256(Sha256Digest),
    /// npm: a `dist.integrity` SRI string with at least one sha512 entry.
    Sri(String),
}

/// One file or tarball a served listing names.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The filename or `name@version`, for the reason line.
    pub name: String,
    /// The URL it resolves to, against the listing's own URL.
    pub url: Url,
    /// The digests it gives for the bytes there (empty: none).
    pub expected: Vec<Expected>,
}

/// How a protocol reads the files or tarballs a served body lists: the URL
/// the body was served from, and the body. Bodies that are no listing give
/// nothing.
pub type ListFn = fn(&Url, &[u8]) -> Vec<Listing>;

/// The answers the target gave, in record order: exchanges sent to the
/// target's own authority (not a `--manifest` URL elsewhere, not a CONNECT
/// tunnel's far end, not a link the suite refused to follow).
fn target_exchanges<'a>(
    records: &'a [ProbeRecord],
    origin: &'a Url,
) -> impl Iterator<Item = (&'a ProbeRecord, &'a Exchange)> + 'a {
    let authority = origin.authority();
    records.iter().flat_map(move |r| {
        let authority = authority.clone();
        r.exchanges
            .iter()
            .filter(move |e| e.peer == authority && !e.request.0.is_empty())
            .map(move |e| (r, e))
    })
}

fn method_of(ex: &Exchange) -> Option<Method> {
    Method::new(&ex.request_method()).ok()
}

fn what(rec: &ProbeRecord, ex: &Exchange) -> String {
    format!(
        "{}: {} {}",
        rec.id,
        ex.request_method(),
        short(&ex.request_target())
    )
}

/// The reason of a run-wide FAIL: how many findings, and the first in full.
fn findings_verdict(findings: &[String], fault: &str) -> Option<Verdict> {
    let first = findings.first()?;
    Some(fail(match findings.len() {
        1 => format!("{fault}: {first}"),
        n => format!("{fault} in {n} exchanges, first {first}"),
    }))
}

/// The listings in a whole 2xx body of a GET, with where they came from.
fn listings_of(origin: &Url, ex: &Exchange, list: ListFn) -> Vec<Listing> {
    let get = method_of(ex).is_some_and(|m| m == Method::Get);
    match ex.response.as_ref().filter(|r| r.is_success() && get) {
        Some(r) => r
            .full_body()
            .map(|b| list(&request_url(origin, ex), b))
            .unwrap_or_default(),
        None => Vec::new(),
    }
}

/// P3 over the whole run: every answer of the target, and every listing it
/// served, stays on its origin. `control` must have passed for a PASS.
pub fn judge_offsite<P, F: ControlFacts>(j: &Judge<P, F>, control: &str, list: ListFn) -> Verdict {
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    let mut findings = Vec::new();
    let (mut answers, mut listings, mut probes) = (0, 0, Vec::new());
    for (rec, ex) in target_exchanges(j.records, &origin) {
        let Some(status) = ex.status() else { continue };
        answers += 1;
        if !probes.contains(&rec.id) {
            probes.push(rec.id.clone());
        }
        if let Answer::RedirectOffOrigin(loc) = classify::classify(&origin, ex) {
            findings.push(format!(
                "{} -> {status} to {}",
                what(rec, ex),
                if loc.is_empty() {
                    "an unresolvable Location".to_string()
                } else {
                    short(&loc)
                }
            ));
            continue;
        }
        let listed = listings_of(&origin, ex, list);
        if !listed.is_empty() {
            listings += 1;
        }
        if let Some(l) = listed.iter().find(|l| !l.url.same_origin(&origin)) {
            findings.push(format!(
                "{} lists {} at {}",
                what(rec, ex),
                l.name,
                short(&l.url.to_string())
            ));
        }
    }
    if let Some(v) = findings_verdict(&findings, "the target hands the client to another origin") {
        return v;
    }
    if let Some(v) = j.require(control) {
        return v;
    }
    if answers == 0 {
        return inconclusive("the target answered nothing in this run, so nothing was examined");
    }
    pass(format!(
        "{answers} answers of the target in {} sub-probes examined: none redirects off its origin, and the {listings} listings among them name files on it only",
        probes.len()
    ))
}

/// Whether a served answer's bytes match one of the digests listed for
/// them: `None` when they cannot be checked (an SRI needs the whole body,
/// and the body was not recorded whole).
fn matches(expected: &[Expected], r: &egress_model::ResponseRecord) -> Option<bool> {
    let mut checkable = false;
    for e in expected {
        match e {
            Expected::Sha256(d) => {
                checkable = true;
                if *d == r.body_sha256 {
                    return Some(true);
                }
            }
            Expected::Sri(sri) => {
                if let Some(body) = r.full_body() {
                    checkable = true;
                    if Integrity::any_matches(sri, body) {
                        return Some(true);
                    }
                }
            }
        }
    }
    checkable.then_some(false)
}

fn same_resource(a: &Url, b: &Url) -> bool {
    a.same_origin(b) && a.path_and_query() == b.path_and_query()
}

/// P1 over the whole run: bytes served for a URL match a digest that the
/// target listed for that URL anywhere in the run (any of them, when its
/// listings disagree: a listing that changes is P5's finding). The bytes at
/// the end of a same-origin redirect chain count for the URL the chain
/// started from. `control` must have passed for a PASS.
pub fn judge_digests<P, F: ControlFacts>(j: &Judge<P, F>, control: &str, list: ListFn) -> Verdict {
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    // Every listing with a digest, and the sub-probe whose answer listed it.
    let mut listed: Vec<(Listing, &str)> = Vec::new();
    for (rec, ex) in target_exchanges(j.records, &origin) {
        for l in listings_of(&origin, ex, list) {
            if !l.expected.is_empty() {
                listed.push((l, rec.id.as_str()));
            }
        }
    }
    let mut findings = Vec::new();
    let (mut checked, mut unchecked) = (0, 0);
    for rec in j.records {
        // The URL each exchange stands for: its own, or the one its
        // redirect chain started from.
        let mut chain: Option<(String, Url, Url)> = None;
        for ex in &rec.exchanges {
            if ex.peer != origin.authority() || ex.request.0.is_empty() {
                chain = None;
                continue;
            }
            let url = request_url(&origin, ex);
            let start = match &chain {
                Some((label, next, start))
                    if ex.label == format!("{label} (redirect)") && same_resource(next, &url) =>
                {
                    start.clone()
                }
                _ => url.clone(),
            };
            let base_label = ex.label.trim_end_matches(" (redirect)").to_string();
            chain = ex
                .response
                .as_ref()
                .filter(|r| r.is_redirect())
                .and_then(|r| r.header("location"))
                .and_then(|loc| url.join(loc).ok())
                .map(|next| (base_label, next, start.clone()));
            let get = method_of(ex).is_some_and(|m| m == Method::Get);
            let Some(r) = ex.response.as_ref().filter(|r| r.is_success() && get) else {
                continue;
            };
            let mine: Vec<&(Listing, &str)> = listed
                .iter()
                .filter(|(l, _)| same_resource(&l.url, &start) || same_resource(&l.url, &url))
                .collect();
            let Some((first, by)) = mine.first() else {
                continue;
            };
            if r.body_end != BodyEnd::Complete {
                unchecked += 1;
                continue;
            }
            let expected: Vec<Expected> =
                mine.iter().flat_map(|(l, _)| l.expected.clone()).collect();
            match matches(&expected, r) {
                Some(true) => checked += 1,
                None => unchecked += 1,
                Some(false) => findings.push(format!(
                    "{} -> {}: {} bytes with sha256 {:.12}…, not the digest {by} listed for {}",
                    what(rec, ex),
                    r.status.unwrap_or_default(),
                    r.body_len,
                    r.body_sha256.to_hex(),
                    first.name
                )),
            }
        }
    }
    if let Some(v) = findings_verdict(
        &findings,
        "served bytes do not match the digest the target listed for them",
    ) {
        return v;
    }
    if let Some(v) = j.require(control) {
        return v;
    }
    if checked == 0 {
        return inconclusive(format!(
            "no served file could be checked against a digest the target listed ({} listed digests, {unchecked} answers not recorded whole)",
            listed.len()
        ));
    }
    pass(format!(
        "{checked} answers in the run match the digests the target listed for them ({unchecked} not recorded whole, so not checked)"
    ))
}

/// P6 over the whole run: no state-changing request (see
/// [`Method::is_write`]) is answered 2xx. `control` must have passed for a
/// PASS, and at least one such request must have been sent.
pub fn judge_writes<P, F: ControlFacts>(j: &Judge<P, F>, control: &str) -> Verdict {
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    let mut findings = Vec::new();
    let mut codes = Vec::new();
    let mut probes: Vec<&str> = Vec::new();
    for (rec, ex) in target_exchanges(j.records, &origin) {
        if !method_of(ex).is_some_and(|m| m.is_write()) {
            continue;
        }
        if !probes.contains(&rec.id.as_str()) {
            probes.push(rec.id.as_str());
        }
        match ex.status() {
            Some(s @ 200..=299) => findings.push(format!("{} -> {s}", what(rec, ex))),
            Some(s) => codes.push(s.to_string()),
            None => codes.push("no answer".to_string()),
        }
    }
    if let Some(v) = findings_verdict(&findings, "a state-changing request was honoured") {
        return v;
    }
    if let Some(v) = j.require(control) {
        return v;
    }
    if codes.is_empty() {
        return inconclusive("no state-changing request was recorded in this run");
    }
    pass(format!(
        "{} state-changing requests in {} sub-probes, none answered 2xx ({})",
        codes.len(),
        probes.len(),
        tally(&codes)
    ))
}
