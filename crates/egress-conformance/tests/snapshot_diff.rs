//! `snapshot diff` as a reviewer runs it: the real binary on the canary
//! pair (`egress_diff::fixtures`), both formats, the same bytes twice, and
//! every bad input with its exit code and one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_egress-conformance"))
        .args(args)
        .output()
        .expect("run the binary")
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The one line on stderr, which must name the problem.
fn error_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("egress-conformance: "), "{err}");
    err.trim_end().to_string()
}

#[test]
fn the_binary_diffs_the_canary_pair_and_refuses_bad_input() {
    let dir = tmpdir("egress-cli-diff");
    egress_diff::fixtures::write_pair(&dir).unwrap();
    let (old, new) = (dir.join("old"), dir.join("new"));

    let md = run(&["snapshot", "diff", s(&old), s(&new)]);
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let text = String::from_utf8(md.stdout.clone()).unwrap();
    assert!(text.starts_with("# Snapshot diff\n"), "{text}");
    for needle in [
        "**FLAG install-script**: postinstall:",
        "**FLAG pth-file**: `mylib-hook.pth`",
        "**FLAG sdist-only**",
        "**FLAG similar-name**: close to `requests`",
        "**FLAG maintainers-changed**: since 1.2.0 in OLD: added `mallory`; removed `alice`",
        "**FLAG major-jump**",
        "**FLAG binding-gyp**",
        "#### `oldproj` (gone)",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
    // What the library renders, byte for byte, and the same on a second run.
    let lib = egress_diff::diff_dirs(&old, &new, None, &egress_diff::Options::default()).unwrap();
    assert_eq!(text, lib.to_markdown());
    assert_eq!(
        run(&["snapshot", "diff", s(&old), s(&new)]).stdout,
        md.stdout
    );

    let json = run(&["snapshot", "diff", "--format", "json", s(&old), s(&new)]);
    assert!(json.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["schema"], egress_diff::SCHEMA);
    assert_eq!(doc["summary"]["flags"]["install-script"], 1);
    assert_eq!(doc["recent"]["days"], 7);
    // A wider window flags more; none flags nothing recent.
    let wide = run(&[
        "snapshot",
        "diff",
        "--format",
        "json",
        "--recent-days",
        "120",
        s(&old),
        s(&new),
    ]);
    let wide: serde_json::Value = serde_json::from_slice(&wide.stdout).unwrap();
    assert_eq!(wide["summary"]["flags"]["recent-upload"], 6);
    let none = run(&[
        "snapshot",
        "diff",
        "--format",
        "json",
        "--recent-days",
        "0",
        s(&old),
        s(&new),
    ]);
    let none: serde_json::Value = serde_json::from_slice(&none.stdout).unwrap();
    assert_eq!(none["summary"]["flags"]["recent-upload"], 0);

    // Trusted signers: the fixture key passes, another key exits 10.
    let mine = dir.join("mine");
    let line = egress_signing::AllowedSigners::line_for_namespace(
        "egress-diff-fixtures",
        &egress_diff::fixtures::key().public(),
        egress_signing::SNAPSHOT_NAMESPACE,
    );
    std::fs::write(&mine, format!("{line}\n")).unwrap();
    let o = run(&[
        "snapshot",
        "diff",
        "--allowed-signers",
        s(&mine),
        s(&old),
        s(&new),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs = dir.join("theirs");
    let other = egress_signing::SigningKey::from_seed([3; 32], "other");
    let line = egress_signing::AllowedSigners::line_for_namespace(
        "other",
        &other.public(),
        egress_signing::SNAPSHOT_NAMESPACE,
    );
    std::fs::write(&theirs, format!("{line}\n")).unwrap();
    let o = run(&[
        "snapshot",
        "diff",
        "--allowed-signers",
        s(&theirs),
        s(&old),
        s(&new),
    ]);
    assert_eq!(o.status.code(), Some(10));
    assert!(error_line(&o).contains("signature does not verify"));
    assert!(o.stdout.is_empty());

    // Not a snapshot: exit 4.
    let o = run(&["snapshot", "diff", s(&dir), s(&new)]);
    assert_eq!(o.status.code(), Some(4));
    assert!(error_line(&o).contains("OLD"), "{:?}", o);
    let o = run(&["snapshot", "diff", s(&old), s(&dir.join("nowhere"))]);
    assert_eq!(o.status.code(), Some(4));
    assert!(error_line(&o).contains("NEW"));
    // Usage.
    let o = run(&["snapshot", "diff", s(&old)]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["snapshot", "diff", "--format", "html", s(&old), s(&new)]);
    assert_eq!(o.status.code(), Some(2));

    // A page whose blob was changed: exit 10, and nothing on stdout.
    let page = std::fs::read_to_string(new.join("SNAPSHOT.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&page).unwrap();
    let served = doc["served"].as_array().unwrap();
    let entry = served
        .iter()
        .find(|e| e["path"] == "/lodahs" && e["content_type"] == "application/json")
        .unwrap();
    let blob = new
        .join("blobs/sha256")
        .join(entry["sha256"].as_str().unwrap());
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[0] ^= 0x20;
    std::fs::remove_file(&blob).unwrap();
    std::fs::write(&blob, bytes).unwrap();
    let o = run(&["snapshot", "diff", s(&old), s(&new)]);
    assert_eq!(o.status.code(), Some(10));
    let line = error_line(&o);
    assert!(line.contains("NEW: /lodahs does not verify"), "{line}");
    assert!(o.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
