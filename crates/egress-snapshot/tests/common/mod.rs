//! Scaffolding shared by this crate's integration tests.

use egress_artifacts::{build_wheel, BuiltDist, WheelSpec};
use egress_model::{ProjectName, Version};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh directory `<temp>/<name>-<pid>-<n>`, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(name: &str) -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A pure wheel `name`-`version` with one module.
pub(crate) fn wheel(
    name: &str,
    version: &str,
    description: &str,
    requires_python: Option<&str>,
) -> BuiltDist {
    build_wheel(&WheelSpec {
        name: ProjectName::new(name).unwrap(),
        version: Version::new(version).unwrap(),
        summary: format!("{name} {version}"),
        description: description.into(),
        requires_python: requires_python.map(str::to_string),
        files: vec![(
            format!("{}/__init__.py", name.replace('-', "_")),
            format!("V = {version:?}\n").into_bytes(),
        )],
    })
}
