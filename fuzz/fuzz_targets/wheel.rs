//! The wheel readers of egress-artifacts: METADATA, and the member list
//! (`snapshot diff`), which reads every central directory entry METADATA's
//! reader checks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let members = egress_artifacts::read_wheel_members(data);
    if let Ok(metadata) = egress_artifacts::read_wheel_metadata(data) {
        assert!(metadata.len() as u64 <= egress_artifacts::MAX_METADATA);
        assert!(members.is_ok());
    }
    if let Ok(m) = members {
        assert!(m.len() < 65_535);
    }
});
