//! What the suite reads in the Hub's answers: a repository's info and its
//! tree, leniently (an entry without a blob id is read, so that a judge can
//! name it), bounded by the size of the body recorded.

use crate::common::runwide::{Expected, Listing};
use egress_model::{GitBlobId, HfRepoType, Sha256Digest, Url};

/// The info at a revision: the commit it names.
pub fn info_sha(body: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    v.get("sha")?.as_str().map(str::to_string)
}

/// Whether `s` is a commit id (40 lowercase hex digits).
pub fn is_commit(s: &str) -> bool {
    egress_model::HfCommit::new(s).is_ok()
}

/// One file entry of a tree, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub size: Option<u64>,
    /// The git blob id as written (may be missing or not 40 hex).
    pub oid: Option<String>,
    /// For an LFS file, the sha256 as written and the size.
    pub lfs: Option<(Option<String>, Option<u64>)>,
}

impl Entry {
    pub fn blob(&self) -> Option<GitBlobId> {
        let o = self.oid.as_deref()?;
        (o.len() == 40)
            .then(|| GitBlobId::from_hex(o).ok())
            .flatten()
    }

    pub fn lfs_sha256(&self) -> Option<Sha256Digest> {
        let (o, _) = self.lfs.as_ref()?;
        let o = o.as_deref()?;
        (o.len() == 64)
            .then(|| Sha256Digest::from_hex(o).ok())
            .flatten()
    }

    /// What the entry fails to give: `None` when its digests are whole (a
    /// blob id, and for an LFS file a sha256 and size too).
    pub fn missing(&self) -> Option<&'static str> {
        if self.blob().is_none() {
            return Some("a 40-hex oid");
        }
        match &self.lfs {
            Some(_) if self.lfs_sha256().is_none() => Some("a 64-hex lfs.oid"),
            Some((_, None)) => Some("an lfs.size"),
            _ => None,
        }
    }

    /// The digests the served bytes must have: the LFS sha256 where there
    /// is one (the blob id is the pointer's), else the blob id.
    pub fn expected(&self) -> Vec<Expected> {
        match (self.lfs.is_some(), self.lfs_sha256(), self.blob()) {
            (true, Some(d), _) => vec![Expected::Sha256(d)],
            (true, None, _) => Vec::new(),
            (false, _, Some(b)) => vec![Expected::GitBlob(b)],
            (false, _, None) => Vec::new(),
        }
    }

    /// Whether `bytes` are this file's, by [`Entry::expected`].
    pub fn matches(&self, bytes_sha256: &Sha256Digest, bytes: Option<&[u8]>) -> Option<bool> {
        match self.expected().first()? {
            Expected::Sha256(d) => Some(d == bytes_sha256),
            Expected::GitBlob(b) => bytes.map(|x| GitBlobId::of_blob(x) == *b),
            Expected::Sri(_) => None,
        }
    }
}

/// The file entries of a tree page; `None` when it is not a JSON array of
/// objects with a `type` and `path`.
pub fn tree(body: &[u8]) -> Option<Vec<Entry>> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut out = Vec::new();
    for e in v.as_array()? {
        let kind = e.get("type")?.as_str()?;
        let path = e.get("path")?.as_str()?.to_string();
        if kind != "file" {
            continue;
        }
        let lfs = e.get("lfs").filter(|l| l.is_object()).map(|l| {
            (
                l.get("oid").and_then(|o| o.as_str()).map(str::to_string),
                l.get("size").and_then(serde_json::Value::as_u64),
            )
        });
        out.push(Entry {
            path,
            size: e.get("size").and_then(serde_json::Value::as_u64),
            oid: e.get("oid").and_then(|o| o.as_str()).map(str::to_string),
            lfs,
        });
    }
    Some(out)
}

/// The next page a tree answer names in its `Link` header (`rel="next"`).
pub fn next_page(link: &str) -> Option<&str> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"))
            .then(|| url.trim().trim_start_matches('<').trim_end_matches('>'))
    })
}

/// Where a tree answer was served from: the endpoint path before `/api/`,
/// the repository, and the revision.
fn tree_at(url: &Url) -> Option<(String, HfRepoType, String, String)> {
    let path = url.path();
    let (base, rest) = path.split_once("/api/")?;
    let mut parts = rest.split('/');
    let t = match parts.next()? {
        "models" => HfRepoType::Model,
        "datasets" => HfRepoType::Dataset,
        "spaces" => HfRepoType::Space,
        _ => return None,
    };
    let (ns, name) = (parts.next()?, parts.next()?);
    if parts.next()? != "tree" {
        return None;
    }
    let rev = parts.next()?.to_string();
    Some((base.to_string(), t, format!("{ns}/{name}"), rev))
}

/// `ListFn` of the run-wide rules: a served tree page lists, for each file,
/// the digest of the bytes at its `resolve` URL at the tree's revision (a
/// tree says nothing of other origins: the LFS hand-off is in the answer's
/// headers, judged by P3).
pub fn listings(url: &Url, body: &[u8]) -> Vec<Listing> {
    let Some((base, t, repo, rev)) = tree_at(url) else {
        return Vec::new();
    };
    tree(body)
        .unwrap_or_default()
        .into_iter()
        .map(|e| Listing {
            name: format!("{repo} {}", e.path),
            url: url.with_path(&format!(
                "{base}/{}{repo}/resolve/{rev}/{}",
                t.url_prefix(),
                egress_snapshot::hf::quote(&e.path)
            )),
            expected: e.expected(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_tree_and_lists_its_files_where_they_resolve() {
        let body = br#"[{"type":"directory","path":"onnx","oid":"x"},
            {"type":"file","path":"onnx/m b.onnx","size":3,"oid":"0123456789abcdef0123456789abcdef01234567",
             "lfs":{"oid":"0000000000000000000000000000000000000000000000000000000000000000","size":3}},
            {"type":"file","path":"config.json","size":2,"oid":"short"}]"#;
        let entries = tree(body).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].missing(), None);
        assert_eq!(entries[1].missing(), Some("a 40-hex oid"));
        let url = Url::parse("http://h/hf/api/datasets/o/d/tree/main?recursive=true").unwrap();
        let l = listings(&url, body);
        assert_eq!(
            l[0].url.to_string(),
            "http://h/hf/datasets/o/d/resolve/main/onnx/m%20b.onnx"
        );
        assert!(tree(b"{}").is_none());
        assert!(tree(br#"[{"path":"x"}]"#).is_none());
    }

    #[test]
    fn reads_the_next_page_of_a_link_header() {
        assert_eq!(
            next_page("<http://h/api/x?cursor=4>; rel=\"next\""),
            Some("http://h/api/x?cursor=4")
        );
        assert_eq!(next_page("<http://h/a>; rel=\"xet-auth\""), None);
    }
}
