//! render -> parse gives back what was rendered, in both formats.

use std::collections::BTreeMap;

use egress_simple::{
    parse_index_html, parse_index_json, parse_project_html, parse_project_json, render_index_html,
    render_index_json, render_project_html, render_project_json, FileEntry, IndexPage, ProjectPage,
};

const HEX_A: &str = "a3f1c0ffee00112233445566778899aabbccddeeff00112233445566778899aa";
const HEX_B: &str = "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b";

/// Text a template engine would evaluate; it must survive as plain data.
const TEMPLATES: [&str; 4] = ["{{7*7}}", "${7*7}", "<%= 7*7 %>", "#{7*7}"];

fn sha256(hex: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("sha256".to_string(), hex.to_string())])
}

fn sample_page() -> ProjectPage {
    ProjectPage {
        name: "Frob_Nicator".to_string(),
        files: vec![
            FileEntry {
                filename: "frob_nicator-1.0.tar.gz".to_string(),
                url: "https://files.example/packages/frob_nicator-1.0.tar.gz".to_string(),
                hashes: sha256(HEX_A),
                requires_python: Some(">=3.8, <4".to_string()),
                ..FileEntry::default()
            },
            FileEntry {
                filename: "frob_nicator-1.1-py3-none-any.whl".to_string(),
                url: "../../packages/frob_nicator-1.1-py3-none-any.whl".to_string(),
                hashes: sha256(HEX_B),
                requires_python: Some("<3.13,>=3.8,!=3.9.*".to_string()),
                yanked: Some(String::new()),
                core_metadata: Some(sha256(HEX_A)),
                gpg_sig: Some(false),
                ..FileEntry::default()
            },
            FileEntry {
                filename: "frob_nicator-1.2.tar.gz".to_string(),
                url: "/packages/frob_nicator-1.2.tar.gz?a=1&b=<2>".to_string(),
                hashes: sha256(HEX_A),
                yanked: Some("broken: uses \"eval\" & <script> 'quotes'".to_string()),
                core_metadata: Some(BTreeMap::new()),
                gpg_sig: Some(true),
                ..FileEntry::default()
            },
            FileEntry {
                filename: "nohash-0.1.zip".to_string(),
                url: "nohash-0.1.zip".to_string(),
                ..FileEntry::default()
            },
            FileEntry {
                filename: format!("weird-{}-1.0.tar.gz", TEMPLATES.join("")),
                url: format!("/p/{}", TEMPLATES.join("")).replace('#', "%23"),
                hashes: sha256(HEX_B),
                requires_python: Some(TEMPLATES.join(" ")),
                yanked: Some(TEMPLATES.join(" ")),
                ..FileEntry::default()
            },
        ],
        versions: vec!["1.0".to_string(), "1.1".to_string(), "1.2".to_string()],
        api_version: Some("1.1".to_string()),
    }
}

/// What HTML can carry: PEP 700 fields are JSON only.
fn html_view(page: &ProjectPage) -> ProjectPage {
    let mut page = page.clone();
    page.versions.clear();
    for file in &mut page.files {
        file.size = None;
        file.upload_time = None;
    }
    page
}

#[test]
fn project_json_round_trip() {
    let mut page = sample_page();
    page.files[0].size = Some(123_456);
    page.files[0].upload_time = Some("2024-01-02T03:04:05.678901Z".to_string());
    page.files[0]
        .hashes
        .insert("blake2b".to_string(), HEX_B.to_string());
    let body = render_project_json(&page);
    assert_eq!(parse_project_json(body.as_bytes()), Ok(page));
}

#[test]
fn project_html_round_trip() {
    let page = html_view(&sample_page());
    let body = render_project_html(&page);
    assert_eq!(parse_project_html(body.as_bytes()), Ok(page));
}

#[test]
fn templates_survive_verbatim() {
    let mut page = sample_page();
    page.name = TEMPLATES.join("");
    let html = parse_project_html(render_project_html(&page).as_bytes()).expect("html");
    let json = parse_project_json(render_project_json(&page).as_bytes()).expect("json");
    for parsed in [html, json] {
        assert_eq!(parsed.name, TEMPLATES.join(""));
        let weird = &parsed.files[4];
        assert_eq!(
            weird.filename,
            format!("weird-{}-1.0.tar.gz", TEMPLATES.join(""))
        );
        assert_eq!(
            weird.requires_python.as_deref(),
            Some("{{7*7}} ${7*7} <%= 7*7 %> #{7*7}")
        );
        assert_eq!(weird.yanked, weird.requires_python);
    }
}

#[test]
fn html_escapes_everything() {
    let body = render_project_html(&sample_page());
    // The `<` of `<%=` and `<script>` must never reach the page as markup.
    assert!(!body.contains("<%"));
    assert!(!body.contains("<script"));
    assert!(body.contains("data-requires-python=\"&gt;=3.8, &lt;4\""));
    assert!(body.contains("href=\"/packages/frob_nicator-1.2.tar.gz?a=1&amp;b=&lt;2&gt;#sha256="));
    assert!(body.contains("&quot;eval&quot; &amp; &lt;script&gt; &#39;quotes&#39;"));
    assert!(body.starts_with("<!DOCTYPE html>"));
    assert!(body.contains("<meta name=\"pypi:repository-version\" content=\"1.1\">"));
}

#[test]
fn html_shape_of_one_file() {
    let page = ProjectPage {
        name: "x".to_string(),
        files: vec![FileEntry {
            filename: "x-1.0.tar.gz".to_string(),
            url: "/files/x-1.0.tar.gz".to_string(),
            hashes: sha256(HEX_A),
            requires_python: Some(">=3.8".to_string()),
            yanked: Some(String::new()),
            core_metadata: Some(sha256(HEX_B)),
            ..FileEntry::default()
        }],
        ..ProjectPage::default()
    };
    let expected = format!(
        "<a href=\"/files/x-1.0.tar.gz#sha256={HEX_A}\" data-requires-python=\"&gt;=3.8\" \
         data-yanked=\"\" data-core-metadata=\"sha256={HEX_B}\" \
         data-dist-info-metadata=\"sha256={HEX_B}\">x-1.0.tar.gz</a><br/>"
    );
    assert!(render_project_html(&page).contains(&expected));
}

#[test]
fn json_shape_is_fixed() {
    let page = ProjectPage {
        name: "x".to_string(),
        files: vec![
            FileEntry {
                filename: "x-1.0.tar.gz".to_string(),
                url: "/files/x-1.0.tar.gz".to_string(),
                hashes: sha256("ab"),
                requires_python: Some(">=3.8".to_string()),
                core_metadata: Some(BTreeMap::new()),
                size: Some(10),
                upload_time: Some("2024-01-01T00:00:00.000000Z".to_string()),
                ..FileEntry::default()
            },
            FileEntry {
                filename: "x-1.1.tar.gz".to_string(),
                url: "/files/x-1.1.tar.gz".to_string(),
                yanked: Some("bad".to_string()),
                ..FileEntry::default()
            },
            FileEntry {
                filename: "x-1.2.tar.gz".to_string(),
                url: "/files/x-1.2.tar.gz".to_string(),
                yanked: Some(String::new()),
                ..FileEntry::default()
            },
        ],
        versions: vec!["1.0".to_string()],
        api_version: None,
    };
    assert_eq!(
        render_project_json(&page),
        concat!(
            r#"{"meta":{"api-version":"1.1"},"name":"x","files":["#,
            r#"{"filename":"x-1.0.tar.gz","url":"/files/x-1.0.tar.gz","hashes":{"sha256":"ab"},"#,
            r#""requires-python":">=3.8","core-metadata":true,"yanked":false,"size":10,"#,
            r#""upload-time":"2024-01-01T00:00:00.000000Z"},"#,
            r#"{"filename":"x-1.1.tar.gz","url":"/files/x-1.1.tar.gz","hashes":{},"yanked":"bad"},"#,
            r#"{"filename":"x-1.2.tar.gz","url":"/files/x-1.2.tar.gz","hashes":{},"yanked":true}"#,
            r#"],"versions":["1.0"]}"#
        )
    );
    // PEP 714: the legacy key breaks pip 22.3-23.1 and is never sent in JSON.
    assert!(!render_project_json(&page).contains("dist-info-metadata"));
    assert_eq!(render_project_json(&page), render_project_json(&page));
}

fn sample_index() -> IndexPage {
    IndexPage {
        projects: vec![
            "requests".to_string(),
            "Frob_Nicator".to_string(),
            "zope.interface".to_string(),
            "a&b<c>\"d'".to_string(),
            TEMPLATES.join(""),
        ],
        api_version: Some("1.1".to_string()),
    }
}

#[test]
fn index_round_trips() {
    let index = sample_index();
    let json = render_index_json(&index);
    assert_eq!(parse_index_json(json.as_bytes()), Ok(index.clone()));
    let html = render_index_html(&index);
    assert!(html.contains("<a href=\"requests/\">requests</a>"));
    assert!(html.contains("a&amp;b&lt;c&gt;&quot;d&#39;"));
    assert_eq!(parse_index_html(html.as_bytes()), Ok(index));
}

#[test]
fn index_json_shape() {
    let index = IndexPage {
        projects: vec!["a".to_string(), "B".to_string()],
        api_version: None,
    };
    assert_eq!(
        render_index_json(&index),
        r#"{"meta":{"api-version":"1.1"},"projects":[{"name":"a"},{"name":"B"}]}"#
    );
}

#[test]
fn empty_pages_round_trip() {
    let page = ProjectPage {
        name: "empty".to_string(),
        api_version: Some("1.1".to_string()),
        ..ProjectPage::default()
    };
    assert_eq!(
        parse_project_json(render_project_json(&page).as_bytes()),
        Ok(page.clone())
    );
    assert_eq!(
        parse_project_html(render_project_html(&page).as_bytes()),
        Ok(page)
    );
    let index = IndexPage {
        projects: vec![],
        api_version: Some("1.1".to_string()),
    };
    assert_eq!(
        parse_index_json(render_index_json(&index).as_bytes()),
        Ok(index.clone())
    );
    assert_eq!(
        parse_index_html(render_index_html(&index).as_bytes()),
        Ok(index)
    );
}

/// Found by the simple_html fuzz target: an anchor with empty text whose URL's
/// last segment starts with whitespace took that segment untrimmed as the
/// filename, so the page rendered from it read back a different filename.
#[test]
fn fuzz_untrimmed_last_segment_filename_round_trips() {
    let minimal: &[u8] = b"<a href=\"dist/\n  pkg-1.0.tar.gz\"></a>";
    let found: &[u8] = b"<!DOCTYPE html>\x0a<html>\x0a  <head>\x0a  n^ex</title>\x0a  <   <a\x09\x00\x00\x00\x00\x00\x00\x10c-present/\x22>ec</hea\x0a  b>d<ody>\x0a    <a href=\x22e-present</a><br/\x0a    <a href=\x22ec-present\x81\x81\x81\x80\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81\x81/\x226e\xa3\xd2\x8f\x8desent</a><br/>\x0a    <a href=\x22ehrto/\x22>other</a><br/>\x0a  </bod}>\x0a</htm\x94\xc6\x0a";
    for body in [minimal, found] {
        let page = parse_project_html(body).unwrap();
        for f in &page.files {
            assert_eq!(f.filename, f.filename.trim(), "{body:?}");
        }
        let again = parse_project_html(render_project_html(&page).as_bytes()).unwrap();
        assert_eq!(again.files, page.files);
    }
    let page = parse_project_html(minimal).unwrap();
    assert_eq!(page.files[0].filename, "pkg-1.0.tar.gz");
}
