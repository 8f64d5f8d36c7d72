//! How the proxy "builds" an sdist to learn its metadata.

use super::limits;
use crate::loopback::is_loopback_url;
use egress_artifacts::{read_sdist_pkg_info, read_top_level_file, ArtifactError, TopLevelFile};
use egress_model::Url;
use egress_transcript::Client;
use std::time::Duration;

/// "Builds" an sdist to learn its metadata, the way a naive proxy runs
/// `setup.py egg_info`: every `urlopen("URL")` in setup.py is performed (to
/// loopback only), then PKG-INFO is returned.
pub(super) fn build_sdist_metadata(sdist: &[u8]) -> Result<Vec<u8>, ArtifactError> {
    if let Some(setup_py) = sdist_setup_py(sdist) {
        for target in urlopen_targets(&setup_py) {
            let Ok(url) = Url::parse(&target) else {
                continue;
            };
            if !is_loopback_url(&url) {
                continue;
            }
            if let Ok(client) = Client::new(url.clone(), limits(Duration::from_secs(5)), None) {
                let _ = client.get("proxy: setup.py urlopen", url.path_and_query(), None);
            }
        }
    }
    read_sdist_pkg_info(sdist)
}

/// The string literals passed to `urlopen(` in Python source.
fn urlopen_targets(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = source;
    while let Some(i) = rest.find("urlopen(") {
        rest = &rest[i + "urlopen(".len()..];
        let arg = rest.trim_start();
        let Some(quote) = arg.chars().next().filter(|c| *c == '"' || *c == '\'') else {
            continue;
        };
        if let Some(end) = arg[1..].find(quote) {
            out.push(arg[1..1 + end].to_string());
        }
    }
    out
}

/// `{top}/setup.py` of a `.tar.gz`, found by walking the inflated tar.
fn sdist_setup_py(gz: &[u8]) -> Option<String> {
    let setup_py = read_top_level_file(gz, TopLevelFile::SetupPy).ok()?;
    Some(String::from_utf8_lossy(&setup_py).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urlopen_scanner() {
        let src = "import urllib.request\ntry:\n    urllib.request.urlopen(\"http://127.0.0.1:1/tripwire/x\", timeout=5)\nexcept Exception:\n    pass\nurlopen( 'http://a/b' )\nurlopen(x)\n";
        assert_eq!(
            urlopen_targets(src),
            ["http://127.0.0.1:1/tripwire/x", "http://a/b"]
        );
    }
}
