//! P3 no path passthrough, in the Hub's terms: a file is never handed to
//! another origin (no redirect off it, no Xet hand-off, no `xet-auth`
//! link), the Xet token route is refused, traversal in the repository and
//! the file path is refused in every encoding, and a token sent to the
//! target never reaches the upstream.

use super::facts::{Facts, Judge};
use super::plan::{at, endpoint, first, Collector};
use crate::collect::Evidence;
use crate::common::passthrough::{raw_get, traversal_steps, TRAVERSAL_TARGETS};
use crate::common::runwide;
use crate::judge::{fail, inconclusive, pass, refusals, short, Verdict, PASSTHROUGH};
use egress_model::{Exchange, Method, ProbeRecord, Url};
use egress_transcript::Request;

/// Files whose answers are read at most.
const MAX_FILES: usize = 8;

/// Each file's answer to `HEAD` (what the client asks first) and to `GET`,
/// redirects not followed: the hand-off is in the first answer.
pub fn collect_handoff(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(sha) = f.sha.as_ref() else { return ev };
    // The tree's first page: its `Link` to the next one stays on the origin.
    if let (Some(e), Some(r)) = (endpoint(c), f.repo.as_ref()) {
        let tree = r.api(&e, &format!("/tree/{sha}?recursive=true&expand=false"));
        c.get_following(&mut ev, "the tree's first page", &tree, None);
    }
    // LFS files first: those are the ones the Hub hands off.
    let mut files: Vec<_> = f.files.iter().filter(|e| e.lfs.is_some()).collect();
    files.extend(f.files.iter().filter(|e| e.lfs.is_none()));
    for e in files.into_iter().take(MAX_FILES) {
        let Some(u) = f.resolve_url(sha, &e.path) else {
            continue;
        };
        let target = u.path_and_query().to_string();
        ev.push(c.send(
            &format!("HEAD of {}", e.path),
            &Request::new(Method::Head, &target),
        ));
        ev.push(c.get(&format!("GET of {}", e.path), &u, None));
    }
    ev
}

/// What in `ex`'s answer hands the client to another origin or to Xet.
fn handoff(origin: &Url, ex: &Exchange) -> Option<String> {
    let r = ex.response.as_ref()?;
    if let Some((n, v)) = r
        .headers
        .iter()
        .find(|(n, _)| n.to_ascii_lowercase().starts_with("x-xet-"))
    {
        return Some(format!("a Xet hand-off header {n}: {}", short(v)));
    }
    let base = crate::facts::request_url(origin, ex);
    if let Some(link) = r.header("link") {
        if link.contains("xet-auth") {
            return Some(format!("a Link to Xet's token route: {}", short(link)));
        }
        // A tree's next page, or any other link, on another origin.
        for part in link.split(',') {
            let Some(url) = part.split(';').next().map(str::trim) else {
                continue;
            };
            let url = url.trim_start_matches('<').trim_end_matches('>');
            if !base.join(url).is_ok_and(|u| u.same_origin(origin)) {
                return Some(format!("a Link to another origin: {}", short(part.trim())));
            }
        }
    }
    if r.is_redirect() {
        let loc = r.header("location").unwrap_or_default();
        if !base.join(loc).is_ok_and(|u| u.same_origin(origin)) {
            return Some(format!(
                "a {} to {}",
                r.status.unwrap_or_default(),
                short(loc)
            ));
        }
    }
    None
}

pub fn judge_handoff(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.resolve") {
        return v;
    }
    let Some(origin) = j.origin() else {
        return inconclusive("the plan's endpoint does not parse");
    };
    let mut answered = 0;
    for ex in &rec.exchanges {
        if let Some(what) = handoff(&origin, ex) {
            return fail(format!(
                "{} {} was answered with {what}",
                ex.request_method(),
                short(&ex.request_target())
            ));
        }
        if ex.status().is_some() {
            answered += 1;
        }
    }
    if answered == 0 {
        return inconclusive("no file's answer was recorded");
    }
    let lfs = j.facts.files.iter().filter(|e| e.lfs.is_some()).count();
    pass(format!(
        "{answered} answers (the tree's first page, and {} files' HEAD and GET, {lfs} of the files in LFS) neither redirect nor link off the origin, nor hand the client to Xet",
        j.facts.files.len().min(MAX_FILES)
    ))
}

/// The Hub's Xet token route, at the commit and at `main`, with a token.
pub fn collect_xet_token(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (endpoint(c), first(&c.plan.packages)) else {
        return ev;
    };
    let token = format!("Bearer {}", c.token());
    let mut urls = Vec::new();
    for rev in f.sha.iter().map(String::as_str).chain(["main"]) {
        urls.push(r.api(&e, &format!("/xet-read-token/{rev}")));
        urls.push(r.api(&e, &format!("/xet-write-token/{rev}")));
    }
    c.window("P3.xet-read-token", &mut ev, |ev| {
        for u in urls {
            let q = Request::new(Method::Get, u.path_and_query()).header("Authorization", &token);
            ev.push(c.send("the Xet token route", &q));
        }
    });
    ev
}

pub fn judge_xet_token(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.info", PASSTHROUGH)
}

pub fn collect_traversal(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (endpoint(c), first(&c.plan.packages)) else {
        return ev;
    };
    let rev = f.sha.clone().unwrap_or_else(|| "main".to_string());
    let dir = |u: Url| u.path().to_string();
    // Where a repository id goes, and where a file path goes.
    let starts = [
        dir(at(&e, "")),
        dir(at(&e, &format!("api/{}/", r.repo_type.api_segment()))),
        dir(r.api(&e, &format!("/tree/{rev}/"))),
        format!(
            "{}/",
            dir(r.resolve(&e, &rev, "x"))
                .trim_end_matches("/x")
                .trim_end_matches('/')
        ),
    ];
    let mut targets = Vec::new();
    for class in ["raw", "percent", "double", "backslash", "overlong"] {
        for step in traversal_steps(class) {
            for start in &starts {
                for aim in TRAVERSAL_TARGETS {
                    targets.push(format!("{start}{}{aim}", step.repeat(8)));
                }
            }
        }
    }
    c.window("P3.traversal", &mut ev, |ev| {
        for t in targets {
            ev.push(c.send_raw("traversal out of the Hub's routes", &raw_get(c, &t)));
        }
    });
    ev
}

pub fn judge_passthrough(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.info", PASSTHROUGH)
}

/// The requests a Hub token rides on: the info, the tree and a download
/// (the client sends it with every request when one is set), and
/// `whoami-v2`.
pub fn collect_token(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(e), Some(r)) = (endpoint(c), first(&c.plan.packages)) else {
        return ev;
    };
    let token = format!("Bearer {}", c.token());
    let rev = f.sha.clone().unwrap_or_else(|| "main".to_string());
    let mut urls = vec![
        r.api(&e, "/revision/main"),
        r.api(&e, &format!("/tree/{rev}?recursive=true&expand=false")),
        at(&e, "api/whoami-v2"),
    ];
    if let Some(file) = f.control_file() {
        urls.push(r.resolve(&e, &rev, &file.path));
    }
    if let Some(file) = f.files.iter().find(|x| x.lfs.is_some()) {
        urls.push(r.resolve(&e, &rev, &file.path));
    }
    c.window("P3.auth-forward", &mut ev, |ev| {
        for u in urls {
            let q = Request::new(Method::Get, u.path_and_query()).header("Authorization", &token);
            ev.push(c.send("a request carrying a Hub token", &q));
        }
    });
    ev
}

pub fn judge_token(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if !crate::classify::has_upstream_log(rec) {
        return crate::judge::skipped(
            "the upstream is not controlled, so a forwarded token cannot be observed",
        );
    }
    if let Some(v) = j.require("C.info") {
        return v;
    }
    if let Some(u) = crate::classify::upstream_log(rec).find(|u| u.authorization) {
        return fail(format!(
            "a Hub token sent to the mirror reached the upstream: request #{} {} {} carried an Authorization header",
            u.seq,
            u.method,
            short(&u.target)
        ));
    }
    pass(format!(
        "{} requests carried a token; none reached the upstream with one",
        rec.exchanges.len()
    ))
}

pub fn judge_run_wide_offsite(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_offsite(j, "C.info", super::doc::listings)
}
