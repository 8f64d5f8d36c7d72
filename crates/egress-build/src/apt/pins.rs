//! How apt spells a pool path in a URL.
//!
//! apt writes a package's URL as the archive root followed by the stanza's
//! `Filename`, percent-encoded (`+` as `%2b`, `~` as `%7e`); it requests
//! exactly that path, so the mirror serves each `.deb` there
//! (`egress_lock::pool_path_of` reads it back).

/// How apt writes (and requests) a file name in a URL: apt's
/// `pkgAcquire::URIEncode`, i.e. `QuoteString` with `+`, `~` and space,
/// which also escapes `%`, controls and non-ASCII, as `%` and two
/// lowercase hex digits.
pub(crate) fn apt_encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b"+~ %".contains(&b) || b <= 0x20 || b >= 0x7f {
            out.push_str(&format!("%{b:02x}"));
        } else {
            out.push(b as char);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_apt_writes_them() {
        // From apt 2.6's own `--print-uris` output.
        let url = "pool/main/l/libx/libx%2b%2b1_1.0%7erc1%2bb2-1_all.deb";
        let name = "pool/main/l/libx/libx++1_1.0~rc1+b2-1_all.deb";
        assert_eq!(
            egress_lock::pool_path_of(&format!("http://x/d/{url}"), "http://x/d")
                .map(|p| p.to_string())
                .as_deref(),
            Some(name)
        );
        assert_eq!(apt_encode(name), url);
        assert_eq!(
            apt_encode("pool/a/b_1.0-1_amd64.deb"),
            "pool/a/b_1.0-1_amd64.deb"
        );
    }
}
