use super::*;

const NS: &str = SNAPSHOT_NAMESPACE;

fn key(n: u8) -> SigningKey {
    SigningKey::from_seed([n; 32], &format!("key{n}@test"))
}

fn allow(k: &SigningKey, principal: &str) -> AllowedSigners {
    AllowedSigners::parse(&AllowedSigners::line_for(principal, &k.public())).expect("parse")
}

/// Re-armours a modified signature blob.
fn rearmor(blob: &[u8]) -> String {
    armor(SIGNATURE_LABEL, blob)
}

#[test]
fn from_seed_is_deterministic() {
    let a = key(7);
    let b = key(7);
    assert_eq!(a.to_openssh(), b.to_openssh());
    assert_eq!(a.sign(NS, b"m"), b.sign(NS, b"m"));
    assert_ne!(a.public(), key(8).public());
    // RFC 8032 test 1: this seed has a known public key.
    let seed: [u8; 32] = [
        0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c,
        0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae,
        0x7f, 0x60,
    ];
    let pk = SigningKey::from_seed(seed, "").public();
    assert_eq!(pk.as_bytes()[..4], [0xd7, 0x5a, 0x98, 0x01]);
}

#[test]
fn private_key_round_trips() {
    let k = key(1);
    let text = k.to_openssh();
    assert!(text.starts_with("-----BEGIN OPENSSH PRIVATE KEY-----\n"));
    assert!(text.ends_with("\n-----END OPENSSH PRIVATE KEY-----\n"));
    assert!(text
        .lines()
        .all(|l| l.len() <= 70 || l.starts_with("-----")));
    let back = SigningKey::from_openssh(&text).expect("parse");
    assert_eq!(back.public(), k.public());
    assert_eq!(back.comment(), "key1@test");
    assert_eq!(back.to_openssh(), text);
    // Surrounding whitespace and CRLF line endings are tolerated.
    let crlf = format!("\n  {}  \n", text.replace('\n', "\r\n"));
    assert_eq!(
        SigningKey::from_openssh(&crlf).expect("crlf").public(),
        k.public()
    );
}

#[test]
fn generate_gives_distinct_keys() {
    let a = SigningKey::generate("a").expect("rng");
    let b = SigningKey::generate("b").expect("rng");
    assert_ne!(a.public(), b.public());
    assert!(!format!("{a:?}").contains(&format!("{:?}", a.key.to_bytes())));
}

#[test]
fn encrypted_key_is_rejected_clearly() {
    let mut blob = Vec::new();
    blob.extend_from_slice(AUTH_MAGIC);
    put_string(&mut blob, b"aes256-ctr");
    put_string(&mut blob, b"bcrypt");
    put_string(&mut blob, &[0; 24]);
    blob.extend_from_slice(&1u32.to_be_bytes());
    let err = SigningKey::from_openssh(&armor(PRIVATE_LABEL, &blob)).expect_err("encrypted");
    assert!(matches!(err, SigningError::EncryptedKey { .. }));
    assert!(err
        .to_string()
        .starts_with("encrypted keys are not supported"));
}

#[test]
fn corrupt_private_keys_are_rejected() {
    let text = key(1).to_openssh();
    let blob = dearmor(PRIVATE_LABEL, &text).expect("dearmor");
    // Every truncation fails cleanly.
    for len in 0..blob.len() {
        assert!(SigningKey::from_openssh(&armor(PRIVATE_LABEL, &blob[..len])).is_err());
    }
    // Every single-byte change is either rejected or (in the comment)
    // harmless; none panics and none yields a different key silently.
    for i in 0..blob.len() {
        let mut b = blob.clone();
        b[i] ^= 0x01;
        if let Ok(k) = SigningKey::from_openssh(&armor(PRIVATE_LABEL, &b)) {
            assert_eq!(k.public(), key(1).public(), "byte {i}");
        }
    }
}

#[test]
fn public_key_line_round_trips() {
    let pk = key(2).public();
    let line = pk.to_openssh("me@host");
    assert!(line.starts_with("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI"));
    assert!(line.ends_with(" me@host"));
    assert_eq!(PublicKey::parse_openssh(&line).expect("parse"), pk);
    assert_eq!(pk.to_openssh(""), line.trim_end_matches(" me@host"));
    assert_eq!(pk.to_openssh("a\nb"), format!("{} a b", pk.to_openssh("")));
    assert!(pk.fingerprint().starts_with("SHA256:"));
    assert_eq!(pk.fingerprint().len(), 7 + 43);
    for bad in [
        "",
        "ssh-ed25519",
        "ssh-rsa AAAA",
        "ssh-ed25519 !!!",
        "ssh-ed25519 AAAA",
    ] {
        assert!(PublicKey::parse_openssh(bad).is_err(), "{bad}");
    }
}

#[test]
fn sign_verify_round_trip() {
    let k = key(3);
    let sig = k.sign(NS, b"manifest");
    assert!(sig.starts_with("-----BEGIN SSH SIGNATURE-----\n"));
    assert!(sig.ends_with("\n-----END SSH SIGNATURE-----\n"));
    let v = verify(&sig, NS, b"manifest", &allow(&k, "mirror")).expect("verify");
    assert_eq!(v.principal, "mirror");
    assert_eq!(v.fingerprint, k.public().fingerprint());
    // Empty message too.
    let sig = k.sign(NS, b"");
    assert!(verify(&sig, NS, b"", &allow(&k, "mirror")).is_ok());
}

#[test]
fn tampering_is_rejected() {
    let k = key(4);
    let allowed = allow(&k, "mirror");
    let sig = k.sign(NS, b"manifest");

    let err = verify(&sig, NS, b"manifesT", &allowed).expect_err("message");
    assert_eq!(err, SigningError::BadSignature);

    let err = verify(&sig, "other@ns", b"manifest", &allowed).expect_err("namespace");
    assert!(matches!(err, SigningError::NamespaceMismatch { .. }));
    assert_eq!(
        verify(&sig, "", b"manifest", &allowed),
        Err(SigningError::EmptyNamespace)
    );

    // Flip each bit of the last signature byte region and a few others:
    // every modified blob must be rejected, never accepted or panic.
    let blob = dearmor(SIGNATURE_LABEL, &sig).expect("dearmor");
    for i in 0..blob.len() {
        let mut b = blob.clone();
        b[i] ^= 0x01;
        assert!(
            verify(&rearmor(&b), NS, b"manifest", &allowed).is_err(),
            "flipped byte {i} accepted"
        );
    }
    for len in 0..blob.len() {
        assert!(verify(&rearmor(&blob[..len]), NS, b"manifest", &allowed).is_err());
    }
    let mut longer = blob.clone();
    longer.push(0);
    assert!(verify(&rearmor(&longer), NS, b"manifest", &allowed).is_err());
}

#[test]
fn resigned_namespace_field_is_rejected() {
    // Changing the namespace inside the blob breaks the signature even when
    // the verifier asks for the new namespace.
    let k = key(4);
    let sig = k.sign("file", b"m");
    let blob = dearmor(SIGNATURE_LABEL, &sig).expect("dearmor");
    let pos = blob.windows(4).position(|w| w == b"file").expect("ns");
    let mut b = blob.clone();
    b[pos..pos + 4].copy_from_slice(b"fild");
    assert_eq!(
        verify(&rearmor(&b), "fild", b"m", &allow(&k, "p")),
        Err(SigningError::BadSignature)
    );
}

#[test]
fn wrong_key_and_unlisted_key_are_rejected() {
    let signer = key(5);
    let other = key(6);
    let sig = signer.sign(NS, b"m");
    let err = verify(&sig, NS, b"m", &allow(&other, "mirror")).expect_err("unlisted");
    assert!(matches!(err, SigningError::NotAllowed { .. }));
    assert!(verify(&sig, NS, b"m", &AllowedSigners::default()).is_err());

    // A signature by `other` whose embedded public key is swapped for the
    // listed signer's key does not verify.
    let forged = other.sign(NS, b"m");
    let mut blob = dearmor(SIGNATURE_LABEL, &forged).expect("dearmor");
    let theirs = other.public().blob();
    let pos = blob
        .windows(theirs.len())
        .position(|w| w == theirs.as_slice())
        .expect("pk");
    blob[pos..pos + theirs.len()].copy_from_slice(&signer.public().blob());
    assert_eq!(
        verify(&rearmor(&blob), NS, b"m", &allow(&signer, "mirror")),
        Err(SigningError::BadSignature)
    );
}

#[test]
fn namespace_restricted_lines() {
    let k = key(9);
    let pk = k.public();
    let only_other = AllowedSigners::parse(&AllowedSigners::line_for_namespace("m", &pk, "file"))
        .expect("parse");
    let err = verify(&k.sign(NS, b"x"), NS, b"x", &only_other).expect_err("restricted");
    assert!(matches!(err, SigningError::NamespaceNotPermitted { .. }));

    let text = format!(
        "# restricted first, then a permissive line\n\
         first namespaces=\"file,git\" {}\n\
         second namespaces=\"egress-*,!*@evil\" {} trailing comment\n",
        pk.to_openssh(""),
        pk.to_openssh("")
    );
    let allowed = AllowedSigners::parse(&text).expect("parse");
    assert_eq!(
        verify(&k.sign(NS, b"x"), NS, b"x", &allowed)
            .expect("ok")
            .principal,
        "second"
    );
    assert_eq!(
        verify(&k.sign("file", b"x"), "file", b"x", &allowed)
            .expect("ok")
            .principal,
        "first"
    );
    let err = verify(
        &k.sign("egress-x@evil", b"x"),
        "egress-x@evil",
        b"x",
        &allowed,
    );
    assert!(matches!(
        err,
        Err(SigningError::NamespaceNotPermitted { .. })
    ));
}

#[test]
fn principal_patterns() {
    let k = key(10);
    // Quotes wrap the whole field (as in OpenSSH), not single principals.
    let text = format!(
        "\"ci bot,release-*,!release-bad\" {}",
        k.public().to_openssh("")
    );
    assert!(AllowedSigners::parse(&format!("\"ci bot\",x {}", k.public().to_openssh(""))).is_err());
    let allowed = AllowedSigners::parse(&text).expect("parse");
    let sig = k.sign(NS, b"x");
    let v = verify(&sig, NS, b"x", &allowed).expect("any");
    assert_eq!(v.principal, "ci bot,release-*,!release-bad");
    for ok in ["ci bot", "release-1", "release-"] {
        let v = verify_for_principal(&sig, NS, b"x", &allowed, ok).expect(ok);
        assert_eq!(v.principal, ok);
    }
    for bad in ["ci", "release-bad", "other", ""] {
        let err = verify_for_principal(&sig, NS, b"x", &allowed, bad).expect_err(bad);
        assert!(
            matches!(err, SigningError::PrincipalNotAllowed { .. }),
            "{bad}"
        );
    }
    assert!(allowed::match_pattern_list("aXbXc", "a*b*c"));
    assert!(allowed::match_pattern_list("abc", "a?c"));
    assert!(!allowed::match_pattern_list("abcd", "a?c"));
    assert!(allowed::match_pattern_list(
        &"a".repeat(200),
        &"*a".repeat(50)
    ));
    // Many stars against a long non-matching subject: still fast.
    let stars = "*a".repeat(50) + "b";
    assert!(!allowed::match_pattern_list(&"a".repeat(10_000), &stars));
}

#[test]
fn line_for_cannot_inject_lines() {
    let k = key(11);
    let line = AllowedSigners::line_for("evil\nx ssh-ed25519 AAAA \"q", &k.public());
    assert_eq!(line.lines().count(), 1);
    let allowed = AllowedSigners::parse(&line).expect("parse");
    assert_eq!(allowed.entries().len(), 1);
    assert_eq!(
        allowed.entries()[0].principals(),
        "evilx ssh-ed25519 AAAA q"
    );
    let hash = AllowedSigners::parse(&AllowedSigners::line_for("#p", &k.public())).expect("p");
    assert_eq!(hash.entries()[0].principals(), "#p");
}

#[test]
fn allowed_signers_parsing() {
    let pk = key(12).public();
    let b64 = pk.to_openssh("");
    let good = format!(
        "\n# comment\n   \n\
         a,b {b64} comment here\n\
         c cert-authority {b64}\n\
         d CERT-AUTHORITY,Namespaces=\"x\" {b64}\n\
         e ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAAQC7\n"
    );
    // The rsa blob above is truncated; only its type string is checked.
    let allowed = AllowedSigners::parse(&good).expect("parse");
    let e = allowed.entries();
    assert_eq!(e.len(), 4);
    assert_eq!((e[0].line(), e[0].principals()), (4, "a,b"));
    assert!(e[1].is_cert_authority() && e[2].is_cert_authority());
    assert_eq!(e[2].namespaces(), Some("x"));
    assert_eq!((e[3].key_type(), e[3].key()), ("ssh-rsa", None));

    // cert-authority lines never match a plain key.
    let ca_only = AllowedSigners::parse(&format!("c cert-authority {b64}")).expect("ca");
    let sig = key(12).sign(NS, b"m");
    assert!(matches!(
        verify(&sig, NS, b"m", &ca_only),
        Err(SigningError::NotAllowed { .. })
    ));

    let bad = [
        "p".to_owned(),
        format!("\"unterminated {b64}"),
        format!("p valid-after=\"20200101\" {b64}"),
        format!("p valid-before=\"20300101\" {b64}"),
        format!("p namespaces=x {b64}"),
        format!("p namespaces=\"a\",namespaces=\"b\" {b64}"),
        format!("p namespaces=\"unterminated {b64}"),
        format!("p no-such-option=\"1\" {b64}"),
        format!("\"\" {b64}"),
        "p ssh-ed25519 !!!".to_owned(),
        "p ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA==".to_owned(),
        "p ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA==".to_owned(),
    ];
    for text in bad {
        let err = AllowedSigners::parse(&format!("# x\n{text}\n")).expect_err(&text);
        assert!(
            matches!(err, SigningError::AllowedSigners { line: 2, .. }),
            "{text}: {err}"
        );
    }
}

#[test]
fn sha256_signatures_verify() {
    // ssh-keygen only writes sha512, but PROTOCOL.sshsig allows sha256.
    let k = key(13);
    let hash = Sha256::digest(b"m");
    let data = signed_data(NS.as_bytes(), b"", "sha256", &hash);
    let mut sig_blob = Vec::new();
    put_string(&mut sig_blob, KEY_TYPE.as_bytes());
    put_string(&mut sig_blob, &k.key.sign(&data).to_bytes());
    let mut blob = Vec::new();
    blob.extend_from_slice(SIG_MAGIC);
    blob.extend_from_slice(&1u32.to_be_bytes());
    put_string(&mut blob, &k.public().blob());
    put_string(&mut blob, NS.as_bytes());
    put_string(&mut blob, b"");
    put_string(&mut blob, b"sha256");
    put_string(&mut blob, &sig_blob);
    assert!(verify(&rearmor(&blob), NS, b"m", &allow(&k, "p")).is_ok());

    let pos = blob.windows(6).position(|w| w == b"sha256").expect("alg");
    let mut sha384 = blob.clone();
    sha384[pos..pos + 6].copy_from_slice(b"sha384");
    assert_eq!(
        verify(&rearmor(&sha384), NS, b"m", &allow(&k, "p")),
        Err(SigningError::UnsupportedHash("sha384".into()))
    );
}

#[test]
fn garbage_is_rejected_without_panic() {
    let allowed = allow(&key(1), "p");
    let inputs = [
        String::new(),
        "garbage".into(),
        "-----BEGIN SSH SIGNATURE-----".into(),
        "-----BEGIN SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n".into(),
        "-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----\n".into(),
        "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n".into(),
        "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH/////w==\n-----END SSH SIGNATURE-----\n".into(),
        "-----BEGIN SSH SIGNATURE-----\nU1NIU0lHAAAAAf////8=\n-----END SSH SIGNATURE-----\n".into(),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n".into(),
        format!(
            "-----BEGIN SSH SIGNATURE-----\n{}\n-----END SSH SIGNATURE-----\n",
            "A".repeat(MAX_ARMOR_LEN)
        ),
        "-----BEGIN SSH SIGNATURE-----\nAA-A\n-----END SSH SIGNATURE-----\n-----END SSH SIGNATURE-----\n"
            .into(),
    ];
    for input in &inputs {
        assert!(verify(input, NS, b"m", &allowed).is_err());
        assert!(SigningKey::from_openssh(input).is_err());
        let _ = AllowedSigners::parse(input);
        let _ = PublicKey::parse_openssh(input);
    }
    let version2 = {
        let mut b = SIG_MAGIC.to_vec();
        b.extend_from_slice(&2u32.to_be_bytes());
        rearmor(&b)
    };
    assert_eq!(
        verify(&version2, NS, b"m", &allowed),
        Err(SigningError::UnsupportedVersion(2))
    );
}

#[test]
fn errors_are_one_line() {
    let errors = [
        SigningError::Armor {
            label: "SSH SIGNATURE",
        },
        SigningError::BadSignature,
        SigningError::EncryptedKey {
            cipher: "aes256-ctr".into(),
            kdf: "bcrypt".into(),
        },
        SigningError::NotAllowed {
            fingerprint: "SHA256:x".into(),
        },
    ];
    for e in errors {
        let text = e.to_string();
        assert!(!text.contains('\n') && !text.is_empty(), "{text}");
    }
}
