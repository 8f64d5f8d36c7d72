//! What a snapshot serves for apt: per archive, a repository that lists
//! exactly the pinned packages, signed by the lab's OpenPGP key, and the
//! `.deb`s at their upstream pool paths (see `egress_snapshot::apt` for
//! the layout). The Packages stanzas are the upstream's signed stanzas,
//! verbatim; the Release names what the upstream's did (origin, label,
//! suite, codename) and the Packages files served beside it.

use super::pins::Deb;
use super::source::AptSource;
use super::upstream::Upstream;
use crate::build::Staged;
use crate::error::BuildError;
use egress_apt::{
    by_hash_path, render_packages, render_release, IndexEntry, IndexPath, ReleaseFields,
};
use egress_model::Sha256Digest;
use egress_signing::openpgp::OpenPgpKey;
use egress_snapshot::apt::{
    APT_KEYRING_ARMORED_PATH, APT_KEYRING_PATH, APT_PREFIX, DEB, GZIP, PGP_KEYS,
};
use egress_snapshot::{SnapshotBuilder, TEXT_PLAIN};

pub(crate) struct Repository<'a> {
    pub(crate) sources: &'a [AptSource],
    pub(crate) upstream: &'a [Upstream],
    pub(crate) debs: &'a [Deb],
    pub(crate) arch: &'a str,
}

fn rejected(e: egress_snapshot::SnapshotError) -> BuildError {
    BuildError::Rejected(e)
}

fn index_path(text: &str) -> Result<IndexPath, BuildError> {
    IndexPath::new(text).map_err(|e| BuildError::Usage(format!("{text}: {e}")))
}

/// Adds every apt file to `builder`, signed with `lab` at `now` (seconds
/// since the epoch).
pub(crate) fn stage(
    builder: &mut SnapshotBuilder,
    repo: &Repository,
    lab: &OpenPgpKey,
    now: u64,
) -> Result<Staged, BuildError> {
    let created = u32::try_from(now).unwrap_or(u32::MAX);
    for (source, up) in repo.sources.iter().zip(repo.upstream) {
        let root = format!("{APT_PREFIX}{}/", source.name);
        let dists = format!("{root}dists/{}/", source.dist);
        let mut entries = Vec::new();
        for (component, stanzas) in &up.packages {
            let pinned: Vec<_> = stanzas
                .iter()
                .filter(|e| {
                    repo.debs
                        .iter()
                        .any(|d| d.base == source.base && d.stanza.filename == e.filename)
                })
                .collect();
            let text = render_packages(&pinned).into_bytes();
            let gz = egress_artifacts::gzip(&text);
            let dir = format!("{component}/binary-{}", repo.arch);
            for (file, bytes, content_type) in
                [("Packages", text, TEXT_PLAIN), ("Packages.gz", gz, GZIP)]
            {
                let path = index_path(&format!("{dir}/{file}"))?;
                let digest = Sha256Digest::of(&bytes);
                let size = bytes.len() as u64;
                builder
                    .add_apt_file(
                        &format!("{dists}{}", by_hash_path(&path, &digest)),
                        content_type,
                        bytes.clone(),
                    )
                    .map_err(rejected)?;
                builder
                    .add_apt_file(&format!("{dists}{path}"), content_type, bytes)
                    .map_err(rejected)?;
                entries.push(IndexEntry { path, size, digest });
            }
        }
        let r = &up.release;
        let fields = ReleaseFields {
            origin: r.origin.clone().unwrap_or_else(|| source.name.clone()),
            label: r.label.clone().unwrap_or_else(|| source.name.clone()),
            suite: r.suite.clone().unwrap_or_else(|| source.dist.clone()),
            codename: r.codename.clone().unwrap_or_else(|| source.dist.clone()),
            date: now,
            valid_until: None,
            architectures: vec![repo.arch.to_string()],
            components: source.components.clone(),
            description: Some(format!(
                "egress-mirror snapshot of {} {}",
                source.name, source.dist
            )),
        };
        let release = render_release(&fields, &entries);
        let inrelease = lab.sign_cleartext(&release, created);
        let detached = lab.sign_detached(release.as_bytes(), created);
        for (file, bytes) in [
            ("Release", release.into_bytes()),
            ("InRelease", inrelease.into_bytes()),
            ("Release.gpg", detached.into_bytes()),
        ] {
            builder
                .add_apt_file(&format!("{dists}{file}"), TEXT_PLAIN, bytes)
                .map_err(rejected)?;
        }
        builder.source(
            &format!(
                "apt:{} {} {} signed by {}",
                source.base, source.dist, up.signed_by, up.signer
            ),
            up.signed_digest,
        );
    }

    let mut staged = Staged::default();
    for deb in repo.debs {
        let Some(source) = repo.sources.iter().find(|s| s.base == deb.base) else {
            continue;
        };
        let root = format!("{APT_PREFIX}{}/", source.name);
        let filename = deb.stanza.filename.as_str();
        // As apt requests it, and as other clients spell the Filename.
        let encoded = apt_encode(filename);
        builder
            .add_apt_file(&format!("{root}{encoded}"), DEB, deb.bytes.clone())
            .map_err(rejected)?;
        if encoded != filename {
            builder
                .add_apt_file(&format!("{root}{filename}"), DEB, deb.bytes.clone())
                .map_err(rejected)?;
        }
        staged.files += 1;
        staged.downloaded += 1;
        staged.bytes += deb.bytes.len() as u64;
    }
    builder
        .add_apt_file(APT_KEYRING_PATH, PGP_KEYS, lab.public_keyring())
        .map_err(rejected)?;
    builder
        .add_apt_file(
            APT_KEYRING_ARMORED_PATH,
            PGP_KEYS,
            lab.public_keyring_armored().into_bytes(),
        )
        .map_err(rejected)?;
    Ok(staged)
}

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
    use super::apt_encode;

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
