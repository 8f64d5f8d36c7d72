//! The Hugging Face Hub canary: the routes `huggingface_hub` uses, served
//! from repositories the tests control.
//!
//! **Test fixture.** It binds to 127.0.0.1 only and never connects anywhere.
//!
//! Two origins, as the Hub has (`huggingface.co` and its LFS CDN):
//!
//! - the Hub origin:
//!   - `GET /api/{models|datasets|spaces}/{repo}[/revision/{rev}]`: the
//!     repo's info at a revision (`main`, or a commit);
//!   - `GET /api/{...}/{repo}/tree/{rev}[/{path}][?recursive=true]`: the
//!     files and folders, each file with its git blob id (`oid`) and, for
//!     an LFS file, its sha256 and size (`lfs`);
//!   - `HEAD`/`GET /[{datasets|spaces}/]{repo}/resolve/{rev}/{path}`: a
//!     regular file's bytes with `ETag` (its blob id) and `X-Repo-Commit`;
//!     an LFS file answers `302` to the CDN origin with `X-Linked-Etag`
//!     (its sha256) and `X-Linked-Size`, as the Hub does;
//!   - the dataset viewer's routes (`/api/datasets/{repo}/parquet[/...]`,
//!     `/croissant`, `/statistics`, `/rows`): answered as the viewer does,
//!     by reading the dataset's files, and logged as a tripwire hit (code
//!     ran on artifact bytes upstream);
//!   - with [`HfCanary::offer_xet`], an LFS file's answer also hands the
//!     client to Xet, as the Hub does for a repository stored there
//!     (`X-Xet-Hash`, `X-Xet-Refresh-Route`, a `Link` with `rel="xet-auth"`),
//!     and `GET /api/{...}/{repo}/xet-read-token/{rev}` gives a CAS URL on
//!     the CDN origin and an access token (`X-Xet-Cas-Url`,
//!     `X-Xet-Access-Token`): a mirror must pass none of it on;
//!   - `POST /api/{...}/{repo}/paths-info/{rev}` (form data, `paths=` each
//!     path): the entries of those paths, as the Hub answers this read by
//!     `POST` (olah asks it for every file);
//!   - every other method is refused with `403` (the Hub's answer to a
//!     token it does not know), and logged with its body;
//! - the CDN origin: `GET /lfs/{sha256}`, the LFS file's bytes.
//!
//! `main` moves: [`HfCanary::move_main`] commits a changed file on top of
//! a repo's `main`, as a push upstream would. Every request on either
//! origin goes into one log ([`crate::request_log`]).

use crate::control::{Secret, ServeOptions};
use crate::request_log::{lock, RequestLog};
use egress_http::{Limits, Reply, Request, Response, Server, ServerHandle};
use egress_model::{
    GitBlobId, HfRepoType, HfUpstreamPlan, Observation, ProjectName, Sha256Digest, Upstream,
    UpstreamError, UpstreamPlan, UpstreamRequest,
};
use std::io;
use std::sync::{Arc, Mutex};

/// One file of a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfFile {
    pub path: String,
    pub bytes: Vec<u8>,
    /// Stored in LFS: listed with its sha256, downloaded from the CDN.
    pub lfs: bool,
}

/// One commit: its id and every file in it.
#[derive(Debug, Clone)]
pub struct HfCommitFiles {
    pub sha: String,
    pub files: Vec<HfFile>,
}

/// One repository: its commits, oldest first, and the one `main` names.
#[derive(Debug, Clone)]
pub struct HfRepo {
    pub repo_type: HfRepoType,
    pub id: String,
    pub commits: Vec<HfCommitFiles>,
    pub main: String,
}

/// The commit id of `files` after `parent`: a sha1 of what it holds, so
/// the same content gives the same id on every machine.
fn commit_id(parent: &str, files: &[HfFile]) -> String {
    let mut text = format!("parent {parent}\n");
    for f in files {
        text.push_str(&format!("{} {}\n", f.path, Sha256Digest::of(&f.bytes)));
    }
    GitBlobId::of_blob(text.as_bytes()).to_hex()
}

impl HfRepo {
    /// A repo with one commit of `files`, `main` on it.
    pub fn new(repo_type: HfRepoType, id: &str, files: Vec<HfFile>) -> Self {
        let sha = commit_id("", &files);
        Self {
            repo_type,
            id: id.to_string(),
            commits: vec![HfCommitFiles {
                sha: sha.clone(),
                files,
            }],
            main: sha,
        }
    }

    /// The commit `rev` names: a commit id, or `main`.
    pub fn commit(&self, rev: &str) -> Option<&HfCommitFiles> {
        let sha = if rev == "main" {
            self.main.as_str()
        } else {
            rev
        };
        self.commits.iter().find(|c| c.sha == sha)
    }
}

/// The canary's fixture repositories: a model with regular and LFS files
/// in a folder and at the root, and a dataset.
pub fn fixtures() -> Vec<HfRepo> {
    let file = |path: &str, bytes: &[u8], lfs: bool| HfFile {
        path: path.to_string(),
        bytes: bytes.to_vec(),
        lfs,
    };
    // An LFS file as big as a small model's weights would not help a test:
    // a few KiB of bytes that are not text.
    let weights: Vec<u8> = (0..6000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    vec![
        HfRepo::new(
            HfRepoType::Model,
            MODEL,
            vec![
                file(
                    ".gitattributes",
                    b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
                    false,
                ),
                file("README.md", &card(), false),
                file(
                    "config.json",
                    br#"{"model_type":"gpt2","n_layer":1,"vocab_size":8}"#,
                    false,
                ),
                file(
                    "tokenizer_config.json",
                    br#"{"model_max_length":8,"tokenizer_class":"PreTrainedTokenizerFast"}"#,
                    false,
                ),
                file("model.safetensors", &weights, true),
                file("onnx/model.onnx", &weights[..1000], true),
            ],
        ),
        HfRepo::new(
            HfRepoType::Dataset,
            DATASET,
            vec![
                file("README.md", b"# ec-dataset\n", false),
                file("data/train.csv", b"text,label\nhello,1\nworld,0\n", false),
            ],
        ),
    ]
}

/// The fixture model's and dataset's ids.
pub const MODEL: &str = "ec-org/ec-model";
pub const DATASET: &str = "ec-org/ec-dataset";
/// A model the suite's canary serves and its kit does not lock.
pub const UPSTREAM_ONLY: &str = "ec-org/ec-hidden";
/// A model whose regular files are served with a byte the tree's blob ids
/// do not have, as a tampered upstream or a corrupting cache would.
pub const TAMPERED: &str = "ec-org/ec-tampered";
/// A file of [`MODEL`] the kit's globs leave out.
pub const ABSENT_FILE: &str = "onnx/model.onnx";
/// The globs the kit locks [`MODEL`] with: every file but [`ABSENT_FILE`].
pub const MODEL_GLOBS: [&str; 4] = [".gitattributes", "*.md", "*.json", "*.safetensors"];

/// The model card: front matter, and template expressions in its text
/// (a card rendered by a template engine shows them evaluated).
fn card() -> Vec<u8> {
    let mut out = b"---\nlicense: mit\n---\n# ec-model\n\nA canary model.\n".to_vec();
    for (raw, _) in egress_model::TEMPLATE_MARKERS {
        out.extend_from_slice(format!("\n{raw}\n").as_bytes());
    }
    out
}

/// The suite's repositories: [`fixtures`] with a history (the model's
/// first commit is one a snapshot of its `main` does not hold), a model
/// served [`TAMPERED`], and a model only the upstream has.
pub fn suite_fixtures() -> Vec<HfRepo> {
    let mut repos = fixtures();
    for r in &mut repos {
        if r.id == MODEL {
            let _ = r.commit_change("config.json");
        }
    }
    repos.push(HfRepo::new(
        HfRepoType::Model,
        TAMPERED,
        vec![HfFile {
            path: "config.json".to_string(),
            bytes: br#"{"model_type":"gpt2","n_layer":3}"#.to_vec(),
            lfs: false,
        }],
    ));
    repos.push(HfRepo::new(
        HfRepoType::Model,
        UPSTREAM_ONLY,
        vec![
            HfFile {
                path: "config.json".to_string(),
                bytes: br#"{"model_type":"gpt2","n_layer":2}"#.to_vec(),
                lfs: false,
            },
            HfFile {
                path: "README.md".to_string(),
                bytes: b"# ec-hidden\n\nOnly the upstream has this model.\n".to_vec(),
                lfs: false,
            },
        ],
    ));
    repos
}

/// An `--hf-lock` of [`suite_fixtures`] as they are before any move: the
/// model at its `main` with [`MODEL_GLOBS`], and the dataset whole.
pub fn fixture_lock() -> String {
    let mut out = String::from("# The conformance kit's Hub lock: TYPE REPO COMMIT [GLOB...]\n");
    for r in suite_fixtures() {
        match r.id.as_str() {
            MODEL => out.push_str(&format!(
                "model {MODEL} {} {}\n",
                r.main,
                MODEL_GLOBS.join(" ")
            )),
            DATASET => out.push_str(&format!("dataset {DATASET} {}\n", r.main)),
            _ => {}
        }
    }
    out
}

/// The bytes the canary serves for `f`: its own, but in [`TAMPERED`],
/// whose last byte is flipped.
fn served_bytes(repo: &HfRepo, f: &HfFile) -> Vec<u8> {
    let mut out = f.bytes.clone();
    if repo.id == TAMPERED {
        if let Some(b) = out.last_mut() {
            *b ^= 1;
        }
    }
    out
}

/// A repository as a URL names it: `org/name`, `datasets/org/name`.
fn url_name(t: HfRepoType, id: &str) -> String {
    format!("{}{id}", t.url_prefix())
}

struct State {
    repos: Mutex<Vec<HfRepo>>,
    log: RequestLog,
    cdn: String,
    xet: std::sync::atomic::AtomicBool,
    /// The Hub origin, for the absolute `Link` of a tree's next page.
    origin: String,
    /// The control API's secret (the standalone canary).
    secret: Option<Secret>,
}

/// Entries per page of a tree listing: the Hub pages its listings, and
/// the fixtures are larger than one page, so that a client or builder
/// that reads only the first page is seen.
pub const TREE_PAGE: usize = 4;

/// Where a tree listing page is.
struct Page<'a> {
    origin: &'a str,
    path: &'a str,
    query: &'a str,
    cursor: usize,
}

/// The access token the canary's Xet hand-off gives: a marker, so that a
/// mirror passing it on is seen in what it serves.
pub const XET_TOKEN: &str = "ec-xet-access-token-from-the-canary";

/// The dataset viewer's routes below `/api/datasets/{repo}/`.
const VIEWER: [&str; 4] = ["parquet", "croissant", "statistics", "rows"];

/// The Hub canary; see the module docs. Stops on drop.
pub struct HfCanary {
    _server: ServerHandle,
    _cdn: ServerHandle,
    state: Arc<State>,
    origin: String,
}

impl HfCanary {
    /// Binds two free loopback ports (the Hub and its LFS CDN).
    pub fn start(repos: Vec<HfRepo>) -> io::Result<HfCanary> {
        Self::serve_repos(&ServeOptions::default(), repos)
    }

    /// The suite's canary: [`suite_fixtures`], the Xet hand-off offered,
    /// bound where `options` says (the standalone canary answers its
    /// control API too).
    pub fn serve(options: &ServeOptions) -> io::Result<HfCanary> {
        let c = Self::serve_repos(options, suite_fixtures())?;
        c.offer_xet();
        Ok(c)
    }

    /// The built-in run's canary: [`HfCanary::serve`] on loopback.
    pub fn start_fixtures() -> io::Result<HfCanary> {
        Self::serve(&ServeOptions::default())
    }

    fn serve_repos(options: &ServeOptions, repos: Vec<HfRepo>) -> io::Result<HfCanary> {
        let cdn_holder: Arc<Mutex<Option<Arc<State>>>> = Arc::default();
        let for_cdn = Arc::clone(&cdn_holder);
        let cdn = Server::bind(
            std::net::SocketAddr::from((options.listen.ip(), 0)),
            move |req: Request| match lock(&for_cdn).as_ref() {
                Some(s) => s.handle_cdn(&req),
                None => Response::new(503).into(),
            },
            Limits::default(),
        )?;
        let hub_holder: Arc<Mutex<Option<Arc<State>>>> = Arc::default();
        let for_hub = Arc::clone(&hub_holder);
        let server = Server::bind(
            options.listen,
            move |req: Request| match lock(&for_hub).as_ref() {
                Some(s) => s.handle(&req),
                None => Response::new(503).into(),
            },
            Limits::default(),
        )?;
        let origin = options.origin(&server);
        let state = Arc::new(State {
            repos: Mutex::new(repos),
            log: RequestLog::default(),
            cdn: crate::control::sibling_origin(&origin, &cdn),
            xet: std::sync::atomic::AtomicBool::new(false),
            origin: origin.clone(),
            secret: options.secret.clone(),
        });
        *lock(&cdn_holder) = Some(Arc::clone(&state));
        *lock(&hub_holder) = Some(Arc::clone(&state));
        Ok(HfCanary {
            _server: server,
            _cdn: cdn,
            state,
            origin,
        })
    }

    /// The Hub origin, `http://127.0.0.1:PORT`: what `HF_ENDPOINT` names.
    pub fn endpoint(&self) -> &str {
        &self.origin
    }

    /// The LFS CDN origin.
    pub fn cdn_origin(&self) -> &str {
        &self.state.cdn
    }

    /// A repo as the canary serves it now.
    pub fn repo(&self, repo_type: HfRepoType, id: &str) -> Option<HfRepo> {
        lock(&self.state.repos)
            .iter()
            .find(|r| r.repo_type == repo_type && r.id == id)
            .cloned()
    }

    /// Every request so far, on either origin.
    pub fn requests(&self) -> Vec<UpstreamRequest> {
        self.state.log.since(0)
    }

    /// From now on, hands LFS files to Xet as the Hub does (see the module
    /// docs).
    pub fn offer_xet(&self) {
        self.state
            .xet
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Commits `path` with new bytes on top of `main` and moves `main` to
    /// it, as a push upstream would; the new commit's id.
    pub fn move_main(&self, repo_type: HfRepoType, id: &str, path: &str) -> Option<String> {
        let mut repos = lock(&self.state.repos);
        let repo = repos
            .iter_mut()
            .find(|r| r.repo_type == repo_type && r.id == id)?;
        repo.commit_change(path).map(|(sha, _, _)| sha)
    }
}

impl HfRepo {
    /// Commits `path` with bytes added on top of `main` and moves `main`
    /// to the new commit: its id, and the file's bytes before and after.
    pub fn commit_change(&mut self, path: &str) -> Option<(String, Vec<u8>, Vec<u8>)> {
        let mut files = self.commit("main")?.files.clone();
        let f = files.iter_mut().find(|f| f.path == path)?;
        let before = f.bytes.clone();
        f.bytes.extend_from_slice(b"\n# moved upstream\n");
        let after = f.bytes.clone();
        let sha = commit_id(&self.main, &files);
        self.commits.push(HfCommitFiles {
            sha: sha.clone(),
            files,
        });
        self.main = sha.clone();
        Some((sha, before, after))
    }
}

impl State {
    fn upstream_plan(&self) -> UpstreamPlan {
        let name = |s: &str| ProjectName::new(s).expect("fixture names are valid");
        let repos = lock(&self.repos);
        let first = repos
            .iter()
            .find(|r| r.id == MODEL)
            .and_then(|r| r.commits.first())
            .map_or_else(String::new, |c| c.sha.clone());
        UpstreamPlan {
            origin: self.origin.clone(),
            index_url: self.origin.clone(),
            present: name("ec-model"),
            upstream_only: name("ec-hidden"),
            upstream_only_paths: vec![
                format!("/api/models/{UPSTREAM_ONLY}/revision/main"),
                format!("/{UPSTREAM_ONLY}/resolve/main/config.json"),
            ],
            // The dataset viewer is the Hub's code that runs on artifacts.
            tripwire: name("ec-dataset"),
            template: name("ec-model"),
            no_digest: None,
            bad_digest: None,
            offsite: None,
            yanked: None,
            hf: Some(HfUpstreamPlan {
                present: MODEL.to_string(),
                also_present: vec![url_name(HfRepoType::Dataset, DATASET)],
                upstream_only: UPSTREAM_ONLY.to_string(),
                bad_digest: Some(TAMPERED.to_string()),
                absent_revision: first,
                absent_file: ABSENT_FILE.to_string(),
            }),
        }
    }

    /// `move_tag(repo, "main", path)`: commits a change of `path` on
    /// `main` (see [`HfRepo::commit_change`]).
    fn move_branch(&self, repo: &str, tag: &str, path: &str) -> Result<Observation, UpstreamError> {
        if tag != "main" {
            return Err(UpstreamError::Unsupported {
                message: format!("the Hub canary moves only main, not {tag:?}"),
            });
        }
        let (t, id) = match repo.split_once('/') {
            Some(("datasets", rest)) => (HfRepoType::Dataset, rest),
            Some(("spaces", rest)) => (HfRepoType::Space, rest),
            Some(("models", rest)) => (HfRepoType::Model, rest),
            _ => (HfRepoType::Model, repo),
        };
        let mut repos = lock(&self.repos);
        let not_served = |what: String| UpstreamError::NotServed { message: what };
        let r = repos
            .iter_mut()
            .find(|r| r.repo_type == t && r.id == id)
            .ok_or_else(|| not_served(format!("the Hub canary serves no {repo}")))?;
        let (sha, before, after) = r
            .commit_change(path)
            .ok_or_else(|| not_served(format!("{repo} has no {path} at main")))?;
        Ok(Observation::UpstreamMutation {
            description: format!(
                "committed a change of {path} on {repo}'s main ({sha}) at the Hub canary"
            ),
            filename: path.to_string(),
            before: Some(Sha256Digest::of(&before)),
            after: Sha256Digest::of(&after),
        })
    }
}

fn unsupported(what: &str) -> UpstreamError {
    UpstreamError::Unsupported {
        message: format!("the Hub canary cannot {what}: it moves main (move-tag)"),
    }
}

impl Upstream for State {
    fn plan(&self) -> UpstreamPlan {
        self.upstream_plan()
    }

    fn mark(&self) -> u64 {
        self.log.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.log.since(mark)
    }

    fn publish_new_version(&self, _project: &ProjectName) -> Result<Observation, UpstreamError> {
        Err(unsupported("publish a version"))
    }

    fn replace_file_bytes(&self, _filename: &str) -> Result<Observation, UpstreamError> {
        Err(unsupported("replace a file's bytes under the same commit"))
    }

    fn move_tag(
        &self,
        project: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        self.move_branch(project, tag, version)
    }
}

impl Upstream for HfCanary {
    fn plan(&self) -> UpstreamPlan {
        self.state.upstream_plan()
    }

    fn mark(&self) -> u64 {
        self.state.log.mark()
    }

    fn requests_since(&self, mark: u64) -> Vec<UpstreamRequest> {
        self.state.log.since(mark)
    }

    fn publish_new_version(&self, project: &ProjectName) -> Result<Observation, UpstreamError> {
        self.state.publish_new_version(project)
    }

    fn replace_file_bytes(&self, filename: &str) -> Result<Observation, UpstreamError> {
        self.state.replace_file_bytes(filename)
    }

    fn move_tag(
        &self,
        project: &str,
        tag: &str,
        version: &str,
    ) -> Result<Observation, UpstreamError> {
        self.state.move_branch(project, tag, version)
    }
}

fn json(status: u16, doc: &serde_json::Value) -> Reply {
    Response::new(status)
        .with_header("Content-Type", "application/json; charset=utf-8")
        .with_body(doc.to_string())
        .into()
}

fn not_found(what: &str) -> Reply {
    let r = Response::new(404)
        .with_header("Content-Type", "application/json; charset=utf-8")
        .with_header("X-Error-Code", "RepoNotFound")
        .with_body(serde_json::json!({ "error": what }).to_string());
    r.into()
}

/// `segment` of an API path as a repo type.
fn api_type(segment: &str) -> Option<HfRepoType> {
    [HfRepoType::Model, HfRepoType::Dataset, HfRepoType::Space]
        .into_iter()
        .find(|t| t.api_segment() == segment)
}

/// Percent-decodes what `huggingface_hub` quotes in a path (a revision, a
/// file name); `None` on a bad escape or non-UTF-8.
fn unquote(raw: &str) -> Option<String> {
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

impl State {
    fn handle(&self, req: &Request) -> Reply {
        if let Some(reply) = crate::control::intercept(self.secret.as_ref(), req, self) {
            return reply;
        }
        if let Some(reply) = self.viewer(req) {
            return reply;
        }
        self.log.record(req);
        if req.method.as_str() == "POST" {
            if let Some(reply) = self.paths_info(req) {
                return reply;
            }
        }
        if !req.method.is_read() {
            // The Hub's answer to a write with a token it does not know.
            return json(
                403,
                &serde_json::json!({ "error": "Invalid credentials in Authorization header" }),
            );
        }
        let path = req.path();
        if let Some(rest) = path.strip_prefix("/api/") {
            return self.api(rest, req.query().unwrap_or_default());
        }
        self.resolve(path)
    }

    /// `POST /api/{type}s/{ns}/{name}/paths-info/{rev}`: the entries of
    /// the form's `paths` that exist at `rev`; `None` for another route.
    fn paths_info(&self, req: &Request) -> Option<Reply> {
        let rest = req.path().strip_prefix("/api/")?;
        let parts: Vec<&str> = rest.split('/').collect();
        let [segment, ns, name, "paths-info", rev] = parts.as_slice() else {
            return None;
        };
        let t = api_type(segment)?;
        let rev = unquote(rev)?;
        let wanted: Vec<String> = String::from_utf8_lossy(&req.body)
            .split('&')
            .filter_map(|kv| kv.strip_prefix("paths="))
            .filter_map(|v| unquote(&v.replace('+', " ")))
            .collect();
        let found = self.with_repo(t, &format!("{ns}/{name}"), |repo| {
            let commit = repo.commit(&rev)?;
            let out: Vec<serde_json::Value> = commit
                .files
                .iter()
                .filter(|f| wanted.contains(&f.path))
                .map(file_entry)
                .collect();
            Some(json(200, &serde_json::Value::Array(out)))
        });
        Some(
            found
                .flatten()
                .unwrap_or_else(|| not_found("Repository not found")),
        )
    }

    /// The dataset viewer's answer to `req`, logged as a tripwire hit; or
    /// `None` when `req` is not a viewer route.
    fn viewer(&self, req: &Request) -> Option<Reply> {
        let rest = req.path().strip_prefix("/api/datasets/")?;
        let parts: Vec<&str> = rest.split('/').collect();
        let (ns, name, route) = (parts.first()?, parts.get(1)?, parts.get(2)?);
        if !VIEWER.contains(route) || !req.method.is_read() {
            return None;
        }
        self.log.record_as(req, true);
        let id = format!("{ns}/{name}");
        let found = self.with_repo(HfRepoType::Dataset, &id, |repo| {
            // What the viewer does: read the files, convert, describe.
            let commit = repo.commit("main")?;
            let rows: usize = commit
                .files
                .iter()
                .map(|f| f.bytes.iter().filter(|&&b| b == b'\n').count())
                .sum();
            Some(json(
                200,
                &serde_json::json!({ "dataset": id, "converted_by": "the canary's viewer", "rows": rows }),
            ))
        });
        Some(
            found
                .flatten()
                .unwrap_or_else(|| not_found("Repository not found")),
        )
    }

    fn with_repo<T>(&self, t: HfRepoType, id: &str, f: impl FnOnce(&HfRepo) -> T) -> Option<T> {
        lock(&self.repos)
            .iter()
            .find(|r| r.repo_type == t && r.id == id)
            .map(f)
    }

    /// `/api/{type}s/{ns}/{name}[/revision/{rev} | /tree/{rev}[/{path}]]`.
    fn api(&self, rest: &str, query: &str) -> Reply {
        let parts: Vec<&str> = rest.split('/').collect();
        let (Some(t), Some(ns), Some(name)) = (
            parts.first().and_then(|s| api_type(s)),
            parts.get(1),
            parts.get(2),
        ) else {
            return not_found("no such route");
        };
        let id = format!("{ns}/{name}");
        let tail = parts.get(3..).unwrap_or_default();
        if let ["xet-read-token", _] = tail {
            return self.xet_token(t, &id);
        }
        let found = self.with_repo(t, &id, |repo| match tail {
            [] => info(repo, "main"),
            ["revision", rev] => unquote(rev).and_then(|r| info(repo, &r)),
            ["tree", rev, sub @ ..] => {
                let recursive = query
                    .split('&')
                    .any(|kv| kv == "recursive=true" || kv == "recursive=True");
                let cursor = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("cursor="))
                    .and_then(|c| c.parse::<usize>().ok())
                    .unwrap_or(0);
                let sub: Vec<String> = sub.iter().filter_map(|s| unquote(s)).collect();
                let page = Page {
                    origin: &self.origin,
                    path: &format!("/api/{rest}"),
                    query,
                    cursor,
                };
                unquote(rev).and_then(|r| tree(repo, &r, &sub.join("/"), recursive, &page))
            }
            _ => None,
        });
        match found.flatten() {
            Some(reply) => reply,
            None => not_found("Repository not found"),
        }
    }

    /// `/[{datasets|spaces}/]{ns}/{name}/resolve/{rev}/{path}`.
    fn resolve(&self, path: &str) -> Reply {
        let p = path.trim_start_matches('/');
        let (t, p) = match p.split_once('/') {
            Some(("datasets", rest)) => (HfRepoType::Dataset, rest),
            Some(("spaces", rest)) => (HfRepoType::Space, rest),
            _ => (HfRepoType::Model, p),
        };
        let parts: Vec<&str> = p.splitn(5, '/').collect();
        let [ns, name, "resolve", rev, file] = parts.as_slice() else {
            return not_found("no such route");
        };
        let (Some(rev), Some(file)) = (unquote(rev), unquote(file)) else {
            return not_found("bad escape");
        };
        let cdn = self.cdn.clone();
        let xet = self.xet.load(std::sync::atomic::Ordering::Relaxed);
        let found = self.with_repo(t, &format!("{ns}/{name}"), |repo| {
            let commit = repo.commit(&rev)?;
            let f = commit.files.iter().find(|f| f.path == file)?;
            let blob = GitBlobId::of_blob(&f.bytes);
            let r = Response::new(if f.lfs { 302 } else { 200 })
                .with_header("X-Repo-Commit", commit.sha.clone())
                .with_header("ETag", format!("\"{blob}\""));
            Some(if f.lfs {
                let sha = Sha256Digest::of(&f.bytes);
                let r = r
                    .with_header("X-Linked-Etag", format!("\"{sha}\""))
                    .with_header("X-Linked-Size", f.bytes.len().to_string())
                    .with_header("Location", format!("{cdn}/lfs/{sha}"));
                if xet {
                    let refresh = format!(
                        "/api/{}/{}/xet-read-token/{}",
                        repo.repo_type.api_segment(),
                        repo.id,
                        commit.sha
                    );
                    r.with_header("X-Xet-Hash", sha.to_hex())
                        .with_header("X-Xet-Refresh-Route", refresh.clone())
                        .with_header("Link", format!("<{refresh}>; rel=\"xet-auth\""))
                } else {
                    r
                }
            } else {
                r.with_header("Content-Type", "application/octet-stream")
                    .with_body(served_bytes(repo, f))
            })
        });
        match found.flatten() {
            Some(r) => r.into(),
            None => {
                let r = Response::new(404)
                    .with_header("X-Error-Code", "EntryNotFound")
                    .with_body("Entry not found");
                r.into()
            }
        }
    }

    /// The Hub's Xet token route: the CAS endpoint (the CDN origin) and a
    /// token, in the body and in headers.
    fn xet_token(&self, t: HfRepoType, id: &str) -> Reply {
        if self.with_repo(t, id, |_| ()).is_none() {
            return not_found("Repository not found");
        }
        let r = Response::new(200)
            .with_header("Content-Type", "application/json; charset=utf-8")
            .with_header("X-Xet-Cas-Url", self.cdn.clone())
            .with_header("X-Xet-Access-Token", XET_TOKEN)
            .with_header("X-Xet-Token-Expiration", "4102444800")
            .with_body(
                serde_json::json!({ "casUrl": self.cdn, "accessToken": XET_TOKEN, "exp": 4102444800u64 })
                    .to_string(),
            );
        r.into()
    }

    fn handle_cdn(&self, req: &Request) -> Reply {
        self.log.record(req);
        let Some(want) = req.path().strip_prefix("/lfs/") else {
            return Response::new(404).into();
        };
        let repos = lock(&self.repos);
        let found = repos
            .iter()
            .flat_map(|r| r.commits.iter())
            .flat_map(|c| c.files.iter())
            .find(|f| f.lfs && Sha256Digest::of(&f.bytes).to_hex() == want);
        match found {
            Some(f) => Response::new(200)
                .with_header("Content-Type", "application/octet-stream")
                .with_body(f.bytes.clone())
                .into(),
            None => Response::new(404).into(),
        }
    }
}

/// The repo's info at `rev`, as `model_info`/`dataset_info` read it.
fn info(repo: &HfRepo, rev: &str) -> Option<Reply> {
    let commit = repo.commit(rev)?;
    let siblings: Vec<serde_json::Value> = commit
        .files
        .iter()
        .map(|f| serde_json::json!({ "rfilename": f.path }))
        .collect();
    Some(json(
        200,
        &serde_json::json!({
            "_id": GitBlobId::of_blob(repo.id.as_bytes()).to_hex(),
            "id": repo.id,
            "sha": commit.sha,
            "private": false,
            "gated": false,
            "disabled": false,
            "tags": [],
            "lastModified": "2026-11-01T00:00:00.000Z",
            "siblings": siblings,
        }),
    ))
}

/// A file's entry in a tree or paths-info listing.
fn file_entry(f: &HfFile) -> serde_json::Value {
    let mut entry = serde_json::json!({
        "type": "file",
        "oid": GitBlobId::of_blob(&f.bytes).to_hex(),
        "size": f.bytes.len(),
        "path": f.path,
    });
    if f.lfs {
        entry["lfs"] = serde_json::json!({
            "oid": Sha256Digest::of(&f.bytes).to_hex(),
            "size": f.bytes.len(),
            "pointerSize": 134,
        });
    }
    entry
}

/// The entries under `dir` at `rev`: every file and folder below it when
/// `recursive`, else its direct children.
fn tree(repo: &HfRepo, rev: &str, dir: &str, recursive: bool, page: &Page) -> Option<Reply> {
    let commit = repo.commit(rev)?;
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut folders: Vec<String> = Vec::new();
    let mut out: Vec<serde_json::Value> = Vec::new();
    for f in commit.files.iter().filter(|f| f.path.starts_with(&prefix)) {
        let below = f.path.get(prefix.len()..).unwrap_or_default();
        let segments: Vec<&str> = below.split('/').collect();
        // The folders between `dir` and the file, each once.
        let depth = if recursive {
            segments.len() - 1
        } else {
            segments.len().min(2) - 1
        };
        for i in 1..=depth {
            let folder = format!(
                "{prefix}{}",
                segments.get(..i).unwrap_or_default().join("/")
            );
            if !folders.contains(&folder) {
                out.push(serde_json::json!({ "type": "directory", "oid": GitBlobId::of_blob(folder.as_bytes()).to_hex(), "size": 0, "path": folder }));
                folders.push(folder);
            }
        }
        if !recursive && segments.len() > 1 {
            continue;
        }
        out.push(file_entry(f));
    }
    if out.is_empty() && !dir.is_empty() {
        return None;
    }
    // One page, and a `Link` to the next as the Hub gives it.
    let total = out.len();
    let end = (page.cursor + TREE_PAGE).min(total);
    let this: Vec<serde_json::Value> = out.get(page.cursor..end).unwrap_or_default().to_vec();
    let Reply::Response(mut r) = json(200, &serde_json::Value::Array(this)) else {
        return None;
    };
    if end < total {
        let query: Vec<&str> = page
            .query
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("cursor="))
            .collect();
        let mut next = format!("{}{}?", page.origin, page.path);
        for kv in query {
            next.push_str(kv);
            next.push('&');
        }
        next.push_str(&format!("cursor={end}"));
        r = r.with_header("Link", format!("<{next}>; rel=\"next\""));
    }
    Some(r.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_model::Url;
    use egress_transcript::{Client, Method, Request as Req};

    fn client(base: &str) -> Client {
        Client::new(Url::parse(base).unwrap(), Default::default(), None).unwrap()
    }

    #[test]
    fn xet_hand_off_viewer_and_writes_as_the_hub_has_them() {
        let canary = HfCanary::start(fixtures()).unwrap();
        let c = client(canary.endpoint());
        let lfs = format!("/{MODEL}/resolve/main/model.safetensors");
        // By default an LFS file is a redirect to the CDN, no Xet.
        let ex = c.send("head", &Req::new(Method::Head, &lfs));
        let r = ex.response.unwrap();
        assert_eq!(r.status, Some(302));
        assert!(r.header("x-xet-hash").is_none());
        assert!(r
            .header("location")
            .unwrap()
            .starts_with(canary.cdn_origin()));
        canary.offer_xet();
        let r = c
            .send("head", &Req::new(Method::Head, &lfs))
            .response
            .unwrap();
        let refresh = r.header("x-xet-refresh-route").unwrap().to_string();
        assert!(r.header("x-xet-hash").is_some());
        assert!(r.header("link").unwrap().contains("rel=\"xet-auth\""));
        let r = c.get("token", &refresh, None).response.unwrap();
        assert_eq!(r.header("x-xet-access-token"), Some(XET_TOKEN));
        assert_eq!(r.header("x-xet-cas-url"), Some(canary.cdn_origin()));
        // The viewer reads the dataset: a tripwire hit.
        let r = c
            .get("viewer", &format!("/api/datasets/{DATASET}/parquet"), None)
            .response
            .unwrap();
        assert_eq!(r.status, Some(200));
        // A write is refused, and what it carried is on record.
        let r = c
            .send(
                "create",
                &Req::new(Method::Post, "/api/repos/create").body(b"{\"name\":\"x\"}".to_vec()),
            )
            .response
            .unwrap();
        assert_eq!(r.status, Some(403));
        let log = canary.requests();
        let viewer = log.iter().find(|u| u.target.ends_with("/parquet")).unwrap();
        assert!(viewer.tripwire);
        let create = log
            .iter()
            .find(|u| u.target == "/api/repos/create")
            .unwrap();
        assert_eq!(create.body.as_ref().map(|b| b.bytes), Some(12));
        assert!(log.iter().filter(|u| u.tripwire).count() == 1);
    }
}
