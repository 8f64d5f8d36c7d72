//! The parsers never panic: whatever the input (multi-byte characters, NULs,
//! over-long tokens, truncated or mangled documents), each returns `Ok` or an
//! error whose message is one line.

use egress_lock::{
    parse_package_lock, parse_print_uris, parse_requirements, parse_uv_lock, rewrite_uv_lock,
};
use egress_model::{base64, Sha256Digest};
use proptest::prelude::*;

const PIP_COMPILE: &str = include_str!("fixtures/pip-compile.txt");
const UV_PIP_COMPILE: &str = include_str!("fixtures/uv-pip-compile.txt");
const UV_LOCK: &str = include_str!("fixtures/uv.lock");
const PRINT_URIS: &str = include_str!("fixtures/print-uris-hello-jq.txt");

/// A valid `package-lock.json` (version 3) with a scoped, a nested and a
/// linked entry.
fn package_lock() -> String {
    let sri = |b: u8| format!("sha512-{}", base64::encode(&[b; 64]));
    format!(
        r#"{{
  "name": "p", "version": "1.0.0", "lockfileVersion": 3, "requires": true,
  "packages": {{
    "": {{ "name": "p", "dependencies": {{ "a": "^1" }} }},
    "node_modules/a": {{ "version": "1.0.0", "resolved": "https://registry.npmjs.org/a/-/a-1.0.0.tgz", "integrity": "{}", "dependencies": {{ "b": "^2" }} }},
    "node_modules/a/node_modules/b": {{ "version": "2.0.0", "resolved": "https://registry.npmjs.org/b/-/b-2.0.0.tgz", "integrity": "{} sha1-AAAA" }},
    "node_modules/@s/c": {{ "version": "3.0.0", "resolved": "http://127.0.0.1:9/@s/c/-/c-3.0.0.tgz", "integrity": "{}", "hasInstallScript": true }},
    "node_modules/w": {{ "resolved": "packages/w", "link": true }}
  }}
}}
"#,
        sri(1),
        sri(2),
        sri(3)
    )
}

/// Runs every parser on `text`; each must return `Ok` or a one-line error.
/// A panic fails the test by itself.
fn all_parsers_answer_in_one_line(text: &str) -> Result<(), String> {
    let one_line = |what: &str, e: String| {
        if e.contains('\n') || e.contains('\r') {
            Err(format!("{what}: multi-line error {e:?}"))
        } else {
            Ok(())
        }
    };
    if let Err(e) = parse_requirements("requirements.txt", text) {
        one_line("requirements", e.to_string())?;
    }
    if let Err(e) = parse_uv_lock("uv.lock", text) {
        one_line("uv.lock", e.to_string())?;
    }
    let url_for = |d: &Sha256Digest| Some(format!("http://127.0.0.1:9/files/{}/f.whl", d.to_hex()));
    if let Err(e) = rewrite_uv_lock("uv.lock", text, "http://127.0.0.1:9/simple", &url_for) {
        one_line("rewrite", e.to_string())?;
    }
    if let Err(e) = parse_package_lock("package-lock.json", text) {
        one_line("package-lock", e.to_string())?;
    }
    match egress_lock::parse_hf_lock(text, "hf.lock") {
        Err(e) => one_line("hf.lock", e.to_string())?,
        Ok(lock) => {
            for pin in &lock.pins {
                for g in &pin.globs {
                    if g.starts_with('/') || g.split('/').any(|c| c == "..") {
                        return Err(format!("hf.lock accepted the glob {g:?}"));
                    }
                    // Any glob, against any path, answers.
                    let path: String = text.chars().take(512).collect();
                    let _ = egress_lock::glob_matches(g, &path);
                }
            }
        }
    }
    match parse_print_uris(text) {
        Err(e) => one_line("print-uris", e.to_string())?,
        Ok(uris) => {
            for u in uris {
                let scheme = u.url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                let ok = matches!(scheme.as_deref(), Some("http" | "https"))
                    && u.file_name.ends_with(".deb")
                    && !u.file_name.contains(['/', '\\'])
                    && u.size > 0;
                if !ok {
                    return Err(format!("print-uris accepted {u:?}"));
                }
            }
        }
    }
    Ok(())
}

/// Characters that have broken parsers: multi-byte ones, NUL and other
/// controls, line ends, and the punctuation every format gives meaning to.
fn nasty_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => proptest::char::range('a', 'z'),
        1 => proptest::char::range('0', '9'),
        3 => proptest::sample::select(vec![
            'é', 'ß', '€', '😀', '\u{0}', '\u{7f}', '\u{85}', '\u{2028}', '\u{feff}', '\t', '\r',
            '\n', '\\', ' ', '#', '=', '-', '.', '_', ';', ':', '@', '/', '"', '\'', '[', ']',
            '{', '}', ',', '<', '>', '~', '!', '*', '%',
        ]),
        1 => any::<char>(),
    ]
}

fn nasty_string(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(nasty_char(), 0..max).prop_map(|c| c.into_iter().collect())
}

/// A token repeated into something far longer than any real one.
fn over_long() -> impl Strategy<Value = String> {
    (nasty_string(4), 100usize..5000).prop_map(|(t, n)| t.repeat(n))
}

/// Lines built from the pieces real lock lines are made of, mixed with
/// nasty characters and over-long tokens.
fn line() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => nasty_string(12),
        1 => over_long(),
        2 => proptest::sample::select(vec![
            "-", "--hash", "--hash=sha256:", "-e", "-r", "-i", "--index-url", "==", "[", "]",
            "; ", " \\", "# ", "://", "sha256:", "[[package]]", "name = \"", "version = 1",
            "source = { registry = \"", "url = \"", "hash = \"sha256:", "\"lockfileVersion\": 3",
            "\"packages\": {", "node_modules/", "\"integrity\": \"sha512-", "{", "}",
            "'http://h/pool/x.deb' ", "x_1_all.deb ", "MD5Sum:", "SHA256:", "%2b", "%3a", "' ",
        ])
        .prop_map(str::to_string),
    ];
    proptest::collection::vec(piece, 0..6).prop_map(|p| p.concat())
}

/// The byte offset of the char boundary at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let at = at % (text.len() + 1);
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

fn insert_at(text: &str, at: usize, what: &str) -> String {
    let (head, tail) = text.split_at(floor_boundary(text, at));
    format!("{head}{what}{tail}")
}

fn delete_range(text: &str, at: usize, len: usize) -> String {
    let start = floor_boundary(text, at);
    let end = floor_boundary(text, start.saturating_add(len).min(text.len()));
    let (head, rest) = text.split_at(start);
    let tail = rest.get(end.saturating_sub(start)..).unwrap_or("");
    format!("{head}{tail}")
}

fn valid_documents() -> Vec<String> {
    vec![
        "# TYPE REPO COMMIT [GLOB...]\nmodel openai-community/gpt2 607a30d783dfa663caf39e06633721c8d4cfcd7e *.json [!a]*.safetensors\ndataset org/data 0123456789abcdef0123456789abcdef01234567\n".to_string(),
        PIP_COMPILE.to_string(),
        UV_PIP_COMPILE.to_string(),
        UV_LOCK.to_string(),
        package_lock(),
        PRINT_URIS.to_string(),
    ]
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Well-formed JSON whose values are anything: the reader must get past
    /// the syntax to its own checks.
    #[test]
    fn package_lock_with_any_values(
        key in nasty_string(24),
        name in nasty_string(12),
        version in nasty_string(12),
        resolved in nasty_string(24),
        integrity in nasty_string(40),
    ) {
        let text = serde_json::json!({
            "lockfileVersion": 3,
            "packages": {
                format!("node_modules/{key}"): {
                    "name": name, "version": version, "resolved": format!("https://r/{resolved}"),
                    "integrity": format!("sha512-{integrity}"),
                },
                key: { "version": version, "resolved": resolved, "integrity": integrity },
            },
        })
        .to_string();
        all_parsers_answer_in_one_line(&text).map_err(TestCaseError::fail)?;
    }

    /// Well-formed TOML whose values are anything, in uv's layout (so the
    /// rewrite reaches its own line scanning).
    #[test]
    fn uv_lock_with_any_values(
        name in nasty_string(12),
        version in nasty_string(12),
        registry in nasty_string(16),
        url in nasty_string(24),
        hash in nasty_string(70),
    ) {
        let text = format!(
            "version = 1\n\n[[package]]\nname = {}\nversion = {}\nsource = {{ registry = {} }}\nwheels = [\n    {{ url = {}, hash = {}, size = 1 }},\n    {{ url = \"https://h/x-1-py3-none-any.whl\", hash = {} }},\n]\n",
            toml_string(&name),
            toml_string(&version),
            toml_string(&registry),
            toml_string(&url),
            toml_string(&format!("sha256:{hash}")),
            toml_string(&hash),
        );
        all_parsers_answer_in_one_line(&text).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn random_lines(lines in proptest::collection::vec(line(), 0..8)) {
        all_parsers_answer_in_one_line(&lines.join("\n")).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn valid_documents_with_inserted_characters(
        doc in 0usize..5,
        edits in proptest::collection::vec((any::<usize>(), nasty_string(6)), 1..4),
    ) {
        let mut text = valid_documents().swap_remove(doc);
        for (at, what) in &edits {
            text = insert_at(&text, *at, what);
        }
        all_parsers_answer_in_one_line(&text).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn valid_documents_with_deleted_ranges(
        doc in 0usize..5,
        at in any::<usize>(),
        len in 1usize..40,
    ) {
        let text = delete_range(&valid_documents().swap_remove(doc), at, len);
        all_parsers_answer_in_one_line(&text).map_err(TestCaseError::fail)?;
    }
}

/// Every prefix of every valid document, cut at each character boundary.
#[test]
fn truncated_at_every_char_boundary() {
    for doc in valid_documents() {
        // One multi-byte character inside, so that cuts fall beside it.
        let doc = insert_at(&doc, doc.len() / 2, "é😀");
        for (at, _) in doc.char_indices() {
            let Some(prefix) = doc.get(..at) else {
                continue;
            };
            if let Err(e) = all_parsers_answer_in_one_line(prefix) {
                panic!("cut at byte {at}: {e}");
            }
        }
    }
}

#[test]
fn examples() {
    for text in [
        "-éx",
        "-é",
        "-😀x --hash=sha256:00",
        "é==1 --hash=sha256:00",
        "a==é --hash=sha256:é",
        "a[é==1 --hash=sha256:00",
        "a==1\u{0} --hash=sha256:\u{0}",
        "a==1 --hash",
        "\u{0}",
        "#é\n\\\n-",
        "version = 1\n[[package]]\nname = \"é\"\nsource = { registry = \"é\" }\n",
        "{\"lockfileVersion\": 3, \"packages\": {\"node_modules/é\": {\"version\": \"1\", \"resolved\": \"https://é\", \"integrity\": \"sha512-é\"}}}",
        "{\"lockfileVersion\": 3, \"packages\": {\"é/node_modules/\": {}}}",
    ] {
        if let Err(e) = all_parsers_answer_in_one_line(text) {
            panic!("{text:?}: {e}");
        }
    }
    let e = parse_requirements("r.txt", "-éx").unwrap_err().to_string();
    assert_eq!(
        e,
        "r.txt:1: unknown option \"-é\"; a hashed requirements file holds requirements, --hash options and index options"
    );
    let e = parse_requirements("r.txt", "a==1 \\\n  --hash=sha256:é\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("r.txt:1: a==1: malformed sha256 \"é\""),
        "{e}"
    );
    let long = "x".repeat(100_000);
    let e = parse_requirements("r.txt", &format!("{long}==1"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is not a valid project name") && !e.contains('\n'),
        "{}",
        e.len()
    );
}
