//! Reading what an apt target serves: the `Release` inside an `InRelease`
//! (without verifying it: that is P1's), a `Packages` index plain or
//! gzipped, and the files a served index lists with their SHA256 (for the
//! run-wide P1 and P3 rules).

use crate::common::runwide::{Expected, Listing};
use egress_apt::{by_hash_path, parse_packages, PackageEntry, Release};
use egress_model::Url;

/// The largest `Packages` the suite unpacks from a `Packages.gz`.
const MAX_PACKAGES: u64 = 64 << 20;

const BEGIN_SIGNED: &str = "-----BEGIN PGP SIGNED MESSAGE-----";
const BEGIN_SIGNATURE: &str = "-----BEGIN PGP SIGNATURE-----";

/// The text a cleartext-signed message carries (armour headers dropped,
/// dash-escapes undone), or `None` when `bytes` is not one. Nothing is
/// verified here.
pub fn cleartext(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut lines = text.lines();
    if lines.next()?.trim_end() != BEGIN_SIGNED {
        return None;
    }
    // Armour headers (`Hash: SHA256`) up to the first empty line.
    for l in lines.by_ref() {
        if l.trim_end().is_empty() {
            break;
        }
    }
    let mut out = String::new();
    for l in lines {
        if l.trim_end() == BEGIN_SIGNATURE {
            return Some(out);
        }
        out.push_str(l.strip_prefix("- ").unwrap_or(l));
        out.push('\n');
    }
    None
}

/// The `Release` an `InRelease` or a `Release` body carries.
pub fn release(bytes: &[u8]) -> Option<Release> {
    let text = match cleartext(bytes) {
        Some(t) => t,
        None => std::str::from_utf8(bytes).ok()?.to_string(),
    };
    Release::parse(&text).ok()
}

/// A `Packages` body, gunzipped when it is gzip data.
pub fn packages_text(bytes: &[u8]) -> Option<String> {
    let plain = if bytes.starts_with(&[0x1f, 0x8b]) {
        egress_artifacts::gunzip(bytes, MAX_PACKAGES).ok()?
    } else {
        bytes.to_vec()
    };
    String::from_utf8(plain).ok()
}

/// The stanzas of a `Packages` body.
pub fn packages(bytes: &[u8]) -> Option<Vec<PackageEntry>> {
    parse_packages(&packages_text(bytes)?).ok()
}

/// Whether a URL names a `Release` document (`.../dists/<dist>/InRelease`
/// or `Release`).
fn is_release_url(url: &Url) -> bool {
    let p = url.path();
    p.contains("/dists/") && (p.ends_with("/InRelease") || p.ends_with("/Release"))
}

/// Whether a URL names a `Packages` index (plain or `.gz`, or by hash).
fn is_packages_url(url: &Url) -> bool {
    let p = url.path();
    p.contains("/dists/") && (p.ends_with("/Packages") || p.ends_with("/Packages.gz"))
}

/// The archive root of a URL below `dists/`: everything before `dists/`.
fn archive_of(url: &Url) -> Option<Url> {
    let p = url.path();
    let cut = p.find("/dists/")?;
    Some(url.with_path(p.get(..=cut)?))
}

/// The files a served body lists, with their SHA256: a `Release` lists
/// its indexes (and their by-hash paths when it announces
/// `Acquire-By-Hash`), a `Packages` index its `.deb`s. Other bodies list
/// nothing.
pub fn listings(url: &Url, body: &[u8]) -> Vec<Listing> {
    let mut out = Vec::new();
    if is_release_url(url) {
        let Some(r) = release(body) else { return out };
        for e in &r.sha256 {
            let mut paths = vec![e.path.as_str().to_string()];
            if r.acquire_by_hash {
                paths.push(by_hash_path(&e.path, &e.digest));
            }
            for p in paths {
                if let Ok(u) = url.join(&p) {
                    out.push(Listing {
                        name: p,
                        url: u,
                        expected: vec![Expected::Sha256(e.digest)],
                    });
                }
            }
        }
    } else if is_packages_url(url) {
        let (Some(root), Some(entries)) = (archive_of(url), packages(body)) else {
            return out;
        };
        for e in entries {
            if let Ok(u) = root.join(e.filename.as_str()) {
                out.push(Listing {
                    name: format!("{} {}", e.package, e.version),
                    url: u,
                    expected: e.sha256.map(Expected::Sha256).into_iter().collect(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleartext_is_read_and_unescaped() {
        let signed = "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\nOrigin: x\n- -dash\n-----BEGIN PGP SIGNATURE-----\n\nxx\n-----END PGP SIGNATURE-----\n";
        assert_eq!(
            cleartext(signed.as_bytes()).as_deref(),
            Some("Origin: x\n-dash\n")
        );
        assert_eq!(cleartext(b"Origin: x\n"), None);
        assert_eq!(
            cleartext(b"-----BEGIN PGP SIGNED MESSAGE-----\n\nno end\n"),
            None
        );
    }

    #[test]
    fn archive_root_is_before_dists() {
        let u = Url::parse("http://h/apt/debian/dists/x/main/binary-amd64/Packages").unwrap();
        assert_eq!(archive_of(&u).unwrap().path(), "/apt/debian/");
        let r = Url::parse("http://h/debian/dists/x/InRelease").unwrap();
        assert!(is_release_url(&r) && !is_packages_url(&r));
    }
}
