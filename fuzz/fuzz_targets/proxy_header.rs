//! The PROXY protocol header reader of egress-http (v1 and v2, what a
//! trusted load balancer sends before the client's bytes): no panic on any
//! input; a header it accepts lies within the bytes given and within the
//! bounds; and every shorter prefix of an accepted header is incomplete,
//! never a different header.
#![no_main]
use egress_http::proxy::{parse, Parsed, V1_MAX, V2_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(Parsed::Header(h)) = parse(data) else {
        return;
    };
    assert!(h.len <= data.len(), "a header longer than the bytes given");
    assert!(h.len <= V1_MAX.max(V2_MAX), "a header over the bounds");
    for cut in 0..h.len {
        let prefix = data.get(..cut).unwrap_or_default();
        assert_eq!(parse(prefix), Ok(Parsed::Incomplete), "prefix of {cut} bytes");
    }
});
