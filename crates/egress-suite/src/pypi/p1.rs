//! P1 digest binding: a name and version never resolve to bytes without a
//! digest the client can verify; served bytes match it; artifacts are
//! addressed by digest.

use super::controls;
use super::facts::control_file;
use super::facts::Judge;
use super::facts::{label, Facts, ListedFile};
use super::plan::Collector;
use crate::classify::{classify, Answer};
use crate::collect::Evidence;
use crate::common::runwide::{self, Expected, Listing};
use crate::facts::{final_of, find, success_body};
use crate::judge::{fail, inconclusive, pass, refusals, short, skipped, Verdict, STRICT};
use egress_model::{DistFilename, ProbeRecord, ProjectName, Sha256Digest, Status, Url};

/// At most this many files of the present project are fetched and checked.
pub const MAX_FILES: usize = 16;

pub fn collect_page_html(c: &Collector, _f: &Facts) -> Evidence {
    controls::collect_project(c, false)
}

pub fn collect_page_json(c: &Collector, _f: &Facts) -> Evidence {
    controls::collect_project(c, true)
}

fn valid_sha256(hex: Option<&String>) -> bool {
    hex.is_some_and(|h| Sha256Digest::from_hex(h).is_ok())
}

fn judge_hashes(rec: &ProbeRecord, json: bool) -> Verdict {
    let (lbl, what) = if json {
        (label::PROJECT_JSON, "PEP 691 `hashes`")
    } else {
        (label::PROJECT_HTML, "`#sha256=` fragment")
    };
    let Some(ex) = find(rec, lbl) else {
        return inconclusive("the project page was not requested");
    };
    let Some(body) = success_body(ex) else {
        return inconclusive(format!(
            "the project page was not served whole: {}",
            ex.summary()
        ));
    };
    let parsed = if json {
        egress_simple::parse_project_json(body)
    } else {
        egress_simple::parse_project_html(body)
    };
    let page = match parsed {
        Ok(p) => p,
        Err(e) => return inconclusive(format!("the project page does not parse: {e}")),
    };
    if page.files.is_empty() {
        return inconclusive("the project page lists no file");
    }
    let missing: Vec<&str> = page
        .files
        .iter()
        .filter(|f| !valid_sha256(f.hashes.get("sha256")))
        .map(|f| f.filename.as_str())
        .collect();
    match missing.first() {
        Some(first) => fail(format!(
            "{} of {} file links carry no valid sha256 {what}, e.g. {first}",
            missing.len(),
            page.files.len()
        )),
        None => pass(format!(
            "all {} file links carry a sha256 {what}",
            page.files.len()
        )),
    }
}

pub fn judge_html_hashes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    j.require("C.project-html")
        .unwrap_or_else(|| judge_hashes(rec, false))
}

pub fn judge_json_hashes(j: &Judge, rec: &ProbeRecord) -> Verdict {
    j.require("C.project-json")
        .unwrap_or_else(|| judge_hashes(rec, true))
}

const FILE_LABEL: &str = "listed file";
const META_LABEL: &str = "listed core metadata";

pub fn collect_bytes_match(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = controls::collect_project(c, false);
    let Some(files) = listed_files(c.plan, &ev.exchanges) else {
        return ev;
    };
    for f in files.iter().take(MAX_FILES) {
        let Some(url) = &f.url else { continue };
        c.get_following(
            &mut ev,
            &format!("{FILE_LABEL}: {}", f.entry.filename),
            url,
            None,
        );
        if f.entry
            .core_metadata
            .as_ref()
            .is_some_and(|m| m.contains_key("sha256"))
        {
            if let Ok(meta) = url.join(&format!("{}.metadata", last_segment(url.path()))) {
                c.get_following(
                    &mut ev,
                    &format!("{META_LABEL}: {}", f.entry.filename),
                    &meta,
                    None,
                );
            }
        }
    }
    ev
}

fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// Files of the HTML page recorded in `exchanges`, resolved against the page URL.
fn listed_files(
    plan: &super::plan::Plan,
    exchanges: &[egress_model::Exchange],
) -> Option<Vec<ListedFile>> {
    let ex = exchanges.iter().find(|e| e.label == label::PROJECT_HTML)?;
    let page = egress_simple::parse_project_html(success_body(ex)?).ok()?;
    let url = plan
        .project_url(&plan.packages.present.first()?.name)
        .ok()?;
    let version = plan
        .packages
        .present
        .first()
        .and_then(|p| p.version.clone());
    Some(
        page.files
            .iter()
            .filter(|e| {
                version
                    .as_ref()
                    .is_none_or(|v| DistFilename::parse(&e.filename).is_ok_and(|d| &d.version == v))
            })
            .map(|e| ListedFile::from_entry(&url, e))
            .collect(),
    )
}

pub fn judge_bytes_match(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.file") {
        return v;
    }
    let Some(files) = listed_files(j.plan, &rec.exchanges) else {
        return inconclusive("the project page was not served whole");
    };
    let origin = j.origin();
    let mut checked = 0;
    let mut unserved = Vec::new();
    for f in files.iter().take(MAX_FILES) {
        let name = &f.entry.filename;
        if f.url
            .as_ref()
            .zip(origin.as_ref())
            .is_none_or(|(u, o)| !u.same_origin(o))
        {
            // The link leaves the mirror; P3 judges the hand-off.
            continue;
        }
        let Some(ex) = final_of(rec, &format!("{FILE_LABEL}: {name}")) else {
            continue;
        };
        if origin
            .as_ref()
            .is_some_and(|o| matches!(classify(o, ex), Answer::RedirectOffOrigin(_)))
        {
            // Handed to another origin: the client verifies what it gets
            // there; P3.offsite-redirect judges the hand-off.
            continue;
        }
        let Some(r) = ex
            .response
            .as_ref()
            .filter(|r| r.is_success() && r.body_end == egress_model::BodyEnd::Complete)
        else {
            unserved.push(name.clone());
            continue;
        };
        let Some(want) = f.sha256 else {
            return fail(format!(
                "{name} was served ({} bytes) with no sha256 listed for the client to verify",
                r.body_len
            ));
        };
        if r.body_sha256 != want {
            return fail(format!(
                "{name}: listed sha256 {:.16}…, served bytes hash to {:.16}…",
                want.to_hex(),
                r.body_sha256.to_hex()
            ));
        }
        checked += 1;
        if let Some(meta_want) = f.entry.core_metadata.as_ref().and_then(|m| m.get("sha256")) {
            if let Some(mr) = final_of(rec, &format!("{META_LABEL}: {name}"))
                .and_then(|e| e.response.as_ref())
                .filter(|r| r.is_success())
            {
                if mr.body_sha256.to_hex() != meta_want.to_ascii_lowercase() {
                    return fail(format!(
                        "{name}.metadata: listed sha256 {:.16}…, served bytes differ",
                        meta_want
                    ));
                }
            }
        }
    }
    if checked == 0 {
        return inconclusive(format!(
            "no listed file could be fetched from the mirror ({} not served)",
            unserved.len()
        ));
    }
    if let Some(example) = unserved.first() {
        return inconclusive(format!(
            "{checked} files matched their sha256 but {} listed files were not served, e.g. {}",
            unserved.len(),
            example
        ));
    }
    pass(format!(
        "all {checked} fetched files (and their advertised metadata) match their listed sha256"
    ))
}

const AS_LISTED: &str = "file at its listed URL";

/// Replaces the hex digit at `i` with another one.
fn flip(hex: &str, i: usize) -> String {
    hex.chars()
        .enumerate()
        .map(|(k, d)| match (k == i, d) {
            (false, d) => d,
            (true, '0') => '1',
            (true, _) => '0',
        })
        .collect()
}

pub fn collect_altered(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(url) = control_file(f).and_then(|l| l.url.clone()) else {
        return ev;
    };
    ev.push(c.get(AS_LISTED, &url, None));
    let Some(sha) = ev
        .exchanges
        .first()
        .and_then(|e| e.response.as_ref())
        .filter(|r| r.is_success())
        .map(|r| r.body_sha256.to_hex())
    else {
        return ev;
    };
    let path = url.path_and_query().to_string();
    let lower = path.to_ascii_lowercase();
    // Lowercasing keeps every byte offset, so `at` is one in `path` too, and
    // the 64 bytes there are `sha`, lowercased.
    if let Some(at) = lower.find(&sha) {
        for i in [0, 63] {
            let mut altered = path.clone();
            altered.replace_range(at..at + 64, &flip(&sha, i));
            ev.push(c.get(
                "same URL with one digest digit altered",
                &url.with_path(&altered),
                None,
            ));
        }
    }
    ev
}

pub fn judge_altered(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.file") {
        return v;
    }
    let Some(first) = find(rec, AS_LISTED) else {
        return inconclusive("the file was not requested");
    };
    let Some(r) = first.response.as_ref().filter(|r| r.is_success()) else {
        return inconclusive(format!(
            "the file was not served this time: {}",
            first.summary()
        ));
    };
    let target = first.request_target();
    if !target
        .to_ascii_lowercase()
        .contains(&r.body_sha256.to_hex())
    {
        return fail(format!("the file URL {} does not carry the sha256 of its bytes: artifacts are not addressed by digest", short(&target)));
    }
    let altered = egress_model::ProbeRecord {
        exchanges: rec.exchanges.iter().skip(1).cloned().collect(),
        ..rec.clone()
    };
    if altered.exchanges.is_empty() {
        return inconclusive("no altered URL was requested");
    }
    let (s, why) = refusals(j, &altered, "C.file", STRICT);
    if s == Status::Pass {
        pass(format!(
            "the file URL carries its sha256, and with one digit altered: {why}"
        ))
    } else {
        (s, why)
    }
}

/// Paths at which mirrors and static servers commonly serve a file by its
/// name and version alone.
pub fn name_version_paths(index_path: &str, filename: &str) -> Vec<String> {
    let Ok(d) = DistFilename::parse(filename) else {
        return Vec::new();
    };
    let (n, v) = (d.name.as_str(), d.version.as_str());
    let first = n.chars().next().unwrap_or('x');
    vec![
        format!("/packages/{filename}"),
        format!("/files/{filename}"),
        format!("/{filename}"),
        format!("{index_path}{n}/{filename}"),
        format!("/packages/source/{first}/{n}/{filename}"),
        format!("/packages/{n}/{v}/{filename}"),
        format!("/files/{n}/{v}/{filename}"),
    ]
}

pub fn collect_name_version(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(listed), Ok(index)) = (control_file(f), c.plan.index()) else {
        return ev;
    };
    let listed_path = listed.url.as_ref().map(|u| u.path().to_string());
    for p in name_version_paths(index.path(), &listed.entry.filename) {
        // The listed URL itself is P1.altered-digest's business.
        if Some(&p) != listed_path.as_ref() {
            ev.push(c.get("file by name and version", &index.with_path(&p), None));
        }
    }
    ev
}

pub fn judge_name_version(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.file", STRICT)
}

const UPSTREAM_PAGE: &str = "upstream-listed project's page";
const UPSTREAM_FILE: &str = "upstream-listed project's file";

/// With a controlled upstream: the target's page (and, if served, the files)
/// of a project the upstream lists with broken digests. A mirror may refuse
/// the project (it is not in the snapshot); what it may never do is pass
/// the broken listing on.
fn collect_upstream_listed(c: &Collector, project: Option<ProjectName>, window: &str) -> Evidence {
    let mut ev = Evidence::default();
    let Some(name) = project else { return ev };
    let Ok(url) = c.plan.project_url(&name) else {
        return ev;
    };
    c.window(window, &mut ev, |ev| {
        let page = c.get(UPSTREAM_PAGE, &url, Some(egress_simple::HTML_LEGACY));
        let files: Vec<_> = success_body(&page)
            .and_then(|b| egress_simple::parse_project_html(b).ok())
            .map(|p| p.files)
            .unwrap_or_default();
        ev.push(page);
        for f in files.iter().take(4) {
            if let Ok(u) = url.join(&f.url) {
                c.get_following(ev, &format!("{UPSTREAM_FILE}: {}", f.filename), &u, None);
            }
        }
    });
    ev
}

pub fn collect_no_digest(c: &Collector, _f: &Facts) -> Evidence {
    let name = c.plan.upstream.as_ref().and_then(|u| u.no_digest.clone());
    collect_upstream_listed(c, name, "P1.upstream-no-digest")
}

pub fn collect_bad_digest(c: &Collector, _f: &Facts) -> Evidence {
    let name = c.plan.upstream.as_ref().and_then(|u| u.bad_digest.clone());
    collect_upstream_listed(c, name, "P1.upstream-bad-digest")
}

/// The page the target served for the upstream-listed project, if any.
fn served_upstream_page(rec: &ProbeRecord) -> Result<Option<egress_simple::ProjectPage>, Verdict> {
    let Some(ex) = find(rec, UPSTREAM_PAGE) else {
        return Err(inconclusive("the project's page was not requested"));
    };
    match ex.response.as_ref() {
        Some(r) if r.is_success() => {
            match success_body(ex).map(egress_simple::parse_project_html) {
                Some(Ok(page)) => Ok(Some(page)),
                _ => Err(inconclusive(format!(
                    "the page was answered but not whole or not a project page: {}",
                    ex.summary()
                ))),
            }
        }
        _ => Ok(None),
    }
}

pub fn judge_no_digest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(name) = j.plan.upstream.as_ref().and_then(|u| u.no_digest.clone()) else {
        return skipped(
            "the upstream is not controlled, so no project with an undigested listing is known",
        );
    };
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    match served_upstream_page(rec) {
        Err(v) => v,
        Ok(None) => pass(format!("{name}, listed upstream without digests, is not served")),
        Ok(Some(page)) => match page.files.iter().find(|f| !valid_sha256(f.hashes.get("sha256"))) {
            Some(f) => fail(format!("{name}: the target lists {} with no sha256, as its upstream does: a name and version resolve to bytes no client can verify", f.filename)),
            None if page.files.is_empty() => pass(format!("{name} is served as an empty page")),
            None => pass(format!("{name} is served, and every file link carries a sha256 the upstream did not give")),
        },
    }
}

pub fn judge_bad_digest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(name) = j.plan.upstream.as_ref().and_then(|u| u.bad_digest.clone()) else {
        return skipped(
            "the upstream is not controlled, so no project with a wrong digest is known",
        );
    };
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let page = match served_upstream_page(rec) {
        Err(v) => return v,
        Ok(None) => {
            return pass(format!(
                "{name}, listed upstream with a wrong sha256, is not served"
            ))
        }
        Ok(Some(page)) => page,
    };
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's index URL does not parse");
    };
    for f in &page.files {
        let Some(ex) = final_of(rec, &format!("{UPSTREAM_FILE}: {}", f.filename)) else {
            continue;
        };
        if matches!(classify(&origin, ex), Answer::RedirectOffOrigin(_)) {
            continue;
        }
        let Some(r) = ex
            .response
            .as_ref()
            .filter(|r| r.is_success() && r.body_end == egress_model::BodyEnd::Complete)
        else {
            continue;
        };
        let listed = f
            .hashes
            .get("sha256")
            .and_then(|h| Sha256Digest::from_hex(h).ok());
        if listed != Some(r.body_sha256) {
            return fail(format!(
                "{name}: the target serves {} ({} bytes) whose sha256 is not the one it lists: bytes that do not match their digest are passed on",
                f.filename, r.body_len
            ));
        }
    }
    pass(format!(
        "{name}: listed, but no byte that contradicts the listed sha256 was served"
    ))
}

/// The files a served PEP 503 or PEP 691 page lists (those whose name is a
/// wheel or sdist filename), with the sha256 it gives for each, and for its
/// PEP 658 metadata at `<file URL>.metadata`. The run-wide rules read every
/// served body through this.
pub fn listings(page_url: &Url, body: &[u8]) -> Vec<Listing> {
    let Ok(page) = egress_simple::parse_project_html(body)
        .or_else(|_| egress_simple::parse_project_json(body))
    else {
        return Vec::new();
    };
    let sha = |m: Option<&String>| {
        m.and_then(|h| Sha256Digest::from_hex(h).ok())
            .map(Expected::Sha256)
    };
    let mut out = Vec::new();
    for f in &page.files {
        if DistFilename::parse(&f.filename).is_err() {
            continue;
        }
        let Ok(url) = page_url.join(&f.url) else {
            continue;
        };
        if let Some(meta) = sha(f.core_metadata.as_ref().and_then(|m| m.get("sha256"))) {
            out.push(Listing {
                name: format!("{}.metadata", f.filename),
                url: url.with_path(&format!("{}.metadata", url.path())),
                expected: vec![meta],
            });
        }
        out.push(Listing {
            name: f.filename.clone(),
            url,
            expected: sha(f.hashes.get("sha256")).into_iter().collect(),
        });
    }
    out
}

/// `P1.run-wide-digests`: see [`runwide::judge_digests`].
pub fn judge_run_wide_digests(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_digests(j, "C.file", listings)
}
