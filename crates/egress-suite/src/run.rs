//! One run of the suite against one target: collect every sub-probe's
//! evidence in a fixed order, then judge it all with [`judge_all`].

use crate::collect::{Collector, Evidence};
use crate::facts::Facts;
use crate::plan::{Plan, PresentSpec, Upstream};
use crate::probes::{
    controls, p1_digest as p1, p2_replay as p2, p3_passthrough as p3, p4_build as p4,
    p5_snapshot as p5, p6_control as p6,
};
use crate::report::{judge_all, judge_controls, LimitsRecord, Report, REPORT_SCHEMA};
use egress_model::{Observation, ProbeRecord, ProjectName, Status};
use egress_transcript::Client;

pub struct Target<'a> {
    /// How the target is named in matrices.
    pub name: String,
    pub client: Client,
    pub plan: Plan,
    pub upstream: Option<&'a dyn Upstream>,
    pub allowed_signers: Option<Vec<u8>>,
}

/// Records every catalog entry that has no record yet, without evidence:
/// they judge as inconclusive.
pub(crate) fn fill_unrun(plan: &Plan, records: &mut Vec<ProbeRecord>) {
    for sp in crate::catalog::for_protocol(&plan.protocol) {
        if !records.iter().any(|r| r.id == sp.id) {
            records.push(record(sp.id, Evidence::default()));
        }
    }
}

pub(crate) fn record(id: &str, ev: Evidence) -> ProbeRecord {
    ProbeRecord {
        id: id.to_string(),
        status: Status::Inconclusive,
        reason: "not judged".into(),
        exchanges: ev.exchanges,
        observations: ev.observations,
    }
}

/// Picks the first project the index lists that is not planned as absent.
fn discover(plan: &mut Plan, index_record: &ProbeRecord) {
    let Some(body) = crate::facts::find(index_record, crate::facts::label::INDEX)
        .and_then(crate::facts::success_body)
    else {
        return;
    };
    let Ok(idx) = egress_simple::parse_index_html(body) else {
        return;
    };
    let mut names: Vec<ProjectName> = idx
        .projects
        .iter()
        .filter_map(|n| ProjectName::new(n).ok())
        .filter(|n| !plan.absent.contains(n))
        .collect();
    names.sort();
    if let Some(n) = names.into_iter().next() {
        plan.present.push(PresentSpec {
            name: n,
            version: None,
        });
        plan.present_source = "root index".into();
    }
}

pub fn run(target: Target) -> Report {
    if target.plan.is_npm() {
        return crate::npm::run::run(target);
    }
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut plan = target.plan;
    let run_mark = target.upstream.map(|u| u.mark());
    let mut records: Vec<ProbeRecord> = Vec::new();

    // Controls, judged as they come: later collectors need their facts.
    {
        let c = Collector {
            client: &target.client,
            plan: &plan,
            upstream: target.upstream,
            allowed_signers: None,
        };
        records.push(record("C.index", controls::collect_index(&c)));
    }
    judge_controls(&plan, &mut records);
    if plan.present.is_empty() && records[0].status == Status::Pass {
        discover(&mut plan, &records[0]);
    }
    let c = Collector {
        client: &target.client,
        plan: &plan,
        upstream: target.upstream,
        allowed_signers: target.allowed_signers.clone(),
    };
    records.push(record(
        "C.project-html",
        controls::collect_project(&c, false),
    ));
    records.push(record(
        "C.project-json",
        controls::collect_project(&c, true),
    ));
    let facts = judge_controls(&plan, &mut records);
    records.push(record("C.file", controls::collect_file(&c, &facts)));
    let f: Facts = judge_controls(&plan, &mut records);

    // A target that serves neither its index nor a project page gives no
    // refusal any meaning: stop here rather than wait out every probe
    // against a dead or hostile server. The remaining sub-probes are recorded
    // without evidence and judge as inconclusive.
    if f.status("C.index") != Status::Pass && f.status("C.project-html") != Status::Pass {
        fill_unrun(&plan, &mut records);
        return finish(
            target.name,
            plan,
            target.client.limits(),
            records,
            started_unix,
        );
    }
    type Collect = fn(&Collector, &Facts) -> Evidence;
    // Redirects are looked for first, while caches are cold: a pull-through
    // cache hands the client to its upstream on a slow first fetch.
    records.push(record("P3.offsite-redirect", p3::collect_offsite(&c, &f)));
    let ordered: [(&str, Collect); 23] = [
        ("P1.html-hashes", p1::collect_page_html),
        ("P1.json-hashes", p1::collect_page_json),
        ("P1.bytes-match", p1::collect_bytes_match),
        ("P1.altered-digest", p1::collect_altered),
        ("P1.name-version-path", p1::collect_name_version),
        ("P1.upstream-no-digest", p1::collect_no_digest),
        ("P1.upstream-bad-digest", p1::collect_bad_digest),
        ("P2.absent-page", p2::collect_page),
        ("P2.absent-file", p2::collect_file),
        ("P3.absolute-form", p3::collect_absolute_form),
        ("P3.connect", p3::collect_connect),
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
        ("P3.double-slash", p3::collect_double_slash),
        ("P3.url-param", p3::collect_url_param),
        ("P3.unknown-route", p3::collect_unknown),
        ("P4.metadata-sdist", p4::collect_metadata_sdist),
        ("P4.tripwire", p4::collect_tripwire),
        ("P4.template-text", p4::collect_template),
        ("P5.manifest", p5::collect_manifest),
    ];
    for (id, collect) in ordered {
        records.push(record(id, collect(&c, &f)));
    }
    for (id, collect) in [
        ("P5.signature", p5::collect_signature as Collect),
        ("P5.index-in-manifest", p5::collect_index_in_manifest),
        ("P5.stable-bytes", p5::collect_stable),
    ] {
        records.push(record(id, collect(&c, &f)));
    }
    // P6: the effect check brackets the write attempts.
    let mut effect = p6::collect_effect_before(&c, &f);
    let mut p6_records = Vec::new();
    for (id, collect) in [
        ("P6.write-methods", p6::collect_write_methods as Collect),
        ("P6.legacy-upload", p6::collect_legacy_upload),
        ("P6.user-routes", p6::collect_user_routes),
        ("P6.webdav", p6::collect_webdav),
        ("P6.trace", p6::collect_trace),
    ] {
        p6_records.push(record(id, collect(&c, &f)));
    }
    p6::collect_effect_after(&c, &f, &mut effect);
    // Upstream mutations come last among the probes, so that they cannot
    // disturb any other sub-probe's evidence.
    records.push(record(
        "P5.upstream-new-version",
        p5::collect_new_version(&c, &f),
    ));
    records.push(record(
        "P5.upstream-replaced-bytes",
        p5::collect_replaced(&c, &f),
    ));
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

    finish(
        target.name,
        plan,
        target.client.limits(),
        records,
        started_unix,
    )
}

pub(crate) fn finish(
    name: String,
    plan: Plan,
    limits: &egress_transcript::Limits,
    mut records: Vec<ProbeRecord>,
    started_unix: u64,
) -> Report {
    // Report order is catalog order, whatever the collection order was.
    let catalog = crate::catalog::for_protocol(&plan.protocol);
    records.sort_by_key(|r| {
        catalog
            .iter()
            .position(|s| s.id == r.id)
            .unwrap_or(usize::MAX)
    });
    let (predicates, outcome) = judge_all(&plan, &mut records);
    Report {
        schema: REPORT_SCHEMA.into(),
        tool: concat!("egress-conformance ", env!("CARGO_PKG_VERSION")).into(),
        target_name: name,
        started_unix,
        plan,
        limits: LimitsRecord::from(limits),
        probes: records,
        predicates,
        outcome,
    }
}
