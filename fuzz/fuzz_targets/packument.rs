//! The npm packument reader of the suite (egress-suite npm/doc.rs) and its
//! integrity helpers.
#![no_main]
use egress_suite::npm::doc::{integrity_matches, sha512_entries, Packument};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = Packument::parse(data) {
        for version in doc.dist_tags.values() {
            let _ = doc.version(version);
        }
        for dist in &doc.versions {
            if let Some(integrity) = dist.integrity.as_deref() {
                let _ = sha512_entries(integrity);
                let _ = integrity_matches(integrity, b"x");
            }
        }
    }
});
