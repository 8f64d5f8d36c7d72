//! `--npm-universe`: a dated universe of npm packages, selected from the
//! registry's own packuments as npm would choose.
//!
//! Each line of the universe names a package, with an optional semver
//! range (`react`, `react@^18`, `react ^18`, `@scope/name@~1.2`). For each
//! package the build reads its full packument from the upstream registry
//! (`--npm-upstream`) and judges every version by the first rule that
//! drops it ([`verdict`]): a version that is not semver, one published
//! after the cutoff (a candidate with no `time` while a cutoff is given
//! stops the build: [`BuildError::NoUploadTimes`]), one without a sha512
//! `dist.integrity` or an http(s) `dist.tarball`, one whose `os`, `cpu` or
//! `libc` exclude the target. Of the versions left, each range that
//! reached the package keeps its newest N (`--versions-per-project`), with
//! node-semver's pre-release rule (no pre-release unless the range names
//! one of that release). Deprecated versions are kept, and noted.
//!
//! With `--closure`, each selected version's `dependencies`,
//! `optionalDependencies` (their platform packages then dropped by the
//! platform rule) and the `peerDependencies` that `peerDependenciesMeta`
//! does not mark optional are followed, each with its range (an
//! `npm:name@range` alias as `name` with `range`), under the same rules,
//! until nothing new is reached; a package reached by several ranges keeps
//! the union of their selections.
//!
//! Then the tarballs are downloaded (in parallel, resumable, each verified
//! against the packument's sha512 before it counts); nothing in a tarball
//! is read or run.

use crate::build::Net;
use crate::error::BuildError;
use crate::fetch::{self, Expect, FetchError, FileJob};
use crate::progress::Progress;
use crate::select::{Dropped, Rules};
use egress_model::{Integrity, NpmName, Timestamp, Url};
use egress_select::npm::{Platform, Range, Semver};
use egress_snapshot::{pool, NpmMaintainer, NpmVersionMeta};
use egress_transcript::{Client, Limits};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The registry a universe is read from when `--npm-upstream` is not given.
pub const DEFAULT_UPSTREAM: &str = "https://registry.npmjs.org/";

/// What npm sends for a full packument (with `time`).
const FULL_PACKUMENT: &str = "application/json";

/// One line of a universe file.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) name: NpmName,
    pub(crate) range: Range,
    pub(crate) line: usize,
}

/// Reads a universe: `name`, `name@range` or `name range`, one a line;
/// `#` starts a comment. A line whose name is not an npm package name, or
/// whose range is not a semver range, is an error naming the file and line.
pub(crate) fn read_lines(path: &Path, text: &str) -> Result<Vec<Line>, BuildError> {
    let mut lines = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let bad = |why: String| BuildError::Universe {
            path: path.to_path_buf(),
            line: n,
            why,
        };
        let (name, range) = split_line(content);
        let name = NpmName::new(name).map_err(|e| {
            bad(format!(
                "{e}; write a package name with an optional range, e.g. react, react@^18 or react ^18"
            ))
        })?;
        let range = Range::parse(range).map_err(|e| bad(e.to_string()))?;
        lines.push(Line {
            name,
            range,
            line: n,
        });
    }
    Ok(lines)
}

/// `name@range` (the `@` of a scope does not count), `name range`, `name`.
fn split_line(content: &str) -> (&str, &str) {
    if let Some((name, range)) = content.split_once(char::is_whitespace) {
        return (name, range.trim());
    }
    let scoped = usize::from(content.starts_with('@'));
    match content
        .get(scoped..)
        .and_then(|rest| rest.find('@'))
        .map(|at| at + scoped)
    {
        Some(at) => (
            content.get(..at).unwrap_or(content),
            content.get(at + 1..).unwrap_or(""),
        ),
        None => (content, ""),
    }
}

/// A version chosen for the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Chosen {
    pub(crate) name: String,
    /// As the packument keys it (semver's normal form).
    pub(crate) version: String,
    pub(crate) tarball: Url,
    /// `sha512-<base64>`: the sha512 the packument lists.
    pub(crate) integrity: String,
    pub(crate) meta: NpmVersionMeta,
}

/// What the selection found.
pub(crate) type Selected = crate::select::Selected<Chosen>;

/// A range that reached a package.
#[derive(Debug, Clone)]
struct Want {
    range: Range,
    /// `universe line 3` or `eu-app@1.0.0`.
    from: String,
}

/// One version of a packument, judged.
struct Version {
    text: String,
    semver: Option<Semver>,
    /// `Ok` if no rule drops it, else the rule.
    verdict: Result<(), &'static str>,
}

#[derive(Default)]
struct Package {
    wants: Vec<Want>,
    /// The packument's URL and its `versions` and `time`.
    doc: Option<(Url, Value)>,
    /// Why the registry does not have it (`HTTP 404`).
    missing: Option<String>,
    versions: Vec<Version>,
    /// `wants.len()` when it was last selected for.
    done: Option<usize>,
    /// Indices into `versions`.
    selected: BTreeSet<usize>,
}

/// The first rule that drops a version of a packument, `Ok` if none does:
/// `version` (not semver's normal form), `exclude-newer`, `no-upload-time`
/// (with a cutoff, no `time` for it: a candidate so judged stops the
/// build, see [`select`]), `no-integrity` (no sha512), `no-tarball`,
/// `platform`.
fn verdict(
    text: &str,
    doc: &Value,
    semver: Option<&Semver>,
    rules: &Rules,
    platform: &Platform,
) -> Result<(), &'static str> {
    if semver.is_none_or(|v| v.to_string() != text) {
        return Err("version");
    }
    let Some(manifest) = doc.get("versions").and_then(|vs| vs.get(text)) else {
        return Err("version");
    };
    if let Some(cutoff) = &rules.exclude_newer {
        match published(doc, text).map(|t| Timestamp::parse(&t)) {
            Some(Ok(t)) if cutoff.excludes(t) => return Err("exclude-newer"),
            Some(Ok(_)) => {}
            _ => return Err("no-upload-time"),
        }
    }
    if integrity(manifest).is_none() {
        return Err("no-integrity");
    }
    if tarball(manifest).is_none() {
        return Err("no-tarball");
    }
    let list = |f: &str| string_list(manifest.get(f));
    platform
        .accepts(&list("os"), &list("cpu"), &list("libc"))
        .map_err(|_| "platform")
}

/// `time[version]`, when it is a string.
fn published(doc: &Value, version: &str) -> Option<String> {
    doc.get("time")?
        .get(version)?
        .as_str()
        .filter(|t| Timestamp::parse(t).is_ok())
        .map(str::to_string)
}

/// The version's sha512 as `sha512-<base64>`, if its `dist.integrity` has one.
fn integrity(manifest: &Value) -> Option<String> {
    let sri = manifest.get("dist")?.get("integrity")?.as_str()?;
    Integrity::from_sri(sri).ok().map(|i| i.to_string())
}

/// The version's `dist.tarball`, if it is an absolute http(s) URL.
pub(super) fn tarball(manifest: &Value) -> Option<Url> {
    Url::parse(manifest.get("dist")?.get("tarball")?.as_str()?).ok()
}

/// A platform field: a string, or an array of strings.
pub(crate) fn string_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// An object of strings (dependency ranges, `engines`); other members are
/// left out.
pub(crate) fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// What the packuments will say of a version, from its manifest in the
/// upstream's full packument.
fn meta(doc: &Value, version: &str, manifest: &Value) -> NpmVersionMeta {
    let get = |k: &str| manifest.get(k);
    let scripts = string_map(get("scripts"));
    let optional_peers = get("peerDependenciesMeta")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter(|(_, v)| v.get("optional").and_then(Value::as_bool) == Some(true))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    NpmVersionMeta {
        dependencies: string_map(get("dependencies")),
        optional_dependencies: string_map(get("optionalDependencies")),
        peer_dependencies: string_map(get("peerDependencies")),
        optional_peers,
        has_install_script: get("hasInstallScript").and_then(Value::as_bool) == Some(true)
            || ["preinstall", "install", "postinstall"]
                .iter()
                .any(|s| scripts.contains_key(*s)),
        published: published(doc, version),
        os: string_list(get("os")),
        cpu: string_list(get("cpu")),
        libc: string_list(get("libc")),
        engines: string_map(get("engines")),
        deprecated: get("deprecated")
            .and_then(Value::as_str)
            .filter(|d| !d.is_empty())
            .map(str::to_string),
        maintainers: maintainers(get("maintainers")),
    }
}

/// A version's `maintainers`, as the upstream lists them: objects with a
/// string `name` (and `email`), or the old `"name <email>"` strings; other
/// members are left out, and so is the rest of a list past 100 entries.
fn maintainers(value: Option<&Value>) -> Vec<NpmMaintainer> {
    let text = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
    };
    let one = |m: &Value| match m {
        Value::String(s) => {
            let (name, rest) = s.split_once('<').unwrap_or((s, ""));
            let email = rest.split_once('>').map(|(e, _)| e.trim().to_string());
            Some(NpmMaintainer {
                name: text(Some(&Value::String(name.to_string())))?,
                email: email.filter(|e| !e.is_empty()),
            })
        }
        _ => Some(NpmMaintainer {
            name: text(m.get("name"))?,
            email: text(m.get("email")),
        }),
    };
    value
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(one).take(100).collect())
        .unwrap_or_default()
}

/// The packument path of `name` below the registry's base URL.
pub(super) fn packument_url(registry: &Url, name: &str) -> Url {
    let path = match name.split_once('/') {
        Some((scope, bare)) => format!("{scope}%2f{bare}"),
        None => name.to_string(),
    };
    registry.with_path(&format!("{}{path}", registry.path()))
}

/// A dependency to follow: the package it names and its range; `Err` says
/// why it is not followed.
fn dependency(name: &str, spec: &str) -> Result<(NpmName, Range), String> {
    let (name, spec) = match spec.strip_prefix("npm:") {
        Some(alias) => split_line(alias),
        None => (name, spec),
    };
    let name = NpmName::new(name).map_err(|e| e.to_string())?;
    let range = Range::parse(spec).map_err(|_| {
        format!("{spec:?} is not a semver range (a dist-tag, URL, path or git spec)")
    })?;
    Ok((name, range))
}

/// The dependencies a closure follows from a version's manifest.
fn dependencies(manifest: &Value) -> Vec<(String, String)> {
    let map = |k: &str| string_map(manifest.get(k));
    let optional_peers: BTreeSet<String> = meta(&Value::Null, "", manifest).optional_peers;
    let mut out: BTreeSet<(String, String)> = BTreeSet::new();
    out.extend(map("dependencies"));
    out.extend(map("optionalDependencies"));
    out.extend(
        map("peerDependencies")
            .into_iter()
            .filter(|(name, _)| !optional_peers.contains(name)),
    );
    out.into_iter().collect()
}

/// Selects the universe: packuments are read here, tarballs are not.
pub(crate) fn select(
    net: &Net,
    registry: &Url,
    lines: &[Line],
    platform: &Platform,
) -> Result<Selected, BuildError> {
    let rules = net.rules;
    let client = Client::new(registry.clone(), fetch::page_limits(), net.cacert)?;
    let quiet = Progress::new(0, 0);
    let mut packages: BTreeMap<String, Package> = BTreeMap::new();
    for l in lines {
        packages
            .entry(l.name.to_string())
            .or_default()
            .wants
            .push(Want {
                range: l.range.clone(),
                from: format!("universe line {}", l.line),
            });
    }
    let mut notes = Vec::new();
    let mut followed: BTreeSet<(String, String)> = BTreeSet::new();
    loop {
        let todo: Vec<String> = packages
            .iter()
            .filter(|(_, p)| p.missing.is_none() && p.done != Some(p.wants.len()))
            .map(|(n, _)| n.clone())
            .collect();
        if todo.is_empty() {
            break;
        }
        let unread: Vec<&String> = todo
            .iter()
            .filter(|n| packages.get(*n).is_some_and(|p| p.doc.is_none()))
            .collect();
        if !unread.is_empty() {
            eprintln!("reading {} npm packuments from {registry}", unread.len());
        }
        let docs = pool::map(&unread, net.jobs, |name| {
            let url = packument_url(registry, name);
            let answer = fetch::document(&client, &url, FULL_PACKUMENT, &quiet);
            (url, answer)
        });
        for (name, (url, answer)) in unread.iter().zip(docs) {
            let Some(p) = packages.get_mut(*name) else {
                continue;
            };
            match answer? {
                fetch::Document::Body(bytes) => {
                    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| {
                        BuildError::Refused(format!("{url}: the packument is not JSON: {e}"))
                    })?;
                    p.versions = judge(&doc, rules, platform);
                    p.doc = Some((url, doc));
                }
                fetch::Document::NotProvided(status) => {
                    let from = p.wants.first().map_or("?", |w| w.from.as_str());
                    if rules.strict {
                        return Err(BuildError::Refused(format!(
                            "{url}: HTTP {status}: the registry has no package {name} (asked for by {from}); --strict stops here"
                        )));
                    }
                    p.missing = Some(format!("HTTP {status}"));
                }
            }
        }

        // Select each package's versions.
        let mut reached: Vec<(String, usize)> = Vec::new();
        for name in &todo {
            let Some(p) = packages.get_mut(name) else {
                continue;
            };
            let Some((url, _)) = &p.doc else {
                continue;
            };
            let n = rules
                .versions_per_project
                .map_or(usize::MAX, |n| n as usize);
            let mut selected = BTreeSet::new();
            for want in &p.wants {
                let mut candidates: Vec<(usize, &Semver)> = Vec::new();
                for (i, v) in p.versions.iter().enumerate() {
                    let Some(s) = &v.semver else { continue };
                    if !want.range.satisfies(s, false) {
                        continue;
                    }
                    match v.verdict {
                        Ok(()) => candidates.push((i, s)),
                        Err("no-upload-time") => {
                            return Err(BuildError::NoUploadTimes(format!(
                                "{url} lists no publish time for {name}@{} (in its \"time\"), and --exclude-newer is given: the cutoff cannot be kept; use a registry that serves full packuments with \"time\", or build without --exclude-newer",
                                v.text
                            )));
                        }
                        Err(_) => {}
                    }
                }
                candidates.sort_by(|a, b| b.1.cmp(a.1));
                selected.extend(candidates.into_iter().take(n).map(|(i, _)| i));
            }
            for &i in &selected {
                if !p.selected.contains(&i) && rules.closure {
                    reached.push((name.clone(), i));
                }
            }
            p.selected = selected;
            p.done = Some(p.wants.len());
        }
        if !rules.closure {
            continue;
        }

        // The dependencies of each newly selected version.
        for (name, i) in reached {
            let Some(p) = packages.get(&name) else {
                continue;
            };
            let (Some((_, doc)), Some(v)) = (&p.doc, p.versions.get(i)) else {
                continue;
            };
            if !followed.insert((name.clone(), v.text.clone())) {
                continue;
            }
            let Some(manifest) = doc.get("versions").and_then(|vs| vs.get(&v.text)) else {
                continue;
            };
            let from = format!("{name}@{}", v.text);
            for (dep, spec) in dependencies(manifest) {
                let (dep, range) = match dependency(&dep, &spec) {
                    Ok(d) => d,
                    Err(why) => {
                        notes.push(format!("{from}: dependency {dep} {why}; not followed"));
                        continue;
                    }
                };
                let d = packages.entry(dep.to_string()).or_default();
                if !d.wants.iter().any(|w| w.range == range) {
                    d.wants.push(Want {
                        range,
                        from: from.clone(),
                    });
                }
            }
        }
    }
    Ok(tally(packages, notes, registry))
}

/// Every version of a packument, judged (see [`verdict`]).
fn judge(doc: &Value, rules: &Rules, platform: &Platform) -> Vec<Version> {
    let Some(versions) = doc.get("versions").and_then(Value::as_object) else {
        return Vec::new();
    };
    versions
        .keys()
        .map(|text| {
            let semver = Semver::parse(text).ok();
            Version {
                verdict: verdict(text, doc, semver.as_ref(), rules, platform),
                text: text.clone(),
                semver,
            }
        })
        .collect()
}

/// The versions chosen, and what each rule dropped.
fn tally(packages: BTreeMap<String, Package>, mut notes: Vec<String>, registry: &Url) -> Selected {
    let mut s = Selected::default();
    for (name, p) in packages {
        if let Some(why) = &p.missing {
            let from = p.wants.first().map_or("?", |w| w.from.as_str());
            s.dropped.drop(
                "missing",
                &format!("{name} ({why} from {registry}, asked for by {from})"),
                None,
            );
            continue;
        }
        let Some((_, doc)) = &p.doc else {
            continue;
        };
        if !p.selected.is_empty() {
            s.projects += 1;
            s.versions += p.selected.len();
        }
        let empty = Map::new();
        let manifests = doc
            .get("versions")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for (i, v) in p.versions.iter().enumerate() {
            let what = format!("{name}@{}", v.text);
            if p.selected.contains(&i) {
                let Some(manifest) = manifests.get(&v.text) else {
                    continue;
                };
                let (Some(integrity), Some(tarball)) = (integrity(manifest), tarball(manifest))
                else {
                    continue;
                };
                let meta = meta(doc, &v.text, manifest);
                if let Some(message) = &meta.deprecated {
                    notes.push(format!("{what} is deprecated ({message}); kept"));
                }
                s.files.push(Chosen {
                    name: name.clone(),
                    version: v.text.clone(),
                    tarball,
                    integrity,
                    meta,
                });
                continue;
            }
            let rule = match (v.verdict, &v.semver) {
                (Err(rule), _) => rule,
                (Ok(()), Some(semver)) => {
                    let admitted =
                        |pre: bool| p.wants.iter().any(|w| w.range.satisfies(semver, pre));
                    if admitted(false) {
                        "versions-per-project"
                    } else if admitted(true) {
                        "prerelease"
                    } else {
                        "range"
                    }
                }
                (Ok(()), None) => "version",
            };
            s.dropped.drop(rule, &what, None);
        }
    }
    s.notes = notes;
    s
}

/// Downloads the chosen tarballs into the work directory, each verified
/// against its packument's sha512 before it counts; a verified file stays
/// there until the snapshot is written, so a rerun after an interruption
/// fetches only what is missing. A tarball whose bytes differ is left out
/// and reported (rule `hash-mismatch`; under `--strict` the build stops),
/// as is one the registry no longer serves (`missing`) and one larger than
/// `--max-file-bytes`.
pub(crate) fn download(
    net: &Net,
    chosen: Vec<Chosen>,
    dropped: &mut Dropped,
) -> Result<Vec<(Chosen, PathBuf)>, BuildError> {
    let jobs: Vec<FileJob> = chosen
        .iter()
        .map(|c| FileJob {
            filename: format!("{}@{}", c.name, c.version),
            url: c.tarball.clone(),
            expect: Expect::Sri512(c.integrity.clone()),
            size: None,
        })
        .collect();
    let clients =
        fetch::clients_by_origin(jobs.iter().map(|j| &j.url), Limits::download(), net.cacert)?;
    if !jobs.is_empty() {
        eprintln!("fetching {} npm tarballs of the universe", jobs.len());
    }
    let progress = Progress::new(jobs.len(), 0);
    let results = pool::map(&jobs, net.jobs, |job| {
        let part = net.work.join(job.expect.part_name(&job.url));
        // Verified by an earlier run that did not finish: kept as it is.
        if let Ok(bytes) = fs::read(&part) {
            if egress_artifacts::sri_sha512(&bytes) == expected(job) {
                progress.done(
                    &job.filename,
                    bytes.len() as u64,
                    " (kept from an earlier run)",
                );
                return Ok(bytes.len() as u64);
            }
        }
        let client = clients
            .get(&job.url.origin())
            .ok_or_else(|| FetchError::Failed(format!("{}: no client", job.url)))?;
        let r = fetch::download(client, job, &part, &progress);
        match &r {
            Ok(bytes) => progress.done(&job.filename, bytes.len() as u64, ""),
            Err(_) => {
                let _ = fs::remove_file(&part);
            }
        }
        r.map(|bytes| bytes.len() as u64)
    });
    progress.finish();

    let mut out = Vec::new();
    let strict = net.rules.strict;
    for ((c, job), r) in chosen.into_iter().zip(&jobs).zip(results) {
        let what = format!("{}@{} from {}", c.name, c.version, c.tarball);
        match r {
            Ok(size) => {
                if net.rules.max_file_bytes.is_some_and(|max| size > max) {
                    dropped.drop("max-file-bytes", &job.filename, Some(size));
                    continue;
                }
                let part = net.work.join(job.expect.part_name(&job.url));
                out.push((c, part));
            }
            Err(FetchError::IntegrityMismatch { expected, actual }) => {
                let what = format!("{what} (integrity {actual}, the packument lists {expected})");
                if strict {
                    return Err(BuildError::Refused(format!(
                        "{what}: the bytes do not match the registry's hash; --strict stops here"
                    )));
                }
                eprintln!("refused: {what}: the bytes do not match the registry's hash; left out");
                dropped.drop("hash-mismatch", &job.filename, None);
            }
            Err(FetchError::Refused(why)) if !strict => {
                eprintln!("note: {why}; {} left out", job.filename);
                dropped.drop("missing", &job.filename, None);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

fn expected(job: &FileJob) -> &str {
    match &job.expect {
        Expect::Sri512(sri) => sri,
        Expect::Sha256(_) | Expect::GitBlob(_) => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::testing::script;
    use crate::select::Cutoff;
    use egress_artifacts::{build_npm_tarball, NpmPackageSpec};
    use serde_json::json;

    #[test]
    fn universe_lines_name_packages_with_optional_ranges() {
        let p = Path::new("u.txt");
        let lines = read_lines(
            p,
            "# top\nreact@^18 # pinned\n\n@scope/pkg@~1.2\nlodash 4.x || >=5 <6\nleft-pad\n@s/x\n",
        )
        .unwrap();
        let shown: Vec<String> = lines
            .iter()
            .map(|l| format!("{} {}", l.name, l.range.as_str()))
            .collect();
        assert_eq!(
            shown,
            [
                "react ^18",
                "@scope/pkg ~1.2",
                "lodash 4.x || >=5 <6",
                "left-pad ",
                "@s/x "
            ]
        );
        assert_eq!(lines[0].line, 2);
        for bad in [
            "-bad",
            "react@latest",
            "@scope",
            "a/b",
            "react@^1.2.3.4",
            "réact",
        ] {
            let e = read_lines(p, &format!("ok\n{bad}\n")).unwrap_err();
            assert!(e.to_string().starts_with("u.txt line 2: "), "{bad}: {e}");
            assert_eq!(e.kind(), crate::Kind::Input, "{bad}");
        }
    }

    #[test]
    fn aliases_and_specs_that_are_not_ranges() {
        let (n, r) = dependency("alias", "npm:@s/real@^2").unwrap();
        assert_eq!((n.as_str(), r.as_str()), ("@s/real", "^2"));
        assert!(dependency("x", "latest").is_err());
        assert!(dependency("x", "git+https://e.com/x.git").is_err());
        assert!(dependency("x", "file:../x").is_err());
        let manifest = json!({
            "dependencies": { "a": "^1", "n": "1.0.0" },
            "optionalDependencies": { "n": "1.0.0" },
            "peerDependencies": { "p": "^2", "q": "*" },
            "peerDependenciesMeta": { "q": { "optional": true } },
        });
        let names: Vec<String> = dependencies(&manifest)
            .into_iter()
            .map(|(n, r)| format!("{n}@{r}"))
            .collect();
        assert_eq!(names, ["a@^1", "n@1.0.0", "p@^2"]);
        assert_eq!(
            packument_url(&Url::parse("http://r.example/npm/").unwrap(), "@s/x").to_string(),
            "http://r.example/npm/@s%2fx"
        );
    }

    #[test]
    fn maintainers_are_read_as_the_upstream_lists_them() {
        let list = json!([
            { "name": "alice", "email": "a@example.org" },
            "bob <b@example.org>",
            { "name": " carol " },
            { "email": "no-name@example.org" },
            "",
            7
        ]);
        let got = maintainers(Some(&list));
        let m = |name: &str, email: Option<&str>| NpmMaintainer {
            name: name.into(),
            email: email.map(str::to_string),
        };
        assert_eq!(
            got,
            [
                m("alice", Some("a@example.org")),
                m("bob", Some("b@example.org")),
                m("carol", None)
            ]
        );
        let many = Value::Array(
            (0..500)
                .map(|i| json!({ "name": format!("m{i}") }))
                .collect(),
        );
        assert_eq!(maintainers(Some(&many)).len(), 100);
        assert!(maintainers(None).is_empty());
        let doc = json!({ "time": {} });
        let manifest = json!({ "maintainers": [{ "name": "alice" }] });
        assert_eq!(
            meta(&doc, "1.0.0", &manifest).maintainers,
            [m("alice", None)]
        );
    }

    /// A packument of `versions` (version, published, extra manifest
    /// fields) with tarballs at `origin`.
    fn packument(
        name: &str,
        origin: &str,
        versions: &[(&str, &str, Value)],
    ) -> (Value, Vec<(String, Vec<u8>)>) {
        let mut vs = Map::new();
        let mut time = Map::new();
        let mut files = Vec::new();
        for (v, t, extra) in versions {
            let tgz = build_npm_tarball(&NpmPackageSpec::new(name, v, "d", ""));
            let mut m = json!({
                "name": name, "version": v,
                "dist": { "integrity": tgz.integrity, "tarball": format!("{origin}/{name}/-/{}", tgz.filename) },
            });
            if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
                m.extend(extra.clone());
            }
            vs.insert(v.to_string(), m);
            if !t.is_empty() {
                time.insert(v.to_string(), json!(t));
            }
            files.push((tgz.filename, tgz.bytes));
        }
        (json!({ "name": name, "versions": vs, "time": time }), files)
    }

    fn http(status: &str, body: &[u8]) -> Vec<u8> {
        let mut r = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        r
    }

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("egress-npm-universe-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_dated_platform_filtered_selection_from_a_scripted_registry() {
        // One packument: four versions either side of the cutoff, a
        // pre-release, a deprecated one, one for another platform.
        let (doc, _) = packument(
            "app",
            "http://127.0.0.1:9",
            &[
                ("1.0.0", "2024-01-01T00:00:00.000Z", json!({})),
                (
                    "1.1.0",
                    "2024-02-01T00:00:00.000Z",
                    json!({ "deprecated": "old" }),
                ),
                (
                    "1.2.0",
                    "2024-03-01T00:00:00.000Z",
                    json!({ "os": ["win32"] }),
                ),
                ("1.3.0-beta.1", "2024-04-01T00:00:00.000Z", json!({})),
                ("1.4.0", "2025-07-01T00:00:00.000Z", json!({})),
                ("2.0.0", "2024-05-01T00:00:00.000Z", json!({})),
            ],
        );
        let body = serde_json::to_vec(&doc).unwrap();
        let (url, seen) = script(vec![http("200 OK", &body)]);
        let registry = url.with_path("/");
        let rules = Rules {
            exclude_newer: Some(Cutoff::parse("2025-06-01T00:00:00Z", Timestamp::now()).unwrap()),
            versions_per_project: Some(2),
            ..Rules::default()
        };
        let work = tmp("select");
        let net = Net {
            jobs: 2,
            cacert: None,
            work: &work,
            rules: &rules,
            dry_run: true,
        };
        let platform = Platform {
            os: vec!["linux".into()],
            ..Platform::default()
        };
        let lines = read_lines(Path::new("u"), "app@^1\n").unwrap();
        let s = select(&net, &registry, &lines, &platform).unwrap();
        let got: Vec<&str> = s.files.iter().map(|c| c.version.as_str()).collect();
        // Newest two of ^1 at the cutoff for linux: not 1.4.0 (after), not
        // 1.2.0 (win32), not the beta, not 2.0.0.
        assert_eq!(got, ["1.0.0", "1.1.0"]);
        assert_eq!((s.projects, s.versions), (1, 2));
        assert_eq!(
            s.files[1].meta.published.as_deref(),
            Some("2024-02-01T00:00:00.000Z")
        );
        assert_eq!(s.files[1].meta.deprecated.as_deref(), Some("old"));
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("app@1.1.0 is deprecated")),
            "{:?}",
            s.notes
        );
        for (rule, n) in [
            ("exclude-newer", 1),
            ("platform", 1),
            ("prerelease", 1),
            ("range", 1),
        ] {
            assert_eq!(
                s.dropped.get(rule).map(|t| t.files),
                Some(n),
                "{rule}: {:?}",
                s.dropped
            );
        }
        assert!(seen.lock().unwrap()[0].starts_with("GET /app HTTP/1.1\r\n"));
        let _ = fs::remove_dir_all(&work);
    }

    #[test]
    fn a_candidate_without_a_time_stops_a_build_with_a_cutoff() {
        let (doc, _) = packument("x", "http://127.0.0.1:9", &[("1.0.0", "", json!({}))]);
        let body = serde_json::to_vec(&doc).unwrap();
        let (url, _) = script(vec![http("200 OK", &body)]);
        let rules = Rules {
            exclude_newer: Some(Cutoff::parse("2025-06-01T00:00:00Z", Timestamp::now()).unwrap()),
            ..Rules::default()
        };
        let work = tmp("notime");
        let net = Net {
            jobs: 1,
            cacert: None,
            work: &work,
            rules: &rules,
            dry_run: true,
        };
        let lines = read_lines(Path::new("u"), "x\n").unwrap();
        let e = select(&net, &url.with_path("/"), &lines, &Platform::default())
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::Kind::NoUploadTimes, "{e}");
        assert!(e.to_string().contains("x@1.0.0"), "{e}");
        let _ = fs::remove_dir_all(&work);
    }

    #[test]
    fn the_closure_follows_dependencies_and_required_peers_and_a_404_is_missing() {
        // app -> lib (dependency), peer (required peer), opt-peer
        // (optional peer: never asked for); lib is missing upstream.
        let (app, _) = packument(
            "app",
            "http://127.0.0.1:9",
            &[(
                "1.0.0",
                "2024-01-01T00:00:00.000Z",
                json!({
                    "dependencies": { "lib": "^1" },
                    "peerDependencies": { "peer": "^2", "opt-peer": "*" },
                    "peerDependenciesMeta": { "opt-peer": { "optional": true } },
                }),
            )],
        );
        let (peer, _) = packument(
            "peer",
            "http://127.0.0.1:9",
            &[
                ("2.0.0", "2024-01-01T00:00:00.000Z", json!({})),
                ("3.0.0", "2024-01-01T00:00:00.000Z", json!({})),
            ],
        );
        let not_found = http("404 Not Found", b"{}");
        let (url, seen) = script(vec![
            http("200 OK", &serde_json::to_vec(&app).unwrap()),
            // The second round, in name order: lib, then peer.
            not_found,
            http("200 OK", &serde_json::to_vec(&peer).unwrap()),
        ]);
        let rules = Rules {
            closure: true,
            ..Rules::default()
        };
        let work = tmp("closure");
        let net = Net {
            jobs: 1,
            cacert: None,
            work: &work,
            rules: &rules,
            dry_run: true,
        };
        let lines = read_lines(Path::new("u"), "app\n").unwrap();
        let s = select(&net, &url.with_path("/"), &lines, &Platform::default()).unwrap();
        let got: Vec<String> = s
            .files
            .iter()
            .map(|c| format!("{}@{}", c.name, c.version))
            .collect();
        assert_eq!(got, ["app@1.0.0", "peer@2.0.0"]);
        assert_eq!(s.dropped.get("missing").map(|t| t.files), Some(1));
        assert_eq!(s.dropped.get("range").map(|t| t.files), Some(1));
        let asked: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.lines().next().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            asked,
            [
                "GET /app HTTP/1.1",
                "GET /lib HTTP/1.1",
                "GET /peer HTTP/1.1"
            ]
        );

        // Under --strict a package the registry lacks stops the build.
        let (url, _) = script(vec![http("404 Not Found", b"{}")]);
        let strict = Rules {
            strict: true,
            ..Rules::default()
        };
        let net = Net {
            jobs: 1,
            cacert: None,
            work: &work,
            rules: &strict,
            dry_run: true,
        };
        let e = select(&net, &url.with_path("/"), &lines, &Platform::default())
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::Kind::Refused, "{e}");
        assert!(
            e.to_string()
                .contains("no package app (asked for by universe line 1)"),
            "{e}"
        );
        let _ = fs::remove_dir_all(&work);
    }

    #[test]
    fn downloads_are_verified_kept_for_a_rerun_and_a_mismatch_is_left_out() {
        let (doc, files) = packument(
            "app",
            "http://127.0.0.1:9",
            &[
                ("1.0.0", "2024-01-01T00:00:00.000Z", json!({})),
                ("2.0.0", "2024-01-01T00:00:00.000Z", json!({})),
            ],
        );
        let good = files[0].1.clone();
        // 1.0.0 is served right, 2.0.0 with other bytes.
        let (url, seen) = script(vec![http("200 OK", &good), http("200 OK", b"other bytes")]);
        let at = |v: &str| {
            let manifest = &doc["versions"][v];
            Chosen {
                name: "app".into(),
                version: v.into(),
                tarball: url.with_path(&format!("/app/-/app-{v}.tgz")),
                integrity: integrity(manifest).unwrap(),
                meta: meta(&doc, v, manifest),
            }
        };
        let rules = Rules::default();
        let work = tmp("download");
        let net = Net {
            jobs: 1,
            cacert: None,
            work: &work,
            rules: &rules,
            dry_run: false,
        };
        let mut dropped = Dropped::default();
        let got = download(&net, vec![at("1.0.0"), at("2.0.0")], &mut dropped).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(fs::read(&got[0].1).unwrap(), good);
        assert_eq!(dropped.get("hash-mismatch").map(|t| t.files), Some(1));
        assert_eq!(seen.lock().unwrap().len(), 2);
        // A rerun finds the verified file and asks for nothing.
        let mut again = Dropped::default();
        let got = download(&net, vec![at("1.0.0")], &mut again).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(seen.lock().unwrap().len(), 2);
        // Over --max-file-bytes: left out.
        let small = Rules {
            max_file_bytes: Some(10),
            ..Rules::default()
        };
        let net = Net {
            rules: &small,
            ..net
        };
        let mut capped = Dropped::default();
        assert!(download(&net, vec![at("1.0.0")], &mut capped)
            .unwrap()
            .is_empty());
        assert_eq!(capped.get("max-file-bytes").map(|t| t.files), Some(1));
        // Under --strict a mismatch stops the build.
        let (url, _) = script(vec![http("200 OK", b"other bytes")]);
        let strict = Rules {
            strict: true,
            ..Rules::default()
        };
        let net = Net {
            rules: &strict,
            ..net
        };
        let mut c = at("2.0.0");
        c.tarball = url.with_path("/app/-/app-2.0.0.tgz");
        let e = download(&net, vec![c], &mut Dropped::default())
            .err()
            .unwrap();
        assert_eq!(e.kind(), crate::Kind::Refused, "{e}");
        let _ = fs::remove_dir_all(&work);
    }
}
