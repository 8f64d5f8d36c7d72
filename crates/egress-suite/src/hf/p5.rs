//! P5 snapshot immutability, in the Hub's terms: the manifest and its
//! signature (shared); `main` names the signed commit and no other, even
//! when the upstream moves it mid-run; every file's `X-Repo-Commit` is that
//! commit.

use super::doc;
use super::facts::{tree_files, Facts, Judge};
use super::plan::{endpoint, first, Collector};
use crate::collect::Evidence;
use crate::common::snapshot::{self, input, mutation, not_mutated};
use crate::facts::{final_of, success_body};
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::{Method, ProbeRecord};
use egress_transcript::Request;

pub fn judge_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    snapshot::manifest_verdict(j, rec, "C.info")
}

const MAIN_INFO: &str = "the info at main";
const MAIN_TREE: &str = "the tree at main";

pub fn collect_branch(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (endpoint(c), first(&c.plan.packages)) else {
        return ev;
    };
    c.get_following(&mut ev, MAIN_INFO, &r.api(&e, "/revision/main"), None);
    c.get_following(
        &mut ev,
        MAIN_TREE,
        &r.api(&e, "/tree/main?recursive=true&expand=false"),
        None,
    );
    ev
}

/// `main` lists the files of the commit `C.info` read, and, with a
/// verified manifest, its info and tree are the bytes the snapshot lists
/// for those paths: the branch is the signed commit.
pub fn judge_branch(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.tree") {
        return v;
    }
    let (Some(info), Some(tree)) = (final_of(rec, MAIN_INFO), final_of(rec, MAIN_TREE)) else {
        return inconclusive("main's info and tree were not requested");
    };
    let Some(sha) = success_body(info).and_then(doc::info_sha) else {
        return fail(format!(
            "the info at main, served at the controls, names no commit now: {}",
            info.summary()
        ));
    };
    let at_commit: Vec<_> = j.facts.files.iter().map(|e| (&e.path, &e.oid)).collect();
    let on_main = tree_files(rec, MAIN_TREE);
    let on_main: Vec<_> = on_main.iter().map(|e| (&e.path, &e.oid)).collect();
    if !on_main.iter().all(|f| at_commit.contains(f)) {
        return fail(format!(
            "main lists files the commit {} does not: {}",
            j.facts.sha.as_deref().unwrap_or("?"),
            short(&format!(
                "{:?}",
                on_main.iter().find(|f| !at_commit.contains(f))
            ))
        ));
    }
    match snapshot::manifest_to_compare(j, "C.info", "endpoint") {
        Ok((manifest, d, _)) => {
            for ex in [info, tree] {
                if let Err(v) = snapshot::served_as_listed(ex, &d, &manifest) {
                    return v;
                }
            }
            pass(format!(
                "main names commit {sha}, and its info and tree are the bytes the signed snapshot lists"
            ))
        }
        Err((egress_model::Status::Inconclusive, why)) => pass(format!(
            "main names commit {sha} and lists its files ({why}, so not compared with a signed listing)"
        )),
        Err(v) => v,
    }
}

const BEFORE: &str = "before the upstream moved main";
const AFTER: &str = "after the upstream moved main";
const WHATS: [&str; 3] = ["the info at main", "the tree at main", "a file at main"];

fn read_main(c: &Collector, f: &Facts, ev: &mut Evidence, when: &str) {
    let (Some(e), Some(r), Some(file)) = (endpoint(c), first(&c.plan.packages), f.control_file())
    else {
        return;
    };
    let urls = [
        r.api(&e, "/revision/main"),
        r.api(&e, "/tree/main?recursive=true&expand=false"),
        r.resolve(&e, "main", &file.path),
    ];
    for (what, u) in WHATS.iter().zip(urls) {
        c.get_following(ev, &format!("{when}: {what}"), &u, None);
    }
}

pub fn collect_moved_main(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some(r), Some(file)) = (c.upstream, first(&c.plan.packages), f.control_file())
    else {
        return ev;
    };
    let path = file.path.clone();
    c.window("P5.moved-main", &mut ev, |ev| {
        read_main(c, f, ev, BEFORE);
        match up.move_tag(&r.to_string(), "main", &path) {
            Ok(o) => ev.observations.push(o),
            Err(e) => ev
                .observations
                .push(input(&format!("mutation failed: {e}"), Vec::new())),
        }
        read_main(c, f, ev, AFTER);
    });
    ev
}

pub fn judge_moved_main(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped("the upstream is not controlled, so it cannot move main mid-run");
    }
    if let Some(v) = j.require("C.resolve") {
        return v;
    }
    let Some((file, _, _)) = mutation(rec) else {
        return inconclusive(not_mutated(rec, "the upstream did not move main"));
    };
    let compared = match snapshot::compare_reads(rec, BEFORE, AFTER, &WHATS) {
        Ok(n) => n,
        Err(c) => {
            return fail(format!(
                "{} changed after the upstream committed {file} on main: {:.16}… then {:.16}…",
                c.what,
                c.first.to_hex(),
                c.second.to_hex()
            ))
        }
    };
    if compared == 0 {
        return inconclusive("nothing was served whole before and after the move");
    }
    pass(format!(
        "the upstream committed {file} on main; the {compared} resources read at main before and after are unchanged"
    ))
}

/// Files whose `HEAD` is read, at the commit and at `main`.
const MAX_FILES: usize = 8;

pub fn collect_repo_commit(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(sha) = f.sha.as_ref() else { return ev };
    for e in f.files.iter().take(MAX_FILES) {
        for rev in [sha.as_str(), "main"] {
            if let Some(u) = f.resolve_url(rev, &e.path) {
                ev.push(c.send(
                    &format!("HEAD of {} at {rev}", e.path),
                    &Request::new(Method::Head, u.path_and_query()),
                ));
            }
        }
    }
    ev
}

/// Every file's answer names the commit `main` resolved to in
/// `X-Repo-Commit` (the client stores the file under that commit), and,
/// with a verified manifest, that commit is the one the snapshot signed
/// (its info at the commit is a path the snapshot lists).
pub fn judge_repo_commit(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.resolve") {
        return v;
    }
    let Some(sha) = j.facts.sha.as_deref() else {
        return inconclusive("C.info named no commit");
    };
    let mut checked = 0;
    for ex in &rec.exchanges {
        let Some(r) = ex.response.as_ref() else {
            continue;
        };
        if !(r.is_success() || r.is_redirect()) {
            continue;
        }
        match r.header("x-repo-commit") {
            Some(got) if got == sha => checked += 1,
            Some(got) => {
                return fail(format!(
                    "{} names commit {got} in X-Repo-Commit; main is {sha}",
                    short(&ex.request_target())
                ))
            }
            None => {
                return fail(format!(
                    "{} carries no X-Repo-Commit: the client cannot tell which commit it stored",
                    short(&ex.request_target())
                ))
            }
        }
    }
    if checked == 0 {
        return inconclusive("no file's HEAD was answered");
    }
    // With a verified manifest: the commit is one the signed snapshot holds.
    let signed = match snapshot::manifest_to_compare(j, "C.info", "endpoint") {
        Ok((_, d, _)) => {
            let (Some(r), Some(e)) = (j.facts.repo.as_ref(), j.facts.endpoint.as_ref()) else {
                return inconclusive("the plan names no repository");
            };
            let info = r.api(e, &format!("/revision/{sha}"));
            if !d.served.iter().any(|x| x.path == info.path()) {
                return fail(format!(
                    "X-Repo-Commit names {sha}, but the signed snapshot holds no {} for it",
                    info.path()
                ));
            }
            ", the commit the signed snapshot holds"
        }
        Err(_) => "",
    };
    pass(format!(
        "{checked} answers at the commit and at main name {sha} in X-Repo-Commit{signed}"
    ))
}
