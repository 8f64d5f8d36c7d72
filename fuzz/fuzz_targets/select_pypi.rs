//! egress-select's PyPI parsers: the whole input as a PEP 440 version, a
//! specifier set, a PEP 508 requirement, a marker, a tag set and a wheel
//! filename; its lines as a target (`python version`, `platforms`,
//! `implementation`, `abis`, a wheel filename). Markers are evaluated for
//! the target's environment and a few fixed ones.
//!
//! Invariants: a version's normal form parses to an equal version and is a
//! fixpoint; a requirement's and a marker's display parse again and are
//! fixpoints; a wheel is installable only with a tag the target lists, at
//! that tag's first place.
#![no_main]
use egress_select::pypi::{
    parse_tag, wheel_tags, Environment, Marker, Pep440Version, Requirement, Specifiers, Target,
};
use libfuzzer_sys::fuzz_target;

fn environments() -> Vec<Environment> {
    let linux = Environment {
        implementation_name: "cpython".into(),
        implementation_version: "3.11.0".into(),
        os_name: "posix".into(),
        platform_machine: "x86_64".into(),
        platform_python_implementation: "CPython".into(),
        platform_system: "Linux".into(),
        python_full_version: "3.11.0".into(),
        python_version: "3.11".into(),
        sys_platform: "linux".into(),
        ..Environment::default()
    };
    let any = Environment {
        any_platform: true,
        ..linux.clone()
    };
    vec![linux, any, Environment::default()]
}

fn check_marker(marker: &Marker, envs: &[Environment], extras: &[String]) {
    for env in envs {
        let _ = marker.evaluate(env, extras);
        let _ = marker.evaluate(env, &[]);
    }
    let shown = marker.to_string();
    let again = Marker::parse(&shown).expect("a marker's display parses");
    assert_eq!(again.to_string(), shown);
    assert_eq!(&again, marker);
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let envs = environments();
    let extras: Vec<String> = vec!["test".into(), "Foo.Bar".into(), String::new()];

    let version = Pep440Version::parse(text);
    if let Ok(v) = &version {
        let shown = v.to_string();
        let again = Pep440Version::parse(&shown).expect("a normal form parses");
        assert_eq!(&again, v);
        assert_eq!(again.to_string(), shown);
        assert_eq!(again.cmp(v), std::cmp::Ordering::Equal);
    }
    let probe = version
        .ok()
        .or_else(|| Pep440Version::parse("1.0rc1").ok())
        .expect("a fixed version parses");

    if let Ok(specs) = Specifiers::parse(text) {
        let _ = specs.contains(&probe, false);
        let _ = specs.contains(&probe, true);
        // The display is a list of the same specifiers.
        assert!(Specifiers::parse(&specs.to_string()).is_ok());
    }

    if let Ok(req) = Requirement::parse(text) {
        for env in &envs {
            let _ = req.applies(env, &extras);
        }
        if let Some(marker) = &req.marker {
            check_marker(marker, &envs, &extras);
        }
        let shown = req.to_string();
        let again = Requirement::parse(&shown).expect("a requirement's display parses");
        assert_eq!(again.to_string(), shown);
    }

    if let Ok(marker) = Marker::parse(text) {
        check_marker(&marker, &envs, &extras);
    }

    if let Ok(tags) = parse_tag(text) {
        assert!(!tags.is_empty());
    }
    let _ = wheel_tags(text);

    let mut lines = text.lines();
    let python = lines.next().unwrap_or("");
    let list = |line: Option<&str>| -> Vec<String> {
        line.unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    let platforms = list(lines.next());
    let implementation = lines.next().filter(|s| !s.is_empty());
    let abis = list(lines.next());
    let wheel = lines.next().unwrap_or("");
    if let Ok(target) = Target::new(python, &platforms, implementation, &abis) {
        for t in [Some(target.clone()), target.with_platform_expansion().ok()]
            .into_iter()
            .flatten()
        {
            let supported = t.supported_tags();
            let _ = t.describe();
            let env = t.environment();
            for marker in [
                "sys_platform == 'linux' and python_version >= '3.8'",
                "os_name == 'nt' or extra == 'test'",
            ] {
                let m = Marker::parse(marker).expect("a fixed marker parses");
                let _ = m.evaluate(&env, &extras);
            }
            if let (Some(rank), Ok(tags)) = (t.wheel_priority(wheel), wheel_tags(wheel)) {
                let listed = supported.get(rank).expect("a rank is a place in the list");
                if !t.any_platform() {
                    assert!(tags.contains(listed), "{wheel} ranked at {listed}");
                }
            }
        }
    }
});
