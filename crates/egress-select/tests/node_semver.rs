//! `egress_select::npm` against what real node-semver answered.
//!
//! `tests/data/node-semver/cases.tsv` holds random ranges and versions
//! (written by `generate.js` there, with a fixed seed) and node-semver's
//! answers: whether a range parses and its desugared form, whether each of
//! six versions satisfies it (with and without `includePrerelease`),
//! whether a text is a version, and how two versions compare. Every answer
//! must be the same here.

use egress_select::npm::{Range, Semver};
use std::cmp::Ordering;

#[test]
fn ranges_versions_and_order_agree_with_node_semver() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/node-semver/cases.tsv"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut wrong: Vec<String> = Vec::new();
    let mut current: Option<(String, Range)> = None;
    let (mut ranges, mut checked) = (0, 0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["R", range, valid, desugared] => {
                ranges += 1;
                current = None;
                match (Range::parse(range), *valid == "1") {
                    (Ok(r), true) => {
                        // node-semver writes `*` as the empty string.
                        let node = if desugared.is_empty() { "*" } else { desugared };
                        if r.to_string() != node {
                            wrong.push(format!("{range:?}: node {node:?}, here {r}"));
                        }
                        current = Some((range.to_string(), r));
                    }
                    (Err(_), false) => {}
                    (got, _) => wrong.push(format!("{range:?}: node valid={valid}, here {got:?}")),
                }
            }
            ["V", version, plain, pre] => {
                let Some((range, r)) = &current else { continue };
                let v = Semver::parse(version).unwrap();
                let got = (r.satisfies(&v, false), r.satisfies(&v, true));
                if got != (*plain == "1", *pre == "1") {
                    wrong.push(format!(
                        "{version} in {range:?}: node {plain}/{pre}, here {got:?}"
                    ));
                }
                checked += 1;
            }
            ["S", version, ok] => {
                if Semver::parse(version).is_ok() != (*ok == "1") {
                    wrong.push(format!("version {version:?}: node {ok}"));
                }
            }
            ["C", a, b, cmp] => {
                let got = match Semver::parse(a).unwrap().cmp(&Semver::parse(b).unwrap()) {
                    Ordering::Less => "-1",
                    Ordering::Equal => "0",
                    Ordering::Greater => "1",
                };
                if got != *cmp {
                    wrong.push(format!("compare {a} {b}: node {cmp}, here {got}"));
                }
            }
            other => panic!("unreadable line {other:?}"),
        }
    }
    assert!(ranges > 1000 && checked > 1000, "{ranges} {checked}");
    assert!(
        wrong.is_empty(),
        "{} differences, e.g.\n{}",
        wrong.len(),
        wrong
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
