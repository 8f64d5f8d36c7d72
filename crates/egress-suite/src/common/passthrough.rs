//! P3 sub-probes every protocol shares: absolute-form targets, CONNECT and
//! `//host/` paths naming another host, the traversal encodings, and the
//! count of same-origin redirects an offsite-redirect judge allows.

use crate::classify::{self, Answer};
use crate::collect::{Collector, Evidence};
use crate::facts::ControlFacts;
use crate::judge::Verdict;
use crate::judge::{fail, short};
use egress_model::{ProbeRecord, Url};

/// A host that never resolves (RFC 2606), named when no upstream is controlled.
pub const NOWHERE: &str = "egress-conformance.invalid";

/// The authority a probe asks the target to reach: the controlled upstream
/// when there is one (so forwarding is observed there), else a name that
/// never resolves (so forwarding shows as a gateway error).
pub fn elsewhere<P>(c: &Collector<P>) -> String {
    c.plan
        .upstream
        .as_ref()
        .and_then(|u| Url::parse(&u.origin).ok())
        .map_or_else(|| format!("{NOWHERE}:80"), |u| u.authority())
}

/// The host a `//host/` probe names without a port: the controlled
/// upstream's `host:port` when there is one, else [`NOWHERE`].
fn bare_host<P>(c: &Collector<P>) -> String {
    if c.plan.upstream.is_some() {
        elsewhere(c)
    } else {
        NOWHERE.to_string()
    }
}

fn host_header<P>(c: &Collector<P>) -> String {
    c.client.base().host_header()
}

pub fn raw_get<P>(c: &Collector<P>, target: &str) -> Vec<u8> {
    format!(
        "GET {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: egress-conformance/{}\r\nConnection: close\r\n\r\n",
        host_header(c),
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes()
}

/// The artifact-looking paths the shared probes ask another host for, in
/// the protocol's shapes: an index and a file, each with a fresh marker
/// token in it. A target that refuses what does not look like its
/// protocol's files (apt-cacher-ng answers 403 to an unknown file type)
/// would refuse another protocol's shapes for that alone, whatever it does
/// with a request for another host.
#[derive(Debug, Clone)]
pub struct Shapes {
    /// An index path, e.g. `/simple/<token>/`.
    pub index: String,
    /// A file path, e.g. `/packages/<token>/x-1.0-py3-none-any.whl`.
    pub file: String,
}

impl Shapes {
    /// PyPI's shapes, which the npm suite sends as well.
    pub fn pypi<P>(c: &Collector<P>) -> Self {
        Shapes {
            index: format!("/simple/{}/", c.token()),
            file: format!("/packages/{}/x-1.0-py3-none-any.whl", c.token()),
        }
    }
}

pub fn collect_absolute_form<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    collect_absolute_form_at(c, &Shapes::pypi(c))
}

/// `P3.absolute-form` asking another host for `shapes`.
pub fn collect_absolute_form_at<P>(c: &Collector<P>, shapes: &Shapes) -> Evidence {
    let mut ev = Evidence::default();
    let other = elsewhere(c);
    c.window("P3.absolute-form", &mut ev, |ev| {
        for path in [&shapes.index, &shapes.file] {
            ev.push(c.send_raw(
                "absolute-form target naming another host",
                &raw_get(c, &format!("http://{other}{path}")),
            ));
        }
    });
    ev
}

pub fn collect_connect<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    let mut ev = Evidence::default();
    let other = elsewhere(c);
    c.window("P3.connect", &mut ev, |ev| {
        let inner = format!(
            "GET /simple/{}/ HTTP/1.1\r\nHost: {other}\r\nConnection: close\r\n\r\n",
            c.token()
        );
        for ex in c
            .client
            .connect_tunnel("CONNECT to another host", &other, inner.as_bytes())
        {
            ev.push(ex);
        }
    });
    ev
}

/// The files a traversal aims at, from the filesystem root: `etc/passwd`,
/// and `proc/self/status`, which every Linux process can read and which is
/// never empty (a sandboxed or minimal host may have an empty or
/// unreadable `/etc/passwd`, and a traversal that reaches it would show
/// nothing).
pub const TRAVERSAL_TARGETS: [&str; 2] = ["etc/passwd", "proc/self/status"];

/// One traversal step in each encoding class.
pub fn traversal_steps(class: &str) -> &'static [&'static str] {
    match class {
        "raw" => &["../"],
        "percent" => &["%2e%2e/", "%2e%2e%2f", "..%2f", ".%2e/", "%2E%2E%2F"],
        "double" => &["%252e%252e%252f", "%252e%252e/", "..%252f"],
        "backslash" => &["..\\", "..%5c", "%2e%2e%5c", "..%255c"],
        "overlong" => &[
            "%c0%ae%c0%ae/",
            "%c0%ae%c0%ae%c0%af",
            "..%c0%af",
            "..%c1%9c",
            "%e0%80%ae%e0%80%ae/",
        ],
        _ => &[],
    }
}

pub fn collect_double_slash<P, F: ControlFacts>(c: &Collector<P>, _f: &F) -> Evidence {
    collect_double_slash_at(c, || Shapes {
        index: format!("/simple/{}/", c.token()),
        file: format!("/{}", c.token()),
    })
}

/// `P3.double-slash` asking another host for `shapes` (fresh tokens for
/// each target): `//host:port` with the index, `//host` (no port) and
/// `///host:port` with the file.
pub fn collect_double_slash_at<P>(c: &Collector<P>, shapes: impl Fn() -> Shapes) -> Evidence {
    let mut ev = Evidence::default();
    let other = elsewhere(c);
    c.window("P3.double-slash", &mut ev, |ev| {
        for target in [
            format!("//{other}{}", shapes().index),
            format!("//{}{}", bare_host(c), shapes().file),
            format!("///{other}{}", shapes().file),
        ] {
            ev.push(c.send_raw("//host/ path", &raw_get(c, &target)));
        }
    });
    ev
}

/// The number of same-origin redirects among the record's answers, or the
/// failure for the first redirect that leaves `origin`.
pub fn same_origin_redirects(origin: &Url, rec: &ProbeRecord) -> Result<usize, Verdict> {
    let mut redirects = 0;
    for ex in &rec.exchanges {
        match classify::classify(origin, ex) {
            Answer::RedirectOffOrigin(loc) => {
                return Err(fail(format!(
                    "{} {} was redirected off the mirror's origin to {}",
                    ex.request_method(),
                    short(&ex.request_target()),
                    short(&loc)
                )))
            }
            Answer::RedirectSameOrigin(_) => redirects += 1,
            _ => {}
        }
    }
    Ok(redirects)
}
