//! Hub positive controls: the target serves a present repository's info at
//! `main` naming a commit, its tree at that commit, and a regular file of
//! it under `/resolve/`. Until a control passes, no refusal on its route
//! shape counts.
//!
//! A control never checks the property under test: a branch naming another
//! commit fails P5, bytes that are not the listed ones fail P1.

use super::doc;
use super::facts::{label, tree_files, Facts, Judge};
use super::plan::{endpoint, first, Collector};
use crate::collect::Evidence;
use crate::facts::{final_of, success_body};
use crate::judge::{inconclusive, pass, Verdict};
use egress_model::{BodyEnd, ProbeRecord, Status};

/// Tree pages read at most, following `Link: rel="next"` on the origin.
pub const MAX_PAGES: usize = 16;

pub fn collect_info(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    if let (Some(e), Some(r)) = (endpoint(c), first(&c.plan.packages)) {
        c.get_following(&mut ev, label::INFO, &r.api(&e, "/revision/main"), None);
    }
    ev
}

pub fn judge_info(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let Some(repo) = first(&j.plan.packages) else {
        return inconclusive(
            "no repository known to be in the snapshot: give --present org/name (datasets/org/name for a dataset)",
        );
    };
    let Some(ex) = final_of(rec, label::INFO) else {
        return inconclusive("the info was not requested");
    };
    match success_body(ex).map(doc::info_sha) {
        Some(Some(sha)) if doc::is_commit(&sha) => {
            pass(format!("{} names commit {sha}", ex.request_target()))
        }
        Some(_) => inconclusive(format!("the info of {repo} at main names no 40-hex commit")),
        None => inconclusive(format!(
            "the info of {repo}, a repository in the snapshot, is not served: {}",
            ex.summary()
        )),
    }
}

/// The tree at the commit `C.info` read, as the client asks it, and its
/// next pages on the same origin.
pub fn collect_tree(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r), Some(sha)) = (endpoint(c), f.repo.as_ref(), f.sha.as_ref()) else {
        return ev;
    };
    let mut url = r.api(&e, &format!("/tree/{sha}?recursive=true&expand=false"));
    for _ in 0..MAX_PAGES {
        // A page's same-origin redirects are followed, as the client does.
        let from = ev.exchanges.len();
        c.get_following(&mut ev, label::TREE, &url, None);
        let Some(last) = ev.exchanges.get(from..).and_then(<[_]>::last) else {
            break;
        };
        let base = crate::facts::request_url(&e, last);
        let next = last
            .response
            .as_ref()
            .filter(|r| r.is_success())
            .and_then(|r| r.header("link"))
            .and_then(doc::next_page)
            .and_then(|n| base.join(n).ok())
            .filter(|n| n.same_origin(&e));
        match next {
            Some(n) => url = n,
            None => break,
        }
    }
    ev
}

pub fn judge_tree(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.facts.controls.status("C.info") != Status::Pass {
        return inconclusive("no commit to read the tree at (C.info did not pass)");
    }
    let Some(ex) = rec.exchanges.first() else {
        return inconclusive("the tree was not requested");
    };
    let files = tree_files(rec, label::TREE);
    if files.is_empty() {
        return inconclusive(format!(
            "the tree at the commit lists no file: {}",
            ex.summary()
        ));
    }
    pass(format!(
        "{} lists {} files in {} pages",
        ex.request_target(),
        files.len(),
        rec.exchanges.len()
    ))
}

pub fn collect_resolve(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(sha), Some(file)) = (f.sha.as_ref(), f.control_file()) else {
        return ev;
    };
    if let Some(u) = f.resolve_url(sha, &file.path) {
        c.get_following(&mut ev, label::RESOLVE, &u, None);
    }
    ev
}

pub fn judge_resolve(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.facts.controls.status("C.tree") != Status::Pass {
        return inconclusive("no file to download (C.tree did not pass)");
    }
    let Some(ex) = final_of(rec, label::RESOLVE) else {
        return inconclusive("the tree lists no regular file to download");
    };
    match ex.response.as_ref().filter(|r| r.is_success()) {
        Some(r) if r.body_end == BodyEnd::Complete => pass(format!(
            "{} served {} bytes",
            ex.request_target(),
            r.body_len
        )),
        _ => inconclusive(format!(
            "a file the tree lists was not served whole: {}",
            ex.summary()
        )),
    }
}
