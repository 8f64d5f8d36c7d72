//! The Hugging Face Hub's share of a build: the repositories an
//! `--hf-lock` names, each at its commit, served under `/hf/` (see
//! [`egress_snapshot::hf`]).
//!
//! For each locked repository the Hub's tree at the commit is read
//! (`/api/{models|datasets}/{repo}/tree/{commit}?recursive=true`), the
//! files the lock's globs select are kept (a glob that selects nothing is
//! an error), and each is fetched from `/resolve/{commit}/{path}`: a
//! regular file counts once its git blob id is the tree's `oid`, an LFS
//! file (which the Hub hands to its CDN with a redirect, followed here to
//! any origin) once its sha256 is the tree's `lfs.oid`. The snapshot then
//! serves the repo's info and tree at the commit and at `main`, and every
//! file at both, so that `main` names only the signed commit.

use crate::build::{add_source, read_input, Net, Part, Sources, Staged};
use crate::error::BuildError;
use crate::fetch::{self, Expect, FileJob};
use crate::progress::Progress;
use egress_lock::{glob_matches, HfLock, HfPin};
use egress_model::Url;
use egress_snapshot::hf::{self as served, TreeFile};
use egress_snapshot::SnapshotBuilder;
use egress_transcript::{Client, Method, Request};
use std::path::PathBuf;

/// The public Hub.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// The Hub's inputs of `snapshot build`.
#[derive(clap::Args, Default, Debug)]
#[group(id = "hf-inputs")]
pub struct Inputs {
    /// A Hugging Face lock: one repository a line, `TYPE REPO COMMIT
    /// [GLOB...]` (`model org/name <40-hex commit> *.json *.safetensors`);
    /// every selected file is fetched at that commit, verified against the
    /// Hub's tree (git blob id, or LFS sha256), and served under /hf/ (a
    /// sandbox sets HF_ENDPOINT=<mirror>/hf).
    #[arg(long, value_name = "FILE")]
    pub hf_lock: Option<PathBuf>,
    /// The Hub the locked repositories are read from [default:
    /// https://huggingface.co].
    #[arg(long, value_name = "URL")]
    pub hf_endpoint: Option<String>,
}

/// One repository's kept files, with their bytes once fetched.
struct Repo {
    pin: HfPin,
    files: Vec<TreeFile>,
    bytes: Vec<Vec<u8>>,
}

pub(crate) struct Hf {
    inputs: Inputs,
    endpoint: Option<Url>,
    lock: Option<HfLock>,
    repos: Vec<Repo>,
}

impl Hf {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            endpoint: None,
            lock: None,
            repos: Vec::new(),
        }
    }
}

/// `{endpoint}{path}`: the endpoint may carry a path prefix, as
/// `HF_ENDPOINT` may.
fn at(endpoint: &Url, path: &str) -> Result<Url, BuildError> {
    let base = endpoint.to_string();
    Url::parse(&format!("{}{path}", base.trim_end_matches('/')))
        .map_err(|e| BuildError::Usage(format!("--hf-endpoint: {e}")))
}

impl Part for Hf {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--hf-lock"]
    }

    fn has_inputs(&self) -> bool {
        self.inputs.hf_lock.is_some()
    }

    fn check(&mut self, _builder: &mut SnapshotBuilder) -> Result<(), BuildError> {
        if !self.has_inputs() {
            return match &self.inputs.hf_endpoint {
                Some(_) => Err(BuildError::Usage(
                    "--hf-endpoint is only used with --hf-lock".into(),
                )),
                None => Ok(()),
            };
        }
        let raw = self
            .inputs
            .hf_endpoint
            .as_deref()
            .unwrap_or(DEFAULT_ENDPOINT);
        let url = Url::parse(raw).map_err(|e| BuildError::Usage(format!("--hf-endpoint: {e}")))?;
        if url.path_and_query().contains(['?', '#']) {
            return Err(BuildError::Usage(
                "--hf-endpoint: give a URL without a query or fragment".into(),
            ));
        }
        self.endpoint = Some(url);
        Ok(())
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        if let Some(path) = &self.inputs.hf_lock {
            let (text, digest) = read_input("--hf-lock", path)?;
            self.lock = Some(egress_lock::parse_hf_lock(
                &text,
                &path.display().to_string(),
            )?);
            add_source(sources, "hf.lock", path, digest);
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        let (Some(endpoint), Some(lock)) = (&self.endpoint, &self.lock) else {
            return Ok(());
        };
        let client = Client::new(endpoint.clone(), fetch::page_limits(), net.cacert)?;
        let progress = Progress::new(0, 0);
        let mut jobs = Vec::new();
        for pin in &lock.pins {
            let tree_url = at(
                endpoint,
                &format!(
                    "/api/{}/{}/tree/{}?recursive=true&expand=false",
                    pin.repo_type.api_segment(),
                    pin.repo,
                    pin.commit
                ),
            )?;
            // The Hub pages a tree (`Link: <...>; rel="next"`): every page.
            let pages = match fetch::pages(&client, &tree_url, "application/json", &progress)? {
                Ok(pages) => pages,
                Err(s) => {
                    return Err(BuildError::Refused(format!(
                        "{}:{}: {} {} at {}: the Hub answered HTTP {s} for its tree ({tree_url})",
                        lock.file, pin.line, pin.repo_type, pin.repo, pin.commit
                    )))
                }
            };
            let mut all = Vec::new();
            for page in &pages {
                all.extend(served::parse_tree(page).map_err(|e| {
                    BuildError::Refused(format!("{tree_url}: {e}: refusing the whole snapshot"))
                })?);
            }
            for g in &pin.globs {
                if !all.iter().any(|f| glob_matches(g, &f.path)) {
                    return Err(BuildError::Refused(format!(
                        "{}:{}: the glob {g:?} matches no file of {} {} at {}: a lock names files that are there",
                        lock.file, pin.line, pin.repo_type, pin.repo, pin.commit
                    )));
                }
            }
            let files: Vec<TreeFile> = all
                .into_iter()
                .filter(|f| {
                    pin.globs.is_empty() || pin.globs.iter().any(|g| glob_matches(g, &f.path))
                })
                .collect();
            for (i, f) in files.iter().enumerate() {
                let resolve = at(
                    endpoint,
                    &format!(
                        "/{}{}/resolve/{}/{}",
                        pin.repo_type.url_prefix(),
                        pin.repo,
                        pin.commit,
                        served::quote(&f.path)
                    ),
                )?;
                let (url, expect, size) = match f.lfs {
                    // The Hub hands an LFS file to its CDN: where to, is
                    // read from the redirect, whatever origin it names.
                    Some((sha, size)) => {
                        (lfs_location(&client, &resolve)?, Expect::Sha256(sha), size)
                    }
                    None => (resolve, Expect::GitBlob(f.oid), f.size),
                };
                jobs.push((
                    self.repos.len(),
                    i,
                    FileJob {
                        filename: f.path.clone(),
                        url,
                        expect,
                        size: Some(size),
                    },
                ));
            }
            let n = files.len();
            self.repos.push(Repo {
                pin: pin.clone(),
                files,
                bytes: vec![Vec::new(); n],
            });
        }
        if net.dry_run {
            return Ok(());
        }
        for (repo, file, bytes) in download(net, &jobs)? {
            if let Some(slot) = self.repos.get_mut(repo).and_then(|r| r.bytes.get_mut(file)) {
                *slot = bytes;
            }
        }
        Ok(())
    }

    fn planned(&self) -> Staged {
        let files = self.repos.iter().map(|r| r.files.len()).sum();
        Staged {
            files,
            projects: self.repos.len(),
            versions: self.repos.len(),
            ..Staged::default()
        }
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        _out: &std::path::Path,
    ) -> Result<Staged, BuildError> {
        let mut staged = Staged::default();
        let add = |b: &mut SnapshotBuilder, path: &str, ct: &str, bytes: Vec<u8>| {
            b.add_hf_file(path, ct, bytes).map_err(BuildError::Rejected)
        };
        for repo in self.repos {
            let (t, id, commit) = (
                repo.pin.repo_type,
                repo.pin.repo.as_str(),
                repo.pin.commit.as_str(),
            );
            let info = served::render_info(id, commit, &repo.files);
            let tree = served::render_tree(&repo.files);
            for tail in [
                String::new(),
                format!("/revision/{commit}"),
                "/revision/main".into(),
            ] {
                add(
                    builder,
                    &served::api_path(t, id, &tail),
                    served::JSON,
                    info.clone(),
                )?;
            }
            for rev in [commit, "main"] {
                add(
                    builder,
                    &served::api_path(t, id, &format!("/tree/{rev}")),
                    served::JSON,
                    tree.clone(),
                )?;
            }
            for (f, bytes) in repo.files.iter().zip(repo.bytes) {
                staged.files += 1;
                staged.downloaded += 1;
                staged.bytes += bytes.len() as u64;
                for rev in [commit, "main"] {
                    add(
                        builder,
                        &served::resolve_path(t, id, rev, &f.path),
                        egress_snapshot::OCTET_STREAM,
                        bytes.clone(),
                    )?;
                }
            }
            staged.projects += 1;
            staged.versions += 1;
        }
        Ok(staged)
    }
}

/// Where the Hub sends an LFS file: the `Location` of its answer to a
/// `HEAD` of the resolve URL (a same-origin answer of 200 is the file
/// itself).
fn lfs_location(client: &Client, resolve: &Url) -> Result<Url, BuildError> {
    let req = Request::new(Method::Head, resolve.path_and_query());
    let ex = client.send(&format!("HEAD {resolve}"), &req);
    let resp = ex.response.ok_or_else(|| {
        BuildError::Fetch(format!(
            "{resolve}: {}",
            ex.error.unwrap_or_else(|| "no answer".into())
        ))
    })?;
    match resp.status.unwrap_or(0) {
        200 => Ok(resolve.clone()),
        301 | 302 | 303 | 307 | 308 => resp
            .header("location")
            .and_then(|l| resolve.join(l).ok())
            .ok_or_else(|| {
                BuildError::Refused(format!("{resolve}: a redirect without a Location"))
            }),
        s => Err(BuildError::Refused(format!(
            "{resolve}: HTTP {s} ({})",
            resp.status_line
        ))),
    }
}

/// Downloads every job, in parallel and bounded; each result with the
/// repository and file it is for.
fn download(
    net: &Net,
    jobs: &[(usize, usize, FileJob)],
) -> Result<Vec<(usize, usize, Vec<u8>)>, BuildError> {
    let files: Vec<&FileJob> = jobs.iter().map(|(_, _, j)| j).collect();
    let results =
        fetch::download_each(&files, net.jobs, net.cacert, net.work, "Hugging Face files")?;
    let mut out = Vec::new();
    for ((repo, file, job), r) in jobs.iter().zip(results) {
        match r {
            Some(Ok(bytes)) => out.push((*repo, *file, bytes)),
            Some(Err(e)) => {
                return Err(BuildError::Refused(format!(
                    "{} ({}): {}: refusing the whole snapshot",
                    job.filename,
                    job.url,
                    BuildError::from(e)
                )))
            }
            None => {}
        }
    }
    Ok(out)
}
