//! P1 digest binding, in cargo's terms: every index line the target serves
//! carries a `cksum`, and the bytes at its download URL hash to it; a crate
//! the upstream lists without one is never served.

use super::controls::served_lines;
use super::doc;
use super::facts::{Facts, Judge};
use super::plan::{index_file, root, Collector};
use crate::collect::Evidence;
use crate::common::runwide::{self, Expected, Listing};
use crate::judge::{fail, inconclusive, pass, refusals, short, Verdict, STRICT};
use egress_model::{BodyEnd, ProbeRecord};

const INDEX: &str = "index file of a held crate";

fn download_label(l: &super::doc::Line) -> String {
    format!("download of {} {}", l.name, l.vers)
}

/// The crates whose lines P1 reads: present, template, yanked.
fn held(c: &super::plan::Packages) -> Vec<String> {
    let mut out = c.present.clone();
    out.extend(c.template.iter().chain(c.yanked.iter()).cloned());
    out.dedup();
    out
}

pub fn collect_cksum(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let Some(r) = root(c) else { return ev };
    for name in held(&c.plan.packages) {
        let Some(u) = index_file(&r, &name) else {
            continue;
        };
        let ex = c.get(INDEX, &u, None);
        let lines = served_lines(&ex).unwrap_or_default();
        ev.push(ex);
        for l in lines.iter().take(8) {
            if let Some(u) = f.download_url(l) {
                c.get_following(&mut ev, &download_label(l), &u, None);
            }
        }
    }
    ev
}

pub fn judge_cksum(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.crate") {
        return v;
    }
    let mut checked = 0;
    for ex in rec.exchanges.iter().filter(|e| e.label == INDEX) {
        for l in served_lines(ex).unwrap_or_default() {
            let Some(want) = l.digest() else {
                return fail(format!(
                    "{} lists {} {} without a 64-hex cksum ({:?})",
                    short(&ex.request_target()),
                    l.name,
                    l.vers,
                    l.cksum
                ));
            };
            let Some(got) = crate::facts::final_of(rec, &download_label(&l))
                .and_then(|e| e.response.as_ref())
                .filter(|r| r.is_success() && r.body_end == BodyEnd::Complete)
            else {
                continue;
            };
            if got.body_sha256 != want {
                return fail(format!(
                    "{} {} is served with bytes hashing to {:.16}…, not its cksum {:.16}…",
                    l.name,
                    l.vers,
                    got.body_sha256.to_hex(),
                    want.to_hex()
                ));
            }
            checked += 1;
        }
    }
    if checked == 0 {
        return inconclusive("no .crate was served whole to compare with its cksum");
    }
    pass(format!(
        "{checked} .crate files match their index lines' cksum"
    ))
}

pub fn collect_uncovered(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(r), Some(up)) = (root(c), &c.plan.upstream) else {
        return ev;
    };
    let Some(name) = up.no_digest.as_ref() else {
        return ev;
    };
    c.window("P1.upstream-uncovered", &mut ev, |ev| {
        if let Some(u) = index_file(&r, name.as_str()) {
            ev.push(c.get("index file of a crate listed without cksum", &u, None));
        }
    });
    ev
}

pub fn judge_uncovered(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan
        .upstream
        .as_ref()
        .and_then(|u| u.no_digest.as_ref())
        .is_none()
    {
        return crate::judge::skipped(
            "the upstream is not controlled: no crate without cksum is known",
        );
    }
    refusals(j, rec, "C.index", STRICT)
}

/// `P1.run-wide-digests`: see [`runwide::judge_digests`]. A served index
/// file lists, for each line with a 64-hex `cksum`, the sha256 of the bytes
/// at that line's download URL (by the `dl` of the `config.json` that
/// `C.config` read: an index body alone does not say where its files are).
pub fn judge_run_wide_digests(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    let facts = j.facts;
    runwide::judge_digests(j, "C.crate", |_url, body| {
        doc::lines(body)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|l| {
                let (digest, url) = (l.digest()?, facts.download_url(&l)?);
                Some(Listing {
                    name: format!("{} {}", l.name, l.vers),
                    url,
                    expected: vec![Expected::Sha256(digest)],
                })
            })
            .collect()
    })
}
