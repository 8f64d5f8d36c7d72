//! Hostile input for the OpenPGP reader: random bytes, every truncation and
//! random mutations of valid keyrings and signatures. Nothing may panic,
//! and no mutation may make a different text or file verify.

use egress_signing::openpgp::{Keyring, OpenPgpKey};
use egress_signing::SigningKey;
use proptest::prelude::*;

const NOW: u64 = 1_800_000_000;
const TEXT: &str =
    "Origin: Lab\nSuite: stable\n-dash\ntrailing  \nSHA256:\n 00ff 12 main/Packages\n";
const DEBIAN_INRELEASE: &[u8] = include_bytes!("data/bookworm-updates_InRelease");
const DEBIAN_KEYRING: &[u8] = include_bytes!("data/debian-archive-keyring.gpg");

fn lab() -> OpenPgpKey {
    OpenPgpKey::from_signing_key(
        &SigningKey::from_seed([5; 32], "x"),
        "Lab <lab@example.invalid>",
        1_700_000_000,
    )
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(data: &[u8], ms: &[Mutation]) -> Vec<u8> {
    let mut out = data.to_vec();
    for m in ms {
        let n = out.len().max(1);
        match *m {
            Mutation::Flip(i, b) => {
                if let Some(x) = out.get_mut(i % n) {
                    *x ^= b;
                }
            }
            Mutation::Set(i, b) => {
                if let Some(x) = out.get_mut(i % n) {
                    *x = b;
                }
            }
            Mutation::Insert(i, b) => out.insert(i % (out.len() + 1), b),
            Mutation::Delete(i) => {
                if !out.is_empty() {
                    out.remove(i % n);
                }
            }
            Mutation::Truncate(i) => out.truncate(i % n),
        }
    }
    out
}

#[test]
fn every_truncation_of_our_keyring_and_signatures_fails() {
    let key = lab();
    let keyring = key.public_keyring();
    for len in 0..keyring.len() {
        assert!(
            Keyring::parse(&keyring[..len]).is_err(),
            "keyring prefix {len}"
        );
    }
    let armored = key.public_keyring_armored();
    for len in 0..armored.len() {
        let _ = Keyring::parse(&armored.as_bytes()[..len]);
    }
    let ring = Keyring::parse(&keyring).unwrap();
    let signed = key.sign_cleartext(TEXT, 1_700_000_100);
    for len in 0..signed.len() {
        let prefix = &signed.as_bytes()[..len];
        // Only the final newline after the END line may go.
        if len + 1 < signed.len() {
            assert!(
                ring.verify_cleartext_at(prefix, NOW).is_err(),
                "InRelease prefix {len}"
            );
        }
    }
    let detached = key.sign_detached(TEXT.as_bytes(), 1_700_000_100);
    for len in 0..detached.len().saturating_sub(1) {
        assert!(ring
            .verify_detached_at(TEXT.as_bytes(), &detached.as_bytes()[..len], NOW)
            .is_err());
    }
}

#[test]
fn truncations_of_debian_data_never_panic() {
    let ring = Keyring::parse(DEBIAN_KEYRING).unwrap();
    for len in (0..DEBIAN_KEYRING.len()).step_by(101) {
        let _ = Keyring::parse(&DEBIAN_KEYRING[..len]);
    }
    for len in (0..DEBIAN_INRELEASE.len()).step_by(97) {
        assert!(
            ring.verify_cleartext_at(&DEBIAN_INRELEASE[..len], NOW)
                .is_err(),
            "prefix {len}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let ring = Keyring::parse(&lab().public_keyring()).unwrap();
        let _ = Keyring::parse(&bytes);
        let _ = ring.verify_cleartext_at(&bytes, NOW);
        let _ = ring.verify_detached_at(b"data", &bytes, NOW);
        // The same bytes behind a packet header of every kind.
        for tag in [0x88u8, 0x98, 0xB4, 0xB8] {
            let mut framed = vec![tag, bytes.len().min(255) as u8];
            framed.extend_from_slice(&bytes);
            let _ = Keyring::parse(&framed);
            let _ = ring.verify_detached_at(b"data", &framed, NOW);
        }
    }

    #[test]
    fn a_mutated_inrelease_never_verifies_a_different_text(ms in proptest::collection::vec(mutation(), 1..4)) {
        let key = lab();
        let ring = Keyring::parse(&key.public_keyring()).unwrap();
        let signed = key.sign_cleartext(TEXT, 1_700_000_100);
        let original = ring.verify_cleartext_at(signed.as_bytes(), NOW).unwrap().text;
        let mutated = apply(signed.as_bytes(), &ms);
        if let Ok(v) = ring.verify_cleartext_at(&mutated, NOW) {
            prop_assert_eq!(v.text, original);
        }
    }

    #[test]
    fn a_mutated_file_or_signature_never_verifies(ms in proptest::collection::vec(mutation(), 1..4)) {
        let key = lab();
        let ring = Keyring::parse(&key.public_keyring()).unwrap();
        let sig = key.sign_detached(TEXT.as_bytes(), 1_700_000_100);
        let data = apply(TEXT.as_bytes(), &ms);
        if data != TEXT.as_bytes() {
            prop_assert!(ring.verify_detached_at(&data, sig.as_bytes(), NOW).is_err());
        }
        // A mutated signature: whatever it now says, never a panic, and a
        // success must still name our key over the unchanged data.
        if let Ok(v) = ring.verify_detached_at(TEXT.as_bytes(), &apply(sig.as_bytes(), &ms), NOW) {
            prop_assert_eq!(v.signer, key.fingerprint());
        }
    }

    #[test]
    fn a_mutated_keyring_never_panics(ms in proptest::collection::vec(mutation(), 1..4)) {
        let key = lab();
        let sig = key.sign_detached(TEXT.as_bytes(), 1_700_000_100);
        for keyring in [key.public_keyring(), key.public_keyring_armored().into_bytes()] {
            if let Ok(ring) = Keyring::parse(&apply(&keyring, &ms)) {
                // Whatever key survived, a success is only ever our key.
                if let Ok(v) = ring.verify_detached_at(TEXT.as_bytes(), sig.as_bytes(), NOW) {
                    prop_assert_eq!(v.signer, key.fingerprint());
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn mutated_debian_data_never_panics_nor_verifies_other_text(ms in proptest::collection::vec(mutation(), 1..3)) {
        let ring = Keyring::parse(DEBIAN_KEYRING).unwrap();
        let original = ring.verify_cleartext_at(DEBIAN_INRELEASE, NOW).unwrap().text;
        if let Ok(v) = ring.verify_cleartext_at(&apply(DEBIAN_INRELEASE, &ms), NOW) {
            prop_assert_eq!(v.text, original);
        }
        let _ = Keyring::parse(&apply(DEBIAN_KEYRING, &ms));
    }
}
