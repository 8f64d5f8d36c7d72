//! `parse_request`: the connection's parser on bytes, without a socket.

use egress_http::{parse_request, Limits, Method, Refusal};

#[test]
fn parses_a_request_with_its_body() {
    let req = parse_request(
        b"POST /x?y=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcEXTRA",
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(req.method, Method::Post);
    assert_eq!(req.target, "/x?y=1");
    assert_eq!((req.path(), req.query()), ("/x", Some("y=1")));
    assert_eq!(req.header("host"), Some("a"));
    assert_eq!(req.body, b"abc");
}

#[test]
fn refusals_carry_the_status_and_truncation_is_incomplete() {
    let limits = Limits::default();
    assert_eq!(
        parse_request(b"GET / HTTP/1.1\r\nHost: a\r\n", &limits).unwrap_err(),
        Refusal::Incomplete
    );
    assert_eq!(
        parse_request(b"GET / HTTP/1.1\r\n\r\n", &limits).unwrap_err(),
        Refusal::Status(400),
        "HTTP/1.1 without Host"
    );
}
