//! The DNS message reader of egress-sandbox (replies from whatever resolver
//! a sandbox has, queries to the canary's responder), and the responder's
//! reply: a query that parses gets a reply that parses, with the same id,
//! the same question, and the addresses of the family it asked for.
#![no_main]
use egress_sandbox::dns;
use libfuzzer_sys::fuzz_target;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fuzz_target!(|data: &[u8]| {
    let Ok(message) = dns::parse(data) else {
        return;
    };
    let _ = message.addresses();
    let Some(question) = message.questions.first() else {
        return;
    };
    let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
    let v6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    let reply = match dns::parse(&dns::encode_reply(&message, &[v4, v6], 60)) {
        Ok(reply) => reply,
        Err(e) => panic!("the reply to {question:?} does not parse: {e}"),
    };
    assert!(reply.is_response());
    assert_eq!(reply.id, message.id);
    assert_eq!(reply.questions, vec![question.clone()]);
    let asked = match question.qtype {
        dns::TYPE_A => vec![v4],
        dns::TYPE_AAAA => vec![v6],
        _ => vec![],
    };
    assert_eq!(reply.addresses(), asked);
});
