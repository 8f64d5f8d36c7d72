//! The wheel METADATA reader of egress-artifacts.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(metadata) = egress_artifacts::read_wheel_metadata(data) {
        assert!(metadata.len() as u64 <= egress_artifacts::MAX_METADATA);
    }
});
