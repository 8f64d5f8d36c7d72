//! Every sub-probe with its stable ID, the predicate it belongs to, a title
//! and its judge. IDs never change meaning; docs/predicates.md describes each.

use crate::judge::{Judge, Verdict};
use crate::probes::{
    controls, p1_digest as p1, p2_replay as p2, p3_passthrough as p3, p4_build as p4,
    p5_snapshot as p5, p6_control as p6,
};
use egress_model::ProbeRecord;

pub type JudgeFn = fn(&Judge, &ProbeRecord) -> Verdict;

pub struct SubProbe {
    pub id: &'static str,
    /// `C` for positive controls, else `P1`..`P6`.
    pub predicate: &'static str,
    pub title: &'static str,
    pub judge: JudgeFn,
}

pub const PREDICATES: [(&str, &str); 6] = [
    ("P1", "digest binding"),
    ("P2", "replay only"),
    ("P3", "no path passthrough"),
    ("P4", "no build path"),
    ("P5", "snapshot immutability"),
    ("P6", "no control channel"),
];

const fn sp(
    id: &'static str,
    predicate: &'static str,
    title: &'static str,
    judge: JudgeFn,
) -> SubProbe {
    SubProbe {
        id,
        predicate,
        title,
        judge,
    }
}

/// In report order. Controls come first: every other judge may read them.
pub const CATALOG: &[SubProbe] = &[
    sp(
        "C.index",
        "C",
        "the index serves a simple-API page",
        controls::judge_index,
    ),
    sp(
        "C.project-html",
        "C",
        "a present project's page is served (PEP 503 HTML)",
        controls::judge_project_html,
    ),
    sp(
        "C.project-json",
        "C",
        "a present project's page is served (PEP 691 JSON)",
        controls::judge_project_json,
    ),
    sp(
        "C.file",
        "C",
        "a present file is served as a valid archive",
        controls::judge_file,
    ),
    sp(
        "P1.html-hashes",
        "P1",
        "every HTML file link carries a sha256",
        p1::judge_html_hashes,
    ),
    sp(
        "P1.json-hashes",
        "P1",
        "every PEP 691 file carries a sha256",
        p1::judge_json_hashes,
    ),
    sp(
        "P1.bytes-match",
        "P1",
        "served bytes match the listed sha256",
        p1::judge_bytes_match,
    ),
    sp(
        "P1.altered-digest",
        "P1",
        "file URLs carry their digest; an altered digest serves nothing",
        p1::judge_altered,
    ),
    sp(
        "P1.name-version-path",
        "P1",
        "no file by name and version alone",
        p1::judge_name_version,
    ),
    sp(
        "P1.upstream-no-digest",
        "P1",
        "a project the upstream lists without digests is not passed on",
        p1::judge_no_digest,
    ),
    sp(
        "P1.upstream-bad-digest",
        "P1",
        "bytes that contradict the upstream's listed digest are not passed on",
        p1::judge_bad_digest,
    ),
    sp(
        "P2.absent-page",
        "P2",
        "a project absent from the snapshot has no page",
        p2::judge_page,
    ),
    sp(
        "P2.absent-file",
        "P2",
        "a project absent from the snapshot has no files",
        p2::judge_file,
    ),
    sp(
        "P2.upstream-contact",
        "P2",
        "the upstream is never contacted",
        p2::judge_upstream_contact,
    ),
    sp(
        "P3.absolute-form",
        "P3",
        "absolute-form targets naming another host are refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.connect",
        "P3",
        "CONNECT is refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.dotdot-raw",
        "P3",
        "raw ../ traversal is refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.dotdot-percent",
        "P3",
        "percent-encoded traversal is refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.dotdot-double",
        "P3",
        "double-encoded traversal is refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.dotdot-backslash",
        "P3",
        "backslash traversal is refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.dotdot-overlong",
        "P3",
        "overlong UTF-8 traversal is refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.double-slash",
        "P3",
        "//host/ paths are refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.url-param",
        "P3",
        "?url=-style parameters are ignored or refused",
        p3::judge_url_param,
    ),
    sp(
        "P3.unknown-route",
        "P3",
        "unknown routes are refused",
        p3::judge_passthrough,
    ),
    sp(
        "P3.offsite-redirect",
        "P3",
        "no redirect or link leaves the mirror's origin",
        p3::judge_offsite,
    ),
    sp(
        "P4.metadata-sdist",
        "P4",
        "no metadata is computed for sdist-only releases",
        p4::judge_metadata_sdist,
    ),
    sp(
        "P4.tripwire",
        "P4",
        "a tripwire sdist's build code never runs",
        p4::judge_tripwire,
    ),
    sp(
        "P4.template-text",
        "P4",
        "template expressions in package text are never evaluated",
        p4::judge_template,
    ),
    sp(
        "P5.manifest",
        "P5",
        "a manifest is published and its digests recompute",
        p5::judge_manifest,
    ),
    sp(
        "P5.signature",
        "P5",
        "the manifest's signature verifies with the allowed signers",
        p5::judge_signature,
    ),
    sp(
        "P5.index-in-manifest",
        "P5",
        "everything served is in the manifest with the same digest",
        p5::judge_index_in_manifest,
    ),
    sp(
        "P5.stable-bytes",
        "P5",
        "bytes for one URL never change across fetches",
        p5::judge_stable,
    ),
    sp(
        "P5.upstream-new-version",
        "P5",
        "a version published upstream mid-run never shows",
        p5::judge_new_version,
    ),
    sp(
        "P5.upstream-replaced-bytes",
        "P5",
        "bytes replaced upstream mid-run never show",
        p5::judge_replaced,
    ),
    sp(
        "P6.write-methods",
        "P6",
        "POST, PUT, DELETE, PATCH on read routes are refused",
        p6::judge_refused,
    ),
    sp(
        "P6.legacy-upload",
        "P6",
        "the legacy upload API is refused and has no effect",
        p6::judge_legacy_upload,
    ),
    sp(
        "P6.user-routes",
        "P6",
        "user creation and login routes are refused",
        p6::judge_refused,
    ),
    sp(
        "P6.webdav",
        "P6",
        "WebDAV verbs are refused",
        p6::judge_refused,
    ),
    sp("P6.trace", "P6", "TRACE is refused", p6::judge_refused),
    sp(
        "P6.effect",
        "P6",
        "index, pages and files are unchanged by the attempts",
        p6::judge_effect,
    ),
];

/// The PyPI catalog's entry `id`.
pub fn find(id: &str) -> Option<&'static SubProbe> {
    CATALOG.iter().find(|s| s.id == id)
}

/// The catalog of a registry protocol (`pypi` or `npm`): each protocol
/// states the six predicates in its own terms.
pub fn for_protocol(protocol: &str) -> &'static [SubProbe] {
    match protocol {
        "npm" => crate::npm::catalog::CATALOG,
        _ => CATALOG,
    }
}

pub fn find_in(protocol: &str, id: &str) -> Option<&'static SubProbe> {
    for_protocol(protocol).iter().find(|s| s.id == id)
}
