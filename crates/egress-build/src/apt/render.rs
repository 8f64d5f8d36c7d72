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
    pub(crate) archs: &'a [String],
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
        for (component, arch, stanzas) in &up.packages {
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
            let dir = format!("{component}/binary-{arch}");
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
            architectures: repo.archs.to_vec(),
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
    use super::*;
    use egress_apt::{parse_packages, Release};
    use egress_signing::openpgp::Keyring;
    use egress_signing::SigningKey;

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

    const STANZAS: &str = "Package: libx++1\nVersion: 1:1.0~rc1-1\nArchitecture: all\nFilename: pool/main/l/libx/libx++1_1.0~rc1-1_all.deb\nSize: 3\nSHA256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\nDescription: kept\n\nPackage: other\nVersion: 1\nArchitecture: all\nFilename: pool/main/o/other/other_1_all.deb\nSize: 3\nSHA256: ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\nDescription: not pinned\n";

    /// One archive, one pinned package of two: the served paths, the
    /// Packages (the pinned stanza verbatim, nothing else), the Release
    /// listing them, and its signatures by the lab key.
    #[test]
    fn the_served_repository() {
        let source =
            AptSource::parse("http://up.example/debian bookworm main contrib").expect("source");
        let stanzas = parse_packages(STANZAS).expect("stanzas");
        let release = Release::parse(
            "Origin: Debian\nLabel: Debian\nSuite: stable\nCodename: bookworm\nSHA256:\n",
        )
        .expect("release");
        let upstream = Upstream {
            signed_digest: Sha256Digest::of(b"upstream InRelease"),
            signed_by: "InRelease",
            signer: "ABCD".into(),
            release,
            packages: vec![
                ("main".into(), "amd64".into(), stanzas.clone()),
                ("contrib".into(), "amd64".into(), vec![]),
            ],
        };
        let pinned = stanzas.first().expect("stanza").clone();
        let debs = [Deb {
            base: source.base.clone(),
            stanza: pinned.clone(),
            bytes: b"abc".to_vec(),
        }];
        let key = SigningKey::from_seed([3; 32], "lab");
        let lab = super::super::lab_openpgp_key(&key);
        let mut builder = SnapshotBuilder::new("/simple/");
        let sources = [source];
        let staged = stage(
            &mut builder,
            &Repository {
                sources: &sources,
                upstream: &[upstream],
                debs: &debs,
                archs: &["amd64".to_string()],
            },
            &lab,
            1_760_000_000,
        )
        .expect("staged");
        assert_eq!((staged.files, staged.bytes), (1, 3));
        let snap = builder
            .build("2025-10-09T08:53:20Z", Some(&key), "lab")
            .expect("snapshot");
        let get = |path: &str, ct: &str| {
            let e = snap
                .doc
                .lookup(path, ct)
                .unwrap_or_else(|| panic!("{path}"));
            snap.blobs.get(&e.sha256).expect("blob").to_vec()
        };
        let root = "/apt/debian/";
        // The .deb as apt requests it, and as its Filename spells it.
        for path in [
            "pool/main/l/libx/libx%2b%2b1_1.0%7erc1-1_all.deb",
            "pool/main/l/libx/libx++1_1.0~rc1-1_all.deb",
        ] {
            assert_eq!(get(&format!("{root}{path}"), DEB), b"abc");
        }
        assert!(!snap.doc.paths().any(|p| p.contains("other_1_all")));

        let dists = format!("{root}dists/bookworm/");
        let packages = get(&format!("{dists}main/binary-amd64/Packages"), TEXT_PLAIN);
        assert_eq!(packages, pinned.paragraph.render().into_bytes());
        let gz = get(&format!("{dists}main/binary-amd64/Packages.gz"), GZIP);
        assert_eq!(
            egress_artifacts::gunzip(&gz, 1 << 20).expect("gunzip"),
            packages
        );
        assert!(get(&format!("{dists}contrib/binary-amd64/Packages"), TEXT_PLAIN).is_empty());

        // The Release: what the upstream's named, the files served, signed.
        let keyring = Keyring::parse(&get(APT_KEYRING_PATH, PGP_KEYS)).expect("keyring");
        let inrelease = get(&format!("{dists}InRelease"), TEXT_PLAIN);
        let verified = keyring.verify_cleartext(&inrelease).expect("verifies");
        assert_eq!(verified.signer, lab.fingerprint());
        let text = get(&format!("{dists}Release"), TEXT_PLAIN);
        assert_eq!(verified.text, text);
        keyring
            .verify_detached(&text, &get(&format!("{dists}Release.gpg"), TEXT_PLAIN))
            .expect("Release.gpg verifies");
        let release = Release::parse(std::str::from_utf8(&text).expect("utf-8")).expect("parse");
        assert_eq!(
            (release.suite.as_deref(), release.codename.as_deref()),
            (Some("stable"), Some("bookworm"))
        );
        assert_eq!(release.components, ["main", "contrib"]);
        assert!(release.acquire_by_hash);
        for (file, ct) in [
            ("main/binary-amd64/Packages", TEXT_PLAIN),
            ("main/binary-amd64/Packages.gz", GZIP),
        ] {
            let entry = release.find(file).expect("listed");
            let bytes = get(&format!("{dists}{file}"), ct);
            assert_eq!(entry.digest, Sha256Digest::of(&bytes));
            assert_eq!(entry.size, bytes.len() as u64);
            let by_hash = format!("{dists}{}", by_hash_path(&entry.path, &entry.digest));
            assert_eq!(get(&by_hash, ct), bytes);
        }
        assert!(snap
            .doc
            .sources
            .contains_key("apt:http://up.example/debian bookworm InRelease signed by ABCD"));
    }
}
