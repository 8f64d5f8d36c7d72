//! What an added file says about itself, read without running anything:
//! a wheel's member list (its zip central directory) and an npm tarball's
//! `package.json` and member list, through the bounded readers of
//! `egress-artifacts`. A file that cannot be read is flagged, never
//! skipped: a reviewer must know that a check was not made.

use crate::read::one_line;
use crate::{Flag, FlagKind};
use serde_json::Value;

/// The largest archive read (a wheel or npm tarball larger is flagged
/// `unreadable` and not inspected).
pub const MAX_ARCHIVE_BYTES: u64 = 256 * 1024 * 1024;

/// At most this many member paths are named in one flag.
const MAX_NAMED: usize = 5;

/// The npm lifecycle scripts npm runs at install time.
pub(crate) const INSTALL_SCRIPTS: [&str; 3] = ["preinstall", "install", "postinstall"];

/// `text` as a code span: one line, at most 200 characters, backticks
/// replaced, so that no text from a package can end the span in Markdown.
pub(crate) fn quote(text: &str) -> String {
    format!("`{}`", one_line(text).replace('`', "'"))
}

/// Up to [`MAX_NAMED`] paths quoted, and how many more.
fn named(paths: &[&str]) -> String {
    let mut out: Vec<String> = paths.iter().take(MAX_NAMED).map(|p| quote(p)).collect();
    if paths.len() > MAX_NAMED {
        out.push(format!("and {} more", paths.len() - MAX_NAMED));
    }
    out.join(", ")
}

/// The wheel's ABI tag (`none`, `abi3`, `cp311`), from its filename
/// `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`.
fn abi_tag(filename: &str) -> Option<&str> {
    let stem = filename.strip_suffix(".whl")?;
    let mut parts = stem.rsplit('-');
    let _platform = parts.next()?;
    parts.next()
}

/// The flags of an added wheel: `.pth` files, native code (an extension
/// module, or an ABI tag other than `none`).
pub(crate) fn wheel(filename: &str, bytes: &[u8]) -> Vec<Flag> {
    let mut flags = Vec::new();
    let members = match egress_artifacts::read_wheel_members(bytes) {
        Ok(m) => m,
        Err(e) => {
            flags.push(Flag::new(
                FlagKind::Unreadable,
                format!(
                    "the wheel's zip directory cannot be read ({e}); its members were not checked"
                ),
            ));
            Vec::new()
        }
    };
    let pth: Vec<&str> = members
        .iter()
        .map(String::as_str)
        .filter(|m| m.to_ascii_lowercase().ends_with(".pth"))
        .collect();
    if !pth.is_empty() {
        flags.push(Flag::new(
            FlagKind::PthFile,
            format!(
                "{}: Python runs a .pth file's import lines at every interpreter start",
                named(&pth)
            ),
        ));
    }
    let native: Vec<&str> = members
        .iter()
        .map(String::as_str)
        .filter(|m| {
            let m = m.to_ascii_lowercase();
            m.ends_with(".so") || m.contains(".so.") || m.ends_with(".pyd") || m.ends_with(".dylib")
        })
        .collect();
    if !native.is_empty() {
        flags.push(Flag::new(
            FlagKind::NativeCode,
            format!("native extension modules: {}", named(&native)),
        ));
    } else if let Some(abi) = abi_tag(filename).filter(|a| *a != "none") {
        flags.push(Flag::new(
            FlagKind::NativeCode,
            format!(
                "ABI tag {}: built against the interpreter's C API",
                quote(abi)
            ),
        ));
    }
    flags
}

/// The flags of an added npm tarball: install scripts, `binding.gyp`,
/// native addons (`.node` files).
pub(crate) fn npm_tarball(bytes: &[u8]) -> Vec<Flag> {
    let contents = match egress_artifacts::read_npm_package(bytes) {
        Ok(c) => c,
        Err(e) => {
            return vec![Flag::new(
                FlagKind::Unreadable,
                format!("the tarball or its package.json cannot be read ({e}); its scripts and files were not checked"),
            )]
        }
    };
    let mut flags = Vec::new();
    match serde_json::from_slice::<Value>(&contents.package_json) {
        Ok(doc) => {
            let scripts = doc.get("scripts").and_then(Value::as_object);
            for name in INSTALL_SCRIPTS {
                if let Some(script) = scripts.and_then(|s| s.get(name)) {
                    let text = script
                        .as_str()
                        .map_or_else(|| script.to_string(), str::to_string);
                    flags.push(Flag::new(
                        FlagKind::InstallScript,
                        format!("{name}: {}", quote(&text)),
                    ));
                }
            }
        }
        Err(e) => flags.push(Flag::new(
            FlagKind::Unreadable,
            format!(
                "package.json is not JSON ({}); its scripts were not checked",
                one_line(&e.to_string())
            ),
        )),
    }
    if contents.members.iter().any(|m| m == "binding.gyp") {
        flags.push(Flag::new(
            FlagKind::BindingGyp,
            "binding.gyp: npm runs node-gyp rebuild at install (a build, with the package's own build files)".into(),
        ));
        flags.push(Flag::new(
            FlagKind::NativeCode,
            "binding.gyp: builds a native addon".into(),
        ));
    }
    let addons: Vec<&str> = contents
        .members
        .iter()
        .map(String::as_str)
        .filter(|m| m.to_ascii_lowercase().ends_with(".node"))
        .collect();
    if !addons.is_empty() {
        flags.push(Flag::new(
            FlagKind::NativeCode,
            format!("native addons: {}", named(&addons)),
        ));
    }
    if contents.unlisted > 0 {
        flags.push(Flag::new(
            FlagKind::Unreadable,
            format!(
                "{} members past the first {} were not checked",
                contents.unlisted,
                egress_artifacts::MAX_LISTED_MEMBERS
            ),
        ));
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abi_tags_and_quotes() {
        assert_eq!(abi_tag("x-1.0-py3-none-any.whl"), Some("none"));
        assert_eq!(
            abi_tag("x-1.0-1-cp311-cp311-manylinux_2_17_x86_64.whl"),
            Some("cp311")
        );
        assert_eq!(abi_tag("x.tar.gz"), None);
        assert_eq!(quote("a`b\nc"), "`a'b c`");
        assert_eq!(quote(&"x".repeat(500)).len(), 202);
    }

    #[test]
    fn hostile_bytes_are_flagged_unreadable() {
        for bytes in [
            &b""[..],
            b"PK\x05\x06",
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0],
        ] {
            let w = wheel("x-1-py3-none-any.whl", bytes);
            assert_eq!(w.len(), 1);
            assert_eq!(w[0].flag, FlagKind::Unreadable);
            let n = npm_tarball(bytes);
            assert_eq!(n.len(), 1);
            assert_eq!(n[0].flag, FlagKind::Unreadable);
        }
    }
}
