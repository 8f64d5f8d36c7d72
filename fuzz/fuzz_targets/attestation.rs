//! The instance attestation and certificate parsers of egress-signing
//! (`Attestation::parse`, `Certificate::parse`), and the checks `check`
//! runs on what they return.
#![no_main]
use egress_signing::{AllowedSigners, Attestation, Certificate, SigningKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key = SigningKey::from_seed([7; 32], "fuzz@example");
    let line = AllowedSigners::line_for("fuzz@example", &key.public());
    let Ok(allowed) = AllowedSigners::parse(&line) else {
        panic!("the fixed allowed_signers line must parse");
    };
    if let Ok(a) = Attestation::parse(data) {
        let _ = a.verify_signature();
        if let Some(Ok(c)) = a.certificate.as_deref().map(Certificate::parse) {
            let _ = c.verify(&allowed);
        }
    }
    if let Ok(c) = Certificate::parse(data) {
        let _ = c.verify(&allowed);
    }
});
