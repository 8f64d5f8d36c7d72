//! egress-select's npm parsers: the whole input as a version and as a
//! range; its lines as a platform check (`os`, `cpu`, `libc` lists, comma
//! separated, then a target's three fields).
//!
//! Invariants: a version's display parses to an equal version and is a
//! fixpoint; a range's display parses to a range that admits the same
//! versions without `include_prerelease` (checked on the input's own
//! version and a few fixed ones); a version that satisfies a range
//! without pre-releases satisfies it with them; `max_satisfying` picks a
//! satisfying version no lower than any other.
#![no_main]
use egress_select::npm::{max_satisfying, Platform, Range, Semver};
use libfuzzer_sys::fuzz_target;

fn fixed() -> Vec<Semver> {
    [
        "0.0.0",
        "0.0.1",
        "0.1.0-0",
        "1.0.0-alpha.1",
        "1.2.3",
        "1.2.3-beta.2",
        "2.0.0-0",
        "10.0.0",
    ]
    .iter()
    .map(|v| Semver::parse(v).expect("a fixed version parses"))
    .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut versions = fixed();
    if let Ok(v) = Semver::parse(text) {
        let shown = v.to_string();
        let again = Semver::parse(&shown).expect("a version's display parses");
        assert_eq!(again, v);
        assert_eq!(again.to_string(), shown);
        versions.push(v);
    }
    if let Ok(range) = Range::parse(text) {
        // Desugaring lengthens (`1` is `>=1.0.0 <2.0.0-0`): a display over
        // the 4096 bytes a range may have is not read again.
        let shown = range.to_string();
        let again =
            (shown.len() <= 4096).then(|| Range::parse(&shown).expect("a range's display parses"));
        for v in &versions {
            // The display is the form built without includePrerelease
            // (node-semver's `range.range` too): with it, `1` admits
            // `1.0.0-alpha`, `>=1.0.0 <2.0.0-0` does not.
            if let Some(again) = &again {
                assert_eq!(range.satisfies(v, false), again.satisfies(v, false), "{v}");
            }
            if range.satisfies(v, false) {
                assert!(range.satisfies(v, true), "{v}");
            }
        }
        for pre in [false, true] {
            if let Some(best) = max_satisfying(&versions, &range, pre) {
                assert!(range.satisfies(best, pre));
                assert!(versions
                    .iter()
                    .all(|v| !range.satisfies(v, pre) || v <= best));
            }
        }
    }
    let mut lines = text.lines();
    let mut list = || -> Vec<String> {
        lines
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let (os, cpu, libc) = (list(), list(), list());
    let target = Platform {
        os: list(),
        cpu: list(),
        libc: list(),
    };
    let verdict = target.accepts(&os, &cpu, &libc);
    if let Err(field) = verdict {
        assert!(["os", "cpu", "libc"].contains(&field));
    }
    // No target accepts everything.
    assert_eq!(Platform::default().accepts(&os, &cpu, &libc), Ok(()));
    let _ = target.describe();
});
