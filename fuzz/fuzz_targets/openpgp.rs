//! The OpenPGP reader of egress-signing (apt's InRelease, Release.gpg and
//! keyrings): `Keyring::parse` on the input, then the input as a
//! cleartext-signed message and as a detached signature, checked against
//! the seeds' lab key and the Debian archive keyring.
#![no_main]
use egress_signing::openpgp::{Keyring, OpenPgpKey};
use egress_signing::SigningKey;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// A fixed time after the seeds' signatures, so results do not drift.
const NOW: u64 = 1_800_000_000;

fn lab() -> &'static (OpenPgpKey, Keyring) {
    static LAB: OnceLock<(OpenPgpKey, Keyring)> = OnceLock::new();
    LAB.get_or_init(|| {
        // The same key the seeds were made with (examples/make_seeds.rs).
        let ssh = SigningKey::from_seed([7; 32], "fuzz@example");
        let key = OpenPgpKey::from_signing_key(&ssh, "Fuzz <fuzz@example.invalid>", 1_700_000_000);
        let Ok(ring) = Keyring::parse(&key.public_keyring()) else {
            panic!("the lab key's own keyring must parse");
        };
        (key, ring)
    })
}

fn debian() -> &'static Keyring {
    static DEBIAN: OnceLock<Keyring> = OnceLock::new();
    DEBIAN.get_or_init(|| {
        let bytes =
            include_bytes!("../../crates/egress-signing/tests/data/debian-archive-keyring.gpg");
        let Ok(ring) = Keyring::parse(bytes) else {
            panic!("the Debian archive keyring must parse");
        };
        ring
    })
}

fuzz_target!(|data: &[u8]| {
    let _ = Keyring::parse(data);
    let (key, ring) = lab();
    if let Ok(v) = ring.verify_cleartext_at(data, NOW) {
        // Only the lab key can have made a good signature here.
        assert_eq!(v.signer, key.fingerprint());
    }
    let _ = debian().verify_cleartext_at(data, NOW);
    if let Ok(v) = ring.verify_detached_at(b"fuzz message\n", data, NOW) {
        assert_eq!(v.signer, key.fingerprint());
    }
});
