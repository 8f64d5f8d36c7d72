//! P6 sub-probes every protocol shares: WebDAV verbs, TRACE, and the
//! before/after comparison of an effect check.

use crate::collect::{Collector, Evidence};
use crate::facts::{find, ControlFacts};
use crate::judge::{fail, inconclusive, Verdict};
use egress_model::{BodyEnd, Exchange, ProbeRecord};
use egress_transcript::{Method, Request};

pub fn collect_webdav<P, F: ControlFacts>(c: &Collector<P>, f: &F) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    c.window("P6.webdav", &mut ev, |ev| {
        let token = c.token();
        // The artifact the controls saw served (PyPI's file, npm's tarball).
        let file = f.served_artifact().unwrap_or_else(|| index.clone());
        let propfind = b"<?xml version=\"1.0\"?><propfind xmlns=\"DAV:\"><allprop/></propfind>".to_vec();
        let attempts = vec![
            Request::new(Method::Propfind, "/").header("Depth", "1").header("Content-Type", "application/xml").body(propfind.clone()),
            Request::new(Method::Propfind, index.path()).header("Depth", "1").header("Content-Type", "application/xml").body(propfind),
            Request::new(Method::Mkcol, &format!("/{token}/")),
            Request::new(Method::Copy, file.path()).header("Destination", &format!("/{token}.whl")),
            Request::new(Method::Move, file.path()).header("Destination", &format!("/{token}.whl")),
            Request::new(Method::Proppatch, file.path()).header("Content-Type", "application/xml").body(b"<propertyupdate xmlns=\"DAV:\"/>".to_vec()),
            Request::new(Method::Lock, file.path()).header("Content-Type", "application/xml").body(b"<lockinfo xmlns=\"DAV:\"><lockscope><exclusive/></lockscope><locktype><write/></locktype></lockinfo>".to_vec()),
            Request::new(Method::Unlock, file.path()).header("Lock-Token", &format!("<urn:uuid:{token}>")),
        ];
        for req in attempts {
            ev.push(c.send(&format!("WebDAV {}", req.method), &req));
        }
    });
    ev
}

pub fn collect_trace<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    let mut ev = Evidence::default();
    let Ok(index) = c.plan.index() else { return ev };
    c.window("P6.trace", &mut ev, |ev| {
        for path in ["/", index.path()] {
            let token = c.token();
            let req = Request::new(Method::Trace, &format!("{path}?ec={token}"))
                .header("X-Egress-Marker", &token);
            ev.push(c.send("TRACE", &req));
        }
    });
    ev
}

/// What a before/after comparison found for the resources that had a
/// twin after.
#[derive(Debug, Default)]
pub struct Compared {
    /// Resources read whole before (twice) and after, all three identical.
    pub unchanged: usize,
    /// Resources that changed between the two reads before, with nothing
    /// done in between: their change after cannot be laid on what was done,
    /// and is P5's finding (see [`changed_between`]).
    pub unstable: Vec<String>,
}

fn whole(e: &Exchange) -> bool {
    e.response
        .as_ref()
        .is_some_and(|r| matches!(r.body_end, BodyEnd::Complete | BodyEnd::NoBody))
}

fn key(e: &Exchange) -> Option<(Option<u16>, egress_model::Sha256Digest)> {
    e.response.as_ref().map(|r| (r.status, r.body_sha256))
}

/// Compares each `"{before}: {what}"` exchange with its `"{again}: {what}"`
/// twin (the same read repeated before anything was done) and its
/// `"{after}: {what}"` twin, by status and body digest. A resource whose two
/// reads before differ is unstable on its own, not changed by what was done
/// between; one that was stable twice and then differs is the verdict (a
/// FAIL naming `done`). Shared by PyPI and npm.
pub fn unchanged(
    rec: &ProbeRecord,
    (before, again, after): (&str, &str, &str),
    done: &str,
    whats: &[&str],
) -> Result<Compared, Verdict> {
    let mut out = Compared::default();
    for what in whats {
        let (Some(b), Some(a)) = (
            find(rec, &format!("{before}: {what}")),
            find(rec, &format!("{after}: {what}")),
        ) else {
            continue;
        };
        let b2 = find(rec, &format!("{again}: {what}"));
        if !whole(b) || !whole(a) || b2.is_some_and(|e| !whole(e)) {
            return Err(inconclusive(format!(
                "the {what} did not arrive whole before and after: {} then {}",
                b.summary(),
                a.summary()
            )));
        }
        if let Some(b2) = b2.filter(|b2| key(b2) != key(b)) {
            out.unstable.push(format!(
                "the {what} ({} then {})",
                b.summary(),
                b2.summary()
            ));
            continue;
        }
        if key(b) != key(a) {
            return Err(fail(format!(
                "the {what} changed after {done}, though it read the same twice before them: {} then {}",
                b.summary(),
                a.summary()
            )));
        }
        out.unchanged += 1;
    }
    Ok(out)
}

/// Resources of `rec` that changed between a `"{before}: X"` read and its
/// `"{again}: X"` repeat, with nothing done in between: a P5 finding
/// whichever sub-probe recorded the reads. One line per resource.
pub fn changed_between(rec: &ProbeRecord, before: &str, again: &str) -> Vec<String> {
    let prefix = format!("{before}: ");
    rec.exchanges
        .iter()
        .filter_map(|b| {
            let what = b.label.strip_prefix(&prefix)?;
            let b2 = find(rec, &format!("{again}: {what}"))?;
            (whole(b) && whole(b2) && key(b) != key(b2))
                .then(|| format!("{what}: {} then {}", b.summary(), b2.summary()))
        })
        .collect()
}
