//! `Target::supported_tags` against what real pip printed.
//!
//! Each file of `tests/data/pip-tags/` is the "Compatible tags" list of one
//! `pip debug --verbose ...` run (its first line is the command; written by
//! `regenerate.sh` there). The target is built from that command's options
//! (or from a `# target:` line, for runs without `--platform`) and its tags
//! must be the same list in the same order.

use std::fs;
use std::path::Path;

use egress_select::pypi::Target;

struct Case {
    python_version: String,
    platforms: Vec<String>,
    implementation: Option<String>,
    abis: Vec<String>,
    expand: bool,
    tags: Vec<String>,
}

fn read_case(path: &Path) -> Case {
    let text = fs::read_to_string(path).unwrap();
    let mut case = Case {
        python_version: String::new(),
        platforms: Vec::new(),
        implementation: None,
        abis: Vec::new(),
        expand: false,
        tags: Vec::new(),
    };
    let read_options = |options: &str, case: &mut Case| {
        let words: Vec<&str> = options.split_whitespace().collect();
        let mut i = 0;
        while i < words.len() {
            let value = words.get(i + 1).map(|v| v.to_string());
            match words[i] {
                "--python-version" => case.python_version = value.unwrap(),
                "--platform" => case.platforms.push(value.unwrap()),
                "--implementation" => case.implementation = value,
                "--abi" => case.abis.push(value.unwrap()),
                "--expand" => {
                    case.expand = true;
                    i += 1;
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
    };
    for line in text.lines() {
        if let Some(command) = line.strip_prefix("# pip debug --verbose ") {
            read_options(command, &mut case);
        } else if let Some(target) = line.strip_prefix("# target: ") {
            case.platforms.clear();
            read_options(target, &mut case);
        } else if !line.starts_with('#') && !line.is_empty() {
            case.tags.push(line.to_string());
        }
    }
    assert!(
        !case.python_version.is_empty(),
        "{}: no --python-version",
        path.display()
    );
    assert!(!case.tags.is_empty(), "{}: no tags", path.display());
    case
}

#[test]
fn supported_tags_are_what_pip_prints() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pip-tags");
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "fixtures missing in {}", dir.display());
    for path in &files {
        let case = read_case(path);
        let mut target = Target::new(
            &case.python_version,
            &case.platforms,
            case.implementation.as_deref(),
            &case.abis,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if case.expand {
            target = target.with_platform_expansion().unwrap();
        }
        let ours: Vec<String> = target
            .supported_tags()
            .iter()
            .map(ToString::to_string)
            .collect();
        if ours != case.tags {
            let first_difference = ours
                .iter()
                .zip(&case.tags)
                .position(|(a, b)| a != b)
                .unwrap_or(ours.len().min(case.tags.len()));
            panic!(
                "{}: {} tags, pip printed {}; first difference at {first_difference}: ours {:?}, pip {:?}",
                path.display(),
                ours.len(),
                case.tags.len(),
                ours.get(first_difference),
                case.tags.get(first_difference),
            );
        }
        // A wheel with one of these tags ranks where pip first lists it.
        for (i, tag) in case.tags.iter().enumerate() {
            let first = case.tags.iter().position(|t| t == tag).unwrap();
            let filename = format!("pkg-1.0-{tag}.whl");
            assert_eq!(
                target.wheel_priority(&filename),
                Some(first),
                "{}: {filename} (line {i})",
                path.display()
            );
        }
    }
}

#[test]
fn a_wheel_for_another_target_is_not_installable() {
    let platforms = vec!["manylinux_2_17_x86_64".to_string()];
    let target = Target::new("3.11", &platforms, Some("cp"), &[]).unwrap();
    for wheel in [
        "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "numpy-2.4.6-cp312-cp312-manylinux_2_17_x86_64.whl",
        "numpy-2.4.6-cp311-cp311-win_amd64.whl",
        "numpy-2.4.6-cp311-cp311-musllinux_1_2_x86_64.whl",
        "numpy-2.4.6-pp39-pypy39_pp73-manylinux_2_17_x86_64.whl",
        "thing-1.0-py2-none-any.whl",
        "thing-1.0-cp311-cp311d-manylinux_2_17_x86_64.whl",
    ] {
        assert_eq!(target.wheel_priority(wheel), None, "{wheel}");
    }
    assert_eq!(
        target.wheel_priority("charset_normalizer-3.4.7-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl"),
        Some(0)
    );
}
