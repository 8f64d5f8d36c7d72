//! The armoured SSHSIG parser and verifier of egress-signing.
#![no_main]
use egress_signing::{verify, verify_for_principal, AllowedSigners, SigningKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The same key and message the seeds were made with (examples/make_seeds.rs).
    let key = SigningKey::from_seed([7; 32], "fuzz@example");
    let line = AllowedSigners::line_for("fuzz@example", &key.public());
    let Ok(allowed) = AllowedSigners::parse(&line) else {
        panic!("the fixed allowed_signers line must parse");
    };
    let _ = verify(text, "file", b"fuzz message\n", &allowed);
    let _ = verify_for_principal(text, "file", b"fuzz message\n", &allowed, "fuzz@example");
});
