//! P3 no path passthrough, in apt's terms: besides the shared probes
//! (absolute-form, CONNECT, `//host/`, smuggling), proxy-style requests in
//! apt's shapes, apt-cacher-ng's remapped paths (`/host/path`,
//! `/HTTPS///host/path`), traversal in every encoding from inside the
//! archive, and paths under the archive that the snapshot does not hold.

use super::facts::{Facts, Judge};
use super::plan::{archive, Collector};
use crate::common::passthrough::{
    self, elsewhere, raw_get, traversal_steps, Shapes, NOWHERE, TRAVERSAL_TARGETS,
};
use crate::common::{runwide, smuggling};
use crate::judge::{refusals, Verdict, PASSTHROUGH};
use egress_model::ProbeRecord;

pub fn judge_passthrough(j: &Judge, rec: &ProbeRecord) -> Verdict {
    refusals(j, rec, "C.release", PASSTHROUGH)
}

fn send_all(c: &Collector, ev: &mut crate::collect::Evidence, label: &str, targets: Vec<String>) {
    for t in targets {
        ev.push(c.send_raw(label, &raw_get(c, &t)));
    }
}

/// Each target, then the same without its `?ec=` marker. A target that
/// refuses every URL with a query (apt-cacher-ng answers 403) would refuse
/// the marked one for that alone, never for its route, and the control was
/// not asked with a query; the bare path shows what the route does.
pub fn and_unmarked(targets: Vec<String>) -> Vec<String> {
    let bare: Vec<String> = targets
        .iter()
        .filter_map(|t| t.split_once("?ec=").map(|(path, _)| path.to_string()))
        .collect();
    targets.into_iter().chain(bare).collect()
}

/// apt's shapes for the shared probes that name another host: the
/// `InRelease` of a dist and a pool `.deb`, under `/debian/` as a
/// `sources.list` line names Debian's archive, each with a fresh marker.
fn shapes(c: &Collector) -> Shapes {
    let t = c.token();
    let f = c.token();
    Shapes {
        index: format!("/debian/dists/{t}/InRelease"),
        file: format!("/debian/pool/main/e/{f}/{f}_1.0_all.deb"),
    }
}

/// `P3.absolute-form` in apt's shapes.
pub fn collect_absolute_form(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    passthrough::collect_absolute_form_at(c, &shapes(c))
}

/// `P3.double-slash` in apt's shapes.
pub fn collect_double_slash(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    passthrough::collect_double_slash_at(c, || shapes(c))
}

pub fn collect_proxy_style(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    let mut ev = crate::collect::Evidence::default();
    let other = elsewhere(c);
    let dist = c.plan.packages.dist.clone();
    c.window("P3.proxy-style", &mut ev, |ev| {
        let targets = vec![
            format!(
                "http://{other}/debian/dists/{dist}/InRelease?ec={}",
                c.token()
            ),
            format!(
                "http://{other}/debian/pool/main/e/{0}/{0}_1.0_all.deb",
                c.token()
            ),
            format!(
                "http://{NOWHERE}/debian/dists/{dist}/Release?ec={}",
                c.token()
            ),
            format!(
                "https://{other}/debian/dists/{dist}/InRelease?ec={}",
                c.token()
            ),
        ];
        send_all(
            c,
            ev,
            "proxy-style request for another host",
            and_unmarked(targets),
        );
    });
    ev
}

pub fn collect_remapped(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    let mut ev = crate::collect::Evidence::default();
    let other = elsewhere(c);
    let dist = c.plan.packages.dist.clone();
    c.window("P3.remapped-paths", &mut ev, |ev| {
        let targets = vec![
            format!("/{other}/debian/dists/{dist}/InRelease?ec={}", c.token()),
            format!(
                "/deb.debian.org/debian/dists/{dist}/InRelease?ec={}",
                c.token()
            ),
            format!(
                "/HTTPS///{other}/debian/dists/{dist}/InRelease?ec={}",
                c.token()
            ),
            format!(
                "/HTTPS///deb.debian.org/debian/dists/{dist}/Release?ec={}",
                c.token()
            ),
            format!("/debrep/dists/{dist}/InRelease?ec={}", c.token()),
            format!(
                "/security.debian.org/debian-security/dists/{dist}/InRelease?ec={}",
                c.token()
            ),
        ];
        send_all(c, ev, "apt-cacher-ng remapped path", and_unmarked(targets));
    });
    ev
}

pub fn collect_traversal(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    let mut ev = crate::collect::Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    let root = a.path().to_string();
    let starts = [
        format!("{root}dists/{}/", p.dist),
        format!("{root}pool/{}/", p.component),
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
        send_all(c, ev, "traversal out of the archive", targets);
    });
    ev
}

pub fn collect_unknown(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    let mut ev = crate::collect::Evidence::default();
    let Some(a) = archive(c) else { return ev };
    let p = &c.plan.packages;
    let root = a.path().to_string();
    let t = c.token();
    let zeros = "0".repeat(64);
    let targets = vec![
        format!("{root}dists/{}/{t}", p.dist),
        format!("{root}dists/{t}/InRelease"),
        format!(
            "{root}dists/{}/{}/binary-{}/{t}",
            p.dist, p.component, p.arch
        ),
        format!(
            "{root}dists/{}/{}/binary-{}/by-hash/SHA256/{zeros}?ec={t}",
            p.dist, p.component, p.arch
        ),
        format!("{root}{}", p.pool_path(&t, "1.0")),
        format!("{root}{t}"),
    ];
    let targets = and_unmarked(targets);
    c.window("P3.unknown-paths", &mut ev, |ev| {
        send_all(
            c,
            ev,
            "path under the archive the snapshot does not hold",
            targets,
        );
    });
    ev
}

/// `P3.request-smuggling`: the corpus hides a GET of the dist's `InRelease`.
pub fn collect_smuggling(c: &Collector, _f: &Facts) -> crate::collect::Evidence {
    let hidden = archive(c).map(|a| smuggling::Hidden {
        path: super::plan::at(&a, &c.plan.packages.dist_path("InRelease"))
            .path_and_query()
            .to_string(),
        accept: "*/*",
        // apt-cacher-ng refuses every URL with a query string (403).
        bare_control: true,
    });
    smuggling::collect(c, hidden.as_ref())
}

pub fn judge_smuggling(j: &Judge, rec: &ProbeRecord) -> Verdict {
    smuggling::judge(j, rec, "C.release")
}

pub fn judge_run_wide_offsite(j: &Judge, _rec: &ProbeRecord) -> Verdict {
    runwide::judge_offsite(j, "C.release", super::doc::listings)
}
