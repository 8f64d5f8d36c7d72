//! Why egress-http keeps its own HTTP/1.1 codec instead of hyper's http1
//! server: hyper parses request heads with httparse, and httparse completes
//! heads that `parse_request` refuses. This runs every case of the smuggling
//! corpus through both and names the difference; docs/architecture.md ("The
//! serving core") quotes the figures. httparse is a dev-dependency only.

use egress_http::{parse_request, Limits, Refusal};
use egress_model::smuggling::SMUGGLING_CORPUS;

/// hyper's default header count for a request head.
const HYPER_MAX_HEADERS: usize = 100;

/// What httparse makes of a payload's first request head.
#[derive(Debug, PartialEq, Eq)]
enum Httparse {
    /// A complete head: hyper would go on to read a body and serve it.
    Accepted,
    /// It wants more bytes: hyper would wait (up to its 400 KiB buffer).
    Partial,
    Refused(httparse::Error),
}

fn httparse(bytes: &[u8]) -> Httparse {
    let mut headers = [httparse::EMPTY_HEADER; HYPER_MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => Httparse::Accepted,
        Ok(httparse::Status::Partial) => Httparse::Partial,
        Err(e) => Httparse::Refused(e),
    }
}

/// The cases whose head httparse accepts while `parse_request` refuses the
/// request, with our status.
fn accepted_only_by_httparse() -> Vec<(&'static str, u16)> {
    let limits = Limits::default();
    SMUGGLING_CORPUS
        .iter()
        .filter_map(|case| {
            let bytes = case.build("/smuggled");
            match (parse_request(&bytes, &limits), httparse(&bytes)) {
                (Err(Refusal::Status(status)), Httparse::Accepted) => Some((case.id, status)),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn httparse_accepts_heads_our_parser_refuses() {
    let only = accepted_only_by_httparse();
    let limits = Limits::default();
    let refused_by_us = SMUGGLING_CORPUS
        .iter()
        .filter(|c| {
            matches!(
                parse_request(&c.build("/s"), &limits),
                Err(Refusal::Status(_))
            )
        })
        .count();
    let refused_by_httparse = SMUGGLING_CORPUS
        .iter()
        .filter(|c| matches!(httparse(&c.build("/s")), Httparse::Refused(_)))
        .count();
    eprintln!(
        "corpus: {} cases; parse_request refuses {refused_by_us}; httparse refuses the head of {refused_by_httparse}; httparse accepts the head of {} that parse_request refuses:",
        SMUGGLING_CORPUS.len(),
        only.len()
    );
    for (id, status) in &only {
        eprintln!("  {id} (parse_request: {status})");
    }
    // The line-ending cases are the plainest: httparse takes a bare LF as a
    // line end, which is how a field hides from a front end that splits on
    // CRLF only.
    for id in ["bare-lf-header", "bare-lf-head", "bare-lf-end-of-head"] {
        assert!(
            only.iter().any(|(i, _)| *i == id),
            "{id}: expected httparse to accept it and parse_request to refuse it"
        );
    }
    // The figures in docs/architecture.md; update both together.
    assert_eq!(
        (
            SMUGGLING_CORPUS.len(),
            refused_by_us,
            refused_by_httparse,
            only.len()
        ),
        (58, 56, 21, 35),
        "update docs/architecture.md (The serving core) with the new figures"
    );
}

#[test]
fn the_comparison_can_tell_them_apart() {
    // A control for the helper itself: a clean request is accepted by both,
    // a bare-LF one only by httparse, a space inside the method by neither.
    let clean = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    assert_eq!(httparse(clean), Httparse::Accepted);
    assert!(parse_request(clean, &Limits::default()).is_ok());
    let bare = b"GET / HTTP/1.1\nHost: a\n\n";
    assert_eq!(httparse(bare), Httparse::Accepted);
    assert_eq!(
        parse_request(bare, &Limits::default()).unwrap_err(),
        Refusal::Status(400)
    );
    assert!(matches!(
        httparse(b"G T / HTTP/1.1\r\n\r\n"),
        Httparse::Refused(_)
    ));
}
