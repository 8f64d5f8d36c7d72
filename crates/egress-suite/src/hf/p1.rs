//! P1 digest binding, in the Hub's terms: every file the tree lists carries
//! its git blob id and, stored in LFS, its sha256 and size; the bytes under
//! `/resolve/` at the commit have them.

use super::doc;
use super::facts::{Facts, Judge};
use super::plan::Collector;
use crate::collect::Evidence;
use crate::common::runwide;
use crate::facts::final_of;
use crate::judge::{fail, inconclusive, pass, Verdict};
use egress_model::{BodyEnd, ProbeRecord};

/// Files downloaded at most.
const MAX_FILES: usize = 8;

fn download_label(path: &str) -> String {
    format!("download of {path}")
}

pub fn collect_file_digests(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(sha) = f.sha.as_ref() else { return ev };
    for e in f.files.iter().take(MAX_FILES) {
        if let Some(u) = f.resolve_url(sha, &e.path) {
            c.get_following(&mut ev, &download_label(&e.path), &u, None);
        }
    }
    ev
}

pub fn judge_file_digests(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.resolve") {
        return v;
    }
    if let Some((e, what)) = j
        .facts
        .files
        .iter()
        .find_map(|e| e.missing().map(|m| (e, m)))
    {
        return fail(format!(
            "the tree lists {} without {what}: its bytes are bound to nothing",
            e.path
        ));
    }
    let mut checked = 0;
    for e in j.facts.files.iter().take(MAX_FILES) {
        let Some(r) = final_of(rec, &download_label(&e.path))
            .and_then(|x| x.response.as_ref())
            .filter(|r| r.is_success() && r.body_end == BodyEnd::Complete)
        else {
            continue;
        };
        let size = e.lfs.as_ref().and_then(|(_, s)| *s).or(e.size);
        if size.is_some_and(|s| s != r.body_len) {
            return fail(format!(
                "{} is served as {} bytes; the tree lists {}",
                e.path,
                r.body_len,
                size.unwrap_or_default()
            ));
        }
        match e.matches(&r.body_sha256, r.full_body()) {
            Some(true) => checked += 1,
            Some(false) => {
                return fail(format!(
                    "{} is served with bytes (sha256 {:.16}…) that are not the {} the tree lists",
                    e.path,
                    r.body_sha256.to_hex(),
                    if e.lfs.is_some() {
                        "LFS sha256"
                    } else {
                        "git blob id"
                    }
                ))
            }
            None => {}
        }
    }
    if checked == 0 {
        return inconclusive("no file was served whole to compare with its tree entry");
    }
    pass(format!(
        "{checked} files match the blob id or LFS sha256 their tree entries list"
    ))
}

const BAD_TREE: &str = "tree of the repository the upstream serves tampered";

fn bad_label(path: &str) -> String {
    format!("a file of the tampered repository: {path}")
}

/// The tampered repository's tree at `main`, as the target serves it, and
/// its files (or, with no tree, the files most repositories have).
pub fn collect_upstream_bad_digest(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (
        super::plan::endpoint(c),
        c.plan
            .packages
            .bad_digest
            .as_deref()
            .and_then(|n| super::plan::RepoRef::parse(n).ok()),
    ) else {
        return ev;
    };
    c.window("P1.upstream-bad-digest", &mut ev, |ev| {
        let tree = r.api(&e, "/tree/main?recursive=true&expand=false");
        let from = ev.exchanges.len();
        c.get_following(ev, BAD_TREE, &tree, None);
        let listed: Vec<String> = ev
            .exchanges
            .get(from..)
            .and_then(<[_]>::last)
            .and_then(crate::facts::success_body)
            .and_then(doc::tree)
            .map(|t| t.into_iter().map(|x| x.path).take(MAX_FILES).collect())
            .unwrap_or_else(|| vec!["config.json".into(), "README.md".into()]);
        for p in listed {
            c.get_following(ev, &bad_label(&p), &r.resolve(&e, "main", &p), None);
        }
    });
    ev
}

/// Bytes the target serves for the tampered repository must be the ones
/// its tree lists; refusing the repository (a snapshot does not hold it)
/// passes.
pub fn judge_upstream_bad_digest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.bad_digest.is_none() {
        return crate::judge::skipped(
            "the upstream is not controlled: no repository served with contradicting bytes is known",
        );
    }
    if let Some(v) = j.require("C.resolve") {
        return v;
    }
    let listed = final_of(rec, BAD_TREE)
        .and_then(crate::facts::success_body)
        .and_then(doc::tree)
        .unwrap_or_default();
    let mut served = 0;
    for e in &listed {
        let Some(r) = final_of(rec, &bad_label(&e.path))
            .and_then(|x| x.response.as_ref())
            .filter(|r| r.is_success() && r.body_end == BodyEnd::Complete)
        else {
            continue;
        };
        served += 1;
        if e.matches(&r.body_sha256, r.full_body()) == Some(false) {
            return fail(format!(
                "{} of the tampered repository is passed on with bytes (sha256 {:.16}…) its tree's {} contradicts",
                e.path,
                r.body_sha256.to_hex(),
                if e.lfs.is_some() { "LFS sha256" } else { "git blob id" }
            ));
        }
    }
    if served > 0 {
        return pass(format!(
            "{served} files of the repository are served with the bytes its tree lists"
        ));
    }
    crate::judge::refusals(j, rec, "C.info", crate::judge::STRICT)
}

/// `P1.run-wide-digests`: see [`runwide::judge_digests`]. A served tree
/// lists, for each file, the digest of the bytes at its `resolve` URL at
/// the tree's revision.
pub fn judge_run_wide_digests(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_digests(j, "C.resolve", doc::listings)
}
