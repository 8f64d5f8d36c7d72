//! Hostile and broken inputs: never a panic, bounded work.

use egress_simple::{
    parse_index_html, parse_index_json, parse_project_html, parse_project_json, ParseError,
    MAX_ANCHORS,
};

fn all_parsers(body: &[u8]) {
    let _ = parse_project_html(body);
    let _ = parse_index_html(body);
    let _ = parse_project_json(body);
    let _ = parse_index_json(body);
}

#[test]
fn truncated_pages() {
    let page = br#"<!DOCTYPE html><html><head><meta name="pypi:repository-version" content="1.1"><title>Links for x</title></head><body><!-- c --><a href="/x-1.0.tar.gz#sha256=ab" data-yanked='r' data-requires-python=&gt;=3>x-1.0.tar.gz</a><br/><script>"<a"</script></body></html>"#;
    // Every prefix, including ones that cut tags, quotes, entities and
    // comments in half.
    for end in 0..=page.len() {
        all_parsers(&page[..end]);
    }
    let json = br#"{"meta":{"api-version":"1.1"},"name":"x","files":[{"filename":"x","url":"u","hashes":{"sha256":"ab"},"yanked":"r"}],"versions":["1"]}"#;
    for end in 0..=json.len() {
        all_parsers(&json[..end]);
    }
}

#[test]
fn unterminated_constructs() {
    for body in [
        &b"<a href=\"/x-1.0.tar.gz"[..],
        b"<a href='/x",
        b"<a href=/x",
        b"<a",
        b"<",
        b"</",
        b"<!--",
        b"<!-- <a href=x>x</a>",
        b"<script><a href=x>x</a>",
        b"<a href=x>text without end",
        b"<a href=x><a href=y>",
        b"<a ==== = = =>",
        b"<a href=\"x\"\"\"\"'''>",
        b"&#x;&#;&;&&&&#xFFFFFFFFFFFFFFFFFFFF;&#99999999999999999999;",
        b"<a href=\"&#xFFFFFFFFF;&#1114112;\">&#x10FFFF;</a>",
        b"<!DOCTYPE",
        b"<?xml",
        b"<a/href=x/>",
    ] {
        all_parsers(body);
    }
    // Unclosed anchors are closed by the next one and by the end of input.
    let page = parse_project_html(b"<a href=/x-1.tar.gz>x-1.tar.gz<a href=/y-1.tar.gz>y-1.tar.gz")
        .expect("parses");
    let names: Vec<&str> = page.files.iter().map(|f| f.filename.as_str()).collect();
    assert_eq!(names, ["x-1.tar.gz", "y-1.tar.gz"]);
    // A tag cut off by the end of input is dropped.
    assert!(parse_project_html(b"<a href=\"/x")
        .expect("parses")
        .files
        .is_empty());
}

#[test]
fn giant_values() {
    let big = "A".repeat(4 << 20);
    let body = format!("<a href=\"{big}\" data-yanked=\"{big}\">{big}</a>");
    let page = parse_project_html(body.as_bytes()).expect("parses");
    assert_eq!(page.files.len(), 1);
    assert_eq!(page.files[0].url.len(), big.len());
    // Unterminated giant quote, giant comment, giant entity run.
    all_parsers(format!("<a href=\"{big}").as_bytes());
    all_parsers(format!("<!--{big}").as_bytes());
    all_parsers("&".repeat(1 << 20).as_bytes());
    all_parsers("&#".repeat(1 << 20).as_bytes());
    all_parsers("<a x".repeat(1 << 18).as_bytes());
    // A tag with a million attributes.
    all_parsers(format!("<a {}>", "x ".repeat(1 << 20)).as_bytes());
    // Deeply nested JSON hits serde_json's recursion limit, not the stack.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(parse_project_json(deep.as_bytes()).is_err());
    // Under an unknown key serde_json skips nesting without recursing.
    let deep = format!(
        r#"{{"files":[],"x":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert!(parse_project_json(deep.as_bytes()).is_ok());
}

#[test]
fn anchor_cap() {
    let at_cap = "<a href=x>x</a>".repeat(MAX_ANCHORS);
    assert_eq!(
        parse_project_html(at_cap.as_bytes())
            .expect("at the cap")
            .files
            .len(),
        MAX_ANCHORS
    );
    let over = "<a href=x>".repeat(MAX_ANCHORS + 1);
    let err = parse_index_html(over.as_bytes()).expect_err("over the cap");
    assert_eq!(err, ParseError::TooManyAnchors { limit: MAX_ANCHORS });
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn random_bytes() {
    // xorshift: deterministic, no dependency.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // Bias towards markup bytes so the scanner's branches get exercised.
    const ALPHABET: &[u8] = b"<>/!-=\"'& #;xa\n\t{}[]:,ahref\xff\xc3\xa9\x00";
    for round in 0..3000 {
        let len = (next() % 300) as usize;
        let body: Vec<u8> = (0..len)
            .map(|_| {
                let r = next();
                if round % 2 == 0 {
                    ALPHABET[(r % ALPHABET.len() as u64) as usize]
                } else {
                    r as u8
                }
            })
            .collect();
        all_parsers(&body);
    }
}

#[test]
fn invalid_utf8_is_read_lossily() {
    let page =
        parse_project_html(b"<a href=\"/x\xff-1.0.tar.gz\">x\xfe-1.0.tar.gz</a>").expect("parses");
    assert_eq!(page.files[0].filename, "x\u{FFFD}-1.0.tar.gz");
    assert!(parse_project_json(b"{\"files\":[],\"name\":\"\xff\"}").is_err());
}
