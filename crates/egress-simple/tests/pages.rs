//! Hand-written pages in the style real servers produce.

use std::collections::BTreeMap;

use egress_simple::{parse_index_html, parse_index_json, parse_project_html, parse_project_json};

const H1: &str = "813202ace4d9301a3c00740c700e012fb9f3f8c73ddcfe02ab558a8df6f175fd";
const H2: &str = "58cd2187c01e70e6e26505bca751777aa9f2ee0b7f4300988b709f44e013003f";

fn hashes(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn pypi_style_project_page() {
    let body = format!(
        r#"<!DOCTYPE html>
<html>
  <head>
    <meta name="pypi:repository-version" content="1.1">
    <title>Links for requests</title>
  </head>
  <body>
    <h1>Links for requests</h1>
    <a href="https://files.pythonhosted.org/packages/ba/bb/requests-0.2.0.tar.gz#sha256={H1}" >requests-0.2.0.tar.gz</a><br />
    <a href="https://files.pythonhosted.org/packages/70/8e/requests-2.31.0-py3-none-any.whl#sha256={H2}" data-requires-python="&gt;=3.7" data-dist-info-metadata="sha256={H1}" data-core-metadata="sha256={H1}">requests-2.31.0-py3-none-any.whl</a><br />
    <a href="https://files.pythonhosted.org/packages/aa/bb/requests-2.32.0.tar.gz#sha256={H2}" data-requires-python="&gt;=3.8" data-yanked="Yanked due to conflicts with CVE-2024-35195 mitigation" >requests-2.32.0.tar.gz</a><br />
    </body>
</html>
<!--SERIAL 23456789-->
"#
    );
    let page = parse_project_html(body.as_bytes()).expect("parses");
    assert_eq!(page.name, "requests");
    assert_eq!(page.api_version.as_deref(), Some("1.1"));
    assert_eq!(page.files.len(), 3);
    let f = &page.files[0];
    assert_eq!(f.filename, "requests-0.2.0.tar.gz");
    assert_eq!(
        f.url,
        "https://files.pythonhosted.org/packages/ba/bb/requests-0.2.0.tar.gz"
    );
    assert_eq!(f.hashes, hashes(&[("sha256", H1)]));
    assert_eq!(f.requires_python, None);
    assert_eq!(f.yanked, None);
    assert_eq!(f.core_metadata, None);
    let f = &page.files[1];
    assert_eq!(f.requires_python.as_deref(), Some(">=3.7"));
    assert_eq!(f.core_metadata, Some(hashes(&[("sha256", H1)])));
    let f = &page.files[2];
    assert_eq!(
        f.yanked.as_deref(),
        Some("Yanked due to conflicts with CVE-2024-35195 mitigation")
    );
}

#[test]
fn pypiserver_style_project_page() {
    let body = format!(
        r#"<!DOCTYPE html>
<html>
    <head>
        <title>Links for x</title>
    </head>
    <body>
        <h1>Links for x</h1>
             <a href="/packages/x-1.0.tar.gz#sha256={H1}">x-1.0.tar.gz</a><br>
             <a href="/packages/x-1.1-py3-none-any.whl#md5=0123456789abcdef0123456789abcdef">x-1.1-py3-none-any.whl</a><br>
    </body>
</html>"#
    );
    let page = parse_project_html(body.as_bytes()).expect("parses");
    assert_eq!(page.name, "x");
    assert_eq!(page.api_version, None);
    assert_eq!(page.files.len(), 2);
    assert_eq!(page.files[0].url, "/packages/x-1.0.tar.gz");
    assert_eq!(page.files[0].hashes, hashes(&[("sha256", H1)]));
    assert_eq!(
        page.files[1].hashes,
        hashes(&[("md5", "0123456789abcdef0123456789abcdef")])
    );
}

#[test]
fn devpi_style_project_page() {
    // Upper-case tags, single quotes, unquoted values, attribute order mixed,
    // the legacy metadata attribute only, a bare data-yanked.
    let body = format!(
        r#"<!DOCTYPE html>
<HTML lang="en"><HEAD>
<META NAME='pypi:repository-version' CONTENT='1.0'>
<TITLE>root/pypi: links for Django</TITLE></HEAD>
<BODY><H1>root/pypi: links for Django</H1>
<A data-requires-python='&gt;=3.8' HREF='../../+f/1aa/2a3b/Django-4.2.tar.gz#sha256={H1}'>Django-4.2.tar.gz</A><BR/>
<a href=../../+f/2bb/Django-4.1.tar.gz#sha256={H2} data-yanked data-dist-info-metadata=true>
    Django-4.1.tar.gz
</a><br/>
<a href="../../+f/3cc/Django-4.0.tar.gz" data-dist-info-metadata="sha256={H2}" data-core-metadata="true"></a>
</BODY></HTML>"#
    );
    let page = parse_project_html(body.as_bytes()).expect("parses");
    assert_eq!(page.name, "Django");
    assert_eq!(page.api_version.as_deref(), Some("1.0"));
    assert_eq!(page.files.len(), 3);
    let f = &page.files[0];
    assert_eq!(f.filename, "Django-4.2.tar.gz");
    assert_eq!(f.url, "../../+f/1aa/2a3b/Django-4.2.tar.gz");
    assert_eq!(f.requires_python.as_deref(), Some(">=3.8"));
    let f = &page.files[1];
    assert_eq!(f.filename, "Django-4.1.tar.gz");
    assert_eq!(f.hashes, hashes(&[("sha256", H2)]));
    assert_eq!(f.yanked.as_deref(), Some(""));
    assert_eq!(f.core_metadata, Some(BTreeMap::new()));
    // Empty text: the filename falls back to the last path segment, and the
    // new metadata attribute wins over the old one (PEP 714).
    let f = &page.files[2];
    assert_eq!(f.filename, "Django-4.0.tar.gz");
    assert!(f.hashes.is_empty());
    assert_eq!(f.core_metadata, Some(BTreeMap::new()));
}

#[test]
fn entities_comments_scripts() {
    let body = br#"<html><head>
<script>var s = "<a href='/evil-1.0.tar.gz'>evil-1.0.tar.gz</a>";</script>
<style>a::after { content: "<a href=x>"; }</style>
</head><body>
<!-- <a href="/commented-1.0.tar.gz">commented-1.0.tar.gz</a> -->
<a href="/p/a-1.0.tar.gz?x=1&amp;y=2#sha256=ab" data-requires-python="&lt;4,&gt;=3.8">a&#45;1.0&#x2E;tar.gz</a>
<a href="/p/b-1.0.tar.gz" data-yanked="&quot;why&quot; &#39;not&#39; &amp; &unknown; &#0; &#xD800; &#99999999999;">b-1.0.tar.gz</a>
<p>a lone < sign and an <em>element</em></p>
</body></html>"#;
    let page = parse_project_html(body).expect("parses");
    let names: Vec<&str> = page.files.iter().map(|f| f.filename.as_str()).collect();
    assert_eq!(names, ["a-1.0.tar.gz", "b-1.0.tar.gz"]);
    assert_eq!(page.files[0].url, "/p/a-1.0.tar.gz?x=1&y=2");
    assert_eq!(page.files[0].hashes, hashes(&[("sha256", "ab")]));
    assert_eq!(page.files[0].requires_python.as_deref(), Some("<4,>=3.8"));
    assert_eq!(
        page.files[1].yanked.as_deref(),
        Some("\"why\" 'not' & &unknown; \u{FFFD} \u{FFFD} \u{FFFD}")
    );
}

#[test]
fn nginx_autoindex_is_reported_as_listed() {
    // A static directory listing is not a simple page; the parser reports
    // its anchors faithfully (including "../" and the truncated name) and
    // leaves the verdict to the suite.
    let body = br#"<html>
<head><title>Index of /simple/x/</title></head>
<body>
<h1>Index of /simple/x/</h1><hr><pre><a href="../">../</a>
<a href="x-1.0.tar.gz">x-1.0.tar.gz</a>                                       01-Jan-2024 00:00    1234
<a href="x_with_a_very_long_name-1.0-py3-none-any.whl">x_with_a_very_long_name-1.0-py3-..&gt;</a> 01-Jan-2024 00:00    5678
</pre><hr></body>
</html>"#;
    let page = parse_project_html(body).expect("parses");
    assert_eq!(page.name, "");
    let names: Vec<&str> = page.files.iter().map(|f| f.filename.as_str()).collect();
    assert_eq!(
        names,
        ["../", "x-1.0.tar.gz", "x_with_a_very_long_name-1.0-py3-..>"]
    );
    assert!(page.files.iter().all(|f| f.hashes.is_empty()));
}

#[test]
fn index_pages() {
    let pypi = br#"<!DOCTYPE html>
<html>
  <head>
    <meta name="pypi:repository-version" content="1.1">
    <title>Simple index</title>
  </head>
  <body>
    <a href="/simple/0/">0</a>
    <a href="/simple/zope-interface/">zope.interface</a>
    <a href="/simple/empty-text/"> </a>
    <a name="no-href">not a project</a>
  </body>
</html>"#;
    let index = parse_index_html(pypi).expect("parses");
    assert_eq!(index.api_version.as_deref(), Some("1.1"));
    assert_eq!(index.projects, ["0", "zope.interface", "empty-text"]);

    let json = br#"{"meta":{"api-version":"1.0","_last-serial":1},"projects":[{"name":"Frob","x":1},{"name":"spamspamspam"}]}"#;
    let index = parse_index_json(json).expect("parses");
    assert_eq!(index.api_version.as_deref(), Some("1.0"));
    assert_eq!(index.projects, ["Frob", "spamspamspam"]);
}

#[test]
fn pypi_style_json_project() {
    let body = format!(
        r#"{{
  "meta": {{"_last-serial": 123, "api-version": "1.1"}},
  "name": "holygrail",
  "files": [
    {{
      "filename": "holygrail-1.0.tar.gz",
      "url": "https://example.com/files/holygrail-1.0.tar.gz",
      "hashes": {{"sha256": "{H1}", "blake2b": "00"}},
      "requires-python": ">=3.7",
      "yanked": "Had a vulnerability",
      "size": 1234,
      "upload-time": "2022-05-04T12:00:00.123456Z",
      "data-dist-info-metadata": false,
      "provenance": null
    }},
    {{
      "filename": "holygrail-1.0-py3-none-any.whl",
      "url": "https://example.com/files/holygrail-1.0-py3-none-any.whl",
      "hashes": {{}},
      "requires-python": null,
      "dist-info-metadata": true,
      "gpg-sig": false,
      "yanked": false
    }},
    {{
      "filename": "holygrail-1.1.tar.gz",
      "url": "holygrail-1.1.tar.gz",
      "core-metadata": {{"sha256": "{H2}"}},
      "dist-info-metadata": true,
      "yanked": true
    }}
  ],
  "versions": ["1.0", "1.1"]
}}"#
    );
    let page = parse_project_json(body.as_bytes()).expect("parses");
    assert_eq!(page.name, "holygrail");
    assert_eq!(page.api_version.as_deref(), Some("1.1"));
    assert_eq!(page.versions, ["1.0", "1.1"]);
    let f = &page.files[0];
    assert_eq!(f.hashes, hashes(&[("blake2b", "00"), ("sha256", H1)]));
    assert_eq!(f.yanked.as_deref(), Some("Had a vulnerability"));
    assert_eq!(f.size, Some(1234));
    assert_eq!(
        f.upload_time.as_deref(),
        Some("2022-05-04T12:00:00.123456Z")
    );
    assert_eq!(f.core_metadata, None);
    let f = &page.files[1];
    assert!(f.hashes.is_empty());
    assert_eq!(f.requires_python, None);
    assert_eq!(f.core_metadata, Some(BTreeMap::new()));
    assert_eq!(f.gpg_sig, Some(false));
    assert_eq!(f.yanked, None);
    let f = &page.files[2];
    // Missing `hashes` reads as empty; judging that is the suite's job.
    assert!(f.hashes.is_empty());
    assert_eq!(f.core_metadata, Some(hashes(&[("sha256", H2)])));
    assert_eq!(f.yanked.as_deref(), Some(""));
}

#[test]
fn json_minimal_and_malformed() {
    let page = parse_project_json(br#"{"files":[]}"#).expect("minimal");
    assert_eq!(page.name, "");
    assert_eq!(page.api_version, None);
    assert!(page.versions.is_empty());

    for bad in [
        &b""[..],
        b"null",
        b"[]",
        b"{}",
        br#"{"name":"x"}"#,
        br#"{"files":[{"url":"x"}]}"#,
        br#"{"files":[{"filename":"x","url":"x","yanked":1}]}"#,
        br#"{"files":[{"filename":"x","url":"x","size":-1}]}"#,
        br#"{"files":[{"filename":"x","url":"x","hashes":{"sha256":1}}]}"#,
        br#"{"files":[{"filename":"x","url":"x","url":"y"}]}"#,
        b"<html></html>",
    ] {
        let err = parse_project_json(bad).expect_err("must fail");
        let msg = err.to_string();
        assert!(!msg.contains('\n'), "{msg}");
    }
    assert!(parse_index_json(br#"{"meta":{"api-version":"1.0"}}"#).is_err());
    assert!(parse_index_json(br#"{"projects":[{}]}"#).is_err());
}
