//! How the proxy "builds" an sdist to learn its metadata.

use super::limits;
use crate::is_loopback_url;
use egress_artifacts::read_sdist_pkg_info;
use egress_model::Url;
use egress_transcript::Client;
use std::time::Duration;

/// "Builds" an sdist to learn its metadata, the way a naive proxy runs
/// `setup.py egg_info`: every `urlopen("URL")` in setup.py is performed (to
/// loopback only), then PKG-INFO is returned.
pub(super) fn build_sdist_metadata(sdist: &[u8]) -> Result<Vec<u8>, String> {
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
    read_sdist_pkg_info(sdist).map_err(|e| e.to_string())
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
    let tar = gunzip(gz)?;
    let mut at = 0;
    while at + 512 <= tar.len() {
        let h = &tar[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            return None;
        }
        let cstr = |b: &[u8]| {
            let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).into_owned()
        };
        let name = cstr(&h[..100]);
        let prefix = if &h[257..262] == b"ustar" {
            cstr(&h[345..500])
        } else {
            String::new()
        };
        let path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let size_text = cstr(&h[124..136]);
        let size = usize::from_str_radix(size_text.trim(), 8).ok()?;
        let data = tar.get(at + 512..at + 512 + size)?;
        if matches!(h[156], b'0' | 0)
            && path.matches('/').count() == 1
            && path.ends_with("/setup.py")
        {
            return Some(String::from_utf8_lossy(data).into_owned());
        }
        at += 512 + size.next_multiple_of(512);
    }
    None
}

/// Inflates a gzip member (header fields skipped, trailer not checked).
fn gunzip(gz: &[u8]) -> Option<Vec<u8>> {
    if gz.len() < 18 || gz[..3] != [0x1f, 0x8b, 8] {
        return None;
    }
    let flags = gz[3];
    let mut at = 10;
    if flags & 4 != 0 {
        let len = usize::from(u16::from_le_bytes([*gz.get(at)?, *gz.get(at + 1)?]));
        at += 2 + len;
    }
    for bit in [8, 16] {
        if flags & bit != 0 {
            at += gz.get(at..)?.iter().position(|&b| b == 0)? + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    miniz_oxide::inflate::decompress_to_vec_with_limit(gz.get(at..)?, 64 * 1024 * 1024).ok()
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
