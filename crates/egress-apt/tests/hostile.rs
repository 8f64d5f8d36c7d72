//! Hostile and broken Packages and Release files: each is a typed error
//! naming its line, never a panic, never a path that escapes.

use egress_apt::{parse_packages, parse_paragraphs, AptFormatError, PoolPath, Release};

fn stanza(filename: &str, size: &str) -> String {
    format!(
        "Package: hello\nVersion: 2.10-3\nArchitecture: amd64\nFilename: {filename}\nSize: {size}\nSHA256: {}\n",
        "ab".repeat(32)
    )
}

#[test]
fn traversal_in_filename_in_every_encoding() {
    for evil in [
        "../hello.deb",
        "pool/../../../etc/passwd",
        "pool/main/h/hello/../../../../../root/.ssh/id_ed25519",
        "/etc/passwd",
        "//evil.example/x.deb",
        "%2e%2e/hello.deb",
        "%2E%2E%2Fetc%2Fpasswd",
        "pool/..%2f..%2fetc/passwd",
        "pool/%252e%252e/x.deb",
        "pool/%c0%ae%c0%ae/x.deb",
        "pool\\..\\..\\x.deb",
        "..\\x.deb",
        "pool/./x.deb",
        "pool//x.deb",
        "./pool/x.deb",
        "pool/x.deb/",
        "pool/\u{ff0e}\u{ff0e}/x.deb",
        "pool/\u{2025}/x.deb",
        "pool/x.deb?../../y",
        "pool/x.deb#frag",
        "http://evil.example/x.deb",
        "file:///etc/passwd",
        "pool/x y.deb",
        "..",
    ] {
        let text = format!("{}\n{}", stanza("pool/ok.deb", "1"), stanza(evil, "1"));
        let err = parse_packages(&text).unwrap_err();
        assert!(
            matches!(&err, AptFormatError::BadValue { line: 11, field, .. } if field == "Filename"),
            "{evil:?}: {err:?}"
        );
        assert!(err.to_string().starts_with("line 11: Filename: "), "{err}");
    }
    // NUL and other control characters are refused before any field is read.
    for evil in ["pool/x\0.deb", "pool/x\r.deb", "pool/\x1b[31mx.deb"] {
        let err = parse_packages(&stanza(evil, "1")).unwrap_err();
        assert_eq!(
            err,
            AptFormatError::ControlCharacter { line: 4 },
            "{evil:?}"
        );
    }
}

#[test]
fn absurd_sizes() {
    for size in [
        "99999999999999999999999",
        "18446744073709551616",
        "-1",
        "+5",
        "1e9",
        "0x10",
        "1 2",
        "12kB",
        "\u{661}\u{662}",
    ] {
        let err = parse_packages(&stanza("pool/x.deb", size)).unwrap_err();
        assert!(
            matches!(&err, AptFormatError::BadValue { line: 5, field, .. } if field == "Size"),
            "{size:?}: {err:?}"
        );
    }
    let max = parse_packages(&stanza("pool/x.deb", "18446744073709551615")).unwrap();
    assert_eq!(max[0].size, u64::MAX);
}

#[test]
fn duplicate_and_missing_fields() {
    let dup = format!("{}Filename: pool/other.deb\n", stanza("pool/x.deb", "1"));
    assert_eq!(
        parse_packages(&dup).unwrap_err(),
        AptFormatError::DuplicateField {
            line: 7,
            name: "Filename".into()
        }
    );
    let dup = format!("{}size: 2\n", stanza("pool/x.deb", "1"));
    assert!(matches!(
        parse_packages(&dup).unwrap_err(),
        AptFormatError::DuplicateField { line: 7, .. }
    ));
    for field in ["Package", "Version", "Architecture", "Filename", "Size"] {
        let text: String = stanza("pool/x.deb", "1")
            .lines()
            .filter(|l| !l.starts_with(&format!("{field}:")))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = parse_packages(&text).unwrap_err();
        assert!(
            matches!(err, AptFormatError::MissingField { line: 1, field: f } if f == field),
            "{field}: {err:?}"
        );
    }
    // An empty value is as missing as no field.
    let empty = stanza("pool/x.deb", "1").replace("Filename: pool/x.deb", "Filename:");
    assert!(matches!(
        parse_packages(&empty).unwrap_err(),
        AptFormatError::MissingField {
            field: "Filename",
            ..
        }
    ));
}

#[test]
fn bad_digests_and_names() {
    let base = stanza("pool/x.deb", "1");
    for (from, to, field) in [
        (&*"ab".repeat(32), "ab", "SHA256"),
        (&*"ab".repeat(32), &*"zz".repeat(32), "SHA256"),
        ("Package: hello", "Package: Hello", "Package"),
        ("Package: hello", "Package: ../x", "Package"),
        ("Version: 2.10-3", "Version: 2.10 3", "Version"),
        ("Version: 2.10-3", "Version: x/../1", "Version"),
        (
            "Architecture: amd64",
            "Architecture: amd64/../x",
            "Architecture",
        ),
    ] {
        let text = base.replace(from, to);
        let err = parse_packages(&text).unwrap_err();
        assert!(
            matches!(&err, AptFormatError::BadValue { field: f, .. } if f == field),
            "{to}: {err:?}"
        );
    }
    let md5 = format!("{base}MD5sum: 1234\n");
    assert!(parse_packages(&md5).is_err());
    let md5 = format!("{base}MD5sum: {}\n", "A".repeat(32));
    assert_eq!(
        parse_packages(&md5).unwrap()[0].md5.as_deref(),
        Some(&*"a".repeat(32))
    );
}

#[test]
fn syntax_that_two_parsers_would_read_two_ways() {
    let base = stanza("pool/x.deb", "1");
    for (text, line) in [
        // A whitespace-only line: a separator to one parser, a continuation
        // to another; the stanza after it could smuggle a second Filename.
        (format!("{base} \nFilename: ../x.deb\n"), 7),
        (format!("{base}\t\n"), 7),
        (format!("{base}# Filename: ../x.deb\n"), 7),
        (base.replace('\n', "\r\n"), 1),
        (format!(" {base}"), 1),
    ] {
        let err = parse_packages(&text).unwrap_err();
        assert_eq!(err.line(), line, "{text:?}: {err}");
    }
}

#[test]
fn release_refusals() {
    let hex = "ab".repeat(32);
    let ok = format!("Origin: x\nSHA256:\n {hex} 1 main/binary-amd64/Packages\n");
    assert_eq!(Release::parse(&ok).unwrap().sha256.len(), 1);
    for (text, line) in [
        (format!("{ok}\nOrigin: second\n"), 5),
        (String::new(), 1),
        (
            format!("Origin: x\nSHA256:\n {hex} 1 ../../etc/passwd\n"),
            3,
        ),
        (format!("Origin: x\nSHA256:\n {hex} 1 /etc/passwd\n"), 3),
        (format!("Origin: x\nSHA256:\n {hex} 1 main/%2e%2e/x\n"), 3),
        (format!("Origin: x\nSHA256:\n {hex} 1 a\n {hex} 2 a\n"), 4),
        (format!("Origin: x\nSHA256:\n {hex} -1 a\n"), 3),
        (
            format!("Origin: x\nSHA256:\n {hex} 99999999999999999999 a\n"),
            3,
        ),
        (format!("Origin: x\nSHA256:\n {hex} 1\n"), 3),
        (format!("Origin: x\nSHA256:\n {hex} 1 a b\n"), 3),
        ("Origin: x\nSHA256:\n abc 1 a\n".to_string(), 3),
        ("Origin: x\nAcquire-By-Hash: maybe\n".to_string(), 2),
        (
            "Origin: x\nSHA256:\n".to_string() + &" x".repeat(3) + "\n",
            3,
        ),
    ] {
        let err = Release::parse(&text).unwrap_err();
        assert_eq!(err.line(), line, "{text:?}: {err}");
    }
    // A Release without a SHA256 section parses; whether that is acceptable
    // is the caller's judgement.
    assert!(Release::parse("Origin: x\n").unwrap().sha256.is_empty());
}

#[test]
fn big_inputs_stay_linear() {
    // 200,000 fields in one paragraph, and 200,000 continuation lines.
    let many: String = (0..200_000).map(|i| format!("F{i}: v\n")).collect();
    assert_eq!(parse_paragraphs(&many).unwrap()[0].len(), 200_000);
    let long = format!("A: x\n{}", " y\n".repeat(200_000));
    assert_eq!(parse_paragraphs(&long).unwrap()[0].len(), 1);
    assert!(PoolPath::new(&"a/".repeat(100_000)).is_err());
}
