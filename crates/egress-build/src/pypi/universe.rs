//! `--pypi-universe`: a dated universe of PyPI projects, selected from the
//! index's own pages and metadata, as an installer would choose.
//!
//! Each line of the universe names a project, with an optional PEP 440
//! specifier and extras. For each project, the build reads its PEP 691
//! page and keeps the files a target can install that were uploaded at or
//! before the cutoff (every file is judged by the rules in
//! [`file_verdict`]); of the versions left, it takes the newest N that
//! satisfy each requirement that reached the project. With `--closure`,
//! each selected version's `Requires-Dist` (read from its PEP 658
//! metadata, verified against the hash the page lists, or from its wheel
//! where the index lists none, as pip does) is followed under
//! the same rules, its markers and extras evaluated for the targets, until
//! nothing new is reached (without a target, for every common one).
//! Nothing a distribution supplies is run: the
//! metadata is read as text.

use super::page;
use super::target::Targets;
use crate::build::Net;
use crate::error::BuildError;
use crate::fetch::{self, get_whole, Expect, FetchError, FileJob};
use crate::progress::Progress;
use crate::select::Rules;
use egress_model::{DistFilename, ProjectName, Sha256Digest, Timestamp, Url};
use egress_select::pypi::{Pep440Version, Requirement, Specifiers};
use egress_simple::{FileEntry, ProjectPage};
use egress_snapshot::pool;
use egress_transcript::{Client, Limits};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One line of a universe file.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) name: ProjectName,
    pub(crate) specifiers: Specifiers,
    pub(crate) extras: Vec<String>,
    pub(crate) line: usize,
}

/// Reads a universe: `name`, `name[extra,...]`, each with an optional
/// specifier (`requests>=2.30,<3`); `#` starts a comment. URLs and markers
/// are refused: a universe names projects on the index.
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
        let req = Requirement::parse(content).map_err(|e| {
            bad(format!(
                "{content:?} is not a project name with an optional specifier ({e}); write e.g. requests or requests>=2.30"
            ))
        })?;
        let name = ProjectName::new(&req.name).map_err(|e| bad(e.to_string()))?;
        if req.url.is_some() || req.marker.is_some() {
            return Err(bad(format!(
                "{content:?}: a universe line takes a name, extras and a specifier, not a URL or a marker"
            )));
        }
        lines.push(Line {
            name,
            specifiers: req.specifiers,
            extras: req.extras,
            line: n,
        });
    }
    Ok(lines)
}

/// A file chosen for the snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Chosen {
    pub(crate) entry: FileEntry,
    /// Absolute.
    pub(crate) url: Url,
    pub(crate) sha256: Sha256Digest,
}

/// What the selection found.
pub(crate) type Selected = crate::select::Selected<Chosen>;

/// One requirement that reached a project.
#[derive(Debug, Clone)]
struct Want {
    specifiers: Specifiers,
    /// The specifiers as text, normalised: two wants with the same key
    /// select the same versions.
    key: String,
    /// `universe line 3` or `eu-alpha 1.2.0`.
    from: String,
}

#[derive(Default)]
struct Project {
    wants: Vec<Want>,
    extras: BTreeSet<String>,
    page: Option<(Url, ProjectPage)>,
    /// The registry does not have it.
    missing: bool,
    /// `(wants, extras)` when it was last selected for.
    done: Option<(usize, BTreeSet<String>)>,
    /// Each page file's verdict: its priority if kept, else the rule.
    verdicts: Vec<Result<usize, &'static str>>,
    /// Selected versions, each with the indices of its kept files.
    selected: BTreeMap<Pep440Version, Vec<usize>>,
}

/// Specifiers as sorted text (`<2,>=1.0`).
fn key_of(specifiers: &Specifiers) -> String {
    let mut parts: Vec<String> = specifiers
        .iter()
        .map(|s| format!("{}{}", s.operator().as_str(), s.version_text()))
        .collect();
    parts.sort();
    parts.join(",")
}

/// The verdict on one file of a page, by the first rule that drops it.
fn file_verdict(
    f: &FileEntry,
    project: &ProjectName,
    targets: Option<&Targets>,
    rules: &Rules,
) -> Result<usize, &'static str> {
    let parsed = DistFilename::parse(&f.filename).map_err(|_| "filename")?;
    if &parsed.name != project {
        return Err("filename");
    }
    if Pep440Version::parse(parsed.version.as_str()).is_err() {
        return Err("version");
    }
    if listed_sha256(f).is_none() {
        return Err("no-sha256");
    }
    if f.yanked.is_some() {
        return Err("yanked");
    }
    if let Some(cutoff) = &rules.exclude_newer {
        match f.upload_time.as_deref().map(Timestamp::parse) {
            Some(Ok(t)) if cutoff.excludes(t) => return Err("exclude-newer"),
            Some(Ok(_)) => {}
            Some(Err(_)) | None => return Err("no-upload-time"),
        }
    }
    let priority = match targets {
        Some(t) => t.file(&f.filename)?,
        None => 0,
    };
    if let (Some(t), Some(rp)) = (targets, f.requires_python.as_deref()) {
        if !t.requires_python(rp) {
            return Err("requires-python");
        }
    }
    if let (Some(max), Some(size)) = (rules.max_file_bytes, f.size) {
        if size > max {
            return Err("max-file-bytes");
        }
    }
    Ok(priority)
}

/// A page entry's sha256, if it lists one.
fn listed_sha256(entry: &FileEntry) -> Option<Sha256Digest> {
    entry
        .hashes
        .get("sha256")
        .and_then(|h| Sha256Digest::from_hex(h).ok())
}

fn version_of(f: &FileEntry) -> Option<Pep440Version> {
    DistFilename::parse(&f.filename)
        .ok()
        .and_then(|d| Pep440Version::parse(d.version.as_str()).ok())
}

/// Selects the universe: pages and metadata are read here, files are not.
pub(crate) fn select(
    net: &Net,
    index: &Url,
    lines: &[Line],
    targets: Option<&Targets>,
) -> Result<Selected, BuildError> {
    let rules = net.rules;
    // Markers are evaluated for the targets; without any, for every
    // common one (a dependency is followed when it holds for some).
    let common;
    let markers = match targets {
        Some(t) => t,
        None => {
            common = Targets::common()?;
            &common
        }
    };
    let client = Client::new(index.clone(), fetch::page_limits(), net.cacert)?;
    let quiet = Progress::new(0, 0);
    let mut projects: BTreeMap<ProjectName, Project> = BTreeMap::new();
    for l in lines {
        let p = projects.entry(l.name.clone()).or_default();
        p.wants.push(Want {
            key: key_of(&l.specifiers),
            specifiers: l.specifiers.clone(),
            from: format!("universe line {}", l.line),
        });
        p.extras.extend(l.extras.iter().cloned());
    }
    // Requires-Dist of each metadata file read, by its URL.
    let mut metadata: BTreeMap<String, Result<Vec<String>, String>> = BTreeMap::new();
    let mut notes = Vec::new();
    // Each (project, version, extras) whose dependencies were followed.
    let mut followed: BTreeSet<(ProjectName, Pep440Version, BTreeSet<String>)> = BTreeSet::new();

    loop {
        let todo: Vec<ProjectName> = projects
            .iter()
            .filter(|(_, p)| !p.missing && p.done != Some((p.wants.len(), p.extras.clone())))
            .map(|(n, _)| n.clone())
            .collect();
        if todo.is_empty() {
            break;
        }
        let unread: Vec<&ProjectName> = todo
            .iter()
            .filter(|n| projects.get(*n).is_some_and(|p| p.page.is_none()))
            .collect();
        if !unread.is_empty() {
            eprintln!("reading {} project pages from {index}", unread.len());
        }
        let pages = pool::map(&unread, net.jobs, |name| {
            let url = index.with_path(&format!("{}{name}/", index.path()));
            page::project_page(&client, &url, &quiet)
        });
        for (name, page) in unread.iter().zip(pages) {
            let Some(p) = projects.get_mut(*name) else {
                continue;
            };
            match page {
                Ok(page) => p.page = Some(page),
                Err(FetchError::Refused(why)) if why.contains(": 404:") => {
                    if rules.strict {
                        return Err(BuildError::Refused(format!(
                            "{why} (asked for by {}); --strict stops here",
                            p.wants.first().map_or("?", |w| w.from.as_str())
                        )));
                    }
                    p.missing = true;
                }
                Err(e) => return Err(e.into()),
            }
        }

        // Select each project's versions.
        let mut deps: Vec<(ProjectName, Pep440Version, BTreeSet<String>, String)> = Vec::new();
        for name in &todo {
            let Some(p) = projects.get_mut(name) else {
                continue;
            };
            let Some((page_url, page)) = &p.page else {
                continue;
            };
            if rules.exclude_newer.is_some()
                && !page.files.is_empty()
                && page.files.iter().all(|f| f.upload_time.is_none())
            {
                return Err(BuildError::NoUploadTimes(format!(
                    "{page_url} lists no upload-time for any file, and --exclude-newer is given: the cutoff cannot be kept; use an index that serves PEP 700 upload times (PEP 691 JSON), or build without --exclude-newer"
                )));
            }
            if p.verdicts.len() != page.files.len() {
                p.verdicts = page
                    .files
                    .iter()
                    .map(|f| file_verdict(f, name, targets, rules))
                    .collect();
            }
            let mut by_version: BTreeMap<Pep440Version, Vec<usize>> = BTreeMap::new();
            for (i, f) in page.files.iter().enumerate() {
                if p.verdicts.get(i).is_some_and(Result::is_ok) {
                    if let Some(v) = version_of(f) {
                        by_version.entry(v).or_default().push(i);
                    }
                }
            }
            // With targets, each version keeps what an installer there
            // would choose; the other files are superseded.
            if let Some(t) = targets {
                for files in by_version.values_mut() {
                    let names: Vec<&str> = files
                        .iter()
                        .filter_map(|&i| page.files.get(i).map(|f| f.filename.as_str()))
                        .collect();
                    let keep = t.best(&names);
                    for (&i, k) in files.iter().zip(&keep) {
                        if !k {
                            if let Some(v) = p.verdicts.get_mut(i) {
                                *v = Err("superseded");
                            }
                        }
                    }
                    let mut flags = keep.into_iter();
                    files.retain(|_| flags.next().unwrap_or(false));
                }
            }
            let n = rules
                .versions_per_project
                .map_or(usize::MAX, |n| n as usize);
            let mut selected = BTreeMap::new();
            for want in &p.wants {
                for (v, files) in by_version
                    .iter()
                    .rev()
                    .filter(|(v, _)| want.specifiers.contains(v, false))
                    .take(n)
                {
                    selected.insert(v.clone(), files.clone());
                }
            }
            p.selected = selected;
            p.done = Some((p.wants.len(), p.extras.clone()));
            if rules.closure {
                for v in p.selected.keys() {
                    deps.push((
                        name.clone(),
                        v.clone(),
                        p.extras.clone(),
                        page_url.to_string(),
                    ));
                }
            }
        }
        if !rules.closure {
            continue;
        }

        // The metadata of each newly selected version, read in parallel.
        let mut wanted_md: Vec<(String, Source)> = Vec::new();
        let mut plan: Vec<(ProjectName, Pep440Version, BTreeSet<String>, Option<String>)> =
            Vec::new();
        for (name, v, extras, _) in deps {
            if followed.contains(&(name.clone(), v.clone(), extras.clone())) {
                continue;
            }
            let md = projects.get(&name).and_then(|p| metadata_source(p, &v));
            match md {
                Some(source) => {
                    let key = source.key();
                    if !metadata.contains_key(&key) && !wanted_md.iter().any(|(k, _)| *k == key) {
                        wanted_md.push((key.clone(), source));
                    }
                    plan.push((name, v, extras, Some(key)));
                }
                None => plan.push((name, v, extras, None)),
            }
        }
        let read = pool::map(&wanted_md, net.jobs, |(_, source)| match source {
            Source::Pep658 { url, digest } => read_metadata(&client, url, digest, &quiet),
            Source::Wheel(job) => read_wheel(net, job, &quiet),
        });
        for ((key, _), r) in wanted_md.into_iter().zip(read) {
            metadata.insert(key, r);
        }
        for (name, v, extras, key) in plan {
            followed.insert((name.clone(), v.clone(), extras.clone()));
            let Some(key) = key else {
                notes.push(format!(
                    "{name} {v}: no wheel kept (only an sdist, whose dependencies only a build could tell), so its dependencies were not followed"
                ));
                continue;
            };
            let reqs = match metadata.get(&key) {
                Some(Ok(reqs)) => reqs.clone(),
                Some(Err(why)) => {
                    notes.push(format!(
                        "{name} {v}: {why}; its dependencies were not followed"
                    ));
                    continue;
                }
                None => continue,
            };
            let extras: Vec<String> = extras.into_iter().collect();
            for text in reqs {
                let req = match Requirement::parse(&text) {
                    Ok(r) => r,
                    Err(e) => {
                        notes.push(format!(
                            "{name} {v}: Requires-Dist {text:?} does not parse ({e}); not followed"
                        ));
                        continue;
                    }
                };
                let applies = markers.applies(req.marker.as_ref(), &extras);
                if !applies || req.url.is_some() {
                    continue;
                }
                let Ok(dep) = ProjectName::new(&req.name) else {
                    notes.push(format!(
                        "{name} {v}: Requires-Dist {text:?} names no valid project; not followed"
                    ));
                    continue;
                };
                let want = Want {
                    key: key_of(&req.specifiers),
                    specifiers: req.specifiers,
                    from: format!("{name} {v}"),
                };
                let d = projects.entry(dep).or_default();
                if !d.wants.iter().any(|w| w.key == want.key) {
                    d.wants.push(want);
                }
                d.extras.extend(req.extras);
            }
        }
    }

    Ok(tally(projects, notes, index))
}

/// Where a selected version's dependencies are read.
enum Source {
    /// Its best kept wheel's PEP 658 metadata file, with the sha256 the
    /// page lists for it.
    Pep658 { url: Url, digest: Sha256Digest },
    /// The wheel itself, where the index lists no metadata file (as pip
    /// does then): it is downloaded into the work directory, verified,
    /// and its METADATA read; the download stays there for the snapshot.
    Wheel(FileJob),
}

impl Source {
    fn key(&self) -> String {
        match self {
            Self::Pep658 { url, .. } => url.to_string(),
            Self::Wheel(job) => job.url.to_string(),
        }
    }
}

/// Where a selected version's dependencies are read: its best kept
/// wheel's PEP 658 metadata when the page lists it with a sha256, else
/// that wheel. `None` when it kept no wheel.
fn metadata_source(p: &Project, v: &Pep440Version) -> Option<Source> {
    let (page_url, page) = p.page.as_ref()?;
    let files = p.selected.get(v)?;
    let mut best: Option<(usize, &FileEntry)> = None;
    for &i in files {
        let (Some(f), Some(Ok(prio))) = (page.files.get(i), p.verdicts.get(i)) else {
            continue;
        };
        if f.filename.ends_with(".whl") && best.is_none_or(|(b, _)| *prio < b) {
            best = Some((*prio, f));
        }
    }
    let (_, f) = best?;
    let pep658 = f
        .core_metadata
        .as_ref()
        .and_then(|h| h.get("sha256"))
        .and_then(|h| Sha256Digest::from_hex(h).ok());
    match pep658 {
        Some(digest) => {
            let url = page_url.join(&format!("{}.metadata", f.url)).ok()?;
            Some(Source::Pep658 { url, digest })
        }
        None => Some(Source::Wheel(FileJob {
            filename: f.filename.clone(),
            url: page_url.join(&f.url).ok()?,
            expect: Expect::Sha256(listed_sha256(f)?),
            size: f.size,
        })),
    }
}

/// Downloads a wheel into the work directory (where the snapshot's own
/// download finds it complete) and returns its `Requires-Dist` values.
fn read_wheel(net: &Net, job: &FileJob, progress: &Progress) -> Result<Vec<String>, String> {
    let client =
        Client::new(job.url.clone(), Limits::download(), net.cacert).map_err(|e| e.to_string())?;
    let part = net.work.join(job.expect.part_name(&job.url));
    let bytes = fetch::download(&client, job, &part, progress).map_err(|e| match e {
        FetchError::Refused(m) | FetchError::Failed(m) => m,
        FetchError::Mismatch { expected, actual } => {
            format!("{}: sha256 is {actual}, the page lists {expected}", job.url)
        }
        other => format!("{other:?}"),
    })?;
    let metadata = egress_artifacts::read_wheel_metadata(&bytes)
        .map_err(|e| format!("{}: {e}", job.filename))?;
    Ok(requires_dist(&String::from_utf8_lossy(&metadata)))
}

/// Fetches a `.metadata` file, checks it against the page's hash, and
/// returns its `Requires-Dist` values.
fn read_metadata(
    client: &Client,
    url: &Url,
    digest: &Sha256Digest,
    progress: &Progress,
) -> Result<Vec<String>, String> {
    let answer = get_whole(client, url, "*/*", "metadata", progress).map_err(|e| match e {
        FetchError::Refused(m) | FetchError::Failed(m) => m,
        other => format!("{other:?}"),
    })?;
    let body = match (answer.status, answer.body) {
        (200, Some(b)) => b,
        (s, _) => return Err(format!("{url}: HTTP {s}")),
    };
    let actual = Sha256Digest::of(&body);
    if actual != *digest {
        return Err(format!(
            "{url}: metadata sha256 is {actual}, the page lists {digest}"
        ));
    }
    let text = String::from_utf8_lossy(&body);
    Ok(requires_dist(&text))
}

/// The `Requires-Dist` values of a core metadata file's headers (the
/// headers end at the first empty line; continuation lines are joined).
pub(crate) fn requires_dist(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut in_requires = false;
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if in_requires {
                if let Some(last) = out.last_mut() {
                    last.push(' ');
                    last.push_str(line.trim());
                }
            }
            continue;
        }
        in_requires = false;
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("requires-dist") {
                out.push(v.trim().to_string());
                in_requires = true;
            }
        }
    }
    out
}

/// The files selected, and what each rule dropped.
fn tally(projects: BTreeMap<ProjectName, Project>, notes: Vec<String>, index: &Url) -> Selected {
    let mut s = Selected {
        notes,
        ..Selected::default()
    };
    for (name, p) in projects {
        if p.missing {
            s.dropped
                .drop("missing", &format!("{name} (not on {index})"), None);
            continue;
        }
        let Some((page_url, page)) = p.page else {
            continue;
        };
        if !p.selected.is_empty() {
            s.projects += 1;
            s.versions += p.selected.len();
        }
        let chosen: BTreeSet<usize> = p.selected.values().flatten().copied().collect();
        for (i, f) in page.files.iter().enumerate() {
            let what = f.filename.as_str();
            match p.verdicts.get(i) {
                Some(Err(rule)) => s.dropped.drop(rule, what, f.size),
                Some(Ok(_)) if chosen.contains(&i) => {
                    let (Some(sha256), Ok(url)) = (listed_sha256(f), page_url.join(&f.url)) else {
                        s.dropped.drop("filename", what, f.size);
                        continue;
                    };
                    s.files.push(Chosen {
                        entry: f.clone(),
                        url,
                        sha256,
                    });
                }
                Some(Ok(_)) => {
                    let v = version_of(f);
                    let admitted = |pre: bool| {
                        v.as_ref()
                            .is_some_and(|v| p.wants.iter().any(|w| w.specifiers.contains(v, pre)))
                    };
                    let rule = if admitted(false) {
                        "versions-per-project"
                    } else if admitted(true) {
                        "prerelease"
                    } else {
                        "specifier"
                    };
                    s.dropped.drop(rule, what, f.size);
                }
                None => {}
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requires_dist_stops_at_the_body_and_joins_continuations() {
        let md = "Metadata-Version: 2.1\nName: x\nRequires-Dist: a>=1\nRequires-Dist: b;\n  extra == \"t\"\nSummary: s\n\nRequires-Dist: not-a-header\n";
        assert_eq!(requires_dist(md), vec!["a>=1", "b; extra == \"t\""]);
    }

    #[test]
    fn universe_lines_name_projects_with_optional_specifiers() {
        let p = Path::new("u.txt");
        let lines = read_lines(
            p,
            "# top\nrequests>=2.30 # pinned low\n\nrich\nhttpx[http2]\n",
        )
        .unwrap();
        let names: Vec<String> = lines.iter().map(|l| l.name.to_string()).collect();
        assert_eq!(names, ["requests", "rich", "httpx"]);
        assert_eq!(lines[0].line, 2);
        assert_eq!(lines[2].extras, ["http2"]);
        for bad in [
            "-not a name",
            "x @ https://e.com/x.whl",
            "x; python_version<'3'",
            "x>>1",
        ] {
            let e = read_lines(p, &format!("ok\n{bad}\n")).unwrap_err();
            assert!(e.to_string().starts_with("u.txt line 2: "), "{e}");
        }
    }
}
