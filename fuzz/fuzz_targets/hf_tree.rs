//! A Hub tree listing as the builder reads it from an upstream, the headers
//! the mirror derives from a signed one, and what the suite reads of a
//! target's answers (a tree, an info, a `Link`).
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
    // The suite: lenient, never a panic, every listed URL on the tree's
    // own origin.
    use egress_suite::hf::doc;
    let url = egress_model::Url::parse("http://h/hf/api/datasets/o/d/tree/main").expect("url");
    for e in doc::tree(data).unwrap_or_default() {
        let _ = (e.missing(), e.expected(), e.matches(&egress_model::Sha256Digest::of(data), Some(data)));
    }
    for l in doc::listings(&url, data) {
        assert!(l.url.same_origin(&url), "{}", l.url);
    }
    let _ = doc::info_sha(data);
    let _ = doc::next_page(&String::from_utf8_lossy(data));
});
