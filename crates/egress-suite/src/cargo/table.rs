//! The cargo sub-probes: one row each, in report order (controls first).
//! Collection order is each row's phase and order: the read-only probes;
//! the upstream mutations after them; the write attempts; the whole run's
//! upstream contact last.

use super::facts::{self, Facts};
use super::plan::{Packages, Plan};
use super::{controls, p1, p2, p3, p4, p5, p6};
use crate::common::{runwide, snapshot};
use crate::subprobe::{Collect, Phase, Predicate, SubProbe, SubProbeId, Suite};
use egress_model::ProbeRecord;

/// A sparse registry as cargo reads it (`config.json`, index files, the
/// `.crate` downloads `dl` names).
pub struct Cargo;

impl Suite for Cargo {
    type Packages = Packages;
    type Facts = Facts;
    const TABLE: &'static [SubProbe<Self>] = TABLE;
    const PHASES: &'static [Phase] = &[
        Phase::Controls,
        Phase::Reads,
        Phase::Upstream,
        Phase::Writes,
        Phase::WholeRun,
    ];
    const SERVING: &'static [SubProbeId] = &[SubProbeId::new("C.index")];

    fn facts(plan: &Plan, records: &[ProbeRecord]) -> Facts {
        facts::derive(plan, records)
    }

    fn describe(packages: &Packages) -> (Vec<String>, Vec<String>) {
        (packages.present.clone(), packages.absent.clone())
    }

    fn take_canary(
        packages: &mut Packages,
        up: &egress_model::UpstreamPlan,
        default_absent: bool,
    ) -> Result<(), crate::deployed::CanaryPlanError> {
        packages.take_canary(up, default_absent);
        Ok(())
    }
}

/// Every cargo sub-probe, in report order.
pub const TABLE: &[SubProbe<Cargo>] = &[
    SubProbe {
        id: SubProbeId::new("C.config"),
        predicate: Predicate::Control,
        title: r#"config.json is served with a dl"#,
        doc: r#"`<index>/config.json`, a JSON object with a `dl` string"#,
        phase: Phase::Controls,
        order: 1,
        collect: Collect::Plain(controls::collect_config),
        judge: controls::judge_config,
    },
    SubProbe {
        id: SubProbeId::new("C.index"),
        predicate: Predicate::Control,
        title: r#"a present crate's index file is served"#,
        doc: r#"the index file of the first present crate (`1/`, `2/`, `3/{c}/` or `{ab}/{cd}/`), with at least one line of it"#,
        phase: Phase::Controls,
        order: 2,
        collect: Collect::Plain(controls::collect_index),
        judge: controls::judge_index,
    },
    SubProbe {
        id: SubProbeId::new("C.crate"),
        predicate: Predicate::Control,
        title: r#"a present crate's .crate is served where dl says"#,
        doc: r#"the first line's download URL by cargo's rules for `dl` (its markers, or `/{crate}/{version}/download`), a whole gzip file"#,
        phase: Phase::Controls,
        order: 3,
        collect: Collect::Plain(controls::collect_crate),
        judge: controls::judge_crate,
    },
    SubProbe {
        id: SubProbeId::new("P1.cksum"),
        predicate: Predicate::P1,
        title: r#"every index line carries a cksum and the bytes match it"#,
        doc: r#"the index files of the present, template and yanked crates; every line needs a 64-hex `cksum`, and up to eight `.crate`s each must hash to their line's"#,
        phase: Phase::Reads,
        order: 1,
        collect: Collect::Plain(p1::collect_cksum),
        judge: p1::judge_cksum,
    },
    SubProbe {
        id: SubProbeId::new("P1.upstream-uncovered"),
        predicate: Predicate::P1,
        title: r#"a crate the upstream lists without a cksum is never served"#,
        doc: r#"the upstream's crate whose index line has no `cksum`: its index file refused"#,
        phase: Phase::Reads,
        order: 2,
        collect: Collect::Plain(p1::collect_uncovered),
        judge: p1::judge_uncovered,
    },
    SubProbe {
        id: SubProbeId::new("P2.absent"),
        predicate: Predicate::P2,
        title: r#"a crate absent from the snapshot is never listed nor served"#,
        doc: r#"the index files of the absent crates and the upstream's upstream-only one, and the upstream's own paths of it moved under the target"#,
        phase: Phase::Reads,
        order: 3,
        collect: Collect::Plain(p2::collect_absent),
        judge: p2::judge_absent,
    },
    SubProbe {
        id: SubProbeId::new("P2.new-publish"),
        predicate: Predicate::P2,
        title: r#"an index file never gains a version, even one published upstream mid-run"#,
        doc: r#"the present crate's index file before and after the canary publishes a new version of it"#,
        phase: Phase::Upstream,
        order: 1,
        collect: Collect::Plain(p2::collect_new_publish),
        judge: p2::judge_new_publish,
    },
    SubProbe {
        id: SubProbeId::new("P2.upstream-contact"),
        predicate: Predicate::P2,
        title: r#"the upstream is never contacted"#,
        doc: r#"the whole run's upstream log"#,
        phase: Phase::WholeRun,
        order: 1,
        collect: Collect::UpstreamLog,
        judge: p2::judge_upstream_contact,
    },
    SubProbe {
        id: SubProbeId::new("P3.config-origin"),
        predicate: Predicate::P3,
        title: r#"config.json's dl and api name the mirror's own origin"#,
        doc: r#"nothing of its own: `C.config`'s answer; `api` absent is fine"#,
        phase: Phase::Reads,
        order: 4,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: p3::judge_config_origin,
    },
    SubProbe {
        id: SubProbeId::new("P3.traversal"),
        predicate: Predicate::P3,
        title: r#"traversal in the index path, crate name and version, in every encoding, is refused"#,
        doc: r#"eight steps of each encoding class (raw, percent, double, backslash, overlong UTF-8) from the index root, from `3/e/` and from the download route's directory, towards `etc/passwd` and `proc/self/status`"#,
        phase: Phase::Reads,
        order: 5,
        collect: Collect::Plain(p3::collect_traversal),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.registry-token"),
        predicate: Predicate::P3,
        title: r#"a registry token sent to the mirror never reaches the upstream"#,
        doc: r#"the index file, the `.crate` and `/api/v1/me`, each with an `Authorization` token; FAIL when the canary logs any request carrying one"#,
        phase: Phase::Reads,
        order: 6,
        collect: Collect::Plain(p3::collect_token),
        judge: p3::judge_token,
    },
    SubProbe {
        id: SubProbeId::new("P4.render-routes"),
        predicate: Predicate::P4,
        title: r#"no route documents or renders a crate"#,
        doc: r#"crates.io's rendered README (`/api/v1/crates/{c}/{v}/readme`), the crate's API and web pages and docs.rs-like pages, for the template crate, at the root and under the registry; FAIL on a 2xx or on evaluated template text"#,
        phase: Phase::Reads,
        order: 7,
        collect: Collect::Plain(p4::collect_render),
        judge: p4::judge_render,
    },
    SubProbe {
        id: SubProbeId::new("P5.manifest"),
        predicate: Predicate::P5,
        title: r#"a manifest is published and its digests recompute"#,
        doc: r#"as for PyPI: one manifest covers every protocol's content"#,
        phase: Phase::Reads,
        order: 8,
        collect: Collect::Plain(snapshot::collect_manifest),
        judge: p5::judge_manifest,
    },
    SubProbe {
        id: SubProbeId::new("P5.signature"),
        predicate: Predicate::P5,
        title: r#"the manifest's signature verifies with the allowed signers"#,
        doc: r#"as for PyPI: one manifest covers every protocol's content"#,
        phase: Phase::Reads,
        order: 9,
        collect: Collect::Plain(snapshot::collect_signature),
        judge: snapshot::judge_signature,
    },
    SubProbe {
        id: SubProbeId::new("P5.yanked-flags"),
        predicate: Predicate::P5,
        title: r#"the snapshot's yanked flags are the signed ones"#,
        doc: r#"the index file of the crate held at a yanked version: served, a line still yanked, and (with a verified manifest) the bytes it lists for the path"#,
        phase: Phase::Reads,
        order: 10,
        collect: Collect::Plain(p5::collect_yanked_flags),
        judge: p5::judge_yanked_flags,
    },
    SubProbe {
        id: SubProbeId::new("P5.upstream-republished"),
        predicate: Predicate::P5,
        title: r#"a version republished upstream with other bytes never shows"#,
        doc: r#"the present crate's index file and `.crate` before and after the canary republishes that version with other bytes (its `cksum` updated)"#,
        phase: Phase::Upstream,
        order: 2,
        collect: Collect::Plain(p5::collect_republished),
        judge: p5::judge_republished,
    },
    SubProbe {
        id: SubProbeId::new("P5.upstream-yank"),
        predicate: Predicate::P5,
        title: r#"a yank upstream never shows"#,
        doc: r#"the same before and after the canary yanks that version"#,
        phase: Phase::Upstream,
        order: 3,
        collect: Collect::Plain(p5::collect_yank),
        judge: p5::judge_yank,
    },
    SubProbe {
        id: SubProbeId::new("P6.write-routes"),
        predicate: Predicate::P6,
        title: r#"crates.io's write routes are refused and reach no upstream"#,
        doc: r#"`PUT /api/v1/crates/new`, yank, unyank, owners `PUT` and `DELETE`, and `GET /api/v1/me`, each with a registry token, at the target's root and under its registry"#,
        phase: Phase::Writes,
        order: 1,
        collect: Collect::Plain(p6::collect_write_routes),
        judge: p6::judge_write_routes,
    },
    SubProbe {
        id: SubProbeId::new("P1.run-wide-digests"),
        predicate: Predicate::P1,
        title: r#"no served bytes contradict a digest the target listed"#,
        doc: r#"nothing of its own. It reads every exchange of the run, the controls' included: each served index file gives, for each line with a 64-hex `cksum`, the sha256 of the bytes at that line's download URL by `C.config`'s `dl`; every 2xx answer to a GET of one of those URLs must match."#,
        phase: Phase::WholeRun,
        order: 2,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: p1::judge_run_wide_digests,
    },
    SubProbe {
        id: SubProbeId::new("P3.run-wide-redirects"),
        predicate: Predicate::P3,
        title: r#"no answer in the run hands the client to another origin"#,
        doc: r#"nothing of its own. It reads every answer the target gave in the run: a 3xx whose `Location` leaves the origin fails, and so does a served `config.json` whose `dl` or `api` is on another origin."#,
        phase: Phase::WholeRun,
        order: 3,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: p3::judge_run_wide_offsite,
    },
    SubProbe {
        id: SubProbeId::new("P6.run-wide-writes"),
        predicate: Predicate::P6,
        title: r#"no state-changing request in the run is honoured"#,
        doc: r#"nothing of its own. It reads every request of the run whose method changes state, whichever sub-probe sent it: any answered 2xx fails."#,
        phase: Phase::WholeRun,
        order: 4,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: p6::judge_run_wide_writes,
    },
];
