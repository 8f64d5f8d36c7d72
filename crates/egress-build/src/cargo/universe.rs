//! A cargo universe: crate names, each with an optional requirement
//! (`serde`, `serde 1.0`, `tokio@^1.40`), and what to keep of each: the
//! newest `--versions-per-project` versions that are not yanked and were
//! published at or before `--exclude-newer` (by the index's `pubtime`),
//! and with `--closure` their dependencies under the same rules.
//!
//! The closure follows what cargo would build for every platform: normal
//! and build dependencies (not dev), the optional ones that the enabled
//! features turn on, and for each the newest version its requirement
//! admits. Features are resolved as cargo reads them: `default` unless a
//! dependent turns it off, `dep:x`, `x/feature` (which enables an optional
//! `x`), `x?/feature` (which does not), and an optional dependency's
//! implicit feature of the same name.

use super::IndexFiles;
use crate::error::BuildError;
use crate::select::{Dropped, Rules};
use egress_model::{CrateName, Timestamp};
use egress_select::cargo::VersionReq;
use egress_select::npm::Semver;
use egress_snapshot::cargo::IndexLine;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;

/// One line of a universe file.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) name: CrateName,
    pub(crate) req: VersionReq,
    pub(crate) line: usize,
}

/// Reads a universe: `name`, `name REQ` or `name@REQ`, one a line; `#`
/// starts a comment. A bad name or requirement is an error naming the
/// file and line.
pub(crate) fn read_lines(path: &Path, text: &str) -> Result<Vec<Line>, BuildError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let bad = |why: String| BuildError::Universe {
            path: path.to_path_buf(),
            line: i + 1,
            why,
        };
        let (name, req) = match content.split_once(|c: char| c == '@' || c.is_whitespace()) {
            Some((n, r)) => (n, r.trim()),
            None => (content, ""),
        };
        let name = CrateName::new(name).map_err(|e| {
            bad(format!("{e}; write a crate name with an optional requirement, e.g. serde, serde 1.0 or tokio@^1.40"))
        })?;
        let req = if req.is_empty() {
            VersionReq::any()
        } else {
            VersionReq::parse(req).map_err(|e| bad(e.to_string()))?
        };
        out.push(Line {
            name,
            req,
            line: i + 1,
        });
    }
    Ok(out)
}

/// The versions of `lines` a rule admits, newest first, with the ones
/// dropped tallied.
fn admissible<'a>(
    name: &CrateName,
    lines: &'a [IndexLine],
    req: &VersionReq,
    rules: &Rules,
    dropped: &mut Dropped,
) -> Vec<(&'a IndexLine, Semver)> {
    let mut out = Vec::new();
    for l in lines {
        let Ok(v) = Semver::parse(&l.vers) else {
            continue;
        };
        if !req.matches(&v) {
            continue;
        }
        let what = format!("{name} {}", l.vers);
        if l.yanked {
            dropped.drop("yanked", &what, None);
            continue;
        }
        if let Some(cutoff) = &rules.exclude_newer {
            match l.pubtime.as_deref().map(Timestamp::parse) {
                Some(Ok(t)) if !cutoff.excludes(t) => {}
                Some(Ok(_)) => {
                    dropped.drop("cutoff", &what, None);
                    continue;
                }
                _ => {
                    dropped.drop("no-time", &what, None);
                    continue;
                }
            }
        }
        out.push((l, v));
    }
    out.sort_by(|a, b| b.1.cmp(&a.1));
    out
}

/// What a chosen version is built with.
#[derive(Default)]
struct Wanted {
    features: BTreeSet<String>,
    default: bool,
}

/// A dependency of an index line, as the closure reads it.
struct Dep {
    /// The name features use (`x` in `x/feature`).
    key: String,
    /// The crate it names.
    crate_name: String,
    req: String,
    optional: bool,
    default_features: bool,
    features: Vec<String>,
}

fn deps_of(line: &Value) -> Vec<Dep> {
    let mut out = Vec::new();
    for d in line["deps"].as_array().into_iter().flatten() {
        let kind = d["kind"].as_str().unwrap_or("normal");
        // Dev dependencies are not built for dependents; another registry's
        // crates are not this index's.
        if kind == "dev" || d["registry"].is_string() {
            continue;
        }
        let Some(key) = d["name"].as_str() else {
            continue;
        };
        out.push(Dep {
            key: key.to_string(),
            crate_name: d["package"].as_str().unwrap_or(key).to_string(),
            req: d["req"].as_str().unwrap_or("*").to_string(),
            optional: d["optional"].as_bool().unwrap_or(false),
            default_features: d["default_features"].as_bool().unwrap_or(true),
            features: d["features"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect(),
        });
    }
    out
}

/// The features a line has (`features` and `features2`).
fn feature_table(line: &Value) -> BTreeMap<String, Vec<String>> {
    let mut table = BTreeMap::new();
    for key in ["features", "features2"] {
        for (name, list) in line[key].as_object().into_iter().flatten() {
            let entries = list
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e.as_str().map(str::to_string));
            table
                .entry(name.clone())
                .or_insert_with(Vec::new)
                .extend(entries);
        }
    }
    table
}

/// The dependencies `wanted` turns on, each with the features asked of it.
fn enabled(line: &Value, wanted: &Wanted) -> Vec<(Dep, Wanted)> {
    let table = feature_table(line);
    let deps = deps_of(line);
    let mut on: BTreeSet<String> = wanted.features.clone();
    if wanted.default && table.contains_key("default") {
        on.insert("default".into());
    }
    let mut dep_on: BTreeSet<String> = BTreeSet::new();
    let mut dep_features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut queue: VecDeque<String> = on.iter().cloned().collect();
    while let Some(f) = queue.pop_front() {
        if deps.iter().any(|d| d.optional && d.key == f) {
            dep_on.insert(f.clone());
        }
        for e in table.get(&f).into_iter().flatten() {
            if let Some(d) = e.strip_prefix("dep:") {
                dep_on.insert(d.to_string());
            } else if let Some((d, feat)) = e.split_once('/') {
                let (d, weak) = match d.strip_suffix('?') {
                    Some(d) => (d, true),
                    None => (d, false),
                };
                if !weak {
                    dep_on.insert(d.to_string());
                }
                dep_features
                    .entry(d.to_string())
                    .or_default()
                    .insert(feat.to_string());
            } else if on.insert(e.clone()) {
                queue.push_back(e.clone());
            }
        }
    }
    deps.into_iter()
        .filter(|d| !d.optional || dep_on.contains(&d.key))
        .map(|d| {
            let mut features: BTreeSet<String> = d.features.iter().cloned().collect();
            features.extend(dep_features.get(&d.key).into_iter().flatten().cloned());
            let w = Wanted {
                features,
                default: d.default_features,
            };
            (d, w)
        })
        .collect()
}

/// Selects the universe's versions (and with `--closure` their
/// dependencies), reading index files through `files`; returns each
/// chosen version's line.
pub(crate) fn select(
    lines: &[Line],
    files: &mut IndexFiles<'_>,
    rules: &Rules,
    dropped: &mut Dropped,
) -> Result<Vec<(CrateName, IndexLine)>, BuildError> {
    let names: Vec<CrateName> = lines.iter().map(|l| l.name.clone()).collect();
    files.prefetch(&names)?;
    // (lowercased name, version) -> the line and what it is built with.
    let mut chosen: BTreeMap<(String, String), (CrateName, IndexLine, Wanted)> = BTreeMap::new();
    let mut work: VecDeque<(String, String)> = VecDeque::new();
    for l in lines {
        let Some(all) = files.get(&l.name)? else {
            if rules.strict {
                return Err(BuildError::Refused(format!(
                    "--cargo-universe line {}: the index has no crate {} (--strict)",
                    l.line, l.name
                )));
            }
            eprintln!(
                "note: --cargo-universe line {}: the index has no crate {}; left out",
                l.line, l.name
            );
            dropped.drop("missing", l.name.as_str(), None);
            continue;
        };
        let mut keep = admissible(&l.name, &all, &l.req, rules, dropped);
        if let Some(n) = rules.versions_per_project {
            for (old, _) in keep.split_off((n as usize).min(keep.len())) {
                dropped.drop(
                    "versions-per-project",
                    &format!("{} {}", l.name, old.vers),
                    None,
                );
            }
        }
        for (line, _) in keep {
            let key = (l.name.as_str().to_ascii_lowercase(), line.vers.clone());
            chosen.entry(key.clone()).or_insert_with(|| {
                work.push_back(key.clone());
                (
                    l.name.clone(),
                    line.clone(),
                    Wanted {
                        features: BTreeSet::new(),
                        default: true,
                    },
                )
            });
        }
    }
    if !rules.closure {
        work.clear();
    }
    while let Some(key) = work.pop_front() {
        let Some((_, line, wanted)) = chosen.get(&key) else {
            continue;
        };
        let doc: Value = serde_json::from_slice(&line.bytes).unwrap_or(Value::Null);
        let deps = enabled(&doc, wanted);
        let dep_names: Vec<CrateName> = deps
            .iter()
            .filter_map(|(d, _)| CrateName::new(&d.crate_name).ok())
            .collect();
        files.prefetch(&dep_names)?;
        for (dep, want) in deps {
            let Ok(name) = CrateName::new(&dep.crate_name) else {
                continue;
            };
            let Ok(req) = VersionReq::parse(&dep.req) else {
                eprintln!("note: {} {}: dependency {} has requirement {:?}, which is not cargo's; left out", key.0, key.1, dep.crate_name, dep.req);
                continue;
            };
            let Some(all) = files.get(&name)? else {
                dropped.drop("missing", name.as_str(), None);
                continue;
            };
            let Some((line, _)) = admissible(&name, &all, &req, rules, dropped)
                .into_iter()
                .next()
            else {
                dropped.drop(
                    "unresolved",
                    &format!("{name} {req} (for {} {})", key.0, key.1),
                    None,
                );
                continue;
            };
            let dkey = (name.as_str().to_ascii_lowercase(), line.vers.clone());
            match chosen.get_mut(&dkey) {
                Some((_, _, have)) => {
                    let more =
                        !want.features.is_subset(&have.features) || (want.default && !have.default);
                    if more {
                        have.features.extend(want.features);
                        have.default |= want.default;
                        work.push_back(dkey);
                    }
                }
                None => {
                    chosen.insert(dkey.clone(), (name, line.clone(), want));
                    work.push_back(dkey);
                }
            }
        }
    }
    Ok(chosen.into_values().map(|(n, l, _)| (n, l)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn universe_lines() {
        let text = "serde\nserde_json 1.0 # a comment\ntokio@^1.40\n\n# nothing\n";
        let lines = read_lines(Path::new("u.txt"), text).unwrap();
        let got: Vec<(String, String)> = lines
            .iter()
            .map(|l| (l.name.to_string(), l.req.to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("serde".into(), "*".into()),
                ("serde_json".into(), "1.0".into()),
                ("tokio".into(), "^1.40".into())
            ]
        );
        for bad in ["../x", "serde ||1", "serde 1 || 2"] {
            let e = read_lines(Path::new("u.txt"), bad).unwrap_err().to_string();
            assert!(e.starts_with("u.txt line 1: "), "{e}");
        }
    }

    #[test]
    fn features_turn_on_optional_dependencies_as_cargo_does() {
        let line: Value = serde_json::json!({
            "name": "a", "vers": "1.0.0", "cksum": "0",
            "deps": [
                {"name": "always", "req": "1", "optional": false, "default_features": true, "features": [], "kind": "normal"},
                {"name": "tests", "req": "1", "optional": false, "default_features": true, "features": [], "kind": "dev"},
                {"name": "viadefault", "req": "1", "optional": true, "default_features": true, "features": [], "kind": "normal"},
                {"name": "weak", "req": "1", "optional": true, "default_features": true, "features": [], "kind": "normal"},
                {"name": "renamed", "package": "real-name", "req": "2", "optional": true, "default_features": false, "features": ["x"], "kind": "build"},
                {"name": "off", "req": "1", "optional": true, "default_features": true, "features": [], "kind": "normal"}
            ],
            "features": {"default": ["std"], "std": ["dep:viadefault", "weak?/std", "renamed/extra"]}
        });
        let got = |default| {
            enabled(
                &line,
                &Wanted {
                    features: BTreeSet::new(),
                    default,
                },
            )
            .into_iter()
            .map(|(d, w)| {
                (
                    d.crate_name,
                    w.default,
                    w.features.into_iter().collect::<Vec<_>>(),
                )
            })
            .collect::<Vec<_>>()
        };
        assert_eq!(
            got(true),
            [
                ("always".to_string(), true, vec![]),
                ("viadefault".to_string(), true, vec![]),
                (
                    "real-name".to_string(),
                    false,
                    vec!["extra".to_string(), "x".to_string()]
                ),
            ]
        );
        assert_eq!(got(false), [("always".to_string(), true, vec![])]);
    }
}
