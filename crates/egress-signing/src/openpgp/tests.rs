//! Certificates and signatures built piece by piece, to reach every branch
//! of the keyring and verification rules (the gpg interop and real Debian
//! data are in tests/openpgp_*.rs).

use super::key::{ed25519_body, fingerprint_of, hash_prefix};
use super::packet::{
    write_mpi, write_old, TAG_PUBLIC_KEY, TAG_PUBLIC_SUBKEY, TAG_SIGNATURE, TAG_USER_ID,
};
use super::signature::{
    build_ed25519, TYPE_BINARY, TYPE_POSITIVE_CERT, TYPE_SUBKEY_BINDING, TYPE_TEXT,
};
use super::*;

const T0: u32 = 1_600_000_000;
const NOW: u64 = 1_700_000_000;
const DATA: &[u8] = b"Origin: test\nSuite: stable\n";

struct Key {
    sk: ed25519_dalek::SigningKey,
    body: Vec<u8>,
    fpr: Fingerprint,
}

fn key(seed: u8, created: u32) -> Key {
    let sk = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
    let body = ed25519_body(sk.verifying_key().as_bytes(), created);
    let fpr = fingerprint_of(&body);
    Key { sk, body, fpr }
}

fn uid_data(k: &Key, uid: &str) -> Vec<u8> {
    let mut d = hash_prefix(&k.body);
    d.push(0xB4);
    d.extend_from_slice(&(uid.len() as u32).to_be_bytes());
    d.extend_from_slice(uid.as_bytes());
    d
}

/// Primary key, user ID and a self-certification with `extra` subpackets.
fn cert(k: &Key, extra: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    write_old(&mut out, TAG_PUBLIC_KEY, &k.body);
    write_old(&mut out, TAG_USER_ID, b"T <t@example.invalid>");
    let sig = build_ed25519(
        &k.sk,
        &k.fpr,
        TYPE_POSITIVE_CERT,
        T0,
        extra,
        &uid_data(k, "T <t@example.invalid>"),
    );
    write_old(&mut out, TAG_SIGNATURE, &sig);
    out
}

/// A subkey packet and, signed by `binder`, a signature of `sig_type`
/// over primary + subkey.
fn subkey(
    primary: &Key,
    sub: &Key,
    binder: &Key,
    sig_type: u8,
    extra: &[(u8, Vec<u8>)],
) -> Vec<u8> {
    let mut out = Vec::new();
    write_old(&mut out, TAG_PUBLIC_SUBKEY, &sub.body);
    let mut data = hash_prefix(&primary.body);
    data.extend_from_slice(&hash_prefix(&sub.body));
    let sig = build_ed25519(&binder.sk, &binder.fpr, sig_type, T0, extra, &data);
    write_old(&mut out, TAG_SIGNATURE, &sig);
    out
}

fn detached(k: &Key, sig_type: u8, created: u32, extra: &[(u8, Vec<u8>)], data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_old(
        &mut out,
        TAG_SIGNATURE,
        &build_ed25519(&k.sk, &k.fpr, sig_type, created, extra, data),
    );
    out
}

fn sign_flags() -> (u8, Vec<u8>) {
    (27, vec![0x02])
}

#[test]
fn a_bound_signing_subkey_verifies_and_names_its_primary() {
    let p = key(1, T0);
    let s = key(2, T0);
    let ring = [
        cert(&p, &[(27, vec![0x01])]),
        subkey(&p, &s, &p, TYPE_SUBKEY_BINDING, &[sign_flags()]),
    ]
    .concat();
    let ring = Keyring::parse(&ring).unwrap();
    let v = ring
        .verify_detached_at(DATA, &detached(&s, TYPE_BINARY, T0 + 5, &[], DATA), NOW)
        .unwrap();
    assert_eq!((v.signer, v.primary, v.created), (s.fpr, p.fpr, T0 + 5));
    // The certify-only primary may not sign data.
    let err = ring
        .verify_detached_at(DATA, &detached(&p, TYPE_BINARY, T0 + 5, &[], DATA), NOW)
        .unwrap_err();
    assert_eq!(err, OpenPgpError::NotSigningKey { key: p.fpr });
}

#[test]
fn a_subkey_without_a_valid_binding_does_not_count() {
    let p = key(1, T0);
    let s = key(2, T0);
    let sig = detached(&s, TYPE_BINARY, T0 + 5, &[], DATA);
    // No binding signature at all.
    let mut ring = cert(&p, &[]);
    write_old(&mut ring, TAG_PUBLIC_SUBKEY, &s.body);
    let err = Keyring::parse(&ring)
        .unwrap()
        .verify_detached_at(DATA, &sig, NOW)
        .unwrap_err();
    assert_eq!(err, OpenPgpError::UnboundSubkey { key: s.fpr });
    // A "binding" made by the subkey itself, not by the primary.
    let ring = [
        cert(&p, &[]),
        subkey(&p, &s, &s, TYPE_SUBKEY_BINDING, &[sign_flags()]),
    ]
    .concat();
    let err = Keyring::parse(&ring)
        .unwrap()
        .verify_detached_at(DATA, &sig, NOW)
        .unwrap_err();
    assert_eq!(err, OpenPgpError::UnboundSubkey { key: s.fpr });
    // A binding for encryption only.
    let ring = [
        cert(&p, &[]),
        subkey(&p, &s, &p, TYPE_SUBKEY_BINDING, &[(27, vec![0x0C])]),
    ]
    .concat();
    let err = Keyring::parse(&ring)
        .unwrap()
        .verify_detached_at(DATA, &sig, NOW)
        .unwrap_err();
    assert_eq!(err, OpenPgpError::NotSigningKey { key: s.fpr });
}

#[test]
fn revocations_are_honoured() {
    let p = key(1, T0);
    let s = key(2, T0);
    let mut ring = cert(&p, &[]);
    let revocation = build_ed25519(&p.sk, &p.fpr, 0x20, T0 + 1, &[], &hash_prefix(&p.body));
    // A key revocation sits right after the primary key packet.
    let mut revoked = Vec::new();
    write_old(&mut revoked, TAG_PUBLIC_KEY, &p.body);
    write_old(&mut revoked, TAG_SIGNATURE, &revocation);
    revoked.extend_from_slice(ring.get(2 + p.body.len()..).unwrap());
    let err = Keyring::parse(&revoked)
        .unwrap()
        .verify_detached_at(DATA, &detached(&p, TYPE_BINARY, T0 + 5, &[], DATA), NOW)
        .unwrap_err();
    assert_eq!(err, OpenPgpError::KeyRevoked { key: p.fpr });
    ring.extend(subkey(&p, &s, &p, TYPE_SUBKEY_BINDING, &[sign_flags()]));
    ring.extend(
        subkey(&p, &s, &p, 0x28, &[])
            .get(2 + s.body.len()..)
            .unwrap(),
    );
    let err = Keyring::parse(&ring)
        .unwrap()
        .verify_detached_at(DATA, &detached(&s, TYPE_BINARY, T0 + 5, &[], DATA), NOW)
        .unwrap_err();
    assert_eq!(err, OpenPgpError::KeyRevoked { key: s.fpr });
}

#[test]
fn key_and_signature_expiry_and_creation_time() {
    let p = key(1, T0);
    let ring = Keyring::parse(&cert(&p, &[(9, 1000u32.to_be_bytes().to_vec())])).unwrap();
    let sig = detached(&p, TYPE_BINARY, T0 + 5, &[], DATA);
    ring.verify_detached_at(DATA, &sig, u64::from(T0) + 999)
        .unwrap();
    let err = ring
        .verify_detached_at(DATA, &sig, u64::from(T0) + 1000)
        .unwrap_err();
    assert_eq!(
        err,
        OpenPgpError::KeyExpired {
            key: p.fpr,
            expired_at: u64::from(T0) + 1000
        }
    );

    let ring = Keyring::parse(&cert(&p, &[])).unwrap();
    let sig = detached(
        &p,
        TYPE_BINARY,
        T0 + 5,
        &[(3, 100u32.to_be_bytes().to_vec())],
        DATA,
    );
    ring.verify_detached_at(DATA, &sig, u64::from(T0) + 104)
        .unwrap();
    let err = ring
        .verify_detached_at(DATA, &sig, u64::from(T0) + 105)
        .unwrap_err();
    assert_eq!(
        err,
        OpenPgpError::SignatureExpired {
            key: p.fpr,
            expired_at: u64::from(T0) + 105
        }
    );

    let before = detached(&p, TYPE_BINARY, T0 - 1, &[], DATA);
    assert!(matches!(
        ring.verify_detached_at(DATA, &before, NOW),
        Err(OpenPgpError::BadCreationTime { .. })
    ));
    let future = detached(&p, TYPE_BINARY, (NOW + 10) as u32, &[], DATA);
    assert!(matches!(
        ring.verify_detached_at(DATA, &future, NOW),
        Err(OpenPgpError::BadCreationTime { .. })
    ));
}

#[test]
fn unknown_critical_subpackets_and_wrong_types_are_refused() {
    let p = key(1, T0);
    let ring = Keyring::parse(&cert(&p, &[])).unwrap();
    let sig = detached(&p, TYPE_BINARY, T0 + 5, &[(0x80 | 100, vec![1])], DATA);
    assert!(matches!(
        ring.verify_detached_at(DATA, &sig, NOW),
        Err(OpenPgpError::UnknownCritical { kind: 100, .. })
    ));
    let sig = detached(&p, TYPE_POSITIVE_CERT, T0 + 5, &[], DATA);
    assert!(matches!(
        ring.verify_detached_at(DATA, &sig, NOW),
        Err(OpenPgpError::WrongSignatureType { found: 0x13, .. })
    ));
    // A text signature over a detached file covers its CRLF form.
    let sig = detached(&p, TYPE_TEXT, T0 + 5, &[], &armor::canonical_text(DATA));
    ring.verify_detached_at(DATA, &sig, NOW).unwrap();
    // A cleartext message whose signature is binary (0x00).
    let mut text = armor::cleartext_body("a\n");
    text.push_str(&armor::armor(
        armor::SIGNATURE,
        &detached(&p, TYPE_BINARY, T0 + 5, &[], b"a"),
    ));
    assert!(matches!(
        ring.verify_cleartext_at(text.as_bytes(), NOW),
        Err(OpenPgpError::WrongSignatureType { found: 0, .. })
    ));
}

#[test]
fn several_signatures_follow_apt() {
    let a = key(1, T0);
    let b = key(2, T0);
    let stranger = key(3, T0);
    let ring = Keyring::parse(&[cert(&a, &[]), cert(&b, &[])].concat()).unwrap();
    let good_b = detached(&b, TYPE_BINARY, T0 + 5, &[], DATA);
    let unknown = detached(&stranger, TYPE_BINARY, T0 + 5, &[], DATA);
    let bad_a = detached(&a, TYPE_BINARY, T0 + 5, &[], b"other data");
    // An unknown signer beside a good signature: good.
    let v = ring
        .verify_detached_at(DATA, &[unknown.clone(), good_b.clone()].concat(), NOW)
        .unwrap();
    assert_eq!(v.signer, b.fpr);
    // A BAD signature by a key in the keyring fails the file, as gpgv's
    // exit status 1 does for apt.
    let err = ring
        .verify_detached_at(DATA, &[good_b, bad_a].concat(), NOW)
        .unwrap_err();
    assert!(
        matches!(err, OpenPgpError::BadSignature { key, .. } if key == a.fpr),
        "{err}"
    );
    let err = ring.verify_detached_at(DATA, &unknown, NOW).unwrap_err();
    assert_eq!(
        err,
        OpenPgpError::UnknownKey {
            issuer: stranger.fpr.to_string()
        }
    );
}

#[test]
fn cleartext_framework_rules() {
    let ssh = crate::SigningKey::from_seed([9; 32], "x");
    let k = OpenPgpKey::from_signing_key(&ssh, "Lab <lab@example.invalid>", T0);
    let ring = Keyring::parse(k.public_keyring_armored().as_bytes()).unwrap();
    let text = "-dash\n- dash space\ntrailing \t\n\n-----BEGIN PGP SIGNATURE-----\nlast";
    let signed = k.sign_cleartext(text, T0 + 1);
    assert!(signed.contains("\n- -dash\n- - dash space\n"));
    let v = ring.verify_cleartext_at(signed.as_bytes(), NOW).unwrap();
    assert_eq!(
        v.text,
        b"-dash\n- dash space\ntrailing\n\n-----BEGIN PGP SIGNATURE-----\nlast\n"
    );
    assert_eq!((v.signer, v.created), (k.fingerprint(), T0 + 1));
    // Trailing whitespace and CRLF line ends are not signed.
    let crlf = signed
        .replace("\nlast\n", "\nlast  \t\n")
        .replace('\n', "\r\n");
    ring.verify_cleartext_at(crlf.as_bytes(), NOW).unwrap();

    let fails = |input: String, what: &str| {
        let err = ring.verify_cleartext_at(input.as_bytes(), NOW).unwrap_err();
        assert!(
            matches!(
                err,
                OpenPgpError::Cleartext { .. }
                    | OpenPgpError::Armor { .. }
                    | OpenPgpError::ArmorChecksum { .. }
            ),
            "{what}: {err}"
        );
    };
    fails(format!("garbage\n{signed}"), "text before the message");
    fails(format!("{signed}\nappended"), "text after the signature");
    fails(format!("{signed}{signed}"), "a second cleartext block");
    fails(signed.replace("- -dash", "-dash"), "an unescaped dash line");
    fails(
        signed.replace("Hash: SHA512", "Hash: SHA512\nComment: x"),
        "another header",
    );
    fails(
        signed.replace("-----END PGP SIGNATURE-----", ""),
        "no END line",
    );
    let crc_at = signed.rfind("\n=").unwrap() + 2;
    let mut bad_crc = signed.clone().into_bytes();
    bad_crc[crc_at] = if bad_crc[crc_at] == b'A' { b'B' } else { b'A' };
    fails(String::from_utf8(bad_crc).unwrap(), "checksum");
    let err = ring
        .verify_cleartext_at(
            signed.replace("Hash: SHA512", "Hash: SHA256").as_bytes(),
            NOW,
        )
        .unwrap_err();
    assert!(
        matches!(err, OpenPgpError::HashHeaderMismatch { .. }),
        "{err}"
    );
    // The signature of another text, spliced in.
    let other = k.sign_cleartext("something else\n", T0 + 1);
    let spliced = format!(
        "{}{}",
        &signed[..signed.rfind("-----BEGIN PGP SIGNATURE-----").unwrap()],
        &other[other.find("-----BEGIN PGP SIGNATURE-----").unwrap()..]
    );
    let err = ring
        .verify_cleartext_at(spliced.as_bytes(), NOW)
        .unwrap_err();
    assert!(matches!(err, OpenPgpError::BadSignature { .. }), "{err}");
    // Text outside a detached signature's armor.
    let det = k.sign_detached(DATA, T0 + 1);
    ring.verify_detached_at(DATA, det.as_bytes(), NOW).unwrap();
    let err = ring
        .verify_detached_at(DATA, format!("x\n{det}").as_bytes(), NOW)
        .unwrap_err();
    assert!(matches!(err, OpenPgpError::Armor { line: 1, .. }), "{err}");
}

#[test]
fn packet_framing_and_absurd_sizes_are_typed_errors() {
    let p = key(1, T0);
    let ring = Keyring::parse(&cert(&p, &[])).unwrap();
    let body = build_ed25519(&p.sk, &p.fpr, TYPE_BINARY, T0 + 5, &[], DATA);
    // A new-format header (one-octet and two-octet lengths) parses.
    let mut new = vec![0xC2, body.len() as u8];
    new.extend_from_slice(&body);
    ring.verify_detached_at(DATA, &new, NOW).unwrap();
    let mut five = vec![0xC2, 0xFF];
    five.extend_from_slice(&(body.len() as u32).to_be_bytes());
    five.extend_from_slice(&body);
    ring.verify_detached_at(DATA, &five, NOW).unwrap();
    let packet_err = |bytes: &[u8], what: &str| match ring.verify_detached_at(DATA, bytes, NOW) {
        Err(OpenPgpError::Packet { .. }) => {}
        other => panic!("{what}: {other:?}"),
    };
    // Partial body lengths are for data packets only.
    let mut partial = vec![0xC2, 0xE0 | 9];
    partial.extend_from_slice(&body);
    packet_err(&partial, "partial length on a signature");
    // Indeterminate old-format length likewise.
    let mut indeterminate = vec![0x80 | (2 << 2) | 3];
    indeterminate.extend_from_slice(&body);
    packet_err(&indeterminate, "indeterminate length");
    // A length beyond the input.
    let mut long = vec![0x80 | (2 << 2) | 2];
    long.extend_from_slice(&u32::MAX.to_be_bytes());
    long.extend_from_slice(&body);
    packet_err(&long, "four-octet length beyond the input");
    packet_err(
        &[new.as_slice(), &[0x42, 0x00]].concat(),
        "bit 7 clear after a packet",
    );
    packet_err(
        &[new.as_slice(), &[0xC2]].concat(),
        "a header without its length",
    );
    // Every truncation of a good signature fails, typed.
    let mut whole = Vec::new();
    write_old(&mut whole, TAG_SIGNATURE, &body);
    for len in 0..whole.len() {
        assert!(
            ring.verify_detached_at(DATA, whole.get(..len).unwrap(), NOW)
                .is_err(),
            "prefix {len}"
        );
    }
    // A version 3 signature.
    let mut v3 = body.clone();
    v3[0] = 3;
    let mut v3p = Vec::new();
    write_old(&mut v3p, TAG_SIGNATURE, &v3);
    assert!(matches!(
        ring.verify_detached_at(DATA, &v3p, NOW),
        Err(OpenPgpError::UnsupportedSignatureVersion { version: 3, .. })
    ));

    // RSA keys with absurd integer sizes.
    for (bits, have) in [(u16::MAX, 4usize), (16384, 16), (4096, 3)] {
        let mut rsa = vec![4];
        rsa.extend_from_slice(&T0.to_be_bytes());
        rsa.push(1);
        rsa.extend_from_slice(&bits.to_be_bytes());
        rsa.extend(std::iter::repeat_n(0xAB, have));
        let mut kp = Vec::new();
        write_old(&mut kp, TAG_PUBLIC_KEY, &rsa);
        assert!(
            matches!(
                Keyring::parse(&kp),
                Err(OpenPgpError::Packet {
                    packet: "public key",
                    ..
                })
            ),
            "{bits}"
        );
    }
    // A key of an unknown algorithm is skipped, typed.
    let mut other = vec![4];
    other.extend_from_slice(&T0.to_be_bytes());
    other.push(99);
    write_mpi(&mut other, &[1, 2, 3]);
    let mut kp = Vec::new();
    write_old(&mut kp, TAG_PUBLIC_KEY, &other);
    kp.extend(cert(&p, &[]));
    let parsed = Keyring::parse(&kp).unwrap();
    assert_eq!(parsed.fingerprints(), vec![p.fpr]);
    assert!(
        matches!(parsed.skipped(), [Skipped::Key { offset: 0, .. }]),
        "{:?}",
        parsed.skipped()
    );
    let mut only_other = Vec::new();
    write_old(&mut only_other, TAG_PUBLIC_KEY, &other);
    assert!(matches!(
        Keyring::parse(&only_other),
        Err(OpenPgpError::NoUsableKey { .. })
    ));
}
