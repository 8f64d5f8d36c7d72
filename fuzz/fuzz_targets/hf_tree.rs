//! A Hub tree listing as the builder reads it from an upstream, and the
//! headers the mirror derives from a signed one.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(files) = egress_snapshot::hf::parse_tree(data) {
        for f in &files {
            assert!(!f.path.is_empty() && !f.path.starts_with('/'));
            assert!(!f.path.split('/').any(|s| s == ".." || s == "." || s.is_empty()));
            let _ = f.matches(data);
        }
        let tree = "/hf/api/models/org/m/tree/0123456789abcdef0123456789abcdef01234567";
        let digest = egress_model::Sha256Digest::of(data);
        let headers = egress_snapshot::hf::resolve_headers(
            [(tree, digest)].into_iter(),
            |_| Some(data.to_vec()),
        );
        for path in headers.keys() {
            assert!(egress_snapshot::hf::is_hf_path(path) || path.len() > 2048, "{path}");
        }
    }
});
