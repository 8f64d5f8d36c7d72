//! The requirements.txt reader of egress-lock.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(lock) = egress_lock::parse_requirements("requirements.txt", text) {
            for pin in &lock.pins {
                let _ = pin.hashes();
            }
        }
    }
});
