//! P2 replay only, in the Hub's terms: a repository, a commit or a file the
//! upstream has and the snapshot does not is never served (nor fetched to
//! serve it); the upstream is never contacted.

use super::facts::{Facts, Judge};
use super::plan::{at, endpoint, first, repos, Collector};
use crate::collect::Evidence;
use crate::judge::{inconclusive, refusals, skipped, Verdict, STRICT};
use egress_model::ProbeRecord;

/// Files asked of an absent repository or commit: those most repositories
/// have.
const COMMON_FILES: [&str; 2] = ["config.json", "README.md"];

pub fn collect_absent_repo(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(e) = endpoint(c) else { return ev };
    let mut urls = Vec::new();
    for r in repos(&c.plan.packages.absent) {
        urls.push(r.api(&e, ""));
        urls.push(r.api(&e, "/revision/main"));
        urls.push(r.api(&e, "/tree/main?recursive=true&expand=false"));
        for f in COMMON_FILES {
            urls.push(r.resolve(&e, "main", f));
        }
    }
    // The upstream's own paths of its upstream-only repository, moved
    // below the target's endpoint.
    if let Some(up) = &c.plan.upstream {
        for p in &up.upstream_only_paths {
            urls.push(at(&e, p.trim_start_matches('/')));
        }
    }
    c.window("P2.absent-repo", &mut ev, |ev| {
        for u in urls {
            ev.push(c.get("a route of an absent repository", &u, None));
        }
    });
    ev
}

pub fn judge_absent_repo(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.absent.is_empty() {
        return inconclusive("no absent repository is named: give --absent org/name");
    }
    refusals(j, rec, "C.info", STRICT)
}

pub fn collect_absent_revision(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r), Some(rev)) = (
        endpoint(c),
        first(&c.plan.packages),
        c.plan.packages.absent_revision.as_ref(),
    ) else {
        return ev;
    };
    let mut urls = vec![
        r.api(&e, &format!("/revision/{rev}")),
        r.api(&e, &format!("/tree/{rev}?recursive=true&expand=false")),
    ];
    let file = f.control_file().map(|x| x.path.clone());
    for name in file.iter().map(String::as_str).chain(COMMON_FILES) {
        urls.push(r.resolve(&e, rev, name));
    }
    c.window("P2.absent-revision", &mut ev, |ev| {
        for u in urls {
            ev.push(c.get("a route at a commit the snapshot does not hold", &u, None));
        }
    });
    ev
}

pub fn judge_absent_revision(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.absent_revision.is_none() {
        return skipped("no commit absent from the snapshot is named");
    }
    refusals(j, rec, "C.info", STRICT)
}

pub fn collect_absent_file(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(file) = c.plan.packages.absent_file.as_ref() else {
        return ev;
    };
    let mut urls = Vec::new();
    for rev in f.sha.iter().map(String::as_str).chain(["main"]) {
        urls.extend(f.resolve_url(rev, file));
    }
    c.window("P2.absent-file", &mut ev, |ev| {
        for u in urls {
            ev.push(c.get("a file the snapshot does not hold", &u, None));
        }
    });
    ev
}

pub fn judge_absent_file(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.packages.absent_file.is_none() {
        return skipped("no file absent from the snapshot is named");
    }
    if let Some(f) = j.plan.packages.absent_file.as_ref() {
        if j.facts.files.iter().any(|e| &e.path == f) {
            return crate::judge::fail(format!(
                "the tree at the commit lists {f}, a file the snapshot does not hold"
            ));
        }
    }
    refusals(j, rec, "C.resolve", STRICT)
}

pub fn judge_upstream_contact(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::replay::upstream_contact_verdict(j, rec, "C.info")
}
