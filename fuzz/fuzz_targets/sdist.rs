//! The sdist (.tar.gz) readers of egress-artifacts.
#![no_main]
use egress_artifacts::{read_sdist_pkg_info, read_top_level_file, TopLevelFile};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = read_sdist_pkg_info(data);
    let _ = read_top_level_file(data, TopLevelFile::SetupPy);
});
