//! The allowed_signers and OpenSSH public key parsers of egress-signing.
#![no_main]
use egress_signing::{AllowedSigners, PublicKey};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(allowed) = AllowedSigners::parse(text) {
        for entry in allowed.entries() {
            let _ = (entry.line(), entry.principals(), entry.namespaces());
            let _ = (entry.is_cert_authority(), entry.key_type());
            if let Some(key) = entry.key() {
                // A parsed key renders to a line that parses to the same key.
                let again = PublicKey::parse_openssh(&key.to_openssh("c"));
                assert_eq!(again.ok().as_ref(), Some(key));
                let _ = key.fingerprint();
            }
        }
    }
    for line in text.lines() {
        let _ = PublicKey::parse_openssh(line);
    }
});
