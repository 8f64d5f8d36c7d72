//! P6 sub-probes every protocol shares: WebDAV verbs, TRACE, and the
//! before/after comparison of an effect check.

use crate::collect::{Collector, Evidence};
use crate::facts::{find, ControlFacts};
use crate::judge::{fail, inconclusive, Verdict};
use egress_model::ProbeRecord;
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

/// Compares each `"{before}: {what}"` exchange with its `"{after}: {what}"`
/// twin by status and body digest: the number compared, or the verdict for
/// the first that changed or did not arrive whole. Shared by PyPI and npm.
pub fn unchanged(
    rec: &ProbeRecord,
    before: &str,
    after: &str,
    whats: &[&str],
) -> Result<usize, Verdict> {
    let mut compared = 0;
    for what in whats {
        let (Some(b), Some(a)) = (
            find(rec, &format!("{before}: {what}")),
            find(rec, &format!("{after}: {what}")),
        ) else {
            continue;
        };
        let whole = |e: &egress_model::Exchange| {
            e.response.as_ref().is_some_and(|r| {
                matches!(
                    r.body_end,
                    egress_model::BodyEnd::Complete | egress_model::BodyEnd::NoBody
                )
            })
        };
        if !whole(b) || !whole(a) {
            return Err(inconclusive(format!(
                "the {what} did not arrive whole before and after: {} then {}",
                b.summary(),
                a.summary()
            )));
        }
        let key =
            |e: &egress_model::Exchange| e.response.as_ref().map(|r| (r.status, r.body_sha256));
        if key(b) != key(a) {
            return Err(fail(format!(
                "the {what} changed after the write attempts: {} then {}",
                b.summary(),
                a.summary()
            )));
        }
        compared += 1;
    }
    Ok(compared)
}
