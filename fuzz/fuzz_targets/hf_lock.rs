//! The `--hf-lock` reader of egress-lock, and the fnmatch globs it keeps.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(lock) = egress_lock::parse_hf_lock(text, "hf.lock") {
            for pin in &lock.pins {
                for g in &pin.globs {
                    assert!(!g.starts_with('/') && !g.split('/').any(|c| c == ".."));
                    let _ = egress_lock::glob_matches(g, pin.repo.as_str());
                    let _ = egress_lock::glob_matches(g, g);
                }
            }
        }
        // Any text as a pattern against any path: an answer, never a hang.
        if let Some((p, s)) = text.split_once('\n') {
            let _ = egress_lock::glob_matches(p, s);
        }
    }
});
