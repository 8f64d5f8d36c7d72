//! Real Packages and Release text, mutated at random: every parser answers
//! with a value or an error naming a line of the input, never a panic; what
//! it accepts keeps its promises (safe paths, verbatim rendering, stable
//! round trips).

use egress_apt::{
    parse_packages, parse_paragraphs, render_packages, render_release, AptFormatError, IndexEntry,
    IndexPath, PackageEntry, Paragraph, PoolPath, Release, ReleaseFields,
};
use egress_model::Sha256Digest;
use proptest::prelude::*;

const RELEASE: &str = include_str!("data/bookworm-updates-Release");
const UPDATES: &str = include_str!("data/bookworm-updates-main-amd64-Packages");

/// Three stanzas and the head of the Release with a few SHA256 lines:
/// small enough that a mutation often lands in a field that matters.
fn seeds() -> Vec<String> {
    let stanzas: Vec<&str> = UPDATES.split("\n\n").take(3).collect();
    let release: Vec<&str> = RELEASE.lines().take(20).collect();
    vec![
        format!("{}\n", stanzas.join("\n\n")),
        format!("{}\n", release.join("\n")),
    ]
}

/// Bytes that mean something to deb822, to paths or to digests.
fn nasty() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "\n",
            "\n\n",
            " ",
            "\t",
            " \n",
            ":",
            "#",
            ".",
            "..",
            "/",
            "../",
            "%2e",
            "%",
            "\\",
            "\0",
            "\r",
            "-",
            "+",
            "~",
            "é",
            "😀",
            "Filename: ",
            "Size: ",
            "SHA256: ",
            "\n ",
            "Package: a",
            "9",
            "a",
            "ff",
            "18446744073709551616",
            "\u{85}",
        ])
        .prop_map(str::to_string),
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 1..4).prop_map(|p| p.concat())
}

#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, String),
    Delete(usize, usize),
    Replace(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), nasty()).prop_map(|(a, s)| Edit::Insert(a, s)),
        (any::<usize>(), 1usize..30).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), nasty()).prop_map(|(a, s)| Edit::Replace(a, s)),
    ]
}

fn boundary(text: &str, at: usize) -> usize {
    let at = at % (text.len() + 1);
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

fn apply(text: &str, edit: &Edit) -> String {
    let (at, cut, insert) = match edit {
        Edit::Insert(at, s) => (*at, 0, s.as_str()),
        Edit::Delete(at, n) => (*at, *n, ""),
        Edit::Replace(at, s) => (*at, s.chars().count(), s.as_str()),
    };
    let start = boundary(text, at);
    let end = boundary(text, start.saturating_add(cut).min(text.len()));
    format!("{}{insert}{}", &text[..start], &text[end.max(start)..])
}

/// An error must name a line of the text (or the line after its end).
fn check_line(err: &AptFormatError, text: &str) -> Result<(), TestCaseError> {
    let lines = text.split('\n').count().max(1);
    prop_assert!(
        (1..=lines).contains(&err.line()),
        "line {} of {lines}: {err}",
        err.line()
    );
    prop_assert!(!err.to_string().contains('\n'), "{err}");
    Ok(())
}

fn check_everything(text: &str) -> Result<(), TestCaseError> {
    match parse_paragraphs(text) {
        Err(e) => check_line(&e, text)?,
        Ok(paragraphs) => {
            let rendered: Vec<String> = paragraphs.iter().map(Paragraph::render).collect();
            let again = parse_paragraphs(&rendered.join("\n")).unwrap();
            prop_assert_eq!(&again, &paragraphs);
            for p in &paragraphs {
                for (name, value) in p.fields() {
                    prop_assert!(!name.is_empty() && !name.contains([':', ' ', '\n']));
                    prop_assert!(!value
                        .chars()
                        .any(|c| c.is_control() && c != '\n' && c != '\t'));
                }
            }
        }
    }
    match parse_packages(text) {
        Err(e) => check_line(&e, text)?,
        Ok(entries) => {
            for e in &entries {
                prop_assert_eq!(&PoolPath::new(e.filename.as_str()).unwrap(), &e.filename);
                // No traversal: no `..` (nor `.` or empty) segment. `..`
                // inside a segment (`a..b_1.0_all.deb`) is an ordinary name.
                prop_assert!(!e
                    .filename
                    .as_str()
                    .split('/')
                    .any(|s| s == ".." || s == "." || s.is_empty()));
                prop_assert!(!e.filename.as_str().starts_with('/'));
            }
            let refs: Vec<&PackageEntry> = entries.iter().collect();
            let again = parse_packages(&render_packages(&refs)).unwrap();
            prop_assert_eq!(&again, &entries);
        }
    }
    match Release::parse(text) {
        Err(e) => check_line(&e, text)?,
        Ok(release) => {
            for entry in &release.sha256 {
                prop_assert_eq!(&IndexPath::new(entry.path.as_str()).unwrap(), &entry.path);
            }
            prop_assert_eq!(
                release.paragraph.render(),
                format!("{}\n", text.trim_matches('\n'))
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn mutated_real_text(seed in 0usize..2, edits in proptest::collection::vec(edit(), 1..5)) {
        let mut text = seeds().swap_remove(seed);
        for e in &edits {
            text = apply(&text, e);
        }
        check_everything(&text)?;
    }

    #[test]
    fn written_releases_read_back(
        entries in proptest::collection::vec(
            (
                proptest::string::string_regex("[a-z0-9]{1,8}(/[A-Za-z0-9.+~_:@-]{0,6}[a-z]){0,3}").unwrap(),
                any::<u64>(),
                any::<[u8; 32]>(),
            ),
            0..12,
        ),
        suite in "[a-z-]{1,12}",
        date in 0u64..8_000_000_000,
    ) {
        let mut seen = std::collections::HashSet::new();
        let entries: Vec<IndexEntry> = entries
            .into_iter()
            .filter(|(p, _, _)| seen.insert(p.clone()))
            .map(|(p, size, d)| IndexEntry {
                path: IndexPath::new(&p).unwrap(),
                size,
                digest: Sha256Digest::from_bytes(d),
            })
            .collect();
        let fields = ReleaseFields {
            origin: "o".into(),
            label: "l".into(),
            suite: suite.clone(),
            codename: suite.clone(),
            date,
            valid_until: None,
            architectures: vec!["amd64".into()],
            components: vec!["main".into()],
            description: None,
        };
        let release = Release::parse(&render_release(&fields, &entries)).unwrap();
        prop_assert_eq!(release.sha256, entries);
        prop_assert_eq!(release.suite.as_deref(), Some(suite.as_str()));
    }
}

/// Prefixes of the seeds: cut beside every line end, where the structure
/// is, and every 23rd byte elsewhere (every byte takes seconds).
#[test]
fn truncated_everywhere() {
    for seed in seeds() {
        let newlines: Vec<usize> = seed.match_indices('\n').map(|(i, _)| i).collect();
        for (at, _) in seed.char_indices() {
            let near_line_end = newlines.iter().any(|&n| n.abs_diff(at) <= 1);
            if near_line_end || at % 23 == 0 {
                check_everything(&seed[..at]).unwrap();
            }
        }
    }
}
