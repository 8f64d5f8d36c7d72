//! Real Debian data: bookworm-updates' Release (the signed text of its
//! InRelease) and its main/binary-amd64 Packages, and the first 200 stanzas
//! of bookworm's main/binary-amd64 Packages, as apt fetched them.

use egress_apt::{
    by_hash_path, parse_packages, render_packages, render_release, IndexEntry, PackageEntry,
    Release, ReleaseFields,
};
use egress_model::Sha256Digest;

const RELEASE: &str = include_str!("data/bookworm-updates-Release");
const UPDATES: &str = include_str!("data/bookworm-updates-main-amd64-Packages");
const MAIN_200: &str = include_str!("data/bookworm-main-amd64-Packages-200");

#[test]
fn release_fields() {
    let r = Release::parse(RELEASE).unwrap();
    assert_eq!(r.origin.as_deref(), Some("Debian"));
    assert_eq!(r.label.as_deref(), Some("Debian"));
    assert_eq!(r.suite.as_deref(), Some("oldstable-updates"));
    assert_eq!(r.codename.as_deref(), Some("bookworm-updates"));
    assert!(r.date.as_deref().unwrap().ends_with(" UTC"));
    assert!(r.acquire_by_hash);
    assert!(r.architectures.iter().any(|a| a == "amd64"));
    assert_eq!(
        r.components,
        ["main", "contrib", "non-free-firmware", "non-free"]
    );
    let listed = RELEASE
        .split("SHA256:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with(' '))
        .count();
    assert_eq!(r.sha256.len(), listed);
    assert!(listed > 100);
    // Byte-exact: the paragraph renders the text it was read from.
    assert_eq!(r.paragraph.render(), RELEASE);
}

#[test]
fn release_binds_the_packages_index() {
    let r = Release::parse(RELEASE).unwrap();
    let entry = r.find("main/binary-amd64/Packages").unwrap();
    assert_eq!(entry.size, UPDATES.len() as u64);
    assert_eq!(entry.digest, Sha256Digest::of(UPDATES.as_bytes()));
    assert_eq!(
        by_hash_path(&entry.path, &entry.digest),
        format!("main/binary-amd64/by-hash/SHA256/{}", entry.digest)
    );
    assert!(r.find("main/binary-amd64/Packages.xz").is_some());
    assert!(r.find("main/binary-amd64/Packages.bz2").is_none());
}

fn round_trips(text: &str, stanzas: usize) -> Vec<PackageEntry> {
    let entries = parse_packages(text).unwrap();
    assert_eq!(entries.len(), stanzas);
    assert_eq!(text.matches("\nPackage: ").count() + 1, stanzas);
    let refs: Vec<&PackageEntry> = entries.iter().collect();
    // The files end with the newline of their last field, and bookworm-updates'
    // with one empty line more.
    assert_eq!(
        render_packages(&refs),
        format!("{}\n", text.trim_end_matches('\n'))
    );
    entries
}

#[test]
fn packages_read_and_render_verbatim() {
    let updates = round_trips(UPDATES, 38);
    let main = round_trips(MAIN_200, 200);
    for e in updates.iter().chain(&main) {
        assert!(e.sha256.is_some(), "{}", e.package);
        assert!(e.filename.as_str().starts_with("pool/main/"));
        assert!(e.filename.as_str().ends_with(".deb"));
        assert!(e.size > 0);
        assert_eq!(e.paragraph.get("Package"), Some(e.package.as_str()));
    }
    // bookworm main still carries MD5sum, bookworm-updates no longer does.
    assert!(main.iter().all(|e| e.md5.is_some()));
    assert!(updates.iter().all(|e| e.md5.is_none()));
    let ca = &updates[0];
    assert_eq!(ca.package, "ca-certificates");
    assert_eq!(ca.version, "20230311+deb12u1");
    assert_eq!(ca.architecture, "all");
    assert_eq!(ca.size, 155_260);
    assert_eq!(
        ca.sha256.unwrap().to_hex(),
        "0d5f444f594e48c1e16a41d8fc628a09b24c658916a1274025c2330f2a802bed"
    );
    // A subset renders to a Packages file that reads back to the subset.
    let some: Vec<&PackageEntry> = main.iter().step_by(7).collect();
    let text = render_packages(&some);
    let back = parse_packages(&text).unwrap();
    assert_eq!(back.iter().collect::<Vec<_>>(), some);
}

#[test]
fn a_written_release_lists_what_it_was_given() {
    let entries = vec![IndexEntry {
        path: "main/binary-amd64/Packages".parse().unwrap(),
        size: UPDATES.len() as u64,
        digest: Sha256Digest::of(UPDATES.as_bytes()),
    }];
    let fields = ReleaseFields {
        origin: "egress-conformance".into(),
        label: "snapshot".into(),
        suite: "bookworm".into(),
        codename: "bookworm".into(),
        date: 1_764_547_200,
        valid_until: Some(1_764_547_200 + 86_400),
        architectures: vec!["amd64".into()],
        components: vec!["main".into()],
        description: None,
    };
    let text = render_release(&fields, &entries);
    assert_eq!(
        text,
        format!(
            "Origin: egress-conformance\nLabel: snapshot\nSuite: bookworm\nCodename: bookworm\n\
             Date: Mon, 01 Dec 2025 00:00:00 UTC\nValid-Until: Tue, 02 Dec 2025 00:00:00 UTC\n\
             Architectures: amd64\nComponents: main\nAcquire-By-Hash: yes\nSHA256:\n \
             {}    32757 main/binary-amd64/Packages\n",
            Sha256Digest::of(UPDATES.as_bytes())
        )
    );
    let back = Release::parse(&text).unwrap();
    assert_eq!(back.sha256, entries);
    assert_eq!(
        back.valid_until.as_deref(),
        Some("Tue, 02 Dec 2025 00:00:00 UTC")
    );
}
