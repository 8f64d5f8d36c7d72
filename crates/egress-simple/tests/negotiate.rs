//! PEP 691 content negotiation.

use egress_simple::{negotiate, Format, HTML_LEGACY, HTML_V1, JSON_V1};

const JSON: Option<(Format, &str)> = Some((Format::Json, JSON_V1));
const HTML: Option<(Format, &str)> = Some((Format::Html, HTML_V1));
const LEGACY: Option<(Format, &str)> = Some((Format::Html, HTML_LEGACY));

type Row<'a> = (Option<&'a str>, Option<(Format, &'a str)>);

#[test]
fn negotiation_table() {
    let table: &[Row] = &[
        // No header: legacy clients get what PEP 503 gave them.
        (None, LEGACY),
        (Some(""), LEGACY),
        (Some("   "), LEGACY),
        // Exact types.
        (Some(JSON_V1), JSON),
        (Some(HTML_V1), HTML),
        (Some("text/html"), LEGACY),
        (Some("TEXT/HTML; charset=utf-8"), LEGACY),
        // `latest` answers with the concrete v1 content type.
        (Some("application/vnd.pypi.simple.latest+json"), JSON),
        (Some("application/vnd.pypi.simple.latest+html"), HTML),
        // q-values beat server order.
        (
            Some("text/html;q=0.5, application/vnd.pypi.simple.v1+json;q=0.4"),
            LEGACY,
        ),
        (
            Some("application/vnd.pypi.simple.v1+json;q=0.1, application/vnd.pypi.simple.v1+html"),
            HTML,
        ),
        // What pip and uv send.
        (
            Some("application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01"),
            JSON,
        ),
        // Equal q: server order.
        (Some("text/html, application/vnd.pypi.simple.v1+html"), HTML),
        (Some("text/html, application/vnd.pypi.simple.v1+json"), JSON),
        // Wildcards.
        (Some("*/*"), JSON),
        (Some("application/*"), JSON),
        (Some("text/*"), LEGACY),
        (Some("text/*;q=0.9, application/*;q=0.8"), LEGACY),
        // q=0 means "not acceptable", and a specific range overrides a wildcard.
        (Some("*/*, application/vnd.pypi.simple.v1+json;q=0"), HTML),
        (
            Some("*/*;q=0.1, application/vnd.pypi.simple.v1+json;q=0, application/vnd.pypi.simple.v1+html;q=0"),
            LEGACY,
        ),
        (Some("application/vnd.pypi.simple.v1+json;q=0"), None),
        (Some("*/*;q=0"), None),
        // Not offered.
        (Some("application/json"), None),
        (Some("image/png, application/xml"), None),
        // Malformed elements are ignored, not fatal.
        (Some("garbage"), None),
        (Some("garbage, text/html"), LEGACY),
        (Some("application/vnd.pypi.simple.v1+json;q=2, text/html"), LEGACY),
        (Some("application/vnd.pypi.simple.v1+json;q=0.0001, text/html"), LEGACY),
        (Some("application/vnd.pypi.simple.v1+json;q=-1, text/html"), LEGACY),
        (Some("*/json, text/html;q=0.5"), LEGACY),
        (Some(",,;,/,;q="), None),
    ];
    for (accept, expected) in table {
        assert_eq!(negotiate(*accept), *expected, "Accept: {accept:?}");
    }
}

#[test]
fn q_value_precision() {
    assert_eq!(
        negotiate(Some(
            "application/vnd.pypi.simple.v1+json;q=0.501, text/html;q=0.5"
        )),
        JSON
    );
    assert_eq!(
        negotiate(Some(
            "application/vnd.pypi.simple.v1+json;q=0.5, text/html;q=0.500"
        )),
        JSON
    );
    assert_eq!(
        negotiate(Some(
            "application/vnd.pypi.simple.v1+json;q=0.499, text/html;q=0.5"
        )),
        LEGACY
    );
    assert_eq!(negotiate(Some("text/html;q=1.000")), LEGACY);
    assert_eq!(negotiate(Some("text/html;q=1.001")), None);
}
