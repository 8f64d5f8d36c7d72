//! P5 snapshot immutability: a published manifest whose digest recomputes and
//! whose signature verifies; every listed file is in it with the same digest;
//! bytes per digest never change; upstream changes never show through.

use super::facts::control_file;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use crate::collect::Evidence;
use crate::common::cutoff;
use crate::common::snapshot::{
    changed_without_cause, input, manifest_to_compare, manifest_verdict, mutation, not_mutated,
    served_as_listed, whole_digest,
};
use crate::facts::{find, success_body};
use crate::judge::{fail, inconclusive, pass, skipped, Verdict};
use egress_model::{DistFilename, ProbeRecord};
use egress_simple::{HTML_LEGACY, JSON_V1};
use egress_snapshot::SnapshotDoc;
use serde_json::Value;

pub fn judge_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    manifest_verdict(j, rec, "C.index")
}

/// PyPI's part of P5.cutoff: the PEP 691 JSON project pages and their
/// files' PEP 700 `upload-time`.
pub const CUTOFF: cutoff::Pages = cutoff::Pages {
    control: "C.project-json",
    what: "JSON project page",
    accept: JSON_V1,
    pages: json_pages,
    files: json_files,
};

/// The PEP 691 JSON project pages a snapshot serves: JSON entries below
/// the index path, the index itself aside.
fn json_pages(doc: &SnapshotDoc, index_path: &str) -> Vec<String> {
    doc.served
        .iter()
        .filter(|e| e.content_type.eq_ignore_ascii_case(JSON_V1))
        .filter(|e| e.path.starts_with(index_path) && e.path != index_path)
        .map(|e| e.path.clone())
        .collect()
}

/// Each file of a PEP 691 project page with its `upload-time`, read
/// leniently: a time that is not a string is kept as its JSON text.
fn json_files(body: &[u8]) -> Result<Vec<cutoff::ServedFile>, String> {
    let page: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON ({e})"))?;
    let files = page
        .get("files")
        .and_then(Value::as_array)
        .ok_or("no `files` array")?;
    Ok(files
        .iter()
        .map(|f| cutoff::ServedFile {
            file: f
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or("a file without a filename")
                .to_string(),
            url: f.get("url").and_then(Value::as_str).map(str::to_string),
            time: f.get("upload-time").and_then(cutoff::time_text),
        })
        .collect())
}

const SERVED: &str = "served content";

pub fn collect_index_in_manifest(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    ev.push(c.get(SERVED, &index, Some(HTML_LEGACY)));
    ev.push(c.get(SERVED, &index, Some(JSON_V1)));
    for p in c.plan.packages.present.iter().take(3) {
        if let Ok(u) = c.plan.project_url(&p.name) {
            ev.push(c.get(SERVED, &u, Some(HTML_LEGACY)));
            ev.push(c.get(SERVED, &u, Some(JSON_V1)));
        }
    }
    for file in f.files.iter().take(super::p1::MAX_FILES) {
        let Some(u) = &file.url else { continue };
        ev.push(c.get(SERVED, u, None));
        if file.entry.core_metadata.is_some() {
            ev.push(c.get(
                SERVED,
                &u.with_path(&format!("{}.metadata", u.path())),
                None,
            ));
        }
    }
    ev
}

pub fn judge_index_in_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let (manifest, doc, origin) = match manifest_to_compare(j, "C.project-html", "index") {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut served = 0;
    for ex in &rec.exchanges {
        let path = match served_as_listed(ex, &doc, &manifest) {
            Ok(Some(path)) => path,
            Ok(None) => continue,
            Err(v) => return v,
        };
        let path = path.as_str();
        served += 1;
        // Every file a served project page lists must be in the snapshot with the same digest.
        if let Some(body) = success_body(ex) {
            let page = egress_simple::parse_project_html(body)
                .or_else(|_| egress_simple::parse_project_json(body));
            let page_url = origin.with_path(path);
            for file in page.map(|p| p.files).unwrap_or_default() {
                let (Ok(u), Some(h)) = (page_url.join(&file.url), file.hashes.get("sha256")) else {
                    continue;
                };
                if !u.same_origin(&origin) {
                    continue;
                }
                let listed = doc.served.iter().find(|e| e.path == u.path());
                match listed {
                    None => {
                        return fail(format!(
                            "{path} lists {} at {}, which SNAPSHOT.json does not serve",
                            file.filename,
                            u.path()
                        ))
                    }
                    Some(e) if e.sha256.to_hex() != h.to_ascii_lowercase() => {
                        return fail(format!(
                            "{path} lists {} with a sha256 other than the snapshot's",
                            file.filename
                        ))
                    }
                    Some(_) => {}
                }
            }
        }
    }
    if served == 0 {
        return inconclusive("nothing was served to compare with the manifest");
    }
    pass(format!(
        "{served} responses, and every file they list, match SNAPSHOT.json and MANIFEST"
    ))
}

const AGAIN: &str = "fetched again";

pub fn collect_stable(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    for n in 1..=2 {
        if let Some(u) = control_file(f).and_then(|l| l.url.clone()) {
            c.get_following(&mut ev, &format!("{AGAIN} ({n}): file"), &u, None);
        }
        if let Some(u) = &f.project_url {
            c.get_following(
                &mut ev,
                &format!("{AGAIN} ({n}): page"),
                u,
                Some(HTML_LEGACY),
            );
        }
    }
    ev
}

pub fn judge_stable(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.file") {
        return v;
    }
    if let Some(v) = changed_without_cause(
        j,
        &[(
            "P6.effect",
            super::p6::EFFECT_BEFORE,
            super::p6::EFFECT_AGAIN,
        )],
    ) {
        return v;
    }
    let Some((_, want)) = &j.facts.control_file else {
        return inconclusive("the file control recorded no bytes");
    };
    let mut compared = 0;
    let mut pages = Vec::new();
    for n in 1..=2 {
        let Some(file) = whole_digest(rec, &format!("{AGAIN} ({n}): file")) else {
            return inconclusive(format!("fetch {n} of the file did not serve it whole"));
        };
        if &file != want {
            return fail(format!(
                "the same file URL served other bytes on fetch {n} ({:.12}… instead of {:.12}…)",
                file.to_hex(),
                want.to_hex()
            ));
        }
        compared += 1;
        if let Some(p) = whole_digest(rec, &format!("{AGAIN} ({n}): page")) {
            pages.push(p);
        }
    }
    if matches!(pages.as_slice(), [first, again] if first != again) {
        return fail("the project page changed between two fetches in a row");
    }
    pass(format!(
        "{} fetches of the same file and page returned identical bytes",
        compared + pages.len()
    ))
}

pub const BEFORE: &str = "before the upstream change";
/// The same read, repeated before the change: a page that differs between
/// them is unstable on its own (P5.stable-bytes' finding), and a difference
/// after the change cannot be laid on it.
pub const BEFORE_AGAIN: &str = "before the upstream change, read again";
const AFTER: &str = "after the upstream change";

pub fn collect_new_version(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(u)) = (c.upstream, &f.project_url) else {
        return ev;
    };
    let Some(present) = c.plan.packages.present.first() else {
        return ev;
    };
    c.window("P5.upstream-new-version", &mut ev, |ev| {
        ev.push(c.get(&format!("{BEFORE}: page"), u, Some(HTML_LEGACY)));
        match up.publish_new_version(&present.name) {
            Ok(obs) => ev.observations.push(obs),
            Err(e) => ev
                .observations
                .push(input(&format!("mutation failed: {e}"), Vec::new())),
        }
        ev.push(c.get(&format!("{AFTER}: page"), u, Some(HTML_LEGACY)));
        ev.push(c.get(&format!("{AFTER}: page"), u, Some(JSON_V1)));
    });
    ev
}

pub fn judge_new_version(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped("the upstream is not controlled, so it cannot publish during the run");
    }
    if let Some(v) = j.require("C.project-html") {
        return v;
    }
    let Some((filename, _, _)) = mutation(rec) else {
        return inconclusive(not_mutated(
            rec,
            "the upstream did not publish a new version",
        ));
    };
    let Ok(new) = DistFilename::parse(filename) else {
        return inconclusive("the published file has no version in its name");
    };
    let mut checked = 0;
    for ex in rec.exchanges.iter().filter(|e| e.label.starts_with(AFTER)) {
        let Some(body) = success_body(ex) else {
            continue;
        };
        let Ok(page) = egress_simple::parse_project_html(body)
            .or_else(|_| egress_simple::parse_project_json(body))
        else {
            continue;
        };
        checked += 1;
        if page
            .files
            .iter()
            .any(|f| DistFilename::parse(&f.filename).is_ok_and(|d| d.version == new.version))
        {
            return fail(format!(
                "version {} published upstream during the run shows on the mirror's page",
                new.version
            ));
        }
        if page.versions.iter().any(|v| v == new.version.as_str()) {
            return fail(format!(
                "version {} published upstream during the run is listed in the mirror's versions",
                new.version
            ));
        }
    }
    if checked == 0 {
        return inconclusive("the page was not served after the upstream change");
    }
    pass(format!(
        "version {} published upstream mid-run never shows ({checked} pages checked)",
        new.version
    ))
}

pub fn collect_replaced(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(page_url)) = (c.upstream, &f.project_url) else {
        return ev;
    };
    let Some(file) = control_file(f) else {
        return ev;
    };
    let name = file.entry.filename.clone();
    c.window("P5.upstream-replaced-bytes", &mut ev, |ev| {
        ev.push(c.get(&format!("{BEFORE}: page"), page_url, Some(HTML_LEGACY)));
        ev.push(c.get(
            &format!("{BEFORE_AGAIN}: page"),
            page_url,
            Some(HTML_LEGACY),
        ));
        match up.replace_file_bytes(&name) {
            Ok(obs) => ev.observations.push(obs),
            Err(e) => ev
                .observations
                .push(input(&format!("mutation failed: {e}"), Vec::new())),
        }
        let after = c.get(&format!("{AFTER}: page"), page_url, Some(HTML_LEGACY));
        let new_url = success_body(&after)
            .and_then(|b| egress_simple::parse_project_html(b).ok())
            .and_then(|p| p.files.into_iter().find(|e| e.filename == name))
            .and_then(|e| page_url.join(&e.url).ok());
        ev.push(after);
        if let Some(u) = &file.url {
            c.get_following(ev, &format!("{AFTER}: file at its old URL"), u, None);
        }
        if let Some(u) = new_url.filter(|n| Some(n) != file.url.as_ref()) {
            c.get_following(
                ev,
                &format!("{AFTER}: file at the URL now listed"),
                &u,
                None,
            );
        }
    });
    ev
}

pub fn judge_replaced(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped(
            "the upstream is not controlled, so it cannot replace bytes during the run",
        );
    }
    if let Some(v) = j.require("C.file") {
        return v;
    }
    let Some((filename, upstream_before, after)) = mutation(rec) else {
        return inconclusive(not_mutated(rec, "the upstream did not replace a file"));
    };
    // The digest the mirror listed before the change, read twice: when the
    // two reads disagree, a change after it is not the upstream's doing.
    let listed_in = |label: String| {
        find(rec, &label)
            .and_then(success_body)
            .and_then(|b| egress_simple::parse_project_html(b).ok())
            .and_then(|p| p.files.into_iter().find(|e| e.filename == filename))
            .and_then(|e| e.hashes.get("sha256").map(|h| h.to_ascii_lowercase()))
    };
    let (first, again) = (
        listed_in(format!("{BEFORE}: page")),
        listed_in(format!("{BEFORE_AGAIN}: page")),
    );
    let unstable = first.is_some() && again.is_some() && first != again;
    let before = first.or_else(|| upstream_before.map(|d| d.to_hex()));
    for ex in rec.exchanges.iter().filter(|e| e.label.starts_with(AFTER)) {
        let Some(r) = ex.response.as_ref().filter(|r| r.is_success()) else {
            continue;
        };
        if r.body_sha256 == after {
            return fail(format!(
                "the mirror served the bytes that replaced {filename} upstream mid-run"
            ));
        }
        if let Some(body) = success_body(ex) {
            if let Ok(page) = egress_simple::parse_project_html(body) {
                if let Some(e) = page.files.iter().find(|e| e.filename == filename) {
                    let listed = e.hashes.get("sha256").map(|h| h.to_ascii_lowercase());
                    if listed.as_deref() == Some(after.to_hex().as_str()) {
                        return fail(format!("the mirror's page now lists the replaced upstream digest for {filename}"));
                    }
                    if !unstable && before.as_ref().is_some_and(|b| listed.as_ref() != Some(b)) {
                        return fail(format!("the digest listed for {filename} changed after the upstream replaced it, though the page listed the same one twice before"));
                    }
                }
            }
        }
    }
    if unstable {
        return inconclusive(format!(
            "the page listed {filename} with two digests before any upstream change: see P5.stable-bytes"
        ));
    }
    let served = rec
        .exchanges
        .iter()
        .filter(|e| {
            e.label.starts_with(AFTER)
                && e.label.contains("file")
                && e.response.as_ref().is_some_and(|r| r.is_success())
        })
        .count();
    if served == 0 && rec.exchanges.iter().all(|e| e.status() != Some(200)) {
        return inconclusive("nothing was served after the upstream change");
    }
    pass(format!("{filename} replaced upstream mid-run; the mirror kept serving and listing the snapshot's bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::cutoff::testing::{doc, manifest_record, pages_record, verdict};
    use egress_model::Status;

    const PAGE: &str = "/simple/a/";
    const FILE: &str = "/files/aa/a-1.0-py3-none-any.whl";
    const TIME: &str = "2025-01-01T00:00:01.000000Z";
    const CUT: &str = "2025-06-01T00:00:00Z";

    fn page(time: Option<&str>) -> Vec<u8> {
        let time = time.map_or(String::new(), |t| format!(r#","upload-time":"{t}""#));
        format!(
            r#"{{"meta":{{"api-version":"1.1"}},"name":"a","files":[{{"filename":"a-1.0-py3-none-any.whl","url":"{FILE}","hashes":{{}}{time}}}]}}"#
        )
        .into_bytes()
    }

    fn snapshot(times: &[(&str, &str)], cutoff: Option<&str>) -> SnapshotDoc {
        doc(
            &[
                ("/simple/", JSON_V1),
                ("/simple/", "application/vnd.pypi.simple.v1+html"),
                (PAGE, JSON_V1),
                (PAGE, "application/vnd.pypi.simple.v1+html"),
                (FILE, "application/octet-stream"),
            ],
            times,
            cutoff,
        )
    }

    fn judged(d: Option<&SnapshotDoc>, body: &[u8]) -> Verdict {
        verdict(
            &CUTOFF,
            "/simple/",
            true,
            manifest_record(d),
            pages_record(&[(PAGE, 200, body)]),
        )
    }

    #[test]
    fn served_times_equal_to_the_manifests_and_before_the_cutoff_pass() {
        let d = snapshot(&[(FILE, TIME)], Some(CUT));
        let (s, r) = judged(Some(&d), &page(Some(TIME)));
        assert_eq!(s, Status::Pass, "{r}");
        assert!(
            r.contains("1 upload time served on 1 read of the 1 JSON project page SNAPSHOT.json lists is exactly as SNAPSHOT.json records")
                && r.contains("none after the signed cutoff 2025-06-01T00:00:00Z"),
            "{r}"
        );
        // Without a cutoff, the times alone are compared.
        let (s, r) = judged(Some(&snapshot(&[(FILE, TIME)], None)), &page(Some(TIME)));
        assert_eq!(s, Status::Pass, "{r}");
        assert!(r.contains("records no cutoff"), "{r}");
    }

    #[test]
    fn a_time_after_the_cutoff_fails_naming_page_file_and_times() {
        let d = snapshot(&[(FILE, TIME)], Some(CUT));
        let (s, r) = judged(Some(&d), &page(Some("2025-07-01T00:00:00.000000Z")));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.starts_with("/simple/a/ serves a-1.0-py3-none-any.whl with upload time 2025-07-01T00:00:00.000000Z, after the signed cutoff 2025-06-01T00:00:00Z; SNAPSHOT.json records 2025-01-01T00:00:01.000000Z"),
            "{r}"
        );
        // The disagreement with the manifest is counted behind it.
        assert!(r.ends_with("(and 1 more disagreement)"), "{r}");
        // A time that is no time cannot be shown before the cutoff.
        let body = String::from_utf8(page(Some(TIME)))
            .unwrap()
            .replace(&format!("\"{TIME}\""), "5");
        let (s, r) = judged(Some(&d), body.as_bytes());
        assert_eq!(s, Status::Fail, "{r}");
        assert!(r.contains("\"5\", which is no RFC 3339 time"), "{r}");
    }

    #[test]
    fn a_rewritten_or_missing_time_fails_even_before_the_cutoff() {
        let d = snapshot(&[(FILE, TIME)], Some(CUT));
        let (s, r) = judged(Some(&d), &page(Some("2024-12-01T00:00:00.000000Z")));
        assert_eq!(s, Status::Fail, "{r}");
        assert_eq!(r, "/simple/a/ serves a-1.0-py3-none-any.whl with upload time 2024-12-01T00:00:00.000000Z, SNAPSHOT.json records 2025-01-01T00:00:01.000000Z for /files/aa/a-1.0-py3-none-any.whl");
        // The same instant written otherwise is not the recorded text.
        let (s, r) = judged(Some(&d), &page(Some("2025-01-01T00:00:01Z")));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(r.contains("the same instant, written otherwise"), "{r}");
        // A time on one side only.
        let (s, r) = judged(Some(&d), &page(None));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.contains("without an upload time, SNAPSHOT.json records 2025-01-01T00:00:01.000000Z"),
            "{r}"
        );
        let d = snapshot(&[], Some(CUT));
        let (s, r) = judged(Some(&d), &page(Some(TIME)));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.contains("SNAPSHOT.json records none for /files/aa/"),
            "{r}"
        );
    }

    #[test]
    fn nothing_to_hold_the_pages_to_is_skipped_and_nothing_read_is_inconclusive() {
        let (s, r) = judged(None, &page(Some(TIME)));
        assert_eq!(s, Status::Skipped, "{r}");
        assert_eq!(r, "no manifest was read: the run has no signed cutoff or upload time to hold the JSON project pages to");
        let (s, r) = judged(Some(&snapshot(&[], None)), &page(Some(TIME)));
        assert_eq!(s, Status::Skipped, "{r}");
        assert!(r.contains("neither a cutoff"), "{r}");
        let d = snapshot(&[(FILE, TIME)], Some(CUT));
        // A server that answers 404 to everything.
        let (s, r) = verdict(
            &CUTOFF,
            "/simple/",
            true,
            manifest_record(Some(&d)),
            pages_record(&[(PAGE, 404, b"not found")]),
        );
        assert_eq!(s, Status::Inconclusive, "{r}");
        assert!(r.contains("none of the 1 JSON project page SNAPSHOT.json lists was read: /simple/a/ was not served whole: GET /simple/a/"), "{r}");
        // Its control failed: nothing is judged.
        let (s, r) = verdict(
            &CUTOFF,
            "/simple/",
            false,
            manifest_record(Some(&d)),
            pages_record(&[(PAGE, 200, &page(Some(TIME)))]),
        );
        assert_eq!(s, Status::Inconclusive, "{r}");
        assert!(r.contains("C.project-json"), "{r}");
        // A cutoff, but no time on either side: nothing was compared.
        let d = snapshot(&[], Some(CUT));
        let (s, r) = judged(Some(&d), &page(None));
        assert_eq!(s, Status::Inconclusive, "{r}");
        assert!(r.contains("no served upload time to compare"), "{r}");
        // A signed cutoff that is no time.
        let d = snapshot(&[(FILE, TIME)], Some("June"));
        let (s, r) = judged(Some(&d), &page(Some(TIME)));
        assert_eq!(s, Status::Fail, "{r}");
        assert!(r.contains("signed cutoff"), "{r}");
    }

    #[test]
    fn at_most_64_pages_are_read_and_the_reason_says_so() {
        let paths: Vec<String> = (0..100).map(|i| format!("/simple/p{i:03}/")).collect();
        let served: Vec<(&str, &str)> = paths.iter().map(|p| (p.as_str(), JSON_V1)).collect();
        let d = doc(&served, &[(FILE, TIME)], Some(CUT));
        let picked = cutoff::pick(paths.clone());
        let body = page(Some(TIME));
        let pages: Vec<(&str, u16, &[u8])> = picked
            .iter()
            .map(|p| (p.as_str(), 200, body.as_slice()))
            .collect();
        let (s, r) = verdict(
            &CUTOFF,
            "/simple/",
            true,
            manifest_record(Some(&d)),
            pages_record(&pages),
        );
        assert_eq!(s, Status::Pass, "{r}");
        assert!(
            r.contains("64 of the 100 JSON project pages SNAPSHOT.json lists (at most 64, spread over the list)"),
            "{r}"
        );
    }
}
