//! The proxy's "package scan": what install-testing proxies do on a
//! tarball's first fetch. It reads `package.json` from the tarball and runs
//! the effect of its install-time lifecycle scripts, modelled as performing
//! every `http://` request they name (to loopback only).

use crate::loopback::is_loopback_url;
use crate::relay::limits;
use egress_artifacts::{read_top_level_file, TopLevelFile};
use egress_model::Url;
use egress_transcript::Client;
use std::time::Duration;

/// The lifecycle scripts npm runs when it installs a package.
const INSTALL_SCRIPTS: [&str; 3] = ["preinstall", "install", "postinstall"];

/// "Scans" `tgz`: GETs every `http://` URL in its install scripts whose host
/// is loopback. Returns the URLs requested.
pub(super) fn run_install_scripts(tgz: &[u8]) -> Vec<String> {
    let Some(manifest) = package_json(tgz) else {
        return Vec::new();
    };
    let mut called = Vec::new();
    for target in script_urls(&manifest) {
        let Ok(url) = Url::parse(&target) else {
            continue;
        };
        if !is_loopback_url(&url) {
            continue;
        }
        if let Ok(client) = Client::new(url.clone(), limits(Duration::from_secs(5)), None) {
            let _ = client.get("npm proxy: install script", url.path_and_query(), None);
            called.push(target);
        }
    }
    called
}

/// The `http://` URLs in the install scripts of a package.json document.
pub(super) fn script_urls(manifest: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for script in INSTALL_SCRIPTS {
        let Some(text) = manifest["scripts"][script].as_str() else {
            continue;
        };
        let mut rest = text;
        while let Some(i) = rest.find("http://") {
            let from = &rest[i..];
            let end = from
                .find(|c: char| {
                    !c.is_ascii_graphic()
                        || matches!(c, '\'' | '"' | '`' | '(' | ')' | '\\' | '<' | '>')
                })
                .unwrap_or(from.len());
            out.push(from[..end].to_string());
            rest = &from[end.max("http://".len())..];
        }
    }
    out
}

/// `{top}/package.json` of a package tarball, parsed.
pub(super) fn package_json(tgz: &[u8]) -> Option<serde_json::Value> {
    let manifest = read_top_level_file(tgz, TopLevelFile::PackageJson).ok()?;
    serde_json::from_slice(&manifest).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use egress_artifacts::{build_npm_tarball, NpmPackageSpec};

    #[test]
    fn reads_package_json_and_finds_script_urls() {
        let mut spec = NpmPackageSpec::new("@ec/x", "1.0.0", "d", "module.exports = 1;\n");
        spec.scripts.insert(
            "postinstall".into(),
            "node -e \"require('http').get('http://127.0.0.1:9/tripwire/x').on('error', () => {})\""
                .into(),
        );
        spec.scripts.insert(
            "preinstall".into(),
            "curl http://a.example/b?c=d && true".into(),
        );
        spec.scripts
            .insert("test".into(), "curl http://127.0.0.1:9/not-install".into());
        let tgz = build_npm_tarball(&spec);
        let manifest = package_json(&tgz.bytes).unwrap();
        assert_eq!(manifest["name"], "@ec/x");
        assert_eq!(
            script_urls(&manifest),
            ["http://a.example/b?c=d", "http://127.0.0.1:9/tripwire/x"]
        );
        assert_eq!(package_json(b"not a tarball"), None);
        assert!(script_urls(&serde_json::json!({"scripts": {"install": "http://"}})).len() == 1);
    }
}
