//! The apt sub-probes: one row each, in report order (controls first).
//! Collection order is each row's phase and order: the read-only probes;
//! the upstream mutations after them, so that they cannot disturb their
//! evidence, and before the write attempts, which a non-conformant target
//! may honour by changing the very index the mutations are observed on;
//! the write attempts, bracketed by P6.effect; the whole run's upstream
//! contact last.

use super::facts::{self, Facts};
use super::plan::{Packages, Plan};
use super::{controls, p1, p2, p3, p4, p5, p6};
use crate::common::{chain, instance, passthrough, runwide, snapshot, writes};
use crate::subprobe::{Collect, Phase, Predicate, SubProbe, SubProbeId, Suite};
use egress_model::ProbeRecord;

/// A Debian repository as apt reads it (a signed `Release`, the `Packages`
/// index it lists with SHA256, `.deb`s in the pool).
pub struct Apt;

impl Suite for Apt {
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
    const SERVING: &'static [SubProbeId] = &[SubProbeId::new("C.release")];

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

/// Every apt sub-probe, in report order.
pub const TABLE: &[SubProbe<Apt>] = &[
    SubProbe {
        id: SubProbeId::new("C.release"),
        predicate: Predicate::Control,
        title: r#"the dist's Release is served"#,
        doc: r#"`dists/<dist>/InRelease`, `Release` and `Release.gpg`; PASS when the `InRelease` (its signed text) or the `Release` parses as a Release"#,
        phase: Phase::Controls,
        order: 1,
        collect: Collect::Plain(controls::collect_release),
        judge: controls::judge_release,
    },
    SubProbe {
        id: SubProbeId::new("C.packages"),
        predicate: Predicate::Control,
        title: r#"the Packages index the Release lists is served"#,
        doc: r#"`dists/<dist>/<component>/binary-<arch>/Packages` (or `Packages.gz` when the Release lists only that), parsing with at least one stanza"#,
        phase: Phase::Controls,
        order: 2,
        collect: Collect::Plain(controls::collect_packages),
        judge: controls::judge_packages,
    },
    SubProbe {
        id: SubProbeId::new("C.deb"),
        predicate: Predicate::Control,
        title: r#"a present package's .deb is served whole"#,
        doc: r#"the first present package's `Filename` from that index, a whole `ar` archive"#,
        phase: Phase::Controls,
        order: 3,
        collect: Collect::Plain(controls::collect_deb),
        judge: controls::judge_deb,
    },
    SubProbe {
        id: SubProbeId::new("P1.release-signed"),
        predicate: Predicate::P1,
        title: r#"the Release verifies against the given keyring"#,
        doc: r#"`InRelease`, `Release` and `Release.gpg` against `--keyring`: a served `InRelease` must verify and carry a Release; a served `Release` must be verified by its `Release.gpg` unless a verified `InRelease` stands for it; SKIPPED without a keyring"#,
        phase: Phase::Reads,
        order: 1,
        collect: Collect::Plain(p1::collect_release_signed),
        judge: p1::judge_release_signed,
    },
    SubProbe {
        id: SubProbeId::new("P1.index-digests"),
        predicate: Predicate::P1,
        title: r#"every index is listed with SHA256 and served by hash where announced"#,
        doc: r#"the component and architecture's indexes the Release lists (up to eight), by path and, when it announces `Acquire-By-Hash: yes`, at `by-hash/SHA256/<hex>`; the index `C.packages` read must be listed"#,
        phase: Phase::Reads,
        order: 2,
        collect: Collect::Plain(p1::collect_index_digests),
        judge: p1::judge_index_digests,
    },
    SubProbe {
        id: SubProbeId::new("P1.deb-digests"),
        predicate: Predicate::P1,
        title: r#"every .deb reached has a SHA256 line in a signed index and its bytes match"#,
        doc: r#"every stanza of the index needs a `SHA256`; up to six `.deb`s of present packages, whose size and SHA256 must be the stanza's"#,
        phase: Phase::Reads,
        order: 3,
        collect: Collect::Plain(p1::collect_deb_digests),
        judge: p1::judge_deb_digests,
    },
    SubProbe {
        id: SubProbeId::new("P1.upstream-uncovered"),
        predicate: Predicate::P1,
        title: r#"a package the upstream lists without a covering digest is never served"#,
        doc: r#"the upstream's planted packages (no `SHA256`; a `SHA256` its bytes do not have): listed by no index, their pool paths and pool directories refused"#,
        phase: Phase::Reads,
        order: 4,
        collect: Collect::Plain(p1::collect_upstream_uncovered),
        judge: p1::judge_upstream_uncovered,
    },
    SubProbe {
        id: SubProbeId::new("P2.absent-index"),
        predicate: Predicate::P2,
        title: r#"a package absent from the snapshot is listed by no index"#,
        doc: r#"`Packages` and `Packages.gz` of the dist, against the absent packages and the upstream's upstream-only one"#,
        phase: Phase::Reads,
        order: 5,
        collect: Collect::Plain(p2::collect_absent_index),
        judge: p2::judge_absent_index,
    },
    SubProbe {
        id: SubProbeId::new("P2.absent-pool"),
        predicate: Predicate::P2,
        title: r#"a package absent from the snapshot is served at no pool path"#,
        doc: r#"the pool path (`1.0`) and pool directory of each absent package, and the upstream's own pool paths of its upstream-only package, each with a marker and again without (a target that refuses every query string must still refuse the bare path)"#,
        phase: Phase::Reads,
        order: 6,
        collect: Collect::Plain(p2::collect_absent_pool),
        judge: p2::judge_absent_pool,
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
        id: SubProbeId::new("P3.absolute-form"),
        predicate: Predicate::P3,
        title: r#"absolute-form targets naming another host are refused"#,
        doc: r#"as for PyPI, in apt's shapes: raw `GET http://{other}/debian/dists/{tok}/InRelease` and `GET http://{other}/debian/pool/main/e/{tok}/{tok}_1.0_all.deb` (a cache that refuses what does not look like a Debian file would refuse PyPI's shapes for that alone)"#,
        phase: Phase::Reads,
        order: 7,
        collect: Collect::Plain(p3::collect_absolute_form),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.proxy-style"),
        predicate: Predicate::P3,
        title: r#"proxy-style requests for another host's repository are refused"#,
        doc: r#"absolute-form `http://` and `https://` targets in apt's shapes (`/debian/dists/<dist>/InRelease`, a pool `.deb`) naming the controlled upstream or a name that never resolves, each with a marker and again without"#,
        phase: Phase::Reads,
        order: 8,
        collect: Collect::Plain(p3::collect_proxy_style),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.connect"),
        predicate: Predicate::P3,
        title: r#"CONNECT is refused"#,
        doc: r#"as for PyPI"#,
        phase: Phase::Reads,
        order: 9,
        collect: Collect::Plain(passthrough::collect_connect),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.remapped-paths"),
        predicate: Predicate::P3,
        title: r#"apt-cacher-ng remapped paths are refused"#,
        doc: r#"`/<host>/debian/...`, `/deb.debian.org/debian/...`, `/HTTPS///<host>/...`, `/debrep/...`, `/security.debian.org/...`, each with a marker and again without"#,
        phase: Phase::Reads,
        order: 10,
        collect: Collect::Plain(p3::collect_remapped),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.double-slash"),
        predicate: Predicate::P3,
        title: r#"//host/ paths naming another host are refused"#,
        doc: r#"as for PyPI, in apt's shapes: `//{other}/debian/dists/{tok}/InRelease`, and `//{host}` (no port) and `///{other}` each followed by `/debian/pool/main/e/{tok}/{tok}_1.0_all.deb`"#,
        phase: Phase::Reads,
        order: 11,
        collect: Collect::Plain(p3::collect_double_slash),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.traversal"),
        predicate: Predicate::P3,
        title: r#"traversal out of the archive, in every encoding, is refused"#,
        doc: r#"eight steps of each encoding class (raw, percent, double, backslash, overlong UTF-8) from `dists/<dist>/` and from `pool/<component>/` towards `etc/passwd` and `proc/self/status`"#,
        phase: Phase::Reads,
        order: 12,
        collect: Collect::Plain(p3::collect_traversal),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.unknown-paths"),
        predicate: Predicate::P3,
        title: r#"paths under the archive that the snapshot does not hold are refused"#,
        doc: r#"marker paths under `dists/<dist>/`, `dists/`, the index directory, `by-hash/SHA256/` (a digest of zeros, with a query marker and again without), the pool and the archive root"#,
        phase: Phase::Reads,
        order: 13,
        collect: Collect::Plain(p3::collect_unknown),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.request-smuggling"),
        predicate: Predicate::P3,
        title: r#"request-smuggling payloads are refused and nothing behind them is answered"#,
        doc: r#"as for PyPI, hiding `GET <archive>/dists/<dist>/InRelease?ec={tok}` behind each case of the corpus; the positive control pipelines that path without the marker (`GET <archive>/dists/<dist>/InRelease`), since apt caches refuse every query string (apt-cacher-ng answers 403) and a marked control would fail for that alone"#,
        phase: Phase::Reads,
        order: 14,
        collect: Collect::Plain(p3::collect_smuggling),
        judge: p3::judge_smuggling,
    },
    SubProbe {
        id: SubProbeId::new("P4.tripwire"),
        predicate: Predicate::P4,
        title: r#"a tripwire .deb's maintainer scripts never run"#,
        doc: r#"the tripwire package's index, `.deb` and the pages where caches render package text (its pool directory, the archive root, the dist's directory, `/acng-report.html`, `/api/packages/<name>`), with the upstream's log"#,
        phase: Phase::Reads,
        order: 15,
        collect: Collect::Plain(p4::collect_tripwire),
        judge: p4::judge_tripwire,
    },
    SubProbe {
        id: SubProbeId::new("P4.template-text"),
        predicate: Predicate::P4,
        title: r#"template expressions in package text are never evaluated"#,
        doc: r#"the `Packages` index (plain and as read by `C.packages`) and the same pages, for the package whose `Description` carries template expressions"#,
        phase: Phase::Reads,
        order: 16,
        collect: Collect::Plain(p4::collect_template),
        judge: p4::judge_template,
    },
    SubProbe {
        id: SubProbeId::new("P5.manifest"),
        predicate: Predicate::P5,
        title: r#"a manifest is published and its digests recompute"#,
        doc: r#"as for PyPI: one manifest covers every protocol's content"#,
        phase: Phase::Reads,
        order: 17,
        collect: Collect::Plain(snapshot::collect_manifest),
        judge: p5::judge_manifest,
    },
    SubProbe {
        id: SubProbeId::new("P5.signature"),
        predicate: Predicate::P5,
        title: r#"the manifest's signature verifies with the allowed signers"#,
        doc: r#"as for PyPI: one manifest covers every protocol's content"#,
        phase: Phase::Reads,
        order: 18,
        collect: Collect::Plain(snapshot::collect_signature),
        judge: snapshot::judge_signature,
    },
    SubProbe {
        id: SubProbeId::new("P5.chain"),
        predicate: Predicate::P5,
        title: r#"a layer's chain holds: every ancestor served, signed, and only added to"#,
        doc: r#"as for PyPI: every protocol's snapshot is one chain"#,
        phase: Phase::Reads,
        order: 22,
        collect: Collect::AfterRecords(|c, _, r| chain::collect(c, r)),
        judge: |j, r| chain::judge(j, r, "C.release"),
    },
    SubProbe {
        id: SubProbeId::new("P5.stable-bytes"),
        predicate: Predicate::P5,
        title: r#"bytes for one URL never change across fetches"#,
        doc: r#"the `InRelease`, the index and the control `.deb`, twice; and P6.effect's two reads before the write attempts"#,
        phase: Phase::Reads,
        order: 19,
        collect: Collect::Plain(p5::collect_stable),
        judge: p5::judge_stable,
    },
    SubProbe {
        id: SubProbeId::new("P5.expected-snapshot"),
        predicate: Predicate::P5,
        title: r#"the mirror serves exactly the expected snapshot"#,
        doc: r#"as for PyPI: the same routes and the same judges"#,
        phase: Phase::Reads,
        order: 20,
        collect: Collect::Plain(instance::collect_expected),
        judge: |j, r| instance::judge_expected(j, r, "C.release"),
    },
    SubProbe {
        id: SubProbeId::new("P5.instance-attestation"),
        predicate: Predicate::P5,
        title: r#"the instance answers fresh nonces with a statement the lab certified for the served snapshot"#,
        doc: r#"as for PyPI: the same routes and the same judges"#,
        phase: Phase::Reads,
        order: 21,
        collect: Collect::Plain(instance::collect_attestation),
        judge: |j, r| instance::judge_attestation(j, r, "C.release"),
    },
    SubProbe {
        id: SubProbeId::new("P5.upstream-new-version"),
        predicate: Predicate::P5,
        title: r#"a version published upstream mid-run never shows"#,
        doc: r#"the `InRelease`, the index and the control `.deb` before and after the canary publishes a new version of the control package (and re-signs its Release), and the new version's pool path"#,
        phase: Phase::Upstream,
        order: 1,
        collect: Collect::Plain(p5::collect_new_version),
        judge: p5::judge_new_version,
    },
    SubProbe {
        id: SubProbeId::new("P5.upstream-replaced-bytes"),
        predicate: Predicate::P5,
        title: r#".deb bytes replaced upstream mid-run never show"#,
        doc: r#"the same before and after the canary rebuilds the control `.deb` at the same pool path (a new SHA256 in its index, its Release re-signed)"#,
        phase: Phase::Upstream,
        order: 2,
        collect: Collect::Plain(p5::collect_replaced),
        judge: p5::judge_replaced,
    },
    SubProbe {
        id: SubProbeId::new("P6.webdav"),
        predicate: Predicate::P6,
        title: r#"WebDAV verbs are refused"#,
        doc: r#"as for PyPI, on the control `.deb`"#,
        phase: Phase::Writes,
        order: 1,
        collect: Collect::Plain(writes::collect_webdav),
        judge: p6::judge_refused,
    },
    SubProbe {
        id: SubProbeId::new("P6.trace"),
        predicate: Predicate::P6,
        title: r#"TRACE is refused"#,
        doc: r#"as for PyPI"#,
        phase: Phase::Writes,
        order: 2,
        collect: Collect::Plain(writes::collect_trace),
        judge: p6::judge_refused,
    },
    SubProbe {
        id: SubProbeId::new("P6.vendor-routes"),
        predicate: Predicate::P6,
        title: r#"known vendor control routes are refused and have no effect"#,
        doc: r#"every route of the vendor dictionary (`crates/egress-suite/data/control-routes.toml`) for apt or any protocol: apt-cacher-ng's maintenance actions, aptly's API and uploads, `PUT` uploads into the pool and an incoming directory; destructive ones only in the built-in run, the testbed and `check --destructive`"#,
        phase: Phase::Writes,
        order: 3,
        collect: Collect::Plain(p6::collect_vendor_routes),
        judge: p6::judge_vendor_routes,
    },
    SubProbe {
        id: SubProbeId::new("P6.effect"),
        predicate: Predicate::P6,
        title: r#"the Release, the index and the .deb are unchanged by the write attempts"#,
        doc: r#"the `InRelease`, the index and the control `.deb`, read twice before every write attempt and once after"#,
        phase: Phase::Writes,
        order: 0,
        collect: Collect::Bracket {
            before: p6::collect_effect_before,
            after: p6::collect_effect_after,
        },
        judge: p6::judge_effect,
    },
    SubProbe {
        id: SubProbeId::new("P1.run-wide-digests"),
        predicate: Predicate::P1,
        title: r#"no served bytes contradict a digest the target listed"#,
        doc: r#"nothing of its own. It reads every exchange of the run, the controls' included: each served `InRelease` or `Release` gives the SHA256 of each index it lists (and of its by-hash path when it announces `Acquire-By-Hash`), each served `Packages` the SHA256 of each `.deb`; every 2xx answer to a GET of one of those URLs must match one of them."#,
        phase: Phase::WholeRun,
        order: 2,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: p1::judge_run_wide_digests,
    },
    SubProbe {
        id: SubProbeId::new("P3.run-wide-redirects"),
        predicate: Predicate::P3,
        title: r#"no answer in the run hands the client to another origin"#,
        doc: r#"nothing of its own. It reads every answer the target gave in the run, the controls' included: a 3xx whose `Location` leaves the origin fails, and so does a served `Release` or `Packages` that lists a file on another origin."#,
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
    SubProbe {
        id: SubProbeId::new("P5.run-wide-snapshot"),
        predicate: Predicate::P5,
        title: r#"every answer in the run comes from the one snapshot checked"#,
        doc: r#"nothing of its own. It reads the `X-Egress-Snapshot` header of every answer in the run (egress-mirror names the snapshot each answer came from): all must name one snapshot, the one `--expect-snapshot` names or else the one whose manifest P5.manifest verified. Replicas behind one balancer serving different snapshots fail here, each snapshot named with its count and the first answer from the odd one. SKIPPED when no answer names its snapshot."#,
        phase: Phase::WholeRun,
        order: 5,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: |j, _r| {
            runwide::judge_one_snapshot(
                j,
                "C.release",
                crate::common::instance::snapshot_in_question(j),
            )
        },
    },
];
