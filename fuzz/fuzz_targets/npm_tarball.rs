//! The npm tarball (.tgz) reader of egress-artifacts: package/package.json.
#![no_main]
use egress_artifacts::{read_top_level_file, TopLevelFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_top_level_file(data, TopLevelFile::PackageJson);
});
