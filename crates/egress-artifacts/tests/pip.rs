//! The artifacts are only useful if the real pip accepts them, so these tests
//! hand them to `python3 -m pip` and read back what pip and Python produce.

use egress_artifacts::{
    build_sdist, build_wheel, core_metadata, read_sdist_pkg_info, read_wheel_metadata, SdistSpec,
    WheelSpec,
};
use egress_model::{ProjectName, Version};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "egress-artifacts-{tag}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
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

/// Runs python3 with pip kept offline and quiet about its own version.
fn python(args: &[&str], cwd: &Path) -> Output {
    let out = Command::new("python3")
        .args(args)
        .current_dir(cwd)
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1")
        .env("PIP_NO_CACHE_DIR", "1")
        .output()
        .expect("python3 must be installed to run these tests");
    if !out.status.success() {
        eprintln!(
            "python3 {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out
}

fn python_ok(code: &str, cwd: &Path) -> bool {
    Command::new("python3")
        .args(["-c", code])
        .current_dir(cwd)
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn pip_installs_the_wheel() {
    let tmp = TempDir::new("wheel");
    let spec = WheelSpec {
        name: ProjectName::new("ec-present").unwrap(),
        version: Version::new("1.0.0").unwrap(),
        summary: "present in the snapshot".into(),
        description: "Installed by the conformance suite.\n".into(),
        requires_python: Some(">=3.7".into()),
        files: vec![
            ("ec_present/__init__.py".into(), b"VALUE = 42\n".to_vec()),
            ("ec_present/sub/data.txt".into(), b"data\n".to_vec()),
        ],
    };
    let built = build_wheel(&spec);
    let wheel = tmp.0.join(&built.filename);
    std::fs::write(&wheel, &built.bytes).unwrap();

    // Python's own zip reader checks every crc and header.
    let check = format!(
        "import zipfile,sys; sys.exit(zipfile.ZipFile({:?}).testzip() is not None)",
        wheel.display().to_string()
    );
    assert!(python_ok(&check, &tmp.0), "zipfile.testzip failed");

    let target = tmp.0.join("site");
    let out = python(
        &[
            "-m",
            "pip",
            "install",
            "--no-index",
            "--no-deps",
            "--target",
            target.to_str().unwrap(),
            wheel.to_str().unwrap(),
        ],
        &tmp.0,
    );
    assert!(out.status.success(), "pip install failed");
    assert_eq!(
        std::fs::read(target.join("ec_present/__init__.py")).unwrap(),
        b"VALUE = 42\n"
    );
    assert_eq!(
        std::fs::read(target.join("ec_present/sub/data.txt")).unwrap(),
        b"data\n"
    );
    assert_eq!(
        std::fs::read(target.join("ec_present-1.0.0.dist-info/METADATA")).unwrap(),
        core_metadata(&spec)
    );
    let import = "import sys; sys.path.insert(0, 'site'); import ec_present; sys.exit(ec_present.VALUE != 42)";
    assert!(
        python_ok(import, &tmp.0),
        "installed module does not import"
    );
}

#[test]
fn pip_builds_the_sdist() {
    let tmp = TempDir::new("sdist");
    if !python_ok("import setuptools", &tmp.0) {
        eprintln!("note: setuptools is not importable; skipping the sdist build check");
        return;
    }
    // setuptools before 70.1 builds wheels through the separate `wheel`
    // package; without it the build cannot run however good the sdist is.
    if !python_ok(
        "try:\n import setuptools.command.bdist_wheel\nexcept ImportError:\n import wheel",
        &tmp.0,
    ) {
        eprintln!(
            "note: neither setuptools>=70.1 nor the `wheel` package is importable; skipping the sdist build check"
        );
        return;
    }
    let spec = SdistSpec {
        name: ProjectName::new("ec-built").unwrap(),
        version: Version::new("0.2.0").unwrap(),
        summary: "built from source".into(),
        setup_py: "from setuptools import setup\nsetup(name='ec-built', version='0.2.0', py_modules=['ec_built'])\n".into(),
        files: vec![("ec_built.py".into(), b"BUILT = True\n".to_vec())],
    };
    let built = build_sdist(&spec);
    assert_eq!(built.filename, "ec_built-0.2.0.tar.gz");
    let sdist = tmp.0.join(&built.filename);
    std::fs::write(&sdist, &built.bytes).unwrap();

    let out_dir = tmp.0.join("out");
    let out = python(
        &[
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            out_dir.to_str().unwrap(),
            sdist.to_str().unwrap(),
        ],
        &tmp.0,
    );
    assert!(out.status.success(), "pip wheel failed");
    let wheel = out_dir.join("ec_built-0.2.0-py3-none-any.whl");
    // A wheel from setuptools is a zip we did not write: read it too.
    let metadata = read_wheel_metadata(&std::fs::read(&wheel).unwrap()).unwrap();
    let metadata = String::from_utf8(metadata).unwrap();
    assert!(metadata.contains("\nName: ec-built\n"), "{metadata}");
    assert!(metadata.contains("\nVersion: 0.2.0\n"), "{metadata}");
}

#[test]
fn reads_pkg_info_from_a_python_written_sdist() {
    let tmp = TempDir::new("tarfile");
    // PAX format with a path too long for ustar, as Python's tarfile writes
    // by default; the sdist must be found through the pax `path` record.
    let long = "d".repeat(120);
    let script = format!(
        r#"
import io, tarfile
def add(t, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))
with tarfile.open("py.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as t:
    add(t, "x-1/{long}/f.py", b"")
    add(t, "x-1/PKG-INFO", b"Metadata-Version: 2.1\nName: x\n")
    add(t, "x-1/{long}/PKG-INFO", b"nested")
"#
    );
    assert!(python_ok(&script, &tmp.0), "tarfile script failed");
    let bytes = std::fs::read(tmp.0.join("py.tar.gz")).unwrap();
    assert_eq!(
        read_sdist_pkg_info(&bytes).unwrap(),
        b"Metadata-Version: 2.1\nName: x\n"
    );

    let evil = r#"
import io, tarfile
with tarfile.open("evil.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as t:
    info = tarfile.TarInfo("x-1/PKG-INFO")
    t.addfile(info, io.BytesIO(b""))
    info = tarfile.TarInfo("x-1/" + "../" * 40 + "etc/evil")
    t.addfile(info, io.BytesIO(b""))
"#;
    assert!(python_ok(evil, &tmp.0), "tarfile script failed");
    let bytes = std::fs::read(tmp.0.join("evil.tar.gz")).unwrap();
    assert!(read_sdist_pkg_info(&bytes).is_err());
}
