//! One npm run: collect every sub-probe's evidence in a fixed order, then
//! judge it all with [`crate::judge_all`], as the PyPI run does.

use super::{controls, p1, p2, p3, p4, p5, p6};
use crate::collect::{Collector, Evidence};
use crate::facts::Facts;
use crate::probes::{p3_passthrough as pypi_p3, p5_snapshot as pypi_p5, p6_control as pypi_p6};
use crate::report::{judge_controls, Report};
use crate::run::{fill_unrun, finish, record, Target};
use egress_model::{NpmName, Observation, ProbeRecord, Status};

type Collect = fn(&Collector, &Facts) -> Evidence;

pub fn run(target: Target) -> Report {
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let plan = target.plan;
    let run_mark = target.upstream.map(|u| u.mark());
    let mut records: Vec<ProbeRecord> = Vec::new();
    let c = Collector {
        client: &target.client,
        plan: &plan,
        upstream: target.upstream,
        allowed_signers: target.allowed_signers.clone(),
    };

    // Controls, judged as they come: the tarball control needs the packument.
    records.push(record(
        "C.packument",
        controls::collect_packument(&c, false),
    ));
    records.push(record(
        "C.abbreviated",
        controls::collect_packument(&c, true),
    ));
    records.push(record("C.scoped", controls::collect_scoped(&c)));
    let facts = judge_controls(&plan, &mut records);
    records.push(record("C.tarball", controls::collect_tarball(&c, &facts)));
    let f = judge_controls(&plan, &mut records);

    // A target that serves no packument gives no refusal any meaning: stop
    // rather than wait out every probe against a dead or hostile server.
    if f.status("C.packument") != Status::Pass && f.status("C.abbreviated") != Status::Pass {
        fill_unrun(&plan, &mut records);
        return finish(
            target.name,
            plan,
            target.client.limits(),
            records,
            started_unix,
        );
    }

    // Redirects are looked for first, while caches are cold.
    records.push(record(
        "P3.offsite-redirect",
        p3::collect_offsite_redirect(&c, &f),
    ));
    let ordered: [(&str, Collect); 25] = [
        ("P1.integrity-full", p1::collect_integrity_full),
        (
            "P1.integrity-abbreviated",
            p1::collect_integrity_abbreviated,
        ),
        ("P1.bytes-match", p1::collect_bytes_match),
        ("P1.version-document", p1::collect_version_doc),
        ("P1.upstream-no-integrity", p1::collect_no_integrity),
        ("P1.upstream-bad-integrity", p1::collect_bad_integrity),
        ("P2.absent-packument", p2::collect_absent_packument),
        ("P2.absent-tarball", p2::collect_absent_tarball),
        ("P2.offsite-tarball", p2::collect_offsite_tarball),
        ("P3.absolute-form", pypi_p3::collect_absolute_form),
        ("P3.connect", pypi_p3::collect_connect),
        ("P3.dotdot-raw", |c, _| p3::collect_traversal(c, "raw")),
        ("P3.dotdot-percent", |c, _| {
            p3::collect_traversal(c, "percent")
        }),
        ("P3.dotdot-double", |c, _| {
            p3::collect_traversal(c, "double")
        }),
        ("P3.dotdot-backslash", |c, _| {
            p3::collect_traversal(c, "backslash")
        }),
        ("P3.dotdot-overlong", |c, _| {
            p3::collect_traversal(c, "overlong")
        }),
        ("P3.double-slash", pypi_p3::collect_double_slash),
        ("P3.scoped-encodings", p3::collect_scoped_encodings),
        ("P3.host-headers", p3::collect_host_headers),
        ("P3.registry-routes", p3::collect_registry_routes),
        ("P3.unknown-route", p3::collect_unknown),
        ("P4.tripwire", p4::collect_tripwire),
        ("P4.template-text", p4::collect_template),
        ("P5.manifest", pypi_p5::collect_manifest),
        ("P5.signature", pypi_p5::collect_signature),
    ];
    for (id, collect) in ordered {
        records.push(record(id, collect(&c, &f)));
    }
    for (id, collect) in [
        (
            "P5.served-in-manifest",
            p5::collect_served_in_manifest as Collect,
        ),
        ("P5.stable-bytes", p5::collect_stable),
    ] {
        records.push(record(id, collect(&c, &f)));
    }

    // Upstream mutations come after every read-only probe, so that they
    // cannot disturb their evidence, and before the write attempts, which a
    // non-conformant target may honour by deleting the very package the
    // mutations are observed on. P6 compares only its own before and after.
    for (id, collect) in [
        (
            "P5.upstream-new-version",
            p5::collect_new_version as Collect,
        ),
        ("P5.upstream-replaced-bytes", p5::collect_replaced),
        ("P5.upstream-dist-tag", p5::collect_dist_tag),
    ] {
        records.push(record(id, collect(&c, &f)));
    }

    // P6: the effect check brackets the write attempts. The fresh name is a
    // package that exists nowhere, so that any sign of it afterwards is the
    // attempts' effect.
    let fresh = NpmName::new(&c.token()).ok();
    let mut effect = match &fresh {
        Some(n) => p6::collect_effect_before(&c, &f, n),
        None => Evidence::default(),
    };
    // adduser comes first: a token it hands out is then used to publish,
    // as anyone who can register would.
    let adduser = p6::collect_adduser(&c, &f);
    let tokens = p6::tokens_handed_out(&adduser.exchanges);
    let mut p6_records = vec![record("P6.adduser", adduser)];
    if let Some(n) = &fresh {
        p6_records.push(record("P6.publish", p6::collect_publish(&c, n, &tokens)));
    }
    for (id, collect) in [
        ("P6.unpublish", p6::collect_unpublish as Collect),
        ("P6.dist-tags", p6::collect_dist_tags),
        ("P6.login-tokens", p6::collect_login_tokens),
        ("P6.webdav", pypi_p6::collect_webdav),
        ("P6.trace", pypi_p6::collect_trace),
    ] {
        p6_records.push(record(id, collect(&c, &f)));
    }
    if let Some(n) = &fresh {
        p6::collect_effect_after(&c, &f, n, &mut effect);
    }
    records.extend(p6_records);
    records.push(record("P6.effect", effect));
    let mut contact = Evidence::default();
    if let (Some(u), Some(m)) = (target.upstream, run_mark) {
        contact.observations.push(Observation::UpstreamLog {
            window: "whole run".into(),
            requests: u.requests_since(m),
        });
    }
    records.push(record("P2.upstream-contact", contact));
    fill_unrun(&plan, &mut records);
    finish(
        target.name,
        plan,
        target.client.limits(),
        records,
        started_unix,
    )
}
