//! The Release reader of egress-apt: what it accepts has only safe, distinct
//! index paths, renders back to its own text, and its index list survives
//! the Release writer.
#![no_main]
use egress_apt::{render_release, IndexPath, Release, ReleaseFields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let release = match Release::parse(text) {
        Ok(release) => release,
        Err(e) => {
            assert!(e.line() >= 1, "an error names a line: {e}");
            assert!(!e.to_string().contains('\n'), "one-line error: {e}");
            return;
        }
    };
    assert_eq!(
        release.paragraph.render(),
        format!("{}\n", text.trim_matches('\n')),
        "the paragraph is the text"
    );
    for entry in &release.sha256 {
        assert_eq!(
            IndexPath::new(entry.path.as_str()).as_ref(),
            Ok(&entry.path)
        );
        assert_eq!(release.find(entry.path.as_str()), Some(entry));
    }
    let fields = ReleaseFields {
        origin: release.origin.clone().unwrap_or_default(),
        label: release.label.clone().unwrap_or_default(),
        suite: release.suite.clone().unwrap_or_default(),
        codename: release.codename.clone().unwrap_or_default(),
        date: 0,
        valid_until: None,
        architectures: release.architectures.clone(),
        components: release.components.clone(),
        description: None,
    };
    let again = match Release::parse(&render_release(&fields, &release.sha256)) {
        Ok(again) => again,
        Err(e) => panic!("a written Release does not parse: {e}"),
    };
    assert_eq!(again.sha256, release.sha256, "index list round trip");
    assert_eq!(again.architectures, release.architectures);
    assert_eq!(again.components, release.components);
});
