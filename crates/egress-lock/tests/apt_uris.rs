//! `apt-get install --print-uris -qq` output, as apt 2.6.1 (Debian 12)
//! printed it on this machine for `hello jq`, and every way a line can be
//! wrong.

use egress_lock::{parse_print_uris, split_at_pool, AptHash, PRINT_URIS_INPUT};
use egress_model::Sha256Digest;

const HELLO_JQ: &str = include_str!("fixtures/print-uris-hello-jq.txt");
/// `apt-get download --print-uris hello jq`: the same apt prints SHA256 here.
const DOWNLOAD: &str = include_str!("fixtures/print-uris-download-hello-jq.txt");
/// `apt-get update --print-uris`: indexes, not packages.
const UPDATE: &str = include_str!("fixtures/print-uris-update.txt");

#[test]
fn debian_12_output() {
    let uris = parse_print_uris(HELLO_JQ).unwrap();
    assert_eq!(uris.len(), 3);
    let hello = &uris[0];
    assert_eq!(
        hello.url,
        "http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb"
    );
    assert_eq!(hello.file_name, "hello_2.10-3_amd64.deb");
    assert_eq!(hello.size, 53080);
    assert_eq!(
        hello.hash,
        AptHash::Md5("d04c2e9639dee67aa836d8232b1ca658".into())
    );
    // bookworm-security's Packages has no MD5sum, so apt 2.6 prints no hash
    // at all: the line ends in a space.
    let jq = &uris[1];
    assert_eq!(
        jq.url,
        "http://deb.debian.org/debian-security/pool/updates/main/j/jq/jq_1.6-2.1%2bdeb12u3_amd64.deb"
    );
    assert_eq!(jq.file_name, "jq_1.6-2.1+deb12u3_amd64.deb");
    assert_eq!(jq.size, 64432);
    assert_eq!(jq.hash, AptHash::Missing);
    assert_eq!(uris[2].line, 3);
    let (root, path) = split_at_pool(&jq.url).unwrap();
    assert_eq!(root, "http://deb.debian.org/debian-security");
    assert_eq!(
        path.as_str(),
        "pool/updates/main/j/jq/jq_1.6-2.1+deb12u3_amd64.deb"
    );
}

#[test]
fn debian_12_download_output() {
    let uris = parse_print_uris(DOWNLOAD).unwrap();
    assert_eq!(uris.len(), 2);
    assert_eq!(uris[0].file_name, "hello_2.10-3_amd64.deb");
    // The SHA256 of bookworm-security's Packages stanza for jq.
    assert_eq!(
        uris[1].hash,
        AptHash::Sha256(
            Sha256Digest::from_hex(
                "c25f3fda201207ed98b1d63686f2d81b9dfeb99f1ab2d1d35fb3f7b6a1c107dc"
            )
            .unwrap()
        )
    );
}

#[test]
fn apt_get_update_output_is_refused() {
    let err = parse_print_uris(UPDATE).unwrap_err();
    assert_eq!(err.line, 1);
    assert!(err.message.contains("not a .deb"), "{err}");
}

#[test]
fn a_package_given_twice_is_refused() {
    let first = HELLO_JQ.lines().next().unwrap();
    let err = parse_print_uris(&format!("{first}\n\n{first}\n")).unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.message.contains("already on line 1"), "{err}");
    // The same name from another URL: which bytes would be meant?
    let other = first.replace("/debian/", "/debian-mirror/");
    let err = parse_print_uris(&format!("{first}\n{other}\n")).unwrap_err();
    assert!(
        err.message
            .contains("file name \"hello_2.10-3_amd64.deb\" is already on line 1"),
        "{err}"
    );
}

#[test]
fn every_hash_apt_prints() {
    let url = "'https://deb.example/debian/pool/main/v/vim/vim-tiny_9.0.1378-2%2bdeb12u2_amd64.deb' vim-tiny_2%3a9.0.1378-2+deb12u2_amd64.deb 719960";
    let sha256 = "AB".repeat(32);
    for (hash, want) in [
        (
            format!("SHA256:{sha256}"),
            AptHash::Sha256(Sha256Digest::from_hex(&sha256).unwrap()),
        ),
        (
            format!("SHA512:{}", "c".repeat(128)),
            AptHash::Sha512("c".repeat(128)),
        ),
        (
            format!("SHA1:{}", "D".repeat(40)),
            AptHash::Sha1("d".repeat(40)),
        ),
        (
            format!("MD5Sum:{}", "e".repeat(32)),
            AptHash::Md5("e".repeat(32)),
        ),
        (
            "Checksum-FileSize:719960".to_string(),
            AptHash::Unknown {
                name: "Checksum-FileSize".into(),
                value: "719960".into(),
            },
        ),
        (String::new(), AptHash::Missing),
    ] {
        let text = format!("\n{url} {hash}\n\n");
        let uris = parse_print_uris(&text).unwrap();
        assert_eq!(uris.len(), 1);
        assert_eq!(uris[0].hash, want, "{hash}");
        assert_eq!(uris[0].line, 2);
        assert_eq!(
            uris[0].file_name,
            "vim-tiny_2%3a9.0.1378-2+deb12u2_amd64.deb"
        );
    }
    // An editor that trimmed the trailing space changes nothing.
    assert_eq!(parse_print_uris(url).unwrap()[0].hash, AptHash::Missing);
}

/// The error for line 2 of `good line` + `bad`.
fn error_for(bad: &str) -> String {
    let first = HELLO_JQ.lines().next().unwrap();
    let err = parse_print_uris(&format!("{first}\n{bad}\n")).unwrap_err();
    assert_eq!(err.line, 2, "{bad:?}: {err}");
    assert_eq!(err.file, PRINT_URIS_INPUT);
    let text = err.to_string();
    assert!(!text.contains('\n'), "{text}");
    text
}

#[test]
fn lines_that_are_not_package_downloads() {
    let deb = "'http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3_amd64.deb'";
    for (bad, says) in [
        // Progress text of apt-get without -qq.
        ("Reading package lists...", "run apt-get with -qq"),
        ("The following NEW packages will be installed:", "run apt-get with -qq"),
        ("Need to get 53.1 kB of archives.", "run apt-get with -qq"),
        // apt-get update --print-uris and apt-get source --print-uris.
        (
            "'http://deb.debian.org/debian/dists/bookworm/InRelease' deb.debian.org_debian_dists_bookworm_InRelease 0 ",
            "not a .deb",
        ),
        (
            "'http://deb.debian.org/debian/pool/main/h/hello/hello_2.10-3.dsc' hello_2.10-3.dsc 1183 SHA256:a5e1",
            "not a .deb",
        ),
        // The shape.
        (&format!("{deb} hello.deb"), "expected 'URL' FILE SIZE HASH"),
        (&format!("{deb} hello.deb 1 MD5Sum:{} extra", "a".repeat(32)), "expected 'URL' FILE SIZE HASH"),
        ("'http://deb.debian.org/debian/pool/main/h/hello/hello.deb hello.deb 1", "closing quote"),
        ("http://deb.debian.org/debian/pool/main/h/hello/hello.deb hello.deb 1", "does not start with a quoted URL"),
        (deb, "nothing follows the URL"),
        // URLs.
        ("'ftp://deb.debian.org/debian/hello.deb' hello.deb 1 ", "http:// or https://"),
        ("'file:/var/cache/apt/archives/hello.deb' hello.deb 1 ", "http:// or https://"),
        ("'cdrom://x/hello.deb' hello.deb 1 ", "http:// or https://"),
        ("'http://user:pw@deb.debian.org/hello.deb' hello.deb 1 ", "credentials"),
        ("'http://deb.debian.org/hello.deb?x=1' hello.deb 1 ", "query"),
        ("'http://deb.debian.org/a\\b.deb' hello.deb 1 ", "backslash"),
        // File names.
        (&format!("{deb} ../../etc/cron.d/x.deb 1 "), "not a safe Debian file name"),
        (&format!("{deb} /tmp/x.deb 1 "), "not a safe Debian file name"),
        (&format!("{deb} a%2fb.deb 1 "), "not a safe Debian file name"),
        (&format!("{deb} a%00.deb 1 "), "not a safe Debian file name"),
        (&format!("{deb} .deb 1 "), "not a safe Debian file name"),
        (&format!("{deb} hello.tar.gz 1 "), "not a .deb"),
        // Sizes.
        (&format!("{deb} hello.deb -1 "), "not a positive decimal"),
        (&format!("{deb} hello.deb 0 "), "not a positive decimal"),
        (&format!("{deb} hello.deb 99999999999999999999999 "), "not a positive decimal"),
        (&format!("{deb} hello.deb 1e9 "), "not a positive decimal"),
        // Hashes.
        (&format!("{deb} hello.deb 1 d04c2e9639dee67aa836d8232b1ca658"), "NAME:HEX"),
        (&format!("{deb} hello.deb 1 MD5Sum:1234"), "not 32 hex digits"),
        (&format!("{deb} hello.deb 1 SHA256:{}", "z".repeat(64)), "not 64 hex digits"),
        (&format!("{deb} hello.deb 1 SHA1:{}", "a".repeat(64)), "not 40 hex digits"),
        (&format!("{deb} hello.deb 1 SHA512:{}", "a".repeat(64)), "not 128 hex digits"),
        (&format!("{deb} hello.deb 1 :abc"), "NAME:HEX"),
    ] {
        let text = error_for(bad);
        assert!(text.contains(says), "{bad:?}: {text}");
        assert!(text.starts_with("--print-uris output:2: "), "{text}");
    }
}
