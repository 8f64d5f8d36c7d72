//! The apt part of a build: `--apt-uris FILE`, the output of
//! `apt-get install --print-uris -qq PKG...`, with `--apt-source 'URL DIST
//! [COMPONENT...]'` for each archive it names and `--apt-keyring FILE`.
//!
//! A print-uris line gives a URL, a file name, a size and at most one hash
//! (MD5Sum with Debian 12's apt): nothing a snapshot could bind bytes to.
//! The SHA256 comes from the signed chain only: each source's `InRelease`
//! (or `Release` and `Release.gpg`) is verified against the keyring
//! (`upstream.rs`), each component's `Packages` is checked against the
//! SHA256 the verified Release lists, and each line is matched by its pool
//! path to the stanza whose `Filename` it is ([`Apt::plan`]); the line's size
//! and hash must agree with that stanza, and the `.deb` is downloaded and
//! must match the stanza's SHA256 and size. Any failure refuses the whole
//! snapshot before anything is written.
//!
//! What the snapshot serves (`render.rs`): per archive, a repository
//! signed by the lab's OpenPGP key (made from the snapshot's signing key,
//! [`lab_openpgp_key`]) whose Packages list exactly the pinned packages,
//! their upstream stanzas verbatim, and the `.deb`s at their upstream pool
//! paths. Why the lab signs rather than replaying the upstream's indexes:
//! docs/snapshot-format.md, "apt".

mod pins;
mod render;
mod source;
mod upstream;

use crate::build::{add_source, read_input, Net, Part, Sources, Staged};
use crate::error::BuildError;
use crate::fetch::{self, Expect, FetchError, FileJob};
use crate::progress::Progress;
use egress_apt::PackageEntry;
use egress_lock::{AptHash, AptUri};
use egress_model::Url;
use egress_signing::openpgp::{Keyring, OpenPgpKey};
use egress_signing::SigningKey;
use egress_snapshot::{pool, SnapshotBuilder};
use egress_transcript::{Client, Limits};
use source::AptSource;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use upstream::Upstream;

/// The creation time of the lab's OpenPGP key (2026-01-01T00:00:00Z): fixed,
/// so one signing key always gives one OpenPGP key and fingerprint, and a
/// keyring written once stays valid for every snapshot it signs.
pub const LAB_KEY_CREATED: u32 = 1_767_225_600;
/// The user ID of the lab's OpenPGP key.
pub const LAB_KEY_USER_ID: &str = "egress-mirror snapshot signer";
/// The architecture read when `--apt-arch` is not given.
pub const DEFAULT_ARCH: &str = "amd64";

/// The OpenPGP key that signs a snapshot's apt indexes, made from the
/// snapshot signing key (`snapshot build --sign-key`); its public keyring is
/// what a sandbox's apt trusts (`signed-by`).
pub fn lab_openpgp_key(key: &SigningKey) -> OpenPgpKey {
    OpenPgpKey::from_signing_key(key, LAB_KEY_USER_ID, LAB_KEY_CREATED)
}

/// The apt inputs of a build.
#[derive(Default)]
pub struct Inputs {
    /// `apt-get install --print-uris -qq ...` output.
    pub apt_uris: Option<PathBuf>,
    /// `URL DIST [COMPONENT...]`, one per distribution the URIs come from.
    pub apt_sources: Vec<String>,
    /// The keyring the upstream signs its Release with.
    pub apt_keyring: Option<PathBuf>,
    /// The architecture whose Packages are read (default [`DEFAULT_ARCH`]).
    pub apt_arch: Option<String>,
}

pub(crate) struct Apt {
    inputs: Inputs,
    sources: Vec<AptSource>,
    arch: String,
    uris_label: String,
    /// Each line with the index of its archive's first source.
    uris: Vec<(AptUri, usize)>,
    keyring: Option<Keyring>,
    /// Per source, what its signed chain said.
    upstream: Vec<Upstream>,
    /// The verified `.deb`s, by archive base and pool path.
    debs: Vec<Deb>,
    signing: Option<(OpenPgpKey, u64)>,
}

/// A `.deb` whose bytes matched its signed stanza.
pub(crate) struct Deb {
    /// The source whose archive it is in (its base URL).
    pub(crate) base: String,
    pub(crate) stanza: PackageEntry,
    pub(crate) bytes: Vec<u8>,
}

impl Apt {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            sources: Vec::new(),
            arch: DEFAULT_ARCH.to_string(),
            uris_label: String::new(),
            uris: Vec::new(),
            keyring: None,
            upstream: Vec::new(),
            debs: Vec::new(),
            signing: None,
        }
    }
}

fn is_arch(a: &str) -> bool {
    !a.is_empty()
        && a.len() <= 32
        && a.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl Part for Apt {
    fn input_flags(&self) -> &'static [&'static str] {
        &["--apt-uris"]
    }

    fn has_inputs(&self) -> bool {
        self.inputs.apt_uris.is_some()
    }

    fn check(&mut self, _: &mut SnapshotBuilder) -> Result<(), BuildError> {
        let i = &self.inputs;
        if i.apt_uris.is_none() {
            let given = [
                (!i.apt_sources.is_empty(), "--apt-source"),
                (i.apt_keyring.is_some(), "--apt-keyring"),
                (i.apt_arch.is_some(), "--apt-arch"),
            ];
            if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
                return Err(BuildError::Usage(format!(
                    "{flag} is only used with --apt-uris FILE (the output of apt-get install --print-uris -qq PKG...)"
                )));
            }
            return Ok(());
        }
        if i.apt_sources.is_empty() {
            return Err(BuildError::Usage(
                "--apt-uris needs --apt-source 'URL DIST [COMPONENT...]' for each archive and distribution its URLs come from, e.g. --apt-source 'http://deb.debian.org/debian bookworm main'".into(),
            ));
        }
        if i.apt_keyring.is_none() {
            return Err(BuildError::Usage(
                "--apt-uris needs --apt-keyring FILE, the keyring the archives sign their Release with, e.g. /usr/share/keyrings/debian-archive-keyring.gpg".into(),
            ));
        }
        if let Some(arch) = &i.apt_arch {
            if !is_arch(arch) {
                return Err(BuildError::Usage(format!(
                    "--apt-arch {arch:?}: give a Debian architecture such as amd64 or arm64"
                )));
            }
            self.arch = arch.clone();
        }
        self.sources = source::parse_all(&i.apt_sources)?;
        Ok(())
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        let Some(path) = &self.inputs.apt_uris else {
            return Ok(());
        };
        let (text, digest) = read_input("--apt-uris", path)?;
        self.uris_label = path.display().to_string();
        let uris = egress_lock::parse_print_uris(&text).map_err(|mut e| {
            e.file = format!("--apt-uris {}", self.uris_label);
            e
        })?;
        add_source(sources, "apt-uris", path, digest);
        if uris.is_empty() {
            return Err(BuildError::Conflict(format!(
                "--apt-uris {}: no package line; write it with apt-get install --print-uris -qq PKG... > FILE",
                self.uris_label
            )));
        }
        for uri in uris {
            let Some(at) = self
                .sources
                .iter()
                .position(|s| s.below(&uri.url).is_some())
            else {
                let bases: Vec<&str> = self.sources.iter().map(|s| s.base.as_str()).collect();
                return Err(BuildError::Conflict(format!(
                    "--apt-uris {} line {}: {} is under no --apt-source ({}); add --apt-source 'ARCHIVE-URL DIST COMPONENT' for the archive it comes from (its URL up to /pool/)",
                    self.uris_label,
                    uri.line,
                    uri.url,
                    bases.join(", ")
                )));
            };
            self.uris.push((uri, at));
        }

        if let Some(path) = &self.inputs.apt_keyring {
            let bytes = fs::read(path).map_err(|cause| BuildError::Read {
                what: "--apt-keyring",
                path: path.clone(),
                cause,
            })?;
            let keyring = Keyring::parse(&bytes).map_err(|e| {
                BuildError::Conflict(format!(
                    "--apt-keyring {}: {e}; give an OpenPGP keyring (binary .gpg or armoured .asc), e.g. /usr/share/keyrings/debian-archive-keyring.gpg",
                    path.display()
                ))
            })?;
            add_source(
                sources,
                "apt-keyring",
                path,
                egress_model::Sha256Digest::of(&bytes),
            );
            self.keyring = Some(keyring);
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        let Some(keyring) = &self.keyring else {
            return Ok(());
        };
        let keyring_label = self
            .inputs
            .apt_keyring
            .as_deref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let mut clients: HashMap<String, Client> = HashMap::new();
        for s in &self.sources {
            if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(s.url.origin()) {
                slot.insert(Client::new(
                    s.url.clone(),
                    fetch::page_limits(),
                    net.cacert,
                )?);
            }
        }
        eprintln!(
            "verifying the signed indexes of {} apt distribution(s)",
            self.sources.len()
        );
        for s in &self.sources {
            let client = clients
                .get(&s.url.origin())
                .ok_or_else(|| BuildError::Fetch(format!("{}: no client", s.base)))?;
            self.upstream.push(upstream::fetch_upstream(
                s,
                &self.arch,
                client,
                keyring,
                &keyring_label,
            )?);
        }

        // Every line against the signed stanzas, before any download.
        let planned = self.plan()?;
        self.debs = download(&planned, net)?;
        Ok(())
    }

    fn signing(&mut self, key: &SigningKey, now: u64) {
        if self.has_inputs() {
            self.signing = Some((lab_openpgp_key(key), now));
        }
    }

    fn stage(
        self: Box<Self>,
        builder: &mut SnapshotBuilder,
        _: &Path,
    ) -> Result<Staged, BuildError> {
        if !self.has_inputs() {
            return Ok(Staged::default());
        }
        let Some((lab, now)) = &self.signing else {
            return Err(BuildError::Usage(
                "apt indexes need the snapshot signing key".into(),
            ));
        };
        render::stage(
            builder,
            &render::Repository {
                sources: &self.sources,
                upstream: &self.upstream,
                debs: &self.debs,
                arch: &self.arch,
            },
            lab,
            *now,
        )
    }
}

/// One `.deb` to download: its line and the stanza that pins it.
struct Planned {
    line: usize,
    base: String,
    stanza: PackageEntry,
    job: FileJob,
}

impl Apt {
    /// Matches every line to its signed stanza; checks the line's size and
    /// hash against it.
    fn plan(&self) -> Result<Vec<Planned>, BuildError> {
        let mut planned: Vec<Planned> = Vec::new();
        for (uri, at) in &self.uris {
            let line = uri.line;
            let Some(source) = self.sources.get(*at) else {
                continue;
            };
            let here = format!("--apt-uris {} line {line}", self.uris_label);
            let Some(pool_path) = egress_lock::pool_path_of(&uri.url, &source.base) else {
                return Err(BuildError::Conflict(format!(
                    "{here}: {} is not a pool path below {} as apt writes it; write the file with apt-get install --print-uris -qq",
                    uri.url, source.base
                )));
            };
            // Every distribution given for this archive, every component.
            let same_archive: Vec<usize> = self
                .sources
                .iter()
                .enumerate()
                .filter(|(_, s)| s.base == source.base)
                .map(|(i, _)| i)
                .collect();
            let mut found: Option<&PackageEntry> = None;
            for i in &same_archive {
                let Some(up) = self.upstream.get(*i) else {
                    continue;
                };
                for (_, entries) in &up.packages {
                    if let Some(e) = entries.iter().find(|e| e.filename == pool_path) {
                        if let Some(prev) = found {
                            if prev.sha256 != e.sha256 || prev.size != e.size {
                                return Err(BuildError::Refused(format!(
                                    "{here}: {pool_path} is listed with different SHA256 or size in two signed indexes of {}; refusing to choose",
                                    source.base
                                )));
                            }
                        }
                        found.get_or_insert(e);
                    }
                }
            }
            let dists: Vec<String> = same_archive
                .iter()
                .filter_map(|i| self.sources.get(*i))
                .map(|s| format!("{} {}", s.dist, s.components.join(" ")))
                .collect();
            let no_sha256 = || {
                BuildError::Refused(format!(
                    "{here}: {} has no SHA256 in any signed index of {} ({}), so its bytes cannot be bound; add the distribution and component that list it to --apt-source, or write the file again after apt-get update against the same archive",
                    uri.file_name,
                    source.base,
                    dists.join("; ")
                ))
            };
            let stanza = found.ok_or_else(no_sha256)?;
            let sha256 = stanza.sha256.ok_or_else(no_sha256)?;
            if uri.size != stanza.size {
                return Err(BuildError::Refused(format!(
                    "{here}: {} is {} bytes on the line but {} bytes in the signed index of {}; write the file again after apt-get update against the same archive",
                    uri.file_name, uri.size, stanza.size, source.base
                )));
            }
            check_line_hash(&here, uri, stanza)?;
            if planned
                .iter()
                .any(|p| p.base == source.base && p.stanza.filename == stanza.filename)
            {
                continue;
            }
            let url = Url::parse(&uri.url)
                .map_err(|e| BuildError::Conflict(format!("{here}: {}: {e}", uri.url)))?;
            planned.push(Planned {
                line,
                base: source.base.clone(),
                stanza: stanza.clone(),
                job: FileJob {
                    filename: uri.file_name.clone(),
                    url,
                    expect: Expect::Sha256(sha256),
                    size: Some(stanza.size),
                },
            });
        }
        Ok(planned)
    }
}

/// The hash on a print-uris line against the same hash in the stanza.
fn check_line_hash(here: &str, uri: &AptUri, stanza: &PackageEntry) -> Result<(), BuildError> {
    let field = |name: &str| stanza.paragraph.get(name).map(str::to_ascii_lowercase);
    let (name, line, signed) = match &uri.hash {
        AptHash::Md5(h) => ("MD5Sum", h.to_ascii_lowercase(), stanza.md5.clone()),
        AptHash::Sha256(h) => ("SHA256", h.to_hex(), stanza.sha256.map(|d| d.to_hex())),
        AptHash::Sha1(h) => ("SHA1", h.to_ascii_lowercase(), field("SHA1")),
        AptHash::Sha512(h) => ("SHA512", h.to_ascii_lowercase(), field("SHA512")),
        AptHash::Unknown { .. } | AptHash::Missing => return Ok(()),
    };
    match signed {
        Some(signed) if signed != line => Err(BuildError::Refused(format!(
            "{here}: {} has {name} {line} on the line but {signed} in the signed index; write the file again after apt-get update against the same archive",
            uri.file_name
        ))),
        _ => Ok(()),
    }
}

/// Downloads every planned `.deb` (at most `net.jobs` at once); each must
/// match its stanza's SHA256 and size.
fn download(planned: &[Planned], net: &Net) -> Result<Vec<Deb>, BuildError> {
    let mut clients: HashMap<String, Client> = HashMap::new();
    for p in planned {
        if let std::collections::hash_map::Entry::Vacant(slot) = clients.entry(p.job.url.origin()) {
            slot.insert(Client::new(
                p.job.url.clone(),
                Limits::download(),
                net.cacert,
            )?);
        }
    }
    let total: u64 = planned.iter().map(|p| p.stanza.size).sum();
    if !planned.is_empty() {
        eprintln!(
            "fetching {} .deb files pinned by signed indexes",
            planned.len()
        );
    }
    let progress = Progress::new(planned.len(), total);
    let stop = AtomicBool::new(false);
    let results = pool::map(planned, net.jobs, |p| {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let Some(client) = clients.get(&p.job.url.origin()) else {
            return Some(Err(FetchError::Failed(format!("{}: no client", p.job.url))));
        };
        let part = net.work.join(p.job.expect.part_name(&p.job.url));
        let r = fetch::download(client, &p.job, &part, &progress);
        match &r {
            Ok(bytes) => {
                let _ = fs::remove_file(&part);
                progress.done(&p.job.filename, bytes.len() as u64, "");
            }
            Err(_) => stop.store(true, Ordering::Relaxed),
        }
        Some(r)
    });
    progress.finish();
    let mut out = Vec::new();
    let mut first_error = None;
    for (p, r) in planned.iter().zip(results) {
        match r {
            Some(Ok(bytes)) if bytes.len() as u64 == p.stanza.size => out.push(Deb {
                base: p.base.clone(),
                stanza: p.stanza.clone(),
                bytes,
            }),
            Some(Ok(bytes)) => {
                return Err(BuildError::Refused(format!(
                    "{} (line {}): {} bytes, the signed index says {}; refusing the whole snapshot",
                    p.job.url,
                    p.line,
                    bytes.len(),
                    p.stanza.size
                )))
            }
            Some(Err(FetchError::Mismatch { expected, actual })) => {
                return Err(BuildError::Refused(format!(
                    "{} (line {}): expected sha256 {expected} (the signed index), got {actual}; refusing the whole snapshot",
                    p.job.url, p.line
                )))
            }
            Some(Err(e)) => {
                first_error.get_or_insert(e);
            }
            None => {}
        }
    }
    match first_error {
        Some(e) => Err(e.into()),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_signing_key_one_openpgp_key() {
        let key = SigningKey::from_seed([7; 32], "lab");
        let (a, b) = (lab_openpgp_key(&key), lab_openpgp_key(&key));
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.public_keyring(), b.public_keyring());
        let other = lab_openpgp_key(&SigningKey::from_seed([8; 32], "lab"));
        assert_ne!(a.fingerprint(), other.fingerprint());
        let keyring = Keyring::parse(&a.public_keyring()).expect("a keyring");
        let signed = a.sign_cleartext("Origin: x\n", LAB_KEY_CREATED + 60);
        let v = keyring
            .verify_cleartext(signed.as_bytes())
            .expect("verifies");
        assert_eq!(v.signer, a.fingerprint());
    }
}
