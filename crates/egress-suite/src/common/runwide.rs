//! Run-wide rules: every exchange recorded in a run, whichever sub-probe
//! made it (the positive controls' included), judged against the rules that
//! hold for any answer of a conformant mirror:
//!
//! - P3: no answer redirects off the target's origin, and no listing the
//!   target serves names a file or tarball on another origin;
//! - P1: bytes served for a URL match a digest the target itself listed for
//!   that URL somewhere in the run;
//! - P6: no state-changing request is answered 2xx;
//! - P5: every answer that names the snapshot it came from (egress-mirror's
//!   `X-Egress-Snapshot`) names the same one, the one checked: replicas
//!   behind one balancer serving different snapshots show here.
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
    /// The Hub: a regular file's git blob id (the sha1 of `blob {len}\0`
    /// and its bytes), checkable only on a body recorded whole.
    GitBlob(egress_model::GitBlobId),
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
fn listings_of(
    origin: &Url,
    ex: &Exchange,
    list: &dyn Fn(&Url, &[u8]) -> Vec<Listing>,
) -> Vec<Listing> {
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
        let listed = listings_of(&origin, ex, &list);
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
            Expected::GitBlob(id) => {
                if let Some(body) = r.full_body() {
                    checkable = true;
                    if egress_model::GitBlobId::of_blob(body) == *id {
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
///
/// `list` may capture what the run showed (cargo's `dl` template, from its
/// `config.json`), where a body alone does not say where its files are.
pub fn judge_digests<P, F: ControlFacts>(
    j: &Judge<P, F>,
    control: &str,
    list: impl Fn(&Url, &[u8]) -> Vec<Listing>,
) -> Verdict {
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    // Every listing with a digest, and the sub-probe whose answer listed it.
    let mut listed: Vec<(Listing, &str)> = Vec::new();
    for (rec, ex) in target_exchanges(j.records, &origin) {
        for l in listings_of(&origin, ex, &list) {
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
    let mut unproven = Vec::new();
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
            None if !crate::judge::alive_after(rec) => unproven.push(what(rec, ex)),
            None => codes.push("no answer".to_string()),
        }
    }
    if let Some(v) = findings_verdict(&findings, "a state-changing request was honoured") {
        return v;
    }
    if let Some(v) = j.require(control) {
        return v;
    }
    if let Some(first) = unproven.first() {
        return inconclusive(format!(
            "{} state-changing requests got no answer and the control page was not served right after them ({first}): a target that stopped answering shows no refusal",
            unproven.len()
        ));
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

/// The response header egress-mirror names the snapshot of each answer in.
pub const SNAPSHOT_HEADER: &str = "X-Egress-Snapshot";

/// P5 over the whole run: every answer that carries [`SNAPSHOT_HEADER`]
/// names one snapshot, and `expected` when given (`--expect-snapshot`, else
/// the one P5.manifest verified). A FAIL names every snapshot seen, with
/// its count and the first answer from each one that is not expected.
/// SKIPPED when no answer names its snapshot: then a mixed fleet cannot be
/// told from the answers.
pub fn judge_one_snapshot<P, F: ControlFacts>(
    j: &Judge<P, F>,
    control: &str,
    expected: Option<Sha256Digest>,
) -> Verdict {
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    // (snapshot named, answers, the first of them)
    let mut seen: Vec<(String, usize, String)> = Vec::new();
    let mut unnamed = 0usize;
    for (rec, ex) in target_exchanges(j.records, &origin) {
        let Some(response) = &ex.response else {
            continue;
        };
        let Some(id) = response.header(SNAPSHOT_HEADER) else {
            unnamed += 1;
            continue;
        };
        match seen.iter_mut().find(|(s, _, _)| s == id) {
            Some((_, n, _)) => *n += 1,
            None => seen.push((id.to_string(), 1, what(rec, ex))),
        }
    }
    if seen.is_empty() {
        return crate::judge::skipped(format!(
            "no answer names the snapshot it came from ({SNAPSHOT_HEADER}): replicas serving different snapshots cannot be told apart from the answers"
        ));
    }
    let want = expected.map(|d| d.to_hex());
    let odd: Vec<&(String, usize, String)> = seen
        .iter()
        .filter(|(id, _, _)| match &want {
            Some(w) => id != w,
            None => seen.len() > 1,
        })
        .collect();
    if !odd.is_empty() {
        let all: Vec<String> = seen
            .iter()
            .map(|(id, n, _)| {
                let mark = if want.as_deref() == Some(id.as_str()) {
                    ", the checked one"
                } else {
                    ""
                };
                format!("{} ({n} answers{mark})", short_id(id))
            })
            .collect();
        let first = odd.first().map_or(String::new(), |(id, _, first)| {
            format!("; the first answer from {}: {first}", short_id(id))
        });
        return fail(format!(
            "the target answered from {} snapshot{}: {}{first}",
            seen.len(),
            if seen.len() == 1 { "" } else { "s" },
            all.join(", ")
        ));
    }
    if let Some(v) = j.require(control) {
        return v;
    }
    let n: usize = seen.iter().map(|(_, n, _)| n).sum();
    let id = seen.first().map_or("", |(id, _, _)| id.as_str());
    pass(format!(
        "all {n} answers that name their snapshot name {}{}{}",
        short_id(id),
        if want.is_some() {
            ", the checked one"
        } else {
            ""
        },
        if unnamed > 0 {
            format!(" ({unnamed} answers name none)")
        } else {
            String::new()
        }
    ))
}

/// A snapshot ID as the reason lines show it: its first 16 characters.
fn short_id(id: &str) -> String {
    let head: String = id.chars().take(16).collect();
    if head.len() < id.len() {
        format!("{head}…")
    } else {
        head
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::facts::Controls;
    use crate::plan::{ManifestSource, Plan};
    use egress_model::{ResponseRecord, Status, WireBytes};

    struct Facts(Controls);
    impl ControlFacts for Facts {
        fn status(&self, control: &str) -> Status {
            self.0.status(control)
        }
        fn served_artifact(&self) -> Option<Url> {
            None
        }
    }

    const PEER: &str = "127.0.0.1:8080";

    fn plan() -> Plan<()> {
        Plan {
            index_url: format!("http://{PEER}/simple/"),
            packages: (),
            present_source: "test".into(),
            upstream: None,
            manifest: ManifestSource::WellKnown,
            allowed_signers: false,
            destructive: false,
            expect: Default::default(),
        }
    }

    fn ex(
        peer: &str,
        request: &str,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Exchange {
        Exchange {
            label: "x".into(),
            peer: peer.into(),
            request: WireBytes(format!("{request} HTTP/1.1\r\n\r\n").into_bytes()),
            response: Some(ResponseRecord {
                status_line: format!("HTTP/1.1 {status}"),
                status: Some(status),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
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

    fn rec(id: &str, exchanges: Vec<Exchange>) -> ProbeRecord {
        ProbeRecord {
            id: id.into(),
            status: Status::Inconclusive,
            reason: String::new(),
            exchanges,
            observations: Vec::new(),
        }
    }

    fn judge(
        records: &[ProbeRecord],
        passed: bool,
        f: impl Fn(&Judge<(), Facts>) -> Verdict,
    ) -> Verdict {
        let plan = plan();
        let status = if passed {
            Status::Pass
        } else {
            Status::Inconclusive
        };
        let facts = Facts(Controls(
            ["C.index", "C.file"]
                .iter()
                .map(|c| (c.to_string(), status))
                .collect(),
        ));
        f(&Judge {
            plan: &plan,
            facts: &facts,
            records,
        })
    }

    /// A page listing one file, with its sha256.
    fn list(page: &Url, body: &[u8]) -> Vec<Listing> {
        let text = String::from_utf8_lossy(body);
        let Some((href, hex)) = text.split_once(' ') else {
            return Vec::new();
        };
        match (page.join(href), Sha256Digest::from_hex(hex.trim())) {
            (Ok(url), Ok(d)) => vec![Listing {
                name: "f.whl".into(),
                url,
                expected: vec![Expected::Sha256(d)],
            }],
            _ => Vec::new(),
        }
    }

    #[test]
    fn an_offsite_redirect_in_any_record_fails_without_a_control() {
        let records = [rec(
            "P4.metadata-sdist",
            vec![ex(
                PEER,
                "GET /simple/x/x.tar.gz.metadata",
                302,
                &[("Location", "http://up:9/x")],
                b"",
            )],
        )];
        let (s, r) = judge(&records, false, |j| judge_offsite(j, "C.index", list));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.contains(
                "P4.metadata-sdist: GET /simple/x/x.tar.gz.metadata -> 302 to http://up:9/x"
            ),
            "{r}"
        );
    }

    #[test]
    fn answers_from_elsewhere_are_not_the_targets() {
        // A --manifest URL on another origin, and a CONNECT tunnel's far end.
        let records = [rec(
            "P5.manifest",
            vec![
                ex(
                    "10.0.0.1:80",
                    "GET /MANIFEST",
                    302,
                    &[("Location", "http://up:9/x")],
                    b"",
                ),
                ex(
                    "up:9 via 127.0.0.1:8080",
                    "GET /x",
                    302,
                    &[("Location", "http://up:9/y")],
                    b"",
                ),
                ex(PEER, "GET /simple/", 200, &[], b"ok"),
            ],
        )];
        let (s, r) = judge(&records, true, |j| judge_offsite(j, "C.index", list));
        assert_eq!(s, Status::Pass, "{r}");
        assert!(r.starts_with("1 answers"), "{r}");
    }

    #[test]
    fn nothing_examined_is_never_a_pass() {
        let records = [rec(
            "C.index",
            vec![ex(PEER, "GET /simple/", 404, &[], b"")],
        )];
        let (s, _) = judge(&records, false, |j| judge_offsite(j, "C.index", list));
        assert_eq!(s, Status::Inconclusive);
        let (s, _) = judge(&records, true, |j| judge_digests(j, "C.file", list));
        assert_eq!(s, Status::Inconclusive);
        let (s, _) = judge(&records, true, |j| judge_writes(j, "C.index"));
        assert_eq!(s, Status::Inconclusive);
    }

    #[test]
    fn bytes_are_checked_against_what_any_record_listed_through_redirects() {
        let good = b"wheel bytes";
        let page = format!("/files/f.whl {}", Sha256Digest::of(good).to_hex());
        let mut hop = ex(
            PEER,
            "GET /files/f.whl",
            302,
            &[("Location", "/blob/1")],
            b"",
        );
        hop.label = "file".into();
        let mut end = ex(PEER, "GET /blob/1", 200, &[], b"other bytes");
        end.label = "file (redirect)".into();
        let records = [
            rec(
                "C.project-html",
                vec![ex(PEER, "GET /simple/x/", 200, &[], page.as_bytes())],
            ),
            rec("P4.tripwire", vec![hop, end]),
        ];
        let (s, r) = judge(&records, false, |j| judge_digests(j, "C.file", list));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.contains("P4.tripwire: GET /blob/1 -> 200") && r.contains("C.project-html listed"),
            "{r}"
        );
        let mut ok = records.clone();
        ok[1].exchanges[1] = {
            let mut e = ex(PEER, "GET /blob/1", 200, &[], good);
            e.label = "file (redirect)".into();
            e
        };
        let (s, r) = judge(&ok, true, |j| judge_digests(j, "C.file", list));
        assert_eq!(s, Status::Pass, "{r}");
    }

    #[test]
    fn a_write_answered_2xx_fails_wherever_it_was_sent() {
        let records = [rec(
            "P3.registry-routes",
            vec![
                ex(PEER, "GET /-/whoami", 200, &[], b"{}"),
                ex(PEER, "POST /-/npm/v1/security/audits", 200, &[], b"{}"),
                ex(PEER, "PROPFIND /", 405, &[], b""),
            ],
        )];
        let (s, r) = judge(&records, true, |j| judge_writes(j, "C.index"));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.contains("P3.registry-routes: POST /-/npm/v1/security/audits -> 200"),
            "{r}"
        );
    }
}
