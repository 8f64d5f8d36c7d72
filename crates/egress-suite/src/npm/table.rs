//! Every npm sub-probe with its stable ID, predicate, title and judge. IDs
//! never change meaning; docs/predicates.md describes each.

use super::{controls, p1, p2, p3, p4, p5, p6};
use crate::catalog::SubProbe;
use crate::probes::p5_snapshot as pypi_p5;

const fn sp(
    id: &'static str,
    predicate: &'static str,
    title: &'static str,
    judge: crate::catalog::JudgeFn,
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
        "C.packument",
        "C",
        "a present package's full packument is served",
        controls::judge_packument,
    ),
    sp(
        "C.abbreviated",
        "C",
        "a present package's abbreviated packument is served",
        controls::judge_abbreviated,
    ),
    sp(
        "C.scoped",
        "C",
        "a scoped package's packument is served (@scope%2fname)",
        controls::judge_scoped,
    ),
    sp(
        "C.tarball",
        "C",
        "a present version's tarball is served",
        controls::judge_tarball,
    ),
    sp(
        "P1.integrity-full",
        "P1",
        "every version in a full packument carries a sha512 integrity",
        p1::judge_integrity_full,
    ),
    sp(
        "P1.integrity-abbreviated",
        "P1",
        "every version in an abbreviated packument carries a sha512 integrity",
        p1::judge_integrity_abbreviated,
    ),
    sp(
        "P1.bytes-match",
        "P1",
        "served tarballs match their listed integrity",
        p1::judge_bytes_match,
    ),
    sp(
        "P1.version-document",
        "P1",
        "a version resolved by name carries the packument's integrity",
        p1::judge_version_doc,
    ),
    sp(
        "P1.upstream-no-integrity",
        "P1",
        "a package the upstream lists without integrity is not passed on",
        p1::judge_no_integrity,
    ),
    sp(
        "P1.upstream-bad-integrity",
        "P1",
        "tarball bytes that contradict the upstream's integrity are not passed on",
        p1::judge_bad_integrity,
    ),
    sp(
        "P2.absent-packument",
        "P2",
        "a package absent from the snapshot has no packument",
        p2::judge_absent_packument,
    ),
    sp(
        "P2.absent-tarball",
        "P2",
        "a package absent from the snapshot has no tarballs",
        p2::judge_absent_tarball,
    ),
    sp(
        "P2.offsite-tarball",
        "P2",
        "no packument sends the client to another origin for a tarball",
        p2::judge_offsite_tarball,
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
        "P3.scoped-encodings",
        "P3",
        "scoped names absent from the snapshot, in every encoding, are refused",
        p3::judge_scoped_encodings,
    ),
    sp(
        "P3.host-headers",
        "P3",
        "Host and X-Forwarded-* headers are never reflected into tarball URLs",
        p3::judge_host_headers,
    ),
    sp(
        "P3.registry-routes",
        "P3",
        "/-/all, /-/v1/search, /-/whoami and audits are refused",
        p3::judge_passthrough,
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
        "no redirect leaves the mirror's origin",
        p3::judge_offsite_redirect,
    ),
    sp(
        "P4.tripwire",
        "P4",
        "a tripwire tarball's lifecycle scripts never run",
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
        pypi_p5::judge_signature,
    ),
    sp(
        "P5.served-in-manifest",
        "P5",
        "everything served is in the manifest with the same digest",
        p5::judge_served_in_manifest,
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
        "tarball bytes replaced upstream mid-run never show",
        p5::judge_replaced,
    ),
    sp(
        "P5.upstream-dist-tag",
        "P5",
        "a dist-tag moved upstream mid-run never moves",
        p5::judge_dist_tag,
    ),
    sp(
        "P6.publish",
        "P6",
        "npm publish (PUT) is refused, anonymous or with a token",
        p6::judge_publish,
    ),
    sp(
        "P6.unpublish",
        "P6",
        "unpublish (DELETE, PUT -rev) is refused",
        p6::judge_refused,
    ),
    sp(
        "P6.dist-tags",
        "P6",
        "dist-tag changes are refused",
        p6::judge_refused,
    ),
    sp(
        "P6.adduser",
        "P6",
        "adduser (PUT /-/user/org.couchdb.user:NAME) is refused",
        p6::judge_refused,
    ),
    sp(
        "P6.login-tokens",
        "P6",
        "login and token routes are refused",
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
        "packuments and tarballs are unchanged, nothing new is published",
        p6::judge_effect,
    ),
];
