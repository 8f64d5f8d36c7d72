//! Canary snapshots for `snapshot diff`: a pair (OLD, NEW) in which NEW adds
//! one package made for each flag, and removes one project and one npm
//! package. The crate's tests and the command line's test diff them; a lab
//! can too, to see what a reviewer is shown. Every byte is made by
//! `egress-artifacts`' builders and signed by a fixed key, so the pair is
//! the same on every run.

use egress_artifacts::{
    build_npm_tarball, build_sdist, build_wheel, build_wheel_with, NpmPackageSpec, SdistSpec,
    WheelExtras, WheelSpec,
};
use egress_model::{ProjectName, Version};
use egress_signing::SigningKey;
use egress_snapshot::{NpmMaintainer, NpmVersionMeta, Selection, SnapshotBuilder, SnapshotError};
use std::path::Path;

/// The fixed signing key of the pair (not a secret: a fixture).
pub fn key() -> SigningKey {
    SigningKey::from_seed([7; 32], "egress-diff-fixtures")
}

/// NEW's cutoff; OLD's is a month earlier.
pub const NEW_CUTOFF: &str = "2026-06-01T00:00:00Z";
const OLD_CUTOFF: &str = "2026-05-01T00:00:00Z";
const REGISTRY: &str = "http://127.0.0.1:8/";

fn wheel_spec(
    name: &str,
    version: &str,
    files: Vec<(String, Vec<u8>)>,
) -> Result<WheelSpec, SnapshotError> {
    let bad = |e: &dyn std::fmt::Display| SnapshotError::Inconsistent(e.to_string());
    Ok(WheelSpec {
        name: ProjectName::new(name).map_err(|e| bad(&e))?,
        version: Version::new(version).map_err(|e| bad(&e))?,
        summary: format!("{name}, a diff canary"),
        description: String::new(),
        requires_python: None,
        files,
    })
}

fn module(name: &str) -> Vec<(String, Vec<u8>)> {
    vec![(
        format!("{}/__init__.py", name.replace('-', "_")),
        b"X = 1\n".to_vec(),
    )]
}

fn person(name: &str) -> NpmMaintainer {
    NpmMaintainer {
        name: name.to_string(),
        email: Some(format!("{name}@example.org")),
    }
}

fn npm(
    b: &mut SnapshotBuilder,
    spec: &NpmPackageSpec,
    published: &str,
    maintainers: &[&str],
) -> Result<(), SnapshotError> {
    let t = build_npm_tarball(spec);
    let meta = NpmVersionMeta {
        published: Some(published.to_string()),
        has_install_script: spec.has_install_script(),
        maintainers: maintainers.iter().map(|m| person(m)).collect(),
        ..NpmVersionMeta::default()
    };
    b.add_npm_tarball_with(
        &spec.name,
        &spec.version,
        &t.filename,
        t.bytes,
        &t.integrity,
        meta,
    )
}

/// What both snapshots hold: `requests` 1.0.0, `mylib` 1.4.0 (wheels),
/// npm `ec-lib` 1.2.0 (maintainer alice), `left-pad` 1.3.0.
fn common(b: &mut SnapshotBuilder) -> Result<(), SnapshotError> {
    b.npm_registry_url(REGISTRY)?;
    for (name, version, at) in [
        ("requests", "1.0.0", "2026-01-10T10:00:00Z"),
        ("mylib", "1.4.0", "2026-02-10T10:00:00Z"),
    ] {
        let w = build_wheel(&wheel_spec(name, version, module(name))?);
        b.add_dist_with(&w.filename, w.bytes, None, Some(at.into()))?;
    }
    npm(
        b,
        &NpmPackageSpec::new("ec-lib", "1.2.0", "a library", "module.exports = 1;\n"),
        "2026-02-01T00:00:00.000Z",
        &["alice"],
    )?;
    npm(
        b,
        &NpmPackageSpec::new("left-pad", "1.3.0", "pads", "module.exports = 1;\n"),
        "2026-01-01T00:00:00.000Z",
        &["bob"],
    )
}

/// OLD: [`common`], with `oldproj` 0.1.0 and npm `ec-gone` 1.0.0.
pub fn old() -> Result<egress_snapshot::Snapshot, SnapshotError> {
    let mut b = SnapshotBuilder::new("/simple/");
    common(&mut b)?;
    let w = build_wheel(&wheel_spec("oldproj", "0.1.0", module("oldproj"))?);
    b.add_dist_with(
        &w.filename,
        w.bytes,
        None,
        Some("2025-12-01T00:00:00Z".into()),
    )?;
    npm(
        &mut b,
        &NpmPackageSpec::new("ec-gone", "1.0.0", "removed in NEW", ""),
        "2025-12-01T00:00:00.000Z",
        &["carol"],
    )?;
    b.selection(Selection {
        exclude_newer: Some(OLD_CUTOFF.into()),
        ..Selection::default()
    });
    b.build("2026-05-02T00:00:00Z", Some(&key()), "egress-diff-fixtures")
}

/// NEW: [`common`] and one canary per flag:
/// - PyPI `reqeusts` 2.31.0, an sdist only, uploaded two days before the
///   cutoff (similar-name, sdist-only, recent-upload);
/// - PyPI `mylib` 2.0.0: a wheel with a `.pth` file and a native
///   `cp311` wheel with an extension module (pth-file, native-code,
///   major-jump);
/// - npm `ec-lib` 2.0.0, with a `postinstall` script, published by mallory
///   (install-script, maintainers-changed, major-jump);
/// - npm `ec-gyp` 1.0.0 with `binding.gyp` and a `.node` addon
///   (binding-gyp, native-code);
/// - npm `lodahs` 4.17.21 (similar-name);
///
/// and without `oldproj` and `ec-gone`.
pub fn new() -> Result<egress_snapshot::Snapshot, SnapshotError> {
    let mut b = SnapshotBuilder::new("/simple/");
    common(&mut b)?;
    let bad = |e: &dyn std::fmt::Display| SnapshotError::Inconsistent(e.to_string());
    let sdist = build_sdist(&SdistSpec {
        name: ProjectName::new("reqeusts").map_err(|e| bad(&e))?,
        version: Version::new("2.31.0").map_err(|e| bad(&e))?,
        summary: "not requests".into(),
        setup_py: "from setuptools import setup\nsetup(name='reqeusts', version='2.31.0')\n".into(),
        files: Vec::new(),
    });
    b.add_dist_with(
        &sdist.filename,
        sdist.bytes,
        None,
        Some("2026-05-30T12:00:00Z".into()),
    )?;
    let mut files = module("mylib");
    files.push(("mylib-hook.pth".into(), b"import mylib\n".to_vec()));
    let pure = build_wheel(&wheel_spec("mylib", "2.0.0", files)?);
    b.add_dist_with(
        &pure.filename,
        pure.bytes,
        None,
        Some("2026-03-01T00:00:00Z".into()),
    )?;
    let mut files = module("mylib");
    files.push((
        "mylib/_speedups.cpython-311-x86_64-linux-gnu.so".into(),
        vec![0x7f, b'E', b'L', b'F'],
    ));
    let native = build_wheel_with(
        &wheel_spec("mylib", "2.0.0", files)?,
        &WheelExtras {
            tag: Some("cp311-cp311-manylinux_2_17_x86_64".into()),
            ..WheelExtras::default()
        },
    );
    b.add_dist_with(
        &native.filename,
        native.bytes,
        None,
        Some("2026-03-01T00:00:00Z".into()),
    )?;

    let mut lib = NpmPackageSpec::new("ec-lib", "2.0.0", "a library", "module.exports = 2;\n");
    lib.scripts.insert(
        "postinstall".into(),
        "node -e \"require('child_process')\"".into(),
    );
    npm(&mut b, &lib, "2026-04-01T00:00:00.000Z", &["mallory"])?;
    let mut gyp = NpmPackageSpec::new("ec-gyp", "1.0.0", "a native addon", "module.exports = 3;\n");
    gyp.files
        .push(("binding.gyp".into(), b"{\"targets\": []}\n".to_vec()));
    gyp.files.push((
        "build/Release/addon.node".into(),
        vec![0x7f, b'E', b'L', b'F'],
    ));
    npm(&mut b, &gyp, "2026-03-15T00:00:00.000Z", &["dave"])?;
    npm(
        &mut b,
        &NpmPackageSpec::new("lodahs", "4.17.21", "not lodash", "module.exports = 4;\n"),
        "2026-03-20T00:00:00.000Z",
        &["eve"],
    )?;
    b.selection(Selection {
        exclude_newer: Some(NEW_CUTOFF.into()),
        ..Selection::default()
    });
    b.build("2026-06-02T00:00:00Z", Some(&key()), "egress-diff-fixtures")
}

/// Writes OLD to `dir/old` and NEW to `dir/new`.
pub fn write_pair(dir: &Path) -> Result<(), SnapshotError> {
    old()?.write_dir(&dir.join("old"))?;
    new()?.write_dir(&dir.join("new"))
}
