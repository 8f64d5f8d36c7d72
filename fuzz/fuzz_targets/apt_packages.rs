//! The Packages reader of egress-apt (and the deb822 reader under it): what
//! it accepts has safe pool paths and renders verbatim to a Packages file
//! that reads back to the same entries.
#![no_main]
use egress_apt::{parse_packages, parse_paragraphs, render_packages, PackageEntry, PoolPath};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(paragraphs) = parse_paragraphs(text) {
        let rendered: Vec<String> = paragraphs.iter().map(|p| p.render()).collect();
        match parse_paragraphs(&rendered.join("\n")) {
            Ok(again) => assert_eq!(again, paragraphs, "paragraph round trip"),
            Err(e) => panic!("rendered paragraphs do not parse: {e}"),
        }
    }
    let entries = match parse_packages(text) {
        Ok(entries) => entries,
        Err(e) => {
            assert!(e.line() >= 1, "an error names a line: {e}");
            assert!(!e.to_string().contains('\n'), "one-line error: {e}");
            return;
        }
    };
    for e in &entries {
        assert_eq!(PoolPath::new(e.filename.as_str()).as_ref(), Ok(&e.filename));
        assert!(e.md5.as_ref().is_none_or(|m| m.len() == 32));
    }
    let refs: Vec<&PackageEntry> = entries.iter().collect();
    match parse_packages(&render_packages(&refs)) {
        Ok(again) => assert_eq!(again, entries, "Packages round trip"),
        Err(e) => panic!("a rendered Packages file does not parse: {e}"),
    }
});
