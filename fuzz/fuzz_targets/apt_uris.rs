//! The apt-get --print-uris reader of egress-lock: what it accepts is an
//! http(s) URL, a safe .deb file name and a positive size; pool paths taken
//! from the URL are safe by type.
#![no_main]
use egress_lock::{parse_print_uris, pool_path_of, split_at_pool};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let uris = match parse_print_uris(text) {
        Ok(uris) => uris,
        Err(e) => {
            assert!(e.line >= 1, "an error names a line: {e}");
            assert!(!e.to_string().contains('\n'), "one-line error: {e}");
            return;
        }
    };
    for u in &uris {
        // Schemes are case-insensitive (RFC 3986); apt prints them lowercase.
        let scheme = u.url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
        assert!(
            matches!(scheme.as_deref(), Some("http" | "https")),
            "{}",
            u.url
        );
        assert!(u.file_name.ends_with(".deb"));
        assert!(!u.file_name.contains(['/', '\\', '\0']));
        assert!(u.size > 0);
        if let Some((root, path)) = split_at_pool(&u.url) {
            assert_eq!(pool_path_of(&u.url, &root).as_ref(), Some(&path));
            assert!(!path.as_str().split('/').any(|s| s == ".."));
        }
    }
});
