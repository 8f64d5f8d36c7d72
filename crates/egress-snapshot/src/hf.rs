//! Hugging Face Hub content of a snapshot, under [`HF_PREFIX`]: a sandbox
//! sets `HF_ENDPOINT=<mirror>/hf`, and `huggingface_hub` asks the routes
//! below it exactly as it asks the Hub's.
//!
//! Served paths, for each locked repository (`{t}` its API segment,
//! `models` or `datasets`; `{p}` its URL prefix, empty or `datasets/`) at
//! its one commit `{c}`, and at `main`, which names only that commit:
//! - `/hf/api/{t}/{repo}`, `/hf/api/{t}/{repo}/revision/{c}` and
//!   `.../revision/main`: the repo's info ([`render_info`]), its `sha` the
//!   commit;
//! - `/hf/api/{t}/{repo}/tree/{c}` and `.../tree/main`: every held file
//!   with its git blob id and, for an LFS file, its sha256 and size, and
//!   the folders above them ([`render_tree`]); the query
//!   (`?recursive=true&expand=false`) is not read, so the listing is always
//!   the recursive one;
//! - `/hf/{p}{repo}/resolve/{c}/{file}` and `.../resolve/main/{file}`: the
//!   file's bytes, the file's path quoted as `huggingface_hub` quotes it
//!   ([`quote`]).
//!
//! The headers the client reads with a file (`X-Repo-Commit`,
//! `X-Linked-Etag`, `X-Linked-Size`) are not stored apart: the mirror
//! derives them from the signed tree at the commit ([`resolve_headers`]).
//! Every byte is rendered by the builder (`egress-build`'s hf part) and
//! added with [`crate::SnapshotBuilder::add_hf_file`].

use egress_model::{GitBlobId, HfRepoType, Sha256Digest};
use serde::Deserialize;
use std::collections::HashMap;

/// Where every Hub path is served: `HF_ENDPOINT=<mirror>/hf`.
pub const HF_PREFIX: &str = "/hf/";
/// The info and tree documents.
pub const JSON: &str = "application/json";
/// The longest tree document read (the Hub pages its listings at 1,000
/// entries, tens of kB each page; a snapshot's is one document).
pub const MAX_TREE: usize = 64 << 20;

/// One file of a tree: its path in the repository, its size, its git blob
/// id and, for an LFS file, the sha256 and size of what the pointer names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    pub path: String,
    pub size: u64,
    pub oid: GitBlobId,
    pub lfs: Option<(Sha256Digest, u64)>,
}

impl TreeFile {
    /// What the bytes of this file must hash to: the LFS sha256, or for a
    /// regular file its git blob id.
    pub fn matches(&self, bytes: &[u8]) -> bool {
        match self.lfs {
            Some((sha, size)) => bytes.len() as u64 == size && Sha256Digest::of(bytes) == sha,
            None => bytes.len() as u64 == self.size && GitBlobId::of_blob(bytes) == self.oid,
        }
    }
}

/// Whether `path` may be served as a Hub file: below [`HF_PREFIX`], visible
/// ASCII without `?`, `#` or `\`, every `%` the start of an escape of two
/// uppercase hex digits, every segment non-empty and not `.` or `..`, at
/// most 2,048 bytes.
pub fn is_hf_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix(HF_PREFIX) else {
        return false;
    };
    let escapes_ok = path.split('%').skip(1).all(|s| {
        s.as_bytes().get(..2).is_some_and(|h| {
            h.iter()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(b))
        })
    });
    path.len() <= 2048
        && crate::is_servable_path(path)
        && !path.contains('\\')
        && escapes_ok
        && rest
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// A file's path in a URL as `huggingface_hub` writes it (Python's
/// `urllib.parse.quote` with `/` safe): letters, digits, `_.-~` and `/`
/// as they are, every other byte `%XX`.
pub fn quote(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `/hf/api/{models|datasets|spaces}/{repo}` followed by `tail`.
pub fn api_path(t: HfRepoType, repo: &str, tail: &str) -> String {
    format!("{HF_PREFIX}api/{}/{repo}{tail}", t.api_segment())
}

/// `/hf/[datasets/]{repo}/resolve/{rev}/{quoted file}`.
pub fn resolve_path(t: HfRepoType, repo: &str, rev: &str, file: &str) -> String {
    format!(
        "{HF_PREFIX}{}{repo}/resolve/{rev}/{}",
        t.url_prefix(),
        quote(file)
    )
}

/// The repo's info at `commit`, as `model_info` and `dataset_info` read it.
pub fn render_info(repo: &str, commit: &str, files: &[TreeFile]) -> Vec<u8> {
    let siblings: Vec<serde_json::Value> = files
        .iter()
        .map(|f| serde_json::json!({ "rfilename": f.path }))
        .collect();
    serde_json::json!({
        "id": repo,
        "sha": commit,
        "private": false,
        "gated": false,
        "disabled": false,
        "siblings": siblings,
    })
    .to_string()
    .into_bytes()
}

/// The recursive listing of `files`: every folder above a file once,
/// before its first file, then the file, as the Hub lists a tree.
pub fn render_tree(files: &[TreeFile]) -> Vec<u8> {
    let mut folders: Vec<String> = Vec::new();
    let mut out: Vec<serde_json::Value> = Vec::new();
    for f in files {
        let segments: Vec<&str> = f.path.split('/').collect();
        for i in 1..segments.len() {
            let folder = segments.get(..i).unwrap_or_default().join("/");
            if !folders.contains(&folder) {
                out.push(serde_json::json!({
                    "type": "directory",
                    "oid": GitBlobId::of_blob(folder.as_bytes()).to_hex(),
                    "size": 0,
                    "path": folder,
                }));
                folders.push(folder);
            }
        }
        let mut entry = serde_json::json!({
            "type": "file",
            "oid": f.oid.to_hex(),
            "size": f.size,
            "path": f.path,
        });
        if let Some((sha, size)) = f.lfs {
            entry["lfs"] =
                serde_json::json!({ "oid": sha.to_hex(), "size": size, "pointerSize": 134 });
        }
        out.push(entry);
    }
    serde_json::Value::Array(out).to_string().into_bytes()
}

#[derive(Deserialize)]
struct RawEntry {
    #[serde(rename = "type")]
    kind: String,
    path: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    oid: String,
    #[serde(default)]
    lfs: Option<RawLfs>,
}

#[derive(Deserialize)]
struct RawLfs {
    oid: String,
    size: u64,
}

/// The files of a tree listing (a Hub's page, or a snapshot's own
/// document); folders are skipped. Refused, with why: more than
/// [`MAX_TREE`] bytes, not a JSON array of entries, a file whose path is
/// empty, absolute or has a `.` or `..` segment, an `oid` that is not a
/// 40-hex blob id, an `lfs.oid` that is not 64 hex.
pub fn parse_tree(bytes: &[u8]) -> Result<Vec<TreeFile>, String> {
    if bytes.len() > MAX_TREE {
        return Err(format!(
            "the tree listing is {} bytes, more than the {MAX_TREE} a listing may be",
            bytes.len()
        ));
    }
    let raw: Vec<RawEntry> = serde_json::from_slice(bytes)
        .map_err(|e| format!("the tree listing is not a JSON array of entries: {e}"))?;
    let mut out = Vec::new();
    for e in raw {
        if e.kind != "file" {
            continue;
        }
        let bad_path = e.path.is_empty()
            || e.path.starts_with('/')
            || e.path
                .split('/')
                .any(|s| s.is_empty() || s == "." || s == "..")
            || e.path.bytes().any(|b| b.is_ascii_control() || b == b'\\');
        if bad_path {
            return Err(format!(
                "the tree lists a file at {:?}, not a path inside a repository",
                e.path
            ));
        }
        let oid = GitBlobId::from_hex(&e.oid)
            .map_err(|_| format!("{}: its oid {:?} is not a git blob id", e.path, e.oid))?;
        let lfs = match e.lfs {
            Some(l) => Some((
                Sha256Digest::from_hex(&l.oid)
                    .map_err(|_| format!("{}: its lfs oid {:?} is not a sha256", e.path, l.oid))?,
                l.size,
            )),
            None => None,
        };
        out.push(TreeFile {
            path: e.path,
            size: e.size,
            oid,
            lfs,
        });
    }
    Ok(out)
}

/// The headers a file under `/resolve/` is served with, by its served
/// path: `X-Repo-Commit`, and `X-Linked-Etag` and `X-Linked-Size` (the LFS
/// sha256 and size, or the blob id and size of a regular file), which
/// `huggingface_hub` reads before the mirror's own `ETag`. Derived from
/// every tree document the snapshot serves at a commit (`/tree/{40 hex}`):
/// `served` gives each served path and its blob, `blob` the verified
/// bytes of a blob.
pub fn resolve_headers<'a>(
    served: impl Iterator<Item = (&'a str, Sha256Digest)>,
    blob: impl Fn(&Sha256Digest) -> Option<Vec<u8>>,
) -> HashMap<String, Vec<(&'static str, String)>> {
    let mut out = HashMap::new();
    for (path, digest) in served {
        let Some((t, repo, commit)) = tree_at_commit(path) else {
            continue;
        };
        let Some(files) = blob(&digest).and_then(|b| parse_tree(&b).ok()) else {
            continue;
        };
        for f in files {
            let (etag, size) = match f.lfs {
                Some((sha, size)) => (sha.to_hex(), size),
                None => (f.oid.to_hex(), f.size),
            };
            let headers = vec![
                ("X-Repo-Commit", commit.to_string()),
                ("X-Linked-Etag", format!("\"{etag}\"")),
                ("X-Linked-Size", size.to_string()),
            ];
            for rev in [commit, "main"] {
                out.insert(resolve_path(t, repo, rev, &f.path), headers.clone());
            }
        }
    }
    out
}

/// `(type, repo, commit)` of a served tree document at a commit.
fn tree_at_commit(path: &str) -> Option<(HfRepoType, &str, &str)> {
    let rest = path.strip_prefix(HF_PREFIX)?.strip_prefix("api/")?;
    let (segment, rest) = rest.split_once('/')?;
    let t = [HfRepoType::Model, HfRepoType::Dataset, HfRepoType::Space]
        .into_iter()
        .find(|t| t.api_segment() == segment)?;
    let (repo, commit) = rest.rsplit_once("/tree/")?;
    egress_model::HfCommit::new(commit).ok()?;
    egress_model::HfRepoId::new(repo).ok()?;
    Some((t, repo, commit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, bytes: &[u8], lfs: bool) -> TreeFile {
        TreeFile {
            path: path.into(),
            size: if lfs { 134 } else { bytes.len() as u64 },
            oid: GitBlobId::of_blob(bytes),
            lfs: lfs.then(|| (Sha256Digest::of(bytes), bytes.len() as u64)),
        }
    }

    #[test]
    fn trees_render_parse_and_give_the_headers() {
        let files = vec![
            file("config.json", b"{}", false),
            file("onnx/model.onnx", b"weights", true),
        ];
        let tree = render_tree(&files);
        let back = parse_tree(&tree).unwrap();
        assert_eq!(back, files);
        assert!(back[0].matches(b"{}") && !back[0].matches(b"{ }"));
        assert!(back[1].matches(b"weights"));
        let c = "0123456789abcdef0123456789abcdef01234567";
        let tree_path = api_path(HfRepoType::Model, "org/m", &format!("/tree/{c}"));
        let d = Sha256Digest::of(&tree);
        let h = resolve_headers([(tree_path.as_str(), d)].into_iter(), |x| {
            (*x == d).then(|| tree.clone())
        });
        let at_main = &h[&resolve_path(HfRepoType::Model, "org/m", "main", "onnx/model.onnx")];
        assert_eq!(at_main[0], ("X-Repo-Commit", c.to_string()));
        assert_eq!(at_main[2], ("X-Linked-Size", "7".to_string()));
        assert!(h.contains_key(&format!("/hf/org/m/resolve/{c}/config.json")));
        assert_eq!(h.len(), 4);
    }

    #[test]
    fn hostile_trees_and_paths_are_refused() {
        for bad in [
            &b"{}"[..],
            b"[{\"type\":\"file\",\"path\":\"../x\",\"oid\":\"ce013625030ba8dba906f756967f9e9ca394464a\",\"size\":1}]",
            b"[{\"type\":\"file\",\"path\":\"a\",\"oid\":\"main\",\"size\":1}]",
            b"[{\"type\":\"file\",\"path\":\"a\",\"oid\":\"ce013625030ba8dba906f756967f9e9ca394464a\",\"size\":1,\"lfs\":{\"oid\":\"x\",\"size\":1}}]",
        ] {
            assert!(parse_tree(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(quote("a b/ü.txt"), "a%20b/%C3%BC.txt");
        assert!(is_hf_path("/hf/org/m/resolve/main/a%20b.txt"));
        for bad in [
            "/hf/../x",
            "/hf/a/%2",
            "/hf/a/%2f",
            "/hf/a//b",
            "/cargo/x",
            "/hf/a\\b",
        ] {
            assert!(!is_hf_path(bad), "{bad}");
        }
    }
}
