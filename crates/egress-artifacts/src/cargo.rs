//! `.crate` files made by our code: a gzipped tar of `NAME-VERSION/` with
//! `Cargo.toml`, `Cargo.toml.orig` and `src/lib.rs`, as `cargo package`
//! lays one out. Identical inputs give identical bytes.

use crate::sdist::{gzip, write_tar, TarEntry};

/// A crate to build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateSpec {
    pub name: String,
    pub version: String,
    /// `package.description`; written as a TOML basic string.
    pub description: String,
    /// `README.md`, listed as `package.readme` when given.
    pub readme: Option<String>,
    pub lib_rs: String,
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl CrateSpec {
    /// The manifest as `cargo package` normalises it.
    pub fn cargo_toml(&self) -> String {
        let readme = self
            .readme
            .as_ref()
            .map(|_| "readme = \"README.md\"\n")
            .unwrap_or_default();
        format!(
            "[package]\nedition = \"2021\"\nname = {}\nversion = {}\ndescription = {}\nlicense = \"MIT\"\n{readme}\n[lib]\npath = \"src/lib.rs\"\n",
            toml_string(&self.name),
            toml_string(&self.version),
            toml_string(&self.description),
        )
    }
}

/// Builds the `.crate`.
///
/// # Panics
/// If the name or version holds a `/` or is empty: a bug in the calling
/// fixture code.
pub fn build_crate(spec: &CrateSpec) -> Vec<u8> {
    let ok = |s: &str| !s.is_empty() && !s.contains('/') && s != "." && s != "..";
    assert!(
        ok(&spec.name) && ok(&spec.version),
        "invalid crate {spec:?}"
    );
    let top = format!("{}-{}", spec.name, spec.version);
    let toml = spec.cargo_toml().into_bytes();
    let mut entries = vec![
        (format!("{top}/"), TarEntry::Dir),
        (format!("{top}/Cargo.toml"), TarEntry::File(toml.clone())),
        (format!("{top}/Cargo.toml.orig"), TarEntry::File(toml)),
    ];
    if let Some(readme) = &spec.readme {
        entries.push((
            format!("{top}/README.md"),
            TarEntry::File(readme.clone().into_bytes()),
        ));
    }
    entries.push((format!("{top}/src/"), TarEntry::Dir));
    entries.push((
        format!("{top}/src/lib.rs"),
        TarEntry::File(spec.lib_rs.clone().into_bytes()),
    ));
    gzip(&write_tar(&entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_reproducible_crate_with_its_manifest() {
        let spec = CrateSpec {
            name: "ec-x".into(),
            version: "1.0.0".into(),
            description: "a \"quoted\" {{7*7}}".into(),
            readme: Some("# x\n".into()),
            lib_rs: "pub fn f() {}\n".into(),
        };
        let a = build_crate(&spec);
        assert_eq!(a, build_crate(&spec));
        let tar = crate::gunzip(&a, 1 << 20).unwrap();
        let text = String::from_utf8_lossy(&tar);
        assert!(text.contains("ec-x-1.0.0/Cargo.toml"));
        assert!(text.contains("ec-x-1.0.0/src/lib.rs"));
        assert!(text.contains("description = \"a \\\"quoted\\\" {{7*7}}\""));
        let other = CrateSpec {
            lib_rs: "pub fn g() {}\n".into(),
            ..spec
        };
        assert_ne!(a, build_crate(&other));
    }
}
