//! The HTTP/1.1 request head (and body framing) parser of egress-http, and
//! the target classification the mirror applies to what it returns.
#![no_main]
use egress_http::{parse_request, Limits, Refusal};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_head_bytes: 8 * 1024,
        max_body_bytes: 64 * 1024,
        ..Limits::default()
    };
    match parse_request(data, &limits) {
        Ok(req) => {
            // The target is handed on raw, and is visible ASCII only.
            assert!(!req.target.is_empty());
            assert!(req.target.bytes().all(|b| (0x21..=0x7e).contains(&b)));
            assert!(req.version == "HTTP/1.1" || req.version == "HTTP/1.0");
            // Classification: path and query split the target exactly.
            let rebuilt = match req.query() {
                Some(q) => format!("{}?{}", req.path(), q),
                None => req.path().to_string(),
            };
            assert_eq!(rebuilt, req.target);
            let _origin_form = req.target.starts_with('/');
            let _ = req.method.is_read();
            let _ = egress_simple::negotiate(req.header("Accept"));
            assert!(req.body.len() <= limits.max_body_bytes);
        }
        Err(Refusal::Status(status)) => assert!((400..=599).contains(&status)),
        Err(Refusal::Incomplete) => {}
    }
});
