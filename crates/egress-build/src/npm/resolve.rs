//! A lock's registry packages written without a `resolved` URL (npm's
//! `omit-lockfile-registry-resolved=true`) resolved as npm resolves them:
//! the version's `dist.tarball` in the packument at `{upstream}/{name}`
//! (a scoped name as `@scope%2fname`), or, when the packument lists the
//! version without one, the registry's usual `{upstream}/{name}/-/{bare}-
//! {version}.tgz`. Nothing here is trusted: the bytes must still match the
//! lock's `integrity` (`fetch_npm`).

use super::universe::{packument_url, tarball};
use super::PACKUMENT_ACCEPT;
use crate::error::BuildError;
use crate::fetch;
use crate::progress::Progress;
use egress_lock::NpmLock;
use egress_model::{NpmName, Url};
use egress_snapshot::pool;
use egress_transcript::Client;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// Fills in the `resolved` URL of every pin of `lock` that has none, from
/// `upstream`'s packuments (at most `jobs` at once). A package or version
/// the upstream does not list refuses the build; an unreachable upstream
/// fails it. Returns how many pins were resolved.
pub(crate) fn resolve_against(
    lock: &mut NpmLock,
    upstream: &Url,
    jobs: usize,
    cacert: Option<&Path>,
) -> Result<usize, BuildError> {
    let names: BTreeSet<String> = lock
        .pins
        .iter()
        .filter(|p| p.resolved.is_none())
        .map(|p| p.name.clone())
        .collect();
    if names.is_empty() {
        return Ok(0);
    }
    let names: Vec<String> = names.into_iter().collect();
    for name in &names {
        NpmName::new(name).map_err(|e| {
            BuildError::Conflict(format!(
                "{}: package {name:?} has no resolved URL and is not a registry name ({e}); regenerate the lock",
                lock.file
            ))
        })?;
    }
    let client = Client::new(upstream.clone(), fetch::page_limits(), cacert)?;
    eprintln!(
        "resolving {} npm packages of {} against {upstream} (the lock names no tarball URL)",
        names.len(),
        lock.file
    );
    let quiet = Progress::new(0, 0);
    let docs = pool::map(&names, jobs, |name| {
        let url = packument_url(upstream, name);
        let doc = fetch::document(&client, &url, PACKUMENT_ACCEPT, &quiet)?;
        Ok::<_, fetch::FetchError>((url, doc))
    });
    let mut packuments = std::collections::HashMap::new();
    for (name, r) in names.iter().zip(docs) {
        let (url, doc) = r?;
        let doc = match doc {
            fetch::Document::Body(bytes) => serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| BuildError::Refused(format!("{url}: not a packument: {e}")))?,
            fetch::Document::NotProvided(status) => {
                return Err(BuildError::Refused(format!(
                    "{}: {name} has no resolved URL, and --npm-upstream {upstream} answered {status} for {url}; give the registry the lock was made from with --npm-upstream URL",
                    lock.file
                )))
            }
        };
        packuments.insert(name.clone(), doc);
    }
    let mut resolved = 0;
    for pin in lock.pins.iter_mut().filter(|p| p.resolved.is_none()) {
        let manifest = packuments
            .get(&pin.name)
            .and_then(|d| d.get("versions"))
            .and_then(|v| v.get(&pin.version))
            .ok_or_else(|| {
                BuildError::Refused(format!(
                    "{}: package {:?} ({}@{}) has no resolved URL, and --npm-upstream {upstream} does not list that version; give the registry the lock was made from with --npm-upstream URL",
                    lock.file, pin.key, pin.name, pin.version
                ))
            })?;
        let url = match tarball(manifest) {
            Some(url) => url,
            None => {
                let file = egress_artifacts::npm_tarball_filename(&pin.name, &pin.version);
                upstream.with_path(&format!("{}{}/-/{file}", upstream.path(), pin.name))
            }
        };
        pin.resolved = Some(url.to_string());
        resolved += 1;
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_lock::NpmPin;

    fn pin(name: &str, version: &str) -> NpmPin {
        NpmPin {
            name: name.into(),
            version: version.into(),
            resolved: Some(format!("https://r/{name}.tgz")),
            integrity: String::new(),
            sha512: [0; 64],
            key: format!("node_modules/{name}"),
            dependencies: Default::default(),
            optional_dependencies: Default::default(),
            peer_dependencies: Default::default(),
            has_install_script: false,
            os: Vec::new(),
            cpu: Vec::new(),
            libc: Vec::new(),
            optional: false,
        }
    }

    /// Nothing to resolve: no request, not even a client.
    #[test]
    fn a_lock_with_every_url_is_left_as_it_is() {
        let mut lock = NpmLock {
            file: "l".into(),
            lockfile_version: 3,
            pins: vec![pin("a", "1.0.0")],
        };
        let before = lock.clone();
        let upstream = Url::parse("http://127.0.0.1:9/").expect("url");
        assert_eq!(
            resolve_against(&mut lock, &upstream, 1, None).expect("ok"),
            0
        );
        assert_eq!(lock, before);
    }

    #[test]
    fn a_name_that_is_no_registry_name_is_refused_before_any_request() {
        let mut bad = pin("../x", "1.0.0");
        bad.resolved = None;
        let mut lock = NpmLock {
            file: "l".into(),
            lockfile_version: 3,
            pins: vec![bad],
        };
        let upstream = Url::parse("http://127.0.0.1:9/").expect("url");
        let e = resolve_against(&mut lock, &upstream, 1, None).expect_err("refused");
        assert!(e.to_string().contains("not a registry name"), "{e}");
    }
}
