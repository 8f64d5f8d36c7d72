//! P5 snapshot immutability, in npm's terms: the manifest (shared with the
//! PyPI side: one snapshot, one manifest), everything served listed in it,
//! bytes that never change, and upstream changes (a new version, replaced
//! tarball bytes, a moved dist-tag) that never show through.

use super::doc::Packument;
use super::facts::Facts;
use super::facts::Judge;
use super::plan::Collector;
use super::plan::{packument_url, ABBREVIATED, FULL};
use crate::collect::Evidence;
use crate::common::cutoff;
use crate::common::snapshot::{
    changed_without_cause, input, manifest_to_compare, mutation, not_mutated, served_as_listed,
    whole_digest,
};
use crate::facts::{final_of, find, success_body};
use crate::judge::{fail, inconclusive, pass, short, skipped, Verdict};
use egress_model::{BodyEnd, NpmName, ProbeRecord, ProjectName};
use egress_snapshot::SnapshotDoc;
use serde_json::Value;

pub fn judge_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    crate::common::snapshot::manifest_verdict(j, rec, "C.packument")
}

/// npm's part of P5.cutoff: the full packuments, and each version's
/// `time[version]` for its tarball.
pub const CUTOFF: cutoff::Pages = cutoff::Pages {
    control: "C.packument",
    what: "packument",
    accept: FULL,
    pages: packuments,
    files: packument_times,
};

/// The full packuments a snapshot serves: `application/json` entries at
/// `/<name>` or `/@scope%2fname` (the spelling npm asks for; the raw
/// `/@scope/name` serves the same bytes).
fn packuments(doc: &SnapshotDoc, _registry_path: &str) -> Vec<String> {
    doc.served
        .iter()
        .filter(|e| e.content_type.eq_ignore_ascii_case(FULL))
        .filter(|e| {
            e.path
                .strip_prefix('/')
                .is_some_and(|name| !name.is_empty() && !name.contains('/'))
        })
        .map(|e| e.path.clone())
        .collect()
}

/// Each version of a full packument, its `dist.tarball` and its
/// `time[version]`, read leniently (a time that is not a string is kept as
/// its JSON text). `created`, `modified` and the times of versions the
/// packument does not list name no served file and are not read.
fn packument_times(body: &[u8]) -> Result<Vec<cutoff::ServedFile>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON ({e})"))?;
    let versions = doc
        .get("versions")
        .and_then(Value::as_object)
        .ok_or("no `versions` object")?;
    let name = doc.get("name").and_then(Value::as_str).unwrap_or("?");
    let times = doc.get("time").and_then(Value::as_object);
    Ok(versions
        .iter()
        .map(|(version, v)| cutoff::ServedFile {
            file: format!("{name}@{version}"),
            url: v
                .get("dist")
                .and_then(|d| d.get("tarball"))
                .and_then(Value::as_str)
                .map(str::to_string),
            time: times
                .and_then(|t| t.get(version))
                .and_then(cutoff::time_text),
        })
        .collect())
}

const SERVED: &str = "served content";

pub fn collect_served_in_manifest(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let p = &c.plan.packages;
    let mut names: Vec<NpmName> = p.present.iter().take(3).cloned().collect();
    names.extend(p.scoped.iter().cloned());
    for name in &names {
        let Some(u) = packument_url(c, name) else {
            continue;
        };
        ev.push(c.get(SERVED, &u, Some(FULL)));
        ev.push(c.get(SERVED, &u, Some(ABBREVIATED)));
        // The raw spelling of a scoped name is a served path of its own.
        if let (Some(_), Ok(registry)) = (name.scope(), c.plan.index()) {
            let raw = super::plan::at(&registry, &name.packument_path_raw());
            ev.push(c.get(SERVED, &raw, Some(FULL)));
        }
    }
    if let Some(t) = &f.control_tarball {
        ev.push(c.get(SERVED, &t.url, None));
    }
    // Registry keys, where a mirror replays them, are served content too.
    if let Ok(registry) = c.plan.index() {
        ev.push(c.get(SERVED, &super::plan::at(&registry, "/-/npm/v1/keys"), None));
    }
    ev
}

pub fn judge_served_in_manifest(j: &Judge, rec: &ProbeRecord) -> Verdict {
    let (manifest, doc, origin) = match manifest_to_compare(j, "C.packument", "registry") {
        Ok(m) => m,
        Err(v) => return v,
    };
    let mut served = 0;
    for ex in &rec.exchanges {
        let path = match served_as_listed(ex, &doc, &manifest) {
            Ok(Some(path)) => path,
            Ok(None) => continue,
            Err(v) => return v,
        };
        let path = path.as_str();
        served += 1;
        // Every tarball a served packument lists on this origin is in the snapshot.
        let Some(p) = success_body(ex).and_then(|b| Packument::parse(b).ok()) else {
            continue;
        };
        let page = origin.with_path(path);
        for v in &p.versions {
            let Some(u) = v.tarball.as_deref().and_then(|t| page.join(t).ok()) else {
                continue;
            };
            if u.same_origin(&origin) && !doc.served.iter().any(|e| e.path == u.path()) {
                return fail(format!(
                    "{path} lists the tarball of {} at {}, which SNAPSHOT.json does not serve",
                    v.version,
                    short(u.path())
                ));
            }
        }
    }
    if served == 0 {
        return inconclusive("nothing was served to compare with the manifest");
    }
    pass(format!(
        "{served} responses, and every tarball they list, match SNAPSHOT.json and MANIFEST"
    ))
}

const AGAIN: &str = "fetched again";

pub fn collect_stable(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let npm = f;
    for n in 1..=2 {
        if let Some(t) = &npm.control_tarball {
            c.get_following(&mut ev, &format!("{AGAIN} ({n}): tarball"), &t.url, None);
        }
        if let Some(u) = &npm.packument_url {
            c.get_following(&mut ev, &format!("{AGAIN} ({n}): packument"), u, Some(FULL));
        }
    }
    ev
}

pub fn judge_stable(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if let Some(v) = j.require("C.tarball") {
        return v;
    }
    if let Some(v) = changed_without_cause(
        j,
        &[
            ("P6.effect", super::p6::BEFORE, super::p6::AGAIN),
            ("P5.upstream-replaced-bytes", BEFORE, BEFORE_AGAIN),
            ("P5.upstream-dist-tag", BEFORE, BEFORE_AGAIN),
        ],
    ) {
        return v;
    }
    let npm = j.facts;
    let Some(want) = npm.control_tarball.as_ref().map(|t| t.sha256) else {
        return inconclusive("the tarball control recorded no bytes");
    };
    let mut pages = Vec::new();
    for n in 1..=2 {
        let Some(got) = whole_digest(rec, &format!("{AGAIN} ({n}): tarball")) else {
            return inconclusive(format!("fetch {n} of the tarball did not serve it whole"));
        };
        if got != want {
            return fail(format!(
                "the same tarball URL served other bytes on fetch {n} ({:.12}… instead of {:.12}…)",
                got.to_hex(),
                want.to_hex()
            ));
        }
        if let Some(p) = whole_digest(rec, &format!("{AGAIN} ({n}): packument")) {
            pages.push(p);
        }
    }
    if matches!(pages.as_slice(), [first, again] if first != again) {
        return fail("the packument changed between two fetches in a row");
    }
    pass(format!(
        "{} fetches of the same tarball and packument returned identical bytes",
        2 + pages.len()
    ))
}

pub const BEFORE: &str = "before the upstream change";
/// The same reads, repeated before the change (the label starts with
/// [`BEFORE`]): a resource that differs between them is unstable on its own
/// (P5.stable-bytes' finding), and a difference after the change cannot be
/// laid on it.
pub const BEFORE_AGAIN: &str = "before the upstream change, read again";
const AFTER: &str = "after the upstream change";

fn mutation_failed(e: egress_model::UpstreamError) -> egress_model::Observation {
    input(&format!("mutation failed: {e}"), Vec::new())
}

/// The present package as the controlled upstream's trait names it.
fn present_project(c: &Collector) -> Option<(NpmName, ProjectName)> {
    let n = c.plan.packages.present.first()?.clone();
    let p = ProjectName::new(n.as_str()).ok()?;
    Some((n, p))
}

fn fetch_packuments(c: &Collector, ev: &mut Evidence, name: &NpmName, when: &str) {
    if let Some(u) = packument_url(c, name) {
        ev.push(c.get(&format!("{when}: packument (full)"), &u, Some(FULL)));
        ev.push(c.get(
            &format!("{when}: packument (abbreviated)"),
            &u,
            Some(ABBREVIATED),
        ));
    }
}

pub fn collect_new_version(c: &Collector, _f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some((name, project))) = (c.upstream, present_project(c)) else {
        return ev;
    };
    c.window("P5.upstream-new-version", &mut ev, |ev| {
        fetch_packuments(c, ev, &name, BEFORE);
        match up.publish_new_version(&project) {
            Ok(obs) => ev.observations.push(obs),
            Err(e) => ev.observations.push(mutation_failed(e)),
        }
        fetch_packuments(c, ev, &name, AFTER);
    });
    ev
}

/// `ec-present-9.9.9.tgz` → `9.9.9`, for the package `name`.
fn version_of_tarball<'a>(name: &NpmName, filename: &'a str) -> Option<&'a str> {
    filename
        .strip_prefix(name.bare())?
        .strip_prefix('-')?
        .strip_suffix(".tgz")
}

fn packuments_after(rec: &ProbeRecord) -> Vec<Packument> {
    rec.exchanges
        .iter()
        .filter(|e| e.label.starts_with(AFTER))
        .filter_map(success_body)
        .filter_map(|b| Packument::parse(b).ok())
        .collect()
}

pub fn judge_new_version(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped("the upstream is not controlled, so it cannot publish during the run");
    }
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    let Some(name) = j.plan.packages.present.first() else {
        return inconclusive("no present package");
    };
    let Some((filename, _, _)) = mutation(rec) else {
        return inconclusive(not_mutated(
            rec,
            "the upstream did not publish a new version",
        ));
    };
    let Some(new) = version_of_tarball(name, filename) else {
        return inconclusive(format!("the published tarball {filename} names no version"));
    };
    let after = packuments_after(rec);
    for p in &after {
        if p.version(new).is_some() {
            return fail(format!(
                "version {new} published upstream during the run is listed in the mirror's packument"
            ));
        }
        if p.dist_tags.values().any(|v| v == new) {
            return fail(format!(
                "a dist-tag on the mirror points at {new}, published upstream during the run"
            ));
        }
    }
    if after.is_empty() {
        return inconclusive("the packument was not served after the upstream change");
    }
    pass(format!(
        "version {new} published upstream mid-run never shows ({} packuments checked)",
        after.len()
    ))
}

pub fn collect_replaced(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some((name, _))) = (c.upstream, present_project(c)) else {
        return ev;
    };
    let Some(t) = &f.control_tarball else {
        return ev;
    };
    let filename = format!("{}-{}.tgz", name.bare(), t.version);
    c.window("P5.upstream-replaced-bytes", &mut ev, |ev| {
        for when in [BEFORE, BEFORE_AGAIN] {
            fetch_packuments(c, ev, &name, when);
            ev.push(c.get(&format!("{when}: tarball at its URL"), &t.url, None));
        }
        match up.replace_file_bytes(&filename) {
            Ok(obs) => ev.observations.push(obs),
            Err(e) => ev.observations.push(mutation_failed(e)),
        }
        fetch_packuments(c, ev, &name, AFTER);
        c.get_following(ev, &format!("{AFTER}: tarball at its URL"), &t.url, None);
    });
    ev
}

pub fn judge_replaced(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped(
            "the upstream is not controlled, so it cannot replace bytes during the run",
        );
    }
    if let Some(v) = j.require("C.tarball") {
        return v;
    }
    let npm = j.facts;
    let Some(t) = npm.control_tarball.as_ref() else {
        return inconclusive("the tarball control recorded no bytes");
    };
    let Some((filename, _, after)) = mutation(rec) else {
        return inconclusive(not_mutated(rec, "the upstream did not replace a tarball"));
    };
    // Each resource was read twice before the change: one that differed
    // between those reads is unstable on its own, not changed by the
    // upstream, and P5.stable-bytes names it.
    let unstable = crate::common::writes::changed_between(rec, BEFORE, BEFORE_AGAIN);
    let reference = whole_digest(rec, &format!("{BEFORE}: tarball at its URL")).unwrap_or(t.sha256);
    if let Some(r) = final_of(rec, &format!("{AFTER}: tarball at its URL"))
        .and_then(|e| e.response.as_ref())
        .filter(|r| r.is_success())
    {
        if r.body_sha256 == after {
            return fail(format!(
                "the mirror served the bytes that replaced {filename} upstream mid-run"
            ));
        }
        if r.body_sha256 != reference && r.body_end == BodyEnd::Complete && unstable.is_empty() {
            return fail(format!(
                "the tarball {filename} changed after the upstream replaced it, though it read the same twice before"
            ));
        }
    }
    // Each document is compared with the same kind of document fetched
    // before the change: a full and an abbreviated packument may differ.
    let doc = |label: String| {
        find(rec, &label)
            .and_then(success_body)
            .and_then(|b| Packument::parse(b).ok())
    };
    let integrity = |p: &Packument| p.version(&t.version).and_then(|v| v.integrity.clone());
    for kind in ["full", "abbreviated"] {
        let before = doc(format!("{BEFORE}: packument ({kind})"));
        let after = doc(format!("{AFTER}: packument ({kind})"));
        if let (Some(b), Some(a)) = (before, after) {
            if integrity(&b) != integrity(&a) && unstable.is_empty() {
                return fail(format!(
                    "the integrity the mirror's {kind} packument lists for {filename} changed after the upstream replaced its bytes"
                ));
            }
        }
    }
    if let Some(first) = unstable.first() {
        return inconclusive(format!(
            "the {first}, read twice before any upstream change: see P5.stable-bytes"
        ));
    }
    let after_docs = packuments_after(rec);
    if after_docs.is_empty() && find(rec, &format!("{AFTER}: tarball at its URL")).is_none() {
        return inconclusive("nothing was served after the upstream change");
    }
    pass(format!(
        "{filename} replaced upstream mid-run; the mirror kept serving and listing the snapshot's bytes"
    ))
}

pub fn collect_dist_tag(c: &Collector, f: &Facts) -> Evidence {
    let mut ev = Evidence::default();
    let (Some(up), Some((name, _)), Ok(registry)) =
        (c.upstream, present_project(c), c.plan.index())
    else {
        return ev;
    };
    let npm = f;
    let Some((target, _)) = npm.control_version(&registry) else {
        return ev;
    };
    let target = target.version.clone();
    c.window("P5.upstream-dist-tag", &mut ev, |ev| {
        fetch_packuments(c, ev, &name, BEFORE);
        fetch_packuments(c, ev, &name, BEFORE_AGAIN);
        match up.move_tag(name.as_str(), "latest", &target) {
            Ok(obs) => ev.observations.push(obs),
            Err(e) => ev.observations.push(mutation_failed(e)),
        }
        fetch_packuments(c, ev, &name, AFTER);
    });
    ev
}

pub fn judge_dist_tag(j: &Judge, rec: &ProbeRecord) -> Verdict {
    if j.plan.upstream.is_none() {
        return skipped(
            "the upstream is not controlled, so it cannot move a dist-tag during the run",
        );
    }
    if let Some(v) = j.require("C.packument") {
        return v;
    }
    if mutation(rec).is_none() {
        return inconclusive(not_mutated(rec, "the upstream did not move a dist-tag"));
    }
    let latest = |label: &str| -> Vec<Option<String>> {
        rec.exchanges
            .iter()
            .filter(|e| e.label.starts_with(label))
            .filter_map(success_body)
            .filter_map(|b| Packument::parse(b).ok())
            .map(|p| p.dist_tags.get("latest").cloned())
            .collect()
    };
    let (before, after) = (latest(BEFORE), latest(AFTER));
    let Some(was) = before.first() else {
        return inconclusive("the packument was not served before the upstream change");
    };
    if let Some(other) = before.iter().find(|b| b != &was) {
        return inconclusive(format!(
            "dist-tag latest read {} and {} before any upstream change: see P5.stable-bytes",
            was.as_deref().unwrap_or("nothing"),
            other.as_deref().unwrap_or("nothing")
        ));
    }
    if after.is_empty() {
        return inconclusive("the packument was not served after the upstream change");
    }
    if let Some(now) = after.iter().find(|a| a != &was) {
        return fail(format!(
            "dist-tag latest moved on the mirror from {} to {} after the upstream moved it",
            was.as_deref().unwrap_or("nothing"),
            now.as_deref().unwrap_or("nothing")
        ));
    }
    pass(format!(
        "dist-tag latest stays {} on the mirror after the upstream moved it",
        was.as_deref().unwrap_or("unset")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::cutoff::testing::{doc, manifest_record, pages_record, verdict, ORIGIN};
    use egress_model::Status;

    const TARBALL: &str = "/ec-present/-/ec-present-1.0.0.tgz";
    const SCOPED_TARBALL: &str = "/@ec/scoped/-/scoped-1.0.0.tgz";
    const TIME: &str = "2025-01-01T00:00:05.000Z";
    const CUT: &str = "2025-06-01T00:00:00Z";

    /// A full packument of `name` with one version whose tarball is at
    /// `tarball` and whose `time` entry is `time` (and npm's `created` and
    /// `modified`, which are not file times).
    fn packument(name: &str, tarball: &str, time: Option<&str>) -> Vec<u8> {
        let mut times = serde_json::json!({
            "created": "2030-01-01T00:00:00.000Z",
            "modified": "2030-01-01T00:00:00.000Z",
            "9.9.9": "2030-01-01T00:00:00.000Z",
        });
        if let Some(t) = time {
            times["1.0.0"] = t.into();
        }
        serde_json::to_vec(&serde_json::json!({
            "_id": name,
            "name": name,
            "dist-tags": {"latest": "1.0.0"},
            "versions": {"1.0.0": {"name": name, "version": "1.0.0", "dist": {
                "tarball": format!("{ORIGIN}{tarball}"),
                "integrity": "sha512-AAAA",
            }}},
            "time": times,
        }))
        .unwrap()
    }

    fn snapshot(times: &[(&str, &str)], cutoff: Option<&str>) -> SnapshotDoc {
        doc(
            &[
                ("/ec-present", FULL),
                ("/ec-present", "application/vnd.npm.install-v1+json"),
                ("/@ec%2fscoped", FULL),
                ("/@ec/scoped", FULL),
                ("/-/npm/v1/keys", FULL),
                (TARBALL, "application/octet-stream"),
                (SCOPED_TARBALL, "application/octet-stream"),
            ],
            times,
            cutoff,
        )
    }

    fn judged(d: &SnapshotDoc, present: &[u8], scoped: &[u8]) -> Verdict {
        verdict(
            &CUTOFF,
            "/",
            true,
            manifest_record(Some(d)),
            pages_record(&[
                ("/ec-present", 200, present),
                ("/@ec%2fscoped", 200, scoped),
            ]),
        )
    }

    #[test]
    fn the_packuments_are_those_npm_asks_for() {
        assert_eq!(
            packuments(&snapshot(&[], None), "/"),
            ["/ec-present", "/@ec%2fscoped"]
        );
        let files = packument_times(&packument("ec-present", TARBALL, Some(TIME))).unwrap();
        assert_eq!(
            files,
            [cutoff::ServedFile {
                file: "ec-present@1.0.0".into(),
                url: Some(format!("{ORIGIN}{TARBALL}")),
                time: Some(TIME.into()),
            }]
        );
        assert!(packument_times(b"{}").is_err() && packument_times(b"[]").is_err());
    }

    #[test]
    fn version_times_equal_to_the_manifests_and_before_the_cutoff_pass() {
        let d = snapshot(&[(TARBALL, TIME), (SCOPED_TARBALL, TIME)], Some(CUT));
        let (s, r) = judged(
            &d,
            &packument("ec-present", TARBALL, Some(TIME)),
            &packument("@ec/scoped", SCOPED_TARBALL, Some(TIME)),
        );
        assert_eq!(s, Status::Pass, "{r}");
        assert!(
            r.contains("2 upload times served on 2 read of the 2 packuments SNAPSHOT.json lists are exactly as SNAPSHOT.json records, none after the signed cutoff 2025-06-01T00:00:00Z"),
            "{r}"
        );
    }

    #[test]
    fn a_version_time_after_the_cutoff_or_rewritten_fails() {
        let d = snapshot(&[(TARBALL, TIME), (SCOPED_TARBALL, TIME)], Some(CUT));
        let scoped = packument("@ec/scoped", SCOPED_TARBALL, Some(TIME));
        let (s, r) = judged(
            &d,
            &packument("ec-present", TARBALL, Some("2025-07-01T00:00:00.000Z")),
            &scoped,
        );
        assert_eq!(s, Status::Fail, "{r}");
        assert!(
            r.starts_with("/ec-present serves ec-present@1.0.0 with upload time 2025-07-01T00:00:00.000Z, after the signed cutoff 2025-06-01T00:00:00Z; SNAPSHOT.json records 2025-01-01T00:00:05.000Z"),
            "{r}"
        );
        let (s, r) = judged(
            &d,
            &packument("ec-present", TARBALL, Some("2024-12-31T00:00:00.000Z")),
            &scoped,
        );
        assert_eq!(s, Status::Fail, "{r}");
        assert_eq!(r, "/ec-present serves ec-present@1.0.0 with upload time 2024-12-31T00:00:00.000Z, SNAPSHOT.json records 2025-01-01T00:00:05.000Z for /ec-present/-/ec-present-1.0.0.tgz");
        let (s, r) = judged(&d, &packument("ec-present", TARBALL, None), &scoped);
        assert_eq!(s, Status::Fail, "{r}");
        assert!(r.contains("ec-present@1.0.0 without an upload time"), "{r}");
    }

    #[test]
    fn packuments_without_times_or_refused_are_never_a_pass() {
        // A snapshot that records times, a mirror that lists none anywhere
        // and a manifest that records none either: nothing compared.
        let d = snapshot(&[], Some(CUT));
        let (s, r) = judged(
            &d,
            &packument("ec-present", TARBALL, None),
            &packument("@ec/scoped", SCOPED_TARBALL, None),
        );
        assert_eq!(s, Status::Inconclusive, "{r}");
        let d = snapshot(&[(TARBALL, TIME)], Some(CUT));
        let (s, r) = verdict(
            &CUTOFF,
            "/",
            true,
            manifest_record(Some(&d)),
            pages_record(&[("/ec-present", 404, b""), ("/@ec%2fscoped", 404, b"")]),
        );
        assert_eq!(s, Status::Inconclusive, "{r}");
        assert!(r.contains("none of the 2 packuments"), "{r}");
    }
}
