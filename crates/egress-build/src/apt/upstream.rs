//! An upstream distribution's signed chain: `InRelease` (or `Release` and
//! `Release.gpg`) verified against `--apt-keyring`, then each component's
//! `Packages.gz` (or `Packages`) checked against the SHA256 and size the
//! verified `Release` lists, and parsed. Nothing here is trusted before
//! its signature or signed digest was checked.

use super::source::AptSource;
use crate::error::BuildError;
use crate::fetch::{self, FetchError};
use crate::progress::Progress;
use egress_apt::{by_hash_path, parse_packages, IndexEntry, PackageEntry, Release};
use egress_model::{Sha256Digest, Url};
use egress_signing::openpgp::Keyring;
use egress_transcript::Client;

/// Largest decompressed `Packages` read: Debian's main amd64 is ~100 MB.
const MAX_PACKAGES: u64 = 1 << 30;

/// What one verified distribution says.
pub(crate) struct Upstream {
    /// The sha256 of the signed document (`InRelease`, or `Release`).
    pub(crate) signed_digest: Sha256Digest,
    /// `InRelease` or `Release`+`Release.gpg`.
    pub(crate) signed_by: &'static str,
    /// The OpenPGP fingerprint of the key that made the signature.
    pub(crate) signer: String,
    pub(crate) release: Release,
    /// Per component (in `--apt-source` order) and architecture (in
    /// `--apt-arch` order), its stanzas.
    pub(crate) packages: Vec<(String, String, Vec<PackageEntry>)>,
}

fn failed(e: FetchError) -> BuildError {
    e.into()
}

/// GET of a whole document: `Ok(None)` for a 4xx (the archive does not
/// provide it).
fn get(client: &Client, url: &Url, what: &str) -> Result<Option<Vec<u8>>, BuildError> {
    let quiet = Progress::new(0, 0);
    let answer = fetch::get_whole(client, url, "*/*", what, &quiet).map_err(failed)?;
    match (answer.status, answer.body) {
        (200, Some(body)) => Ok(Some(body)),
        (400..=499, _) => Ok(None),
        (s, _) => Err(BuildError::Fetch(format!(
            "{}: HTTP {s} ({})",
            answer.url, answer.status_line
        ))),
    }
}

/// Fetches and verifies `source`'s signed chain for each of `archs`.
pub(crate) fn fetch_upstream(
    source: &AptSource,
    archs: &[String],
    client: &Client,
    keyring: &Keyring,
    keyring_label: &str,
) -> Result<Upstream, BuildError> {
    let label = source.label();
    let unverified = |doc: &Url, why: String| {
        BuildError::Unverified(format!(
            "{doc} does not verify against --apt-keyring {keyring_label}: {why}; give the keyring the archive signs with (e.g. /usr/share/keyrings/debian-archive-keyring.gpg), or check that {} is the archive you mean",
            source.base
        ))
    };
    let inrelease_url = source.dist_url("InRelease")?;
    let (text, signed_digest, signed_by, signer) = match get(client, &inrelease_url, "InRelease")? {
        Some(bytes) => {
            let v = keyring
                .verify_cleartext(&bytes)
                .map_err(|e| unverified(&inrelease_url, e.to_string()))?;
            let text = String::from_utf8(v.text).map_err(|_| {
                BuildError::Refused(format!("{inrelease_url}: the signed text is not UTF-8"))
            })?;
            (
                text,
                Sha256Digest::of(&bytes),
                "InRelease",
                v.signer.to_string(),
            )
        }
        None => {
            let release_url = source.dist_url("Release")?;
            let gpg_url = source.dist_url("Release.gpg")?;
            let missing = |u: &Url| {
                BuildError::Refused(format!(
                        "{label}: {inrelease_url} and {u} are not served (4xx); check the URL and distribution of --apt-source"
                    ))
            };
            let release =
                get(client, &release_url, "Release")?.ok_or_else(|| missing(&release_url))?;
            let sig = get(client, &gpg_url, "Release.gpg")?.ok_or_else(|| {
                unverified(
                    &release_url,
                    format!("{gpg_url} is not served, so it is unsigned"),
                )
            })?;
            let v = keyring
                .verify_detached(&release, &sig)
                .map_err(|e| unverified(&release_url, e.to_string()))?;
            let text = String::from_utf8(release.clone())
                .map_err(|_| BuildError::Refused(format!("{release_url}: not UTF-8 text")))?;
            (
                text,
                Sha256Digest::of(&release),
                "Release+Release.gpg",
                v.signer.to_string(),
            )
        }
    };
    let release = Release::parse(&text)
        .map_err(|e| BuildError::Refused(format!("{label}: the signed Release: {e}")))?;
    check_valid_until(&release, &label, unix_now())?;
    let names_dist = [&release.suite, &release.codename]
        .iter()
        .any(|n| n.as_deref() == Some(source.dist.as_str()));
    if !names_dist {
        return Err(BuildError::Refused(format!(
            "{label}: the signed Release is for suite {:?}, codename {:?}, not {:?}; give the distribution as the archive names it",
            release.suite.as_deref().unwrap_or(""),
            release.codename.as_deref().unwrap_or(""),
            source.dist
        )));
    }

    let mut packages = Vec::new();
    for component in &source.components {
        for arch in archs {
            let entries = fetch_packages(source, component, arch, client, &release)?;
            packages.push((component.clone(), arch.clone(), entries));
        }
    }
    Ok(Upstream {
        signed_digest,
        signed_by,
        signer,
        release,
        packages,
    })
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A signed `Release` whose `Valid-Until` has passed at `now` is refused as
/// an unverified one is: apt itself would refuse it ("is expired"), and a
/// snapshot bound to it would bind what the archive no longer vouches for.
pub(crate) fn check_valid_until(
    release: &Release,
    label: &str,
    now: u64,
) -> Result<(), BuildError> {
    let Some(text) = &release.valid_until else {
        return Ok(());
    };
    let Some(until) = egress_apt::parse_rfc2822(text) else {
        return Err(BuildError::Unverified(format!(
            "{label}: the signed Release has a Valid-Until apt cannot read ({text:?}); check that the archive is the one you mean"
        )));
    };
    if until < now {
        return Err(BuildError::Unverified(format!(
            "{label}: the signed Release expired at {text} (its Valid-Until; now {}); refresh the mirror it comes from, run apt-get update and write --apt-uris again, or check this machine's clock",
            egress_apt::rfc2822_utc(now)
        )));
    }
    Ok(())
}

/// The Packages files read, in the order tried.
const PACKAGES_FILES: [&str; 3] = ["Packages.gz", "Packages.xz", "Packages"];

/// One component's stanzas, from the first of [`PACKAGES_FILES`] that the
/// signed Release lists and the archive serves.
fn fetch_packages(
    source: &AptSource,
    component: &str,
    arch: &str,
    client: &Client,
    release: &Release,
) -> Result<Vec<PackageEntry>, BuildError> {
    let label = source.label();
    let dir = format!("{component}/binary-{arch}");
    if !release.has_component(component) {
        return Err(BuildError::Refused(format!(
            "{label}: the signed Release has no component {component:?} (it has {}); fix {}",
            release.components.join(" "),
            source.given
        )));
    }
    let listed: Vec<&IndexEntry> = PACKAGES_FILES
        .iter()
        .filter_map(|f| release.find(&format!("{dir}/{f}")))
        .collect();
    if listed.is_empty() {
        return Err(BuildError::Refused(format!(
            "{label}: the signed Release lists no {dir}/Packages.gz, Packages.xz or Packages; check --apt-arch and the components of --apt-source"
        )));
    }
    for entry in listed {
        // By hash when the archive announces it: a file that cannot change
        // while the archive updates.
        let mut urls = Vec::new();
        if release.acquire_by_hash {
            urls.push(source.dist_url(&by_hash_path(&entry.path, &entry.digest))?);
        }
        urls.push(source.dist_url(entry.path.as_str())?);
        let mut body = None;
        for url in &urls {
            if let Some(b) = get(client, url, "Packages")? {
                body = Some((url.clone(), b));
                break;
            }
        }
        let Some((url, bytes)) = body else { continue };
        let actual = Sha256Digest::of(&bytes);
        if bytes.len() as u64 != entry.size || actual != entry.digest {
            return Err(BuildError::Refused(format!(
                "{url}: {} bytes with sha256 {actual}, but the signed Release of {label} lists {} bytes with sha256 {}; the archive may be mid-update: run again, or use a consistent mirror",
                bytes.len(),
                entry.size,
                entry.digest
            )));
        }
        let path = entry.path.as_str();
        let text = if path.ends_with(".gz") {
            egress_artifacts::gunzip(&bytes, MAX_PACKAGES)
                .map_err(|e| BuildError::Refused(format!("{url}: {e}")))?
        } else if path.ends_with(".xz") {
            unxz(&bytes, MAX_PACKAGES).map_err(|e| BuildError::Refused(format!("{url}: {e}")))?
        } else {
            bytes
        };
        let text = String::from_utf8(text)
            .map_err(|_| BuildError::Refused(format!("{url}: not UTF-8 text")))?;
        return parse_packages(&text).map_err(|e| BuildError::Refused(format!("{url}: {e}")));
    }
    Err(BuildError::Refused(format!(
        "{label}: none of {dir}/Packages.gz, Packages.xz and Packages that the signed Release lists is served"
    )))
}

/// Why an `.xz` file could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XzError {
    #[error("not a valid xz file: {0}")]
    Invalid(String),
    #[error("decompresses to more than {0} bytes")]
    TooLarge(u64),
}

/// A writer that refuses to hold more than `limit` bytes.
struct Bounded {
    out: Vec<u8>,
    limit: u64,
    exceeded: bool,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.out.len() + buf.len()) as u64 > self.limit {
            self.exceeded = true;
            return Err(std::io::Error::other("over the limit"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The contents of an `.xz` file (a `Packages.xz`), at most `limit` bytes;
/// its check (CRC or SHA-256, as the file says) is verified by the decoder.
pub(crate) fn unxz(input: &[u8], limit: u64) -> Result<Vec<u8>, XzError> {
    let mut out = Bounded {
        out: Vec::new(),
        limit,
        exceeded: false,
    };
    let mut reader = std::io::BufReader::new(input);
    match lzma_rs::xz_decompress(&mut reader, &mut out) {
        Ok(()) => Ok(out.out),
        Err(_) if out.exceeded => Err(XzError::TooLarge(limit)),
        Err(e) => Err(XzError::Invalid(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expired_release_is_refused() {
        let release = |until: &str| {
            Release::parse(&format!(
                "Suite: stable\nDate: Mon, 30 Nov 2026 02:21:41 UTC\n{until}SHA256:\n"
            ))
            .expect("release")
        };
        let now = 1_796_005_301 + 60;
        assert!(check_valid_until(&release(""), "x", now).is_ok());
        let later = "Valid-Until: Mon, 07 Dec 2026 02:21:41 UTC\n";
        assert!(check_valid_until(&release(later), "x", now).is_ok());
        let past = "Valid-Until: Mon, 30 Nov 2026 02:21:41 UTC\n";
        let e = check_valid_until(&release(past), "http://a/debian x", now).expect_err("expired");
        assert!(matches!(e, BuildError::Unverified(_)), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(
                "http://a/debian x: the signed Release expired at Mon, 30 Nov 2026 02:21:41 UTC"
            ),
            "{text}"
        );
        assert!(text.contains("clock") && !text.contains('\n'), "{text}");
        let bad = "Valid-Until: tomorrow\n";
        assert!(matches!(
            check_valid_until(&release(bad), "x", now),
            Err(BuildError::Unverified(_))
        ));
    }

    #[test]
    fn xz_as_the_xz_tool_writes_it() {
        let text = b"Package: a\nVersion: 1\n\nPackage: b\nVersion: 2\n".repeat(50);
        let xz = std::process::Command::new("xz")
            .args(["-c", "-9"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .ok_or_else(|| std::io::Error::other("stdin"))?
                    .write_all(&text)?;
                child.wait_with_output()
            });
        let packed = match xz {
            Ok(o) if o.status.success() => o.stdout,
            // Without the xz tool, the decoder's own encoder stands in.
            _ => {
                let mut packed = Vec::new();
                lzma_rs::xz_compress(&mut &text[..], &mut packed).expect("compress");
                packed
            }
        };
        assert_eq!(unxz(&packed, 1 << 20).expect("reads"), text);
        assert!(matches!(unxz(&packed, 100), Err(XzError::TooLarge(100))));
        let mut bad = packed.clone();
        if let Some(b) = bad.get_mut(packed.len() / 2) {
            *b ^= 0xff;
        }
        assert!(unxz(&bad, 1 << 20).is_err());
        assert!(matches!(unxz(b"not xz", 1 << 20), Err(XzError::Invalid(_))));
    }
}
