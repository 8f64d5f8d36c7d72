//! The .deb control reader of egress-artifacts (ar members, then the
//! control tarball): a control file it returns is bounded, and the
//! paragraph reader agrees with it.
#![no_main]
use egress_artifacts::{deb_control_paragraph, read_deb_control, MAX_METADATA};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match read_deb_control(data) {
        Ok(text) => {
            assert!(text.len() as u64 <= MAX_METADATA);
            if let Ok(p) = deb_control_paragraph(data) {
                assert_eq!(p.render(), format!("{}\n", text.trim_matches('\n')));
            }
        }
        Err(e) => {
            assert!(!e.to_string().contains('\n'), "one-line error: {e}");
            assert!(deb_control_paragraph(data).is_err());
        }
    }
});
