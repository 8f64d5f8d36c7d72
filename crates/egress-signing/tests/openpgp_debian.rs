//! Real Debian data: the bookworm-updates InRelease as apt fetched it
//! (signed by two RSA 4096 subkeys, bookworm's and trixie's) and the
//! debian-archive-keyring.gpg that Debian 12 ships (9 keys, RSA 4096 and
//! Ed25519, signing subkeys bound to their primaries).

use egress_signing::openpgp::{Fingerprint, Keyring, OpenPgpError, OpenPgpKey};
use egress_signing::SigningKey;

const INRELEASE: &[u8] = include_bytes!("data/bookworm-updates_InRelease");
const KEYRING: &[u8] = include_bytes!("data/debian-archive-keyring.gpg");

/// A time after both signatures were made (2026-11-30) and before any of
/// the signing keys expires (2031-01-19).
const NOW: u64 = 1_800_000_000;
const BOOKWORM_PRIMARY: &str = "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8";
const BOOKWORM_SUBKEY: &str = "4CB50190207B4758A3F73A796ED0E7B82643E131";
const BOOKWORM_EXPIRES: u64 = 1_926_589_461;
const TRIXIE_PRIMARY: &str = "04B54C3CDCA79751B16BC6B5225629DF75B188BD";
const TRIXIE_SUBKEY: &str = "B8E5F13176D2A7A75220028078DBA3BC47EF2265";

fn fpr(hex: &str) -> Fingerprint {
    Fingerprint::from_hex(hex).unwrap()
}

#[test]
fn the_archive_keyring_reads_as_gpg_lists_it() {
    let keyring = Keyring::parse(KEYRING).unwrap();
    let primaries: Vec<String> = keyring
        .fingerprints()
        .iter()
        .map(|f| f.to_string())
        .collect();
    assert_eq!(primaries.len(), 9, "{primaries:?}");
    assert!(primaries.contains(&BOOKWORM_PRIMARY.to_owned()));
    assert!(primaries.contains(&TRIXIE_PRIMARY.to_owned()));
    // Signing subkeys count (their binding signatures verify).
    let signing = keyring.signing_fingerprints();
    assert!(signing.contains(&fpr(BOOKWORM_SUBKEY)));
    assert!(signing.contains(&fpr(TRIXIE_SUBKEY)));
    assert!(keyring.skipped().is_empty(), "{:?}", keyring.skipped());
}

#[test]
fn the_bookworm_updates_inrelease_verifies() {
    let keyring = Keyring::parse(KEYRING).unwrap();
    let v = keyring.verify_cleartext_at(INRELEASE, NOW).unwrap();
    assert_eq!(v.signer, fpr(BOOKWORM_SUBKEY));
    assert_eq!(v.primary, fpr(BOOKWORM_PRIMARY));
    // The text is the file between the header and the signature.
    let whole = std::str::from_utf8(INRELEASE).unwrap();
    let start = whole.find("\n\n").unwrap() + 2;
    let end = whole.find("-----BEGIN PGP SIGNATURE-----").unwrap();
    assert_eq!(std::str::from_utf8(&v.text).unwrap(), &whole[start..end]);
    assert!(v.text.starts_with(b"Origin: Debian\n"));
}

#[test]
fn a_flipped_byte_anywhere_in_the_text_fails() {
    let keyring = Keyring::parse(KEYRING).unwrap();
    let whole = std::str::from_utf8(INRELEASE).unwrap();
    let start = whole.find("\n\n").unwrap() + 2;
    let end = whole.find("-----BEGIN PGP SIGNATURE-----").unwrap();
    // Every 997th byte of the text, changed to another visible character
    // (changing a line end or a trailing space would legitimately keep the
    // signed text the same).
    for at in (start..end).step_by(997) {
        let mut bad = INRELEASE.to_vec();
        if !bad[at].is_ascii_graphic() {
            continue;
        }
        bad[at] = if bad[at] == b'x' { b'y' } else { b'x' };
        let err = keyring.verify_cleartext_at(&bad, NOW).unwrap_err();
        assert!(
            matches!(err, OpenPgpError::BadSignature { .. }),
            "at {at}: {err}"
        );
    }
}

#[test]
fn one_good_signature_suffices_when_the_other_key_expired() {
    let keyring = Keyring::parse(KEYRING).unwrap();
    // After bookworm's key expired, trixie's signature still carries it.
    let v = keyring
        .verify_cleartext_at(INRELEASE, BOOKWORM_EXPIRES + 10)
        .unwrap();
    assert_eq!(v.signer, fpr(TRIXIE_SUBKEY));
    assert_eq!(v.primary, fpr(TRIXIE_PRIMARY));
    // After both expired, the error says so.
    let err = keyring
        .verify_cleartext_at(INRELEASE, 2_100_000_000)
        .unwrap_err();
    assert!(matches!(err, OpenPgpError::KeyExpired { .. }), "{err}");
}

#[test]
fn a_keyring_without_debian_keys_names_the_unknown_signer() {
    let lab = OpenPgpKey::from_signing_key(
        &SigningKey::from_seed([1; 32], "x"),
        "Lab <lab@example.invalid>",
        1_700_000_000,
    );
    let keyring = Keyring::parse(&lab.public_keyring()).unwrap();
    let err = keyring.verify_cleartext_at(INRELEASE, NOW).unwrap_err();
    match err {
        OpenPgpError::UnknownKey { issuer } => assert_eq!(issuer, BOOKWORM_SUBKEY),
        other => panic!("expected UnknownKey, got {other}"),
    }
}
