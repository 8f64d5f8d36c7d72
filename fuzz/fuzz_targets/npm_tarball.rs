//! The npm tarball (.tgz) readers of egress-artifacts: package/package.json
//! alone, and with the member list (`snapshot diff`); both agree.
#![no_main]
use egress_artifacts::{read_npm_package, read_top_level_file, TopLevelFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let alone = read_top_level_file(data, TopLevelFile::PackageJson);
    let listed = read_npm_package(data);
    match (&alone, &listed) {
        (Ok(a), Ok(l)) => {
            assert_eq!(a, &l.package_json);
            assert!(l.members.len() <= egress_artifacts::MAX_LISTED_MEMBERS);
        }
        (Err(_), Err(_)) => {}
        _ => panic!("the readers disagree: {alone:?} / {:?}", listed.map(|l| l.members.len())),
    }
});
