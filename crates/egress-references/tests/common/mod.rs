//! Scaffolding shared by this crate's integration tests. Each test file
//! uses a part.

#![allow(dead_code)]

use egress_model::{ProjectName, Url};
use egress_simple::{parse_project_html, parse_project_json, ProjectPage};
use egress_transcript::{Client, Limits};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub(crate) fn client(base: &str) -> Client {
    Client::new(Url::parse(base).unwrap(), Limits::default(), None).unwrap()
}

pub(crate) fn body(ex: &egress_model::Exchange) -> Vec<u8> {
    let r = ex
        .response
        .as_ref()
        .unwrap_or_else(|| panic!("{}", ex.summary()));
    r.full_body().expect("complete body").to_vec()
}

pub(crate) const JSON: &str = "application/vnd.pypi.simple.v1+json";

/// The project page of `name`, which must be a 200, parsed as `accept`.
pub(crate) fn page(c: &Client, name: &str, accept: &str) -> ProjectPage {
    let ex = c.get("page", &format!("/simple/{name}/"), Some(accept));
    assert_eq!(ex.status(), Some(200), "{}", ex.summary());
    if accept == JSON {
        parse_project_json(&body(&ex)).unwrap()
    } else {
        parse_project_html(&body(&ex)).unwrap()
    }
}

pub(crate) fn name(s: &str) -> ProjectName {
    ProjectName::new(s).unwrap()
}

/// A directory `<temp>/egress-fixtures-<tag>-<pid>-<nanos>`, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "egress-fixtures-{tag}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `pip download --no-deps` of `requirement` from `index_url` into `dest`,
/// with no configuration file and no cache.
pub(crate) fn pip_download(
    index_url: &str,
    requirement: &str,
    dest: &Path,
    extra: &[&str],
) -> Output {
    Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .args(["--no-cache-dir", "--index-url", index_url, "-d"])
        .arg(dest)
        .args(extra)
        .arg(requirement)
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_NO_INPUT", "1")
        .output()
        .expect("python3 must be installed to run these tests")
}
