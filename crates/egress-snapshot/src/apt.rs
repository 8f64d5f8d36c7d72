//! apt content of a snapshot: one Debian repository per upstream archive,
//! under [`APT_PREFIX`]`<name>/`, and the lab's public OpenPGP keyring.
//!
//! Served paths, for an archive `name` (the last path segment of its
//! upstream URL, e.g. `debian`, `debian-security`):
//! - `/apt/<name>/dists/<dist>/InRelease`, `Release`, `Release.gpg`: the
//!   index of exactly the snapshot's packages, signed by the lab's key;
//! - `/apt/<name>/dists/<dist>/<component>/binary-<arch>/Packages` and
//!   `Packages.gz`, and each at `by-hash/SHA256/<hex>` beside them;
//! - `/apt/<name>/pool/...`: each `.deb` at its upstream pool path, spelled
//!   as apt requests it and, where that differs, as the `Filename` field
//!   spells it;
//! - [`APT_KEYRING_PATH`], [`APT_KEYRING_ARMORED_PATH`]: the lab's public
//!   key, for convenience (a sandbox must get it out-of-band).
//!
//! Every byte is rendered by the builder (`egress-build`'s apt part) and
//! added with [`crate::SnapshotBuilder::add_apt_file`]; nothing is computed
//! when a path is served.

/// Where every apt path is served.
pub const APT_PREFIX: &str = "/apt/";
/// The lab's public OpenPGP key, binary (what apt's `signed-by` reads from
/// a `.gpg` file).
pub const APT_KEYRING_PATH: &str = "/apt/keyring.gpg";
/// The same key, ASCII-armoured (for a `.asc` file).
pub const APT_KEYRING_ARMORED_PATH: &str = "/apt/keyring.asc";
/// A `.deb`.
pub const DEB: &str = "application/vnd.debian.binary-package";
/// `Packages.gz`.
pub const GZIP: &str = "application/gzip";
/// A keyring.
pub const PGP_KEYS: &str = "application/pgp-keys";

/// A name for an archive under [`APT_PREFIX`]: `[A-Za-z0-9][A-Za-z0-9._+-]*`,
/// at most 100 bytes, and not `keyring.gpg` or `keyring.asc`.
pub fn is_archive_name(name: &str) -> bool {
    name.len() <= 100
        && name
            .as_bytes()
            .first()
            .is_some_and(|b| b.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        && !name.starts_with("keyring.")
}

/// Whether `path` may be served as an apt file: below [`APT_PREFIX`], every
/// segment non-empty and not `.` or `..`, visible ASCII without `?`, `#`
/// or `\`, at most 4,096 bytes.
pub fn is_apt_path(path: &str) -> bool {
    let Some(rest) = path.strip_prefix(APT_PREFIX) else {
        return false;
    };
    path.len() <= 4096
        && crate::is_servable_path(path)
        && !path.contains('\\')
        && rest
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths() {
        for ok in ["debian", "debian-security", "ubuntu", "a.b+c_d"] {
            assert!(is_archive_name(ok), "{ok}");
        }
        for bad in ["", ".x", "-x", "a/b", "keyring.gpg", "a b", "a%2f"] {
            assert!(!is_archive_name(bad), "{bad}");
        }
        for ok in [
            "/apt/debian/dists/bookworm/InRelease",
            "/apt/debian/pool/main/libx/libx%2b%2b1_1.0%7erc1_all.deb",
            "/apt/keyring.gpg",
        ] {
            assert!(is_apt_path(ok), "{ok}");
        }
        for bad in [
            "/apt/",
            "/apt/debian/",
            "/apt//x",
            "/apt/debian/../x",
            "/apt/debian/./x",
            "/apt/a\\b",
            "/apt/a?b",
            "/apt/a b",
            "/simple/x",
        ] {
            assert!(!is_apt_path(bad), "{bad}");
        }
    }
}
