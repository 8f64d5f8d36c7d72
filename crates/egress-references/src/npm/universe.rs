//! The npm canary's universe content (see [`crate::universe`]): served
//! beside the canary's own packages when it starts with a [`Universe`]
//! (`NpmCanary::start_with(Universe::default())`), never otherwise.
//!
//! Every version is published at the time its row gives (RFC 3339;
//! "before" and "after" are relative to [`UNIVERSE_CUTOFF`],
//! 2025-06-01T00:00:00Z). The full packument lists it in `time` as
//! registry.npmjs.org writes it (`2024-02-01T12:00:00.000Z`), with
//! `time.created` (the first publish) and `time.modified` (the last);
//! `dist-tags` are the table's [`DIST_TAGS`] (`latest` is the newest
//! release, even when it is after the cutoff; prereleases and backports
//! were published under their own tag, as `npm publish --tag` does). Each
//! version lists `dist.integrity` (sha512 SRI), `dist.shasum` (sha1 hex,
//! which the canary's own packages leave out), `dist.tarball` and
//! `dist.signatures`, and its package.json fields: `dependencies`,
//! `peerDependencies`, `peerDependenciesMeta`, `optionalDependencies`,
//! `os`, `cpu`, `libc`, `scripts`, which the tarball's own `package.json`
//! holds too. The abbreviated packument (`Accept:
//! application/vnd.npm.install-v1+json`) gives per version `name`,
//! `version`, `dependencies`, the other dependency fields and the platform
//! fields when set, `dist` and `hasInstallScript`, and `modified` instead
//! of `time`.
//!
//! | package | version | published | what it says |
//! |---|---|---|---|
//! | `eu-app` | 1.0.0 | 2024-02-01T12:00:00Z (before) | see below |
//! | `eu-app` | 1.1.0 | 2024-06-15T12:00:00Z (before) | the same |
//! | `eu-app` | 1.2.0-beta.1 | 2025-04-10T12:00:00Z (before; dist-tag `beta`) | the same |
//! | `eu-app` | 2.0.0 | 2025-07-15T12:00:00Z (**after**; `latest`) | the same |
//! | `eu-lib` | 1.0.0 | 2024-01-05T12:00:00Z (before) | |
//! | `eu-lib` | 1.3.0 | 2024-05-20T12:00:00Z (before) | |
//! | `eu-lib` | 2.0.0 | 2025-03-01T12:00:00Z (before; `latest`) | |
//! | `eu-lib` | 1.4.0 | 2025-06-20T12:00:00Z (**after**; dist-tag `legacy`) | |
//! | `eu-peer` | 2.0.0 | 2024-01-15T12:00:00Z (before) | |
//! | `eu-peer` | 2.1.0 | 2024-08-01T12:00:00Z (before; `latest`) | |
//! | `eu-peer-opt` | 1.0.0 | 2024-01-25T12:00:00Z (before) | an optional peer of `eu-app`: never followed |
//! | `@eu/native-linux-x64-gnu` | 1.0.0 | 2024-01-30T12:00:00Z (before) | `os: ["linux"], cpu: ["x64"], libc: ["glibc"]` |
//! | `@eu/native-linux-x64-musl` | 1.0.0 | 2024-01-30T12:01:00Z (before) | `os: ["linux"], cpu: ["x64"], libc: ["musl"]` |
//! | `@eu/native-darwin-arm64` | 1.0.0 | 2024-01-30T12:02:00Z (before) | `os: ["darwin"], cpu: ["arm64"]` |
//! | `@eu/native-win32-x64` | 1.0.0 | 2024-01-30T12:03:00Z (before) | `os: ["win32"], cpu: ["x64"]` |
//! | `eu-scripted` | 1.0.0 | 2024-03-10T12:00:00Z (before) | `scripts.postinstall` (harmless: it only echoes) |
//!
//! Every `eu-app` version has `dependencies: {"eu-lib": "^1.0.0"}`,
//! `peerDependencies: {"eu-peer": "^2.0.0", "eu-peer-opt": "*"}`,
//! `peerDependenciesMeta: {"eu-peer-opt": {"optional": true}}` and
//! `optionalDependencies` on the four `@eu/native-*` packages at `1.0.0`.
//!
//! With [`Universe::no_time`] ([`Universe::with_no_time`]) also
//! [`NO_TIME`] (`eu-no-time` 1.0.0, `latest`), whose packuments have no
//! `time` (full) and no `modified` (abbreviated).

use crate::universe::unix_secs;
pub use crate::universe::{Universe, UNIVERSE_CUTOFF};
use egress_artifacts::NpmPackageSpec;
use std::collections::BTreeMap;

/// Depends on `eu-lib`, peers on `eu-peer` (and optionally `eu-peer-opt`),
/// optionally on the four native packages.
pub const APP: &str = "eu-app";
/// `eu-app`'s dependency: 1.4.0 after the cutoff, 2.0.0 (outside `^1`)
/// before it.
pub const LIB: &str = "eu-lib";
/// `eu-app`'s peer.
pub const PEER: &str = "eu-peer";
/// `eu-app`'s optional peer: never followed by a closure.
pub const PEER_OPT: &str = "eu-peer-opt";
/// Linux, x64, glibc.
pub const NATIVE_LINUX_X64_GNU: &str = "@eu/native-linux-x64-gnu";
/// Linux, x64, musl.
pub const NATIVE_LINUX_X64_MUSL: &str = "@eu/native-linux-x64-musl";
/// macOS, arm64.
pub const NATIVE_DARWIN_ARM64: &str = "@eu/native-darwin-arm64";
/// Windows, x64.
pub const NATIVE_WIN32_X64: &str = "@eu/native-win32-x64";
/// A version with a `postinstall` script.
pub const SCRIPTED: &str = "eu-scripted";
/// Served only with [`Universe::no_time`]: packuments without times.
pub const NO_TIME: &str = "eu-no-time";

/// The universe's packages, in table order; [`NO_TIME`] follows when
/// asked for.
pub const PACKAGES: [&str; 9] = [
    APP,
    LIB,
    PEER,
    PEER_OPT,
    NATIVE_LINUX_X64_GNU,
    NATIVE_LINUX_X64_MUSL,
    NATIVE_DARWIN_ARM64,
    NATIVE_WIN32_X64,
    SCRIPTED,
];

/// `scripts.postinstall` of `eu-scripted` 1.0.0.
pub const SCRIPTED_POSTINSTALL: &str = "echo eu-scripted postinstall";

/// Every dist-tag of every package: `(package, tag, version)`.
pub const DIST_TAGS: &[(&str, &str, &str)] = &[
    (APP, "latest", "2.0.0"),
    (APP, "beta", "1.2.0-beta.1"),
    (LIB, "latest", "2.0.0"),
    (LIB, "legacy", "1.4.0"),
    (PEER, "latest", "2.1.0"),
    (PEER_OPT, "latest", "1.0.0"),
    (NATIVE_LINUX_X64_GNU, "latest", "1.0.0"),
    (NATIVE_LINUX_X64_MUSL, "latest", "1.0.0"),
    (NATIVE_DARWIN_ARM64, "latest", "1.0.0"),
    (NATIVE_WIN32_X64, "latest", "1.0.0"),
    (SCRIPTED, "latest", "1.0.0"),
    (NO_TIME, "latest", "1.0.0"),
];

/// Name to range.
pub type Ranges = &'static [(&'static str, &'static str)];

/// One row of the table: a version and what its package.json says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub package: &'static str,
    pub version: &'static str,
    /// RFC 3339: when it was published.
    pub published: &'static str,
    pub dependencies: Ranges,
    pub peer_dependencies: Ranges,
    /// Peers `peerDependenciesMeta` marks optional.
    pub optional_peers: &'static [&'static str],
    pub optional_dependencies: Ranges,
    pub os: &'static [&'static str],
    pub cpu: &'static [&'static str],
    pub libc: &'static [&'static str],
    /// `scripts` (name to command).
    pub scripts: Ranges,
}

const fn plain(package: &'static str, version: &'static str, published: &'static str) -> Release {
    Release {
        package,
        version,
        published,
        dependencies: &[],
        peer_dependencies: &[],
        optional_peers: &[],
        optional_dependencies: &[],
        os: &[],
        cpu: &[],
        libc: &[],
        scripts: &[],
    }
}

const fn app(version: &'static str, published: &'static str) -> Release {
    Release {
        dependencies: &[(LIB, "^1.0.0")],
        peer_dependencies: &[(PEER, "^2.0.0"), (PEER_OPT, "*")],
        optional_peers: &[PEER_OPT],
        optional_dependencies: &[
            (NATIVE_LINUX_X64_GNU, "1.0.0"),
            (NATIVE_LINUX_X64_MUSL, "1.0.0"),
            (NATIVE_DARWIN_ARM64, "1.0.0"),
            (NATIVE_WIN32_X64, "1.0.0"),
        ],
        ..plain(APP, version, published)
    }
}

/// The table (see the module docs), in publishing order within each
/// package.
pub const RELEASES: &[Release] = &[
    app("1.0.0", "2024-02-01T12:00:00Z"),
    app("1.1.0", "2024-06-15T12:00:00Z"),
    app("1.2.0-beta.1", "2025-04-10T12:00:00Z"),
    app("2.0.0", "2025-07-15T12:00:00Z"),
    plain(LIB, "1.0.0", "2024-01-05T12:00:00Z"),
    plain(LIB, "1.3.0", "2024-05-20T12:00:00Z"),
    plain(LIB, "2.0.0", "2025-03-01T12:00:00Z"),
    plain(LIB, "1.4.0", "2025-06-20T12:00:00Z"),
    plain(PEER, "2.0.0", "2024-01-15T12:00:00Z"),
    plain(PEER, "2.1.0", "2024-08-01T12:00:00Z"),
    plain(PEER_OPT, "1.0.0", "2024-01-25T12:00:00Z"),
    Release {
        os: &["linux"],
        cpu: &["x64"],
        libc: &["glibc"],
        ..plain(NATIVE_LINUX_X64_GNU, "1.0.0", "2024-01-30T12:00:00Z")
    },
    Release {
        os: &["linux"],
        cpu: &["x64"],
        libc: &["musl"],
        ..plain(NATIVE_LINUX_X64_MUSL, "1.0.0", "2024-01-30T12:01:00Z")
    },
    Release {
        os: &["darwin"],
        cpu: &["arm64"],
        ..plain(NATIVE_DARWIN_ARM64, "1.0.0", "2024-01-30T12:02:00Z")
    },
    Release {
        os: &["win32"],
        cpu: &["x64"],
        ..plain(NATIVE_WIN32_X64, "1.0.0", "2024-01-30T12:03:00Z")
    },
    Release {
        scripts: &[("postinstall", SCRIPTED_POSTINSTALL)],
        ..plain(SCRIPTED, "1.0.0", "2024-03-10T12:00:00Z")
    },
];

/// [`NO_TIME`]'s release: published then, listed without the time.
pub const NO_TIME_RELEASES: &[Release] = &[plain(NO_TIME, "1.0.0", "2024-05-01T12:00:00Z")];

/// A package to serve: its versions with their publish times (Unix
/// seconds), in publishing order, its dist-tags, and whether its
/// packuments list times.
pub(crate) struct UniversePackage {
    pub(crate) name: &'static str,
    pub(crate) versions: Vec<(NpmPackageSpec, u64)>,
    pub(crate) dist_tags: BTreeMap<String, String>,
    pub(crate) dated: bool,
}

/// The packages `universe` asks for, in [`PACKAGES`] order, then
/// [`NO_TIME`].
pub(crate) fn packages(universe: Universe) -> Vec<UniversePackage> {
    let mut out: Vec<UniversePackage> = PACKAGES
        .iter()
        .map(|p| package(p, RELEASES, true))
        .collect();
    if universe.no_time {
        out.push(package(NO_TIME, NO_TIME_RELEASES, false));
    }
    out
}

fn package(name: &'static str, table: &[Release], dated: bool) -> UniversePackage {
    let versions = table
        .iter()
        .filter(|r| r.package == name)
        .map(|r| (spec(r), unix_secs(r.published)))
        .collect();
    let dist_tags = DIST_TAGS
        .iter()
        .filter(|(p, _, _)| *p == name)
        .map(|(_, tag, v)| (tag.to_string(), v.to_string()))
        .collect();
    UniversePackage {
        name,
        versions,
        dist_tags,
        dated,
    }
}

fn spec(r: &Release) -> NpmPackageSpec {
    let map = |ranges: Ranges| -> BTreeMap<String, String> {
        ranges
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let list = |items: &[&str]| -> Vec<String> { items.iter().map(|s| s.to_string()).collect() };
    let description = format!("Universe fixture {} {}", r.package, r.version);
    let mut s = super::kit::spec(r.package, r.version, &description);
    s.dependencies = map(r.dependencies);
    s.peer_dependencies = map(r.peer_dependencies);
    s.optional_peers = list(r.optional_peers);
    s.optional_dependencies = map(r.optional_dependencies);
    s.os = list(r.os);
    s.cpu = list(r.cpu);
    s.libc = list(r.libc);
    s.scripts = map(r.scripts);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_on_either_side_of_the_cutoff() {
        let cutoff = unix_secs(UNIVERSE_CUTOFF);
        let after: Vec<(&str, &str)> = RELEASES
            .iter()
            .filter(|r| unix_secs(r.published) > cutoff)
            .map(|r| (r.package, r.version))
            .collect();
        assert_eq!(after, [(APP, "2.0.0"), (LIB, "1.4.0")]);
        for r in RELEASES.iter().chain(NO_TIME_RELEASES) {
            assert_ne!(unix_secs(r.published), cutoff, "{r:?}");
            assert!(r.published.ends_with(":00Z"), "{r:?}");
        }
        // Every tag names a version of the table, every package has `latest`.
        for (p, _, v) in DIST_TAGS {
            assert!(
                RELEASES
                    .iter()
                    .chain(NO_TIME_RELEASES)
                    .any(|r| r.package == *p && r.version == *v),
                "{p} {v}"
            );
        }
        for p in PACKAGES.iter().chain([&NO_TIME]) {
            assert!(
                DIST_TAGS
                    .iter()
                    .any(|(q, tag, _)| q == p && *tag == "latest"),
                "{p}"
            );
        }
    }

    #[test]
    fn the_tarballs_say_what_the_table_says() {
        let all = packages(Universe::with_no_time());
        assert_eq!(all.len(), PACKAGES.len() + 1);
        let app = &all[0];
        assert_eq!(app.versions.len(), 4);
        let doc = app.versions[0].0.package_json();
        assert_eq!(doc["dependencies"], serde_json::json!({ LIB: "^1.0.0" }));
        assert_eq!(
            doc["peerDependenciesMeta"],
            serde_json::json!({ PEER_OPT: { "optional": true } })
        );
        assert_eq!(doc["optionalDependencies"].as_object().unwrap().len(), 4);
        let gnu = &all[4].versions[0].0;
        assert_eq!(gnu.name, NATIVE_LINUX_X64_GNU);
        assert_eq!(gnu.libc, ["glibc"]);
        let scripted = &all[8].versions[0].0;
        assert!(scripted.has_install_script());
        assert_eq!(
            egress_artifacts::build_npm_tarball(gnu).filename,
            "native-linux-x64-gnu-1.0.0.tgz"
        );
    }
}
