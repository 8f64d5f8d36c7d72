//! The package-lock.json reader of egress-lock, and its integrity decoder.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(lock) = egress_lock::parse_package_lock("package-lock.json", text) {
            for pin in &lock.pins {
                let _ = pin.sri();
            }
        }
        let _ = egress_lock::sha512_of_integrity(text);
        let _ = egress_lock::filename_from_url(text);
    }
});
