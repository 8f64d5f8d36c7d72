//! PyPI project pages for a build: PEP 691 JSON preferred, PEP 503 HTML
//! accepted. A page only says where a pinned digest can be found.

use crate::fetch::{get_whole, FetchError};
use crate::progress::Progress;
use egress_model::Url;
use egress_simple::ProjectPage;
use egress_transcript::Client;

/// PEP 691: JSON preferred, HTML accepted.
const PAGE_ACCEPT: &str =
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

/// Fetches and parses the project page at `url`. Follows up to three
/// redirects within the index's origin. Returns the final URL (file URLs
/// on the page are relative to it) and the page.
pub(crate) fn project_page(
    client: &Client,
    url: &Url,
    progress: &Progress,
) -> Result<(Url, ProjectPage), FetchError> {
    let mut answer = get_whole(client, url, PAGE_ACCEPT, "project page", progress)?;
    // An index without PEP 691 may insist on its legacy type.
    if answer.status == 406 {
        answer = get_whole(client, &answer.url, "text/html", "project page", progress)?;
    }
    let url = answer.url;
    match (answer.status, answer.body) {
        (200, Some(body)) => {
            let json = answer.content_type.is_some_and(|t| t.contains("json"));
            let page = if json {
                egress_simple::parse_project_json(&body)
            } else {
                egress_simple::parse_project_html(&body)
            };
            page.map(|p| (url.clone(), p))
                .map_err(|e| FetchError::Refused(format!("{url}: {e}")))
        }
        (404, _) => Err(FetchError::Refused(format!(
            "{url}: 404: the index has no such project"
        ))),
        (s, _) => Err(FetchError::Refused(format!(
            "{url}: HTTP {s} ({})",
            answer.status_line
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fetch::testing::{client, script};

    #[test]
    fn pages_fall_back_to_html() {
        let page = ProjectPage {
            name: "x".into(),
            files: vec![egress_simple::FileEntry {
                filename: "x-1.0.tar.gz".into(),
                url: "../../f/x-1.0.tar.gz".into(),
                hashes: [("sha256".to_string(), "a".repeat(64))].into(),
                yanked: Some("broken".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let html = egress_simple::render_project_html(&page);
        let mut ok = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\n\r\n",
            html.len()
        )
        .into_bytes();
        ok.extend_from_slice(html.as_bytes());
        // An index that knows no PEP 691 type says 406; the legacy type works.
        let refuse = b"HTTP/1.1 406 Not Acceptable\r\nContent-Length: 0\r\n\r\n".to_vec();
        let (base, seen) = script(vec![refuse, ok]);
        let url = base.join("/simple/x/").expect("url");
        let (final_url, got) =
            project_page(&client(&url), &url, &Progress::new(0, 0)).expect("page");
        assert_eq!(got.files.len(), 1);
        assert_eq!(got.files[0].yanked.as_deref(), Some("broken"));
        assert_eq!(
            final_url.join(&got.files[0].url).expect("join").path(),
            "/f/x-1.0.tar.gz"
        );
        let seen = seen.lock().expect("log");
        assert!(seen[0].contains("Accept: application/vnd.pypi.simple.v1+json"));
        assert!(seen[1].contains("Accept: text/html\r\n"), "{}", seen[1]);
    }
}
