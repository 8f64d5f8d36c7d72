//! The apt part of a build: `--apt-uris FILE`, the output of
//! `apt-get install --print-uris -qq PKG...`, with `--apt-source 'URL DIST
//! [COMPONENT...]'` for each archive it names and `--apt-keyring FILE`, or
//! apt's own source lists (`--apt-sources FILE`, each entry checked against
//! its `Signed-By`, else `--apt-keyring`). A component is read as apt reads
//! it: `main` is served by a Release listing `updates/main` (Debian's
//! security archive).
//!
//! A print-uris line gives a URL, a file name, a size and at most one hash
//! (MD5Sum with Debian 12's apt): nothing a snapshot could bind bytes to.
//! The SHA256 comes from the signed chain only: each source's `InRelease`
//! (or `Release` and `Release.gpg`) is verified against the keyring
//! (`upstream.rs`), each component's `Packages` is checked against the
//! SHA256 the verified Release lists, and each line is matched by its pool
//! path to the stanza whose `Filename` it is (`pins.rs`); the line's size
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

mod local;
mod pins;
mod render;
mod source;
mod upstream;

use crate::build::{add_source, read_input, Net, Part, Sources, Staged};
use crate::error::BuildError;
use crate::fetch;
use egress_lock::AptUri;
use egress_model::Sha256Digest;
use egress_signing::openpgp::{Keyring, OpenPgpKey};
use egress_signing::SigningKey;
use egress_snapshot::SnapshotBuilder;
use egress_transcript::Client;
use source::AptSource;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use upstream::Upstream;

/// The creation time of the lab's OpenPGP key (2020-01-01T00:00:00Z): fixed,
/// so one signing key always gives one OpenPGP key and fingerprint, and a
/// keyring written once stays valid for every snapshot it signs.
pub const LAB_KEY_CREATED: u32 = 1_577_836_800;
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

/// The apt inputs of a build, and their flags.
#[derive(clap::Args, Default, Debug)]
#[group(id = "apt-inputs")]
pub struct Inputs {
    /// The output of `apt-get install --print-uris -qq PKG...`: every .deb
    /// it lists is bound to the SHA256 of its archive's signed Packages,
    /// downloaded, verified, and served in a repository signed by the key
    /// of --sign-key (see docs/snapshot-format.md, "apt").
    #[arg(long, value_name = "FILE")]
    pub apt_uris: Option<PathBuf>,
    /// 'URL DIST [COMPONENT...]' (default component main), one per
    /// distribution the --apt-uris URLs come from, e.g.
    /// 'http://deb.debian.org/debian bookworm main'; repeatable.
    #[arg(long = "apt-source", value_name = "SOURCE")]
    pub apt_sources: Vec<String>,
    /// apt's own source list as it stands, e.g.
    /// /etc/apt/sources.list.d/debian.sources: a deb822 .sources file or a
    /// one-line .list file; each enabled deb entry is a source, checked
    /// against its Signed-By (else --apt-keyring); repeatable.
    #[arg(long = "apt-sources", value_name = "FILE")]
    pub apt_source_files: Vec<PathBuf>,
    /// The OpenPGP keyring the archives sign their Release with, e.g.
    /// /usr/share/keyrings/debian-archive-keyring.gpg.
    #[arg(long, value_name = "FILE")]
    pub apt_keyring: Option<PathBuf>,
    /// A Debian architecture whose Packages are read [default: amd64];
    /// repeatable (--apt-arch amd64 --apt-arch arm64): a line binds
    /// through whichever architecture's signed index lists its file, and
    /// the snapshot serves an index per architecture.
    #[arg(long, value_name = "ARCH")]
    pub apt_arch: Vec<String>,
    /// A directory of .deb files to add as they are (e.g. the conformance
    /// kit of `kit --protocol apt`), listed in the first --apt-source's
    /// distribution and first component; repeatable.
    #[arg(long, value_name = "DIR")]
    pub apt_debs: Vec<PathBuf>,
}

pub(crate) struct Apt {
    inputs: Inputs,
    sources: Vec<AptSource>,
    /// The architectures read, in the order given, each once.
    archs: Vec<String>,
    uris_label: String,
    /// Each line with the index of its archive's first source.
    uris: Vec<(AptUri, usize)>,
    keyring: Option<Keyring>,
    /// Per source (in order), its own keyring (`Signed-By`) and how
    /// messages name it; `None`: `--apt-keyring`.
    source_keys: Vec<Option<(Keyring, String)>>,
    /// Per source, what its signed chain said.
    upstream: Vec<Upstream>,
    /// The verified `.deb`s, by archive base and pool path.
    debs: Vec<pins::Deb>,
    /// The `.deb`s of `--apt-debs`.
    local: Vec<local::LocalDeb>,
    /// How many of `debs` came from `--apt-debs`.
    local_added: usize,
    signing: Option<(OpenPgpKey, u64)>,
}

impl Apt {
    pub(crate) fn new(inputs: Inputs) -> Self {
        Self {
            inputs,
            sources: Vec::new(),
            archs: vec![DEFAULT_ARCH.to_string()],
            uris_label: String::new(),
            uris: Vec::new(),
            keyring: None,
            source_keys: Vec::new(),
            upstream: Vec::new(),
            debs: Vec::new(),
            local: Vec::new(),
            local_added: 0,
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

impl Apt {
    /// Lists every `--apt-debs` file in the first source's first component
    /// (for each architecture read when it is `all`), beside the pinned
    /// packages. A file at a pool path that is pinned or listed upstream
    /// with other bytes is refused; with the same bytes it is kept once.
    fn add_local(&mut self) -> Result<(), BuildError> {
        let (Some(source), Some(up)) = (self.sources.first(), self.upstream.first_mut()) else {
            return Ok(());
        };
        for d in std::mem::take(&mut self.local) {
            let e = &d.stanza;
            let shown = d.path.display();
            if e.architecture != "all" && !self.archs.contains(&e.architecture) {
                return Err(BuildError::Conflict(format!(
                    "--apt-debs {shown}: {} is built for {}, but the build reads {}; add --apt-arch {} or leave the file out",
                    e.package,
                    e.architecture,
                    self.archs.join(" "),
                    e.architecture
                )));
            }
            let first = source.components.first();
            for (component, arch, entries) in &mut up.packages {
                if Some(&*component) != first
                    || (e.architecture != "all" && e.architecture != *arch)
                {
                    continue;
                }
                match entries.iter().find(|u| u.filename == e.filename) {
                    Some(u) if u.sha256 == e.sha256 => {}
                    Some(_) => {
                        return Err(BuildError::Refused(format!(
                            "--apt-debs {shown}: {} is listed by the signed index of {} with other bytes; leave the file out or rename the package (from the standalone canary, make the kit with kit --canary and that canary's URL)",
                            e.filename,
                            source.label()
                        )))
                    }
                    None => entries.push(e.clone()),
                }
            }
            let pinned = self
                .debs
                .iter()
                .any(|p| p.base == source.base && p.stanza.filename == e.filename);
            if !pinned {
                self.local_added += 1;
                self.debs.push(pins::Deb {
                    base: source.base.clone(),
                    stanza: e.clone(),
                    bytes: d.bytes,
                });
            }
        }
        Ok(())
    }
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
                (!i.apt_source_files.is_empty(), "--apt-sources"),
                (i.apt_keyring.is_some(), "--apt-keyring"),
                (!i.apt_arch.is_empty(), "--apt-arch"),
                (!i.apt_debs.is_empty(), "--apt-debs"),
            ];
            if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
                return Err(BuildError::Usage(format!(
                    "{flag} is only used with --apt-uris FILE (the output of apt-get install --print-uris -qq PKG...)"
                )));
            }
            return Ok(());
        }
        if i.apt_sources.is_empty() && i.apt_source_files.is_empty() {
            return Err(BuildError::Usage(
                "--apt-uris needs --apt-source 'URL DIST [COMPONENT...]' for each archive and distribution its URLs come from, e.g. --apt-source 'http://deb.debian.org/debian bookworm main', or --apt-sources FILE (e.g. /etc/apt/sources.list.d/debian.sources)".into(),
            ));
        }
        if i.apt_keyring.is_none() && i.apt_source_files.is_empty() {
            return Err(BuildError::Usage(
                "--apt-uris needs --apt-keyring FILE, the keyring the archives sign their Release with, e.g. /usr/share/keyrings/debian-archive-keyring.gpg".into(),
            ));
        }
        if !i.apt_arch.is_empty() {
            self.archs.clear();
        }
        for arch in &i.apt_arch {
            if !is_arch(arch) {
                return Err(BuildError::Usage(format!(
                    "--apt-arch {arch:?}: give a Debian architecture such as amd64 or arm64"
                )));
            }
            if !self.archs.contains(arch) {
                self.archs.push(arch.clone());
            }
        }
        self.sources = source::parse_all(&i.apt_sources)?;
        Ok(())
    }

    fn read(&mut self, sources: &mut Sources) -> Result<(), BuildError> {
        let Some(path) = &self.inputs.apt_uris else {
            return Ok(());
        };
        // apt's own source lists, each entry with its own keys; without
        // --apt-arch, the architectures they name are read.
        let mut named: Vec<String> = Vec::new();
        for file in &self.inputs.apt_source_files {
            let (text, digest) = read_input("--apt-sources", file)?;
            add_source(sources, "apt-sources", file, digest);
            let listed = source::read_file(file, &text)?;
            for a in listed.iter().flat_map(|s| &s.architectures) {
                if !is_arch(a) {
                    return Err(BuildError::Conflict(format!(
                        "--apt-sources {}: architecture {a:?} is not a Debian architecture such as amd64",
                        file.display()
                    )));
                }
                if !named.contains(a) {
                    named.push(a.clone());
                }
            }
            self.sources.extend(listed);
        }
        if self.inputs.apt_arch.is_empty() && !named.is_empty() {
            self.archs = named;
        }
        source::check_all(&self.sources)?;
        for s in &self.sources {
            let key = match &s.signed_by {
                None => {
                    if self.inputs.apt_keyring.is_none() {
                        return Err(BuildError::Usage(format!(
                            "{}: no Signed-By, and no --apt-keyring; give the keyring the archive signs its Release with",
                            s.given
                        )));
                    }
                    None
                }
                Some(by) => Some(signed_by_keyring(s, by, sources)?),
            };
            self.source_keys.push(key);
        }

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
        // Local .debs go into the first source's first component.
        let component = self
            .sources
            .first()
            .and_then(|s| s.components.first())
            .cloned()
            .unwrap_or_else(|| "main".to_string());
        for dir in &self.inputs.apt_debs {
            for d in local::read_dir(dir, &component)? {
                add_source(sources, "apt-debs", &d.path, Sha256Digest::of(&d.bytes));
                self.local.push(d);
            }
        }
        Ok(())
    }

    fn fetch(&mut self, net: &Net) -> Result<(), BuildError> {
        if !self.has_inputs() {
            return Ok(());
        }
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
        if !crate::progress::is_quiet() {
            eprintln!(
                "verifying the signed indexes of {} apt distribution(s)",
                self.sources.len()
            );
        }
        for (i, s) in self.sources.iter().enumerate() {
            let client = clients
                .get(&s.url.origin())
                .ok_or_else(|| BuildError::Fetch(format!("{}: no client", s.base)))?;
            let (keyring, label) = match (
                self.source_keys.get(i).and_then(Option::as_ref),
                &self.keyring,
            ) {
                (Some((k, label)), _) => (k, label.as_str()),
                (None, Some(k)) => (k, keyring_label.as_str()),
                (None, None) => {
                    return Err(BuildError::Usage(format!(
                        "{}: no Signed-By, and no --apt-keyring",
                        s.given
                    )))
                }
            };
            self.upstream.push(upstream::fetch_upstream(
                s,
                &self.archs,
                client,
                keyring,
                label,
            )?);
        }

        // Every line against the signed stanzas, before any download.
        let planned = pins::plan(&self.uris, &self.uris_label, &self.sources, &self.upstream)?;
        self.debs = pins::download(&planned, net)?;
        self.add_local()?;
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
        let mut staged = render::stage(
            builder,
            &render::Repository {
                sources: &self.sources,
                upstream: &self.upstream,
                debs: &self.debs,
                archs: &self.archs,
            },
            lab,
            *now,
        )?;
        // The --apt-debs files were read, not downloaded.
        staged.downloaded = staged.downloaded.saturating_sub(self.local_added);
        Ok(staged)
    }
}

/// The keyring a source's `Signed-By` gives: one keyring file (recorded
/// as an input of the build) or a key block written in the sources file.
fn signed_by_keyring(
    s: &AptSource,
    by: &egress_apt::SignedBy,
    sources: &mut Sources,
) -> Result<(Keyring, String), BuildError> {
    let bad = |why: String| {
        BuildError::Conflict(format!(
            "{}: Signed-By {why}; give an OpenPGP keyring (binary .gpg or armoured .asc), e.g. /usr/share/keyrings/debian-archive-keyring.gpg",
            s.given
        ))
    };
    match by {
        egress_apt::SignedBy::Key(block) => {
            let keyring = Keyring::parse(block.as_bytes())
                .map_err(|e| bad(format!("(the key block in the file): {e}")))?;
            Ok((keyring, format!("the Signed-By key of {}", s.given)))
        }
        egress_apt::SignedBy::Files(files) => {
            let [file] = files.as_slice() else {
                return Err(bad(format!(
                    "names {} files; a build reads one keyring per source (join them with gpg --export KEYS > FILE)",
                    files.len()
                )));
            };
            let path = PathBuf::from(file);
            let bytes = fs::read(&path).map_err(|e| bad(format!("{file}: {e}")))?;
            let keyring = Keyring::parse(&bytes).map_err(|e| bad(format!("{file}: {e}")))?;
            add_source(sources, "apt-keyring", &path, Sha256Digest::of(&bytes));
            Ok((keyring, file.clone()))
        }
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
