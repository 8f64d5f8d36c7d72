//! The Hub sub-probes: one row each, in report order (controls first).
//! Collection order is each row's phase and order: the read-only probes;
//! the upstream's move of `main` after them; the write attempts; the whole
//! run's upstream contact last.

use super::facts::{self, Facts};
use super::plan::{Packages, Plan};
use super::{controls, p1, p2, p3, p4, p5, p6};
use crate::common::{runwide, snapshot};
use crate::subprobe::{Collect, Phase, Predicate, SubProbe, SubProbeId, Suite};
use egress_model::ProbeRecord;

/// The Hugging Face Hub as `huggingface_hub` reads it (info, tree,
/// `/resolve/`).
pub struct Hf;

impl Suite for Hf {
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
    const SERVING: &'static [SubProbeId] = &[SubProbeId::new("C.info")];

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

/// Every Hub sub-probe, in report order.
pub const TABLE: &[SubProbe<Hf>] = &[
    SubProbe {
        id: SubProbeId::new("C.info"),
        predicate: Predicate::Control,
        title: r#"a present repository's info at main names a commit"#,
        doc: r#"`GET <endpoint>/api/{models|datasets}/{repo}/revision/main` of the first present repository, a JSON object whose `sha` is 40 hex digits"#,
        phase: Phase::Controls,
        order: 1,
        collect: Collect::Plain(controls::collect_info),
        judge: controls::judge_info,
    },
    SubProbe {
        id: SubProbeId::new("C.tree"),
        predicate: Predicate::Control,
        title: r#"its tree at that commit lists files"#,
        doc: r#"`.../tree/{sha}?recursive=true&expand=false`, as the client asks it, and its next pages (`Link: rel="next"`) on the same origin, at most 16; at least one file"#,
        phase: Phase::Controls,
        order: 2,
        collect: Collect::Plain(controls::collect_tree),
        judge: controls::judge_tree,
    },
    SubProbe {
        id: SubProbeId::new("C.resolve"),
        predicate: Predicate::Control,
        title: r#"a regular file of it is served under /resolve/"#,
        doc: r#"`<endpoint>/[datasets/]{repo}/resolve/{sha}/{file}` of the first file the tree lists outside LFS, same-origin redirects followed, served whole"#,
        phase: Phase::Controls,
        order: 3,
        collect: Collect::Plain(controls::collect_resolve),
        judge: controls::judge_resolve,
    },
    SubProbe {
        id: SubProbeId::new("P1.file-digests"),
        predicate: Predicate::P1,
        title: r#"every file carries its blob id or LFS sha256, and the bytes match it"#,
        doc: r#"every file of the control repository's tree needs a 40-hex `oid` and, in LFS, a 64-hex `lfs.oid` and an `lfs.size`; up to eight files downloaded at the commit must have that size and hash to their LFS sha256 or, outside LFS, their git blob id"#,
        phase: Phase::Reads,
        order: 1,
        collect: Collect::Plain(p1::collect_file_digests),
        judge: p1::judge_file_digests,
    },
    SubProbe {
        id: SubProbeId::new("P1.upstream-bad-digest"),
        predicate: Predicate::P1,
        title: r#"bytes that contradict the tree's digests are not passed on"#,
        doc: r#"the tree at `main` of the repository the upstream serves with bytes its blob ids contradict, and its files: refused, or served with the bytes the served tree lists"#,
        phase: Phase::Reads,
        order: 15,
        collect: Collect::Plain(p1::collect_upstream_bad_digest),
        judge: p1::judge_upstream_bad_digest,
    },
    SubProbe {
        id: SubProbeId::new("P2.absent-repo"),
        predicate: Predicate::P2,
        title: r#"a repository absent from the snapshot is never served"#,
        doc: r#"the info, the revision `main`, the tree and two common files of each absent repository, and the upstream's own paths of its upstream-only one moved below the endpoint: all refused, none fetched"#,
        phase: Phase::Reads,
        order: 2,
        collect: Collect::Plain(p2::collect_absent_repo),
        judge: p2::judge_absent_repo,
    },
    SubProbe {
        id: SubProbeId::new("P2.absent-revision"),
        predicate: Predicate::P2,
        title: r#"a commit absent from the snapshot is never served"#,
        doc: r#"the revision, the tree and files of the control repository at a commit the upstream has and the snapshot does not"#,
        phase: Phase::Reads,
        order: 3,
        collect: Collect::Plain(p2::collect_absent_revision),
        judge: p2::judge_absent_revision,
    },
    SubProbe {
        id: SubProbeId::new("P2.absent-file"),
        predicate: Predicate::P2,
        title: r#"a file absent from the snapshot is never listed nor served"#,
        doc: r#"a file of the held commit that the snapshot's lock did not select: not in the tree, and refused under `/resolve/` at the commit and at `main`"#,
        phase: Phase::Reads,
        order: 4,
        collect: Collect::Plain(p2::collect_absent_file),
        judge: p2::judge_absent_file,
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
        id: SubProbeId::new("P3.no-handoff"),
        predicate: Predicate::P3,
        title: r#"no file is handed to another origin or to Xet"#,
        doc: r#"the tree's first page, and `HEAD` and `GET` of up to eight files at the commit (LFS first), redirects not followed: no 3xx off the origin, no `Link` to another origin (a tree's next page included), no `X-Xet-*` header, no `Link` with `rel="xet-auth"`"#,
        phase: Phase::Reads,
        order: 5,
        collect: Collect::Plain(p3::collect_handoff),
        judge: p3::judge_handoff,
    },
    SubProbe {
        id: SubProbeId::new("P3.xet-read-token"),
        predicate: Predicate::P3,
        title: r#"the Xet token routes are refused"#,
        doc: r#"`GET .../xet-read-token/{rev}` and `.../xet-write-token/{rev}` at the commit and at `main`, with a token: refused, never forwarded"#,
        phase: Phase::Reads,
        order: 6,
        collect: Collect::Plain(p3::collect_xet_token),
        judge: p3::judge_xet_token,
    },
    SubProbe {
        id: SubProbeId::new("P3.traversal"),
        predicate: Predicate::P3,
        title: r#"traversal in the repository and the file path, in every encoding, is refused"#,
        doc: r#"eight steps of each encoding class (raw, percent, double, backslash, overlong UTF-8) from the endpoint and the API's repository segment (where a repository id goes) and from the tree's and `/resolve/`'s directories at the commit (where a file path goes), towards `etc/passwd` and `proc/self/status`"#,
        phase: Phase::Reads,
        order: 7,
        collect: Collect::Plain(p3::collect_traversal),
        judge: p3::judge_passthrough,
    },
    SubProbe {
        id: SubProbeId::new("P3.auth-forward"),
        predicate: Predicate::P3,
        title: r#"a Hub token sent to the mirror never reaches the upstream"#,
        doc: r#"the info, the tree, a regular and an LFS file and `/api/whoami-v2`, each with `Authorization: Bearer`; FAIL when the canary logs any request carrying one"#,
        phase: Phase::Reads,
        order: 8,
        collect: Collect::Plain(p3::collect_token),
        judge: p3::judge_token,
    },
    SubProbe {
        id: SubProbeId::new("P4.viewer-routes"),
        predicate: Predicate::P4,
        title: r#"no dataset viewer or converter route is offered"#,
        doc: r#"the Hub's Parquet conversion (`/api/datasets/{d}/parquet[/...]`), Croissant, statistics and rows, and the viewer's own routes (`/rows`, `/first-rows`, `/splits`, ...) below the endpoint, for a present dataset; FAIL on a 2xx, on the canary's viewer tripwire, or on evaluated template text"#,
        phase: Phase::Reads,
        order: 9,
        collect: Collect::Plain(p4::collect_viewer),
        judge: p4::judge_viewer,
    },
    SubProbe {
        id: SubProbeId::new("P4.card-bytes"),
        predicate: Predicate::P4,
        title: r#"a model card is served as its bytes, never rendered"#,
        doc: r#"`README.md` under `/resolve/` at the commit: the committed bytes (its blob id), not HTML, no template text evaluated; the Hub's pages that render it (`/{repo}`, `/{repo}/blob/...`, `/{repo}/tree/main`) refused"#,
        phase: Phase::Reads,
        order: 10,
        collect: Collect::Plain(p4::collect_card),
        judge: p4::judge_card,
    },
    SubProbe {
        id: SubProbeId::new("P5.manifest"),
        predicate: Predicate::P5,
        title: r#"a manifest is published and its digests recompute"#,
        doc: r#"as for PyPI: one manifest covers every protocol's content"#,
        phase: Phase::Reads,
        order: 11,
        collect: Collect::Plain(snapshot::collect_manifest),
        judge: p5::judge_manifest,
    },
    SubProbe {
        id: SubProbeId::new("P5.signature"),
        predicate: Predicate::P5,
        title: r#"the manifest's signature verifies with the allowed signers"#,
        doc: r#"as for PyPI: one manifest covers every protocol's content"#,
        phase: Phase::Reads,
        order: 12,
        collect: Collect::Plain(snapshot::collect_signature),
        judge: snapshot::judge_signature,
    },
    SubProbe {
        id: SubProbeId::new("P5.branch-commit"),
        predicate: Predicate::P5,
        title: r#"main resolves to the signed commit"#,
        doc: r#"the info and tree at `main`: they name the commit `C.info` read and list its files only, and (with a verified manifest) are the bytes the signed snapshot lists for those paths"#,
        phase: Phase::Reads,
        order: 13,
        collect: Collect::Plain(p5::collect_branch),
        judge: p5::judge_branch,
    },
    SubProbe {
        id: SubProbeId::new("P5.repo-commit-header"),
        predicate: Predicate::P5,
        title: r#"every file names main's commit in X-Repo-Commit"#,
        doc: r#"`HEAD` of up to eight files at the commit and at `main`: each answer's `X-Repo-Commit` is the commit `main` names, and (with a verified manifest) one the signed snapshot holds"#,
        phase: Phase::Reads,
        order: 14,
        collect: Collect::Plain(p5::collect_repo_commit),
        judge: p5::judge_repo_commit,
    },
    SubProbe {
        id: SubProbeId::new("P5.moved-main"),
        predicate: Predicate::P5,
        title: r#"the upstream moving main never shows"#,
        doc: r#"the info, the tree and a file at `main` before and after the canary commits a change to that file on `main`"#,
        phase: Phase::Upstream,
        order: 1,
        collect: Collect::Plain(p5::collect_moved_main),
        judge: p5::judge_moved_main,
    },
    SubProbe {
        id: SubProbeId::new("P6.write-routes"),
        predicate: Predicate::P6,
        title: r#"the Hub's write routes are refused and reach no upstream"#,
        doc: r#"`POST /api/repos/create`, `.../commit/main`, `.../preupload/main`, the LFS batch API (`{repo}.git/info/lfs/objects/batch`), `.../discussions`, `PUT .../settings`, a new branch, `DELETE /api/repos/delete`, and git `receive-pack` (its `info/refs` and the `POST`), each with a token, below the endpoint and at the origin's root"#,
        phase: Phase::Writes,
        order: 1,
        collect: Collect::Plain(p6::collect_write_routes),
        judge: p6::judge_write_routes,
    },
    SubProbe {
        id: SubProbeId::new("P1.run-wide-digests"),
        predicate: Predicate::P1,
        title: r#"no served bytes contradict a digest the target listed"#,
        doc: r#"nothing of its own. It reads every exchange of the run, the controls' included: each served tree gives, for each file, its LFS sha256 or git blob id for the bytes at its `/resolve/` URL at the tree's revision; every 2xx answer to a GET of one of those URLs must match."#,
        phase: Phase::WholeRun,
        order: 2,
        collect: Collect::Plain(runwide::collect_nothing),
        judge: p1::judge_run_wide_digests,
    },
    SubProbe {
        id: SubProbeId::new("P3.run-wide-redirects"),
        predicate: Predicate::P3,
        title: r#"no answer in the run hands the client to another origin"#,
        doc: r#"nothing of its own. It reads every answer the target gave in the run: a 3xx whose `Location` leaves the origin fails."#,
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
