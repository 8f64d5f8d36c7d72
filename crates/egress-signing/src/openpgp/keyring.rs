//! Keyrings (transferable public keys, RFC 4880 section 11.1) and checking
//! document signatures against them as gpgv does for apt.

use super::armor;
use super::error::OpenPgpError;
use super::fingerprint::Fingerprint;
use super::key::{self, KeyPacket, Parsed};
use super::packet::{self, Packet};
use super::signature::{self, Signature, Use, KEY_FLAG_SIGN};

/// Something in a keyring that was skipped, kept so callers (and tests) can
/// see what was not used and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skipped {
    /// A packet type a keyring does not need (trust, marker, secret keys,
    /// data packets, unassigned tags).
    Packet { tag: u8, offset: usize },
    /// A key or subkey this crate cannot verify with (another version,
    /// algorithm or curve), or a primary key without a valid
    /// self-signature.
    Key { offset: usize, detail: String },
    /// A signature packet that could not be parsed.
    Signature { offset: usize, detail: String },
}

/// One key (primary or subkey) and what its self-signatures say.
#[derive(Debug, Clone)]
struct Entry {
    key: KeyPacket,
    /// A valid self-certification (primary) or binding signature (subkey).
    bound: bool,
    flags: Option<u8>,
    expires_after: Option<u32>,
    revoked: bool,
}

impl Entry {
    fn new(key: KeyPacket) -> Self {
        Self {
            key,
            bound: false,
            flags: None,
            expires_after: None,
            revoked: false,
        }
    }

    /// Unix time at which the key expires, if it does.
    fn expires_at(&self) -> Option<u64> {
        match self.expires_after {
            None | Some(0) => None,
            Some(after) => Some(u64::from(self.key.created) + u64::from(after)),
        }
    }

    /// Applies the latest valid self-signature among `sigs`.
    fn apply(&mut self, sigs: &[&Signature]) {
        if let Some(latest) = sigs.iter().max_by_key(|s| s.created) {
            self.bound = true;
            self.flags = latest.key_flags;
            self.expires_after = latest.key_expires_after;
        }
    }
}

#[derive(Debug, Clone)]
struct Cert {
    primary: Entry,
    subkeys: Vec<Entry>,
}

/// A set of OpenPGP public keys to check signatures against: what apt's
/// `Signed-By` names, or `/usr/share/keyrings/debian-archive-keyring.gpg`.
#[derive(Debug, Clone)]
pub struct Keyring {
    certs: Vec<Cert>,
    skipped: Vec<Skipped>,
}

/// A signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedSignature {
    /// The key that made the signature (a primary key or a signing subkey).
    pub signer: Fingerprint,
    /// The primary key of the certificate holding `signer`.
    pub primary: Fingerprint,
    /// The signature's creation time (unix seconds).
    pub created: u32,
    /// The digest algorithm (`SHA256`, `SHA384`, `SHA512`).
    pub digest: &'static str,
}

/// The text of a cleartext-signed message (an InRelease) that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedText {
    /// The signed text as apt reads it: dash-unescaped lines without
    /// trailing whitespace, each ending in `\n`.
    pub text: Vec<u8>,
    /// The key that made the good signature.
    pub signer: Fingerprint,
    /// The primary key of the certificate holding `signer`.
    pub primary: Fingerprint,
    /// The signature's creation time (unix seconds).
    pub created: u32,
}

/// Packets of one certificate, grouped before validation.
struct Raw {
    offset: usize,
    primary: KeyPacket,
    direct: Vec<Signature>,
    user_ids: Vec<(Vec<u8>, Vec<Signature>)>,
    subkeys: Vec<(KeyPacket, Vec<Signature>)>,
}

/// Which component signatures currently attach to.
enum Slot {
    None,
    Primary,
    UserId,
    Subkey,
    Ignore,
}

impl Keyring {
    /// Reads a keyring: binary (`gpg --export`) or ASCII-armored
    /// (`gpg --export --armor`, possibly several blocks), holding any number
    /// of keys. Unknown packets, algorithms and key versions are skipped
    /// (see [`Keyring::skipped`]); a subkey counts for signing only with a
    /// valid binding signature from its primary key.
    pub fn parse(bytes: &[u8]) -> Result<Self, OpenPgpError> {
        let blocks = if looks_armored(bytes) {
            let text = std::str::from_utf8(bytes).map_err(|e| OpenPgpError::Armor {
                line: 1 + bytes
                    .iter()
                    .take(e.valid_up_to())
                    .filter(|&&b| b == b'\n')
                    .count(),
                detail: "armored keyring is not UTF-8 text".into(),
            })?;
            armor::dearmor_all(text, armor::PUBLIC_KEY_BLOCK, false)?
        } else {
            vec![bytes.to_vec()]
        };
        let mut keyring = Keyring {
            certs: Vec::new(),
            skipped: Vec::new(),
        };
        for block in blocks {
            keyring.add_packets(packet::split(&block)?)?;
        }
        if keyring.certs.is_empty() {
            let detail = match keyring.skipped.first() {
                Some(Skipped::Key { detail, .. }) => format!("first key skipped: {detail}"),
                _ => "no version 4 RSA or Ed25519 key with a valid self-signature".into(),
            };
            return Err(OpenPgpError::NoUsableKey { detail });
        }
        Ok(keyring)
    }

    fn add_packets(&mut self, packets: Vec<Packet>) -> Result<(), OpenPgpError> {
        let mut current: Option<Raw> = None;
        let mut slot = Slot::None;
        for p in packets {
            match p.tag {
                packet::TAG_PUBLIC_KEY => {
                    if let Some(raw) = current.take() {
                        self.finish(raw);
                    }
                    match key::parse(&p.body, p.offset)? {
                        Parsed::Key(k) => {
                            current = Some(Raw {
                                offset: p.offset,
                                primary: k,
                                direct: Vec::new(),
                                user_ids: Vec::new(),
                                subkeys: Vec::new(),
                            });
                            slot = Slot::Primary;
                        }
                        Parsed::Unsupported { detail } => {
                            self.skipped.push(Skipped::Key {
                                offset: p.offset,
                                detail,
                            });
                            slot = Slot::Ignore;
                        }
                    }
                }
                packet::TAG_PUBLIC_SUBKEY if current.is_some() => {
                    match key::parse(&p.body, p.offset)? {
                        Parsed::Key(k) => {
                            if let Some(raw) = current.as_mut() {
                                raw.subkeys.push((k, Vec::new()));
                            }
                            slot = Slot::Subkey;
                        }
                        Parsed::Unsupported { detail } => {
                            self.skipped.push(Skipped::Key {
                                offset: p.offset,
                                detail,
                            });
                            slot = Slot::Ignore;
                        }
                    }
                }
                packet::TAG_USER_ID if current.is_some() => {
                    if let Some(raw) = current.as_mut() {
                        raw.user_ids.push((p.body, Vec::new()));
                    }
                    slot = Slot::UserId;
                }
                // Components of a key that was skipped: part of that skip.
                packet::TAG_PUBLIC_SUBKEY | packet::TAG_USER_ID => slot = Slot::Ignore,
                packet::TAG_USER_ATTRIBUTE => slot = Slot::Ignore,
                packet::TAG_SIGNATURE => {
                    let sig = match signature::parse(&p.body, p.offset) {
                        Ok(sig) => sig,
                        Err(e) => {
                            self.skipped.push(Skipped::Signature {
                                offset: p.offset,
                                detail: e.to_string(),
                            });
                            continue;
                        }
                    };
                    let Some(raw) = current.as_mut() else {
                        continue;
                    };
                    match slot {
                        Slot::Primary => raw.direct.push(sig),
                        Slot::UserId => {
                            if let Some((_, sigs)) = raw.user_ids.last_mut() {
                                sigs.push(sig);
                            }
                        }
                        Slot::Subkey => {
                            if let Some((_, sigs)) = raw.subkeys.last_mut() {
                                sigs.push(sig);
                            }
                        }
                        Slot::None | Slot::Ignore => {}
                    }
                }
                packet::TAG_TRUST => {}
                tag => self.skipped.push(Skipped::Packet {
                    tag,
                    offset: p.offset,
                }),
            }
        }
        if let Some(raw) = current.take() {
            self.finish(raw);
        }
        Ok(())
    }

    /// Validates one certificate's self-signatures and keeps it if its
    /// primary key has at least one.
    fn finish(&mut self, raw: Raw) {
        let pk = &raw.primary;
        let pk_hashed = key::hash_prefix(&pk.body);
        let own = |s: &&Signature| s.names(&pk.fingerprint) && s.unknown_critical.is_none();
        let mut primary = Entry::new(pk.clone());
        let mut valid: Vec<&Signature> = Vec::new();
        for s in raw.direct.iter().filter(own) {
            match s.sig_type {
                signature::TYPE_DIRECT_KEY if s.check(pk, &pk_hashed, Use::Key).is_ok() => {
                    valid.push(s);
                }
                signature::TYPE_KEY_REVOCATION if s.check(pk, &pk_hashed, Use::Key).is_ok() => {
                    primary.revoked = true;
                }
                _ => {}
            }
        }
        for (uid, sigs) in &raw.user_ids {
            let mut data = pk_hashed.clone();
            data.push(0xB4);
            data.extend_from_slice(&u32::try_from(uid.len()).unwrap_or(u32::MAX).to_be_bytes());
            data.extend_from_slice(uid);
            for s in sigs.iter().filter(own) {
                if (0x10..=signature::TYPE_POSITIVE_CERT).contains(&s.sig_type)
                    && s.check(pk, &data, Use::Key).is_ok()
                {
                    valid.push(s);
                }
            }
        }
        primary.apply(&valid);
        if !primary.bound {
            self.skipped.push(Skipped::Key {
                offset: raw.offset,
                detail: format!(
                    "key {} has no self-signature that verifies (RSA keys need 2048 to 8192 bits, \
                     digests SHA1 or stronger)",
                    pk.fingerprint
                ),
            });
            return;
        }
        let mut subkeys = Vec::new();
        for (sub, sigs) in &raw.subkeys {
            let mut data = pk_hashed.clone();
            data.extend_from_slice(&key::hash_prefix(&sub.body));
            let mut entry = Entry::new(sub.clone());
            let mut bindings: Vec<&Signature> = Vec::new();
            for s in sigs.iter().filter(own) {
                match s.sig_type {
                    signature::TYPE_SUBKEY_BINDING if s.check(pk, &data, Use::Key).is_ok() => {
                        bindings.push(s);
                    }
                    signature::TYPE_SUBKEY_REVOCATION if s.check(pk, &data, Use::Key).is_ok() => {
                        entry.revoked = true;
                    }
                    _ => {}
                }
            }
            entry.apply(&bindings);
            subkeys.push(entry);
        }
        self.certs.push(Cert { primary, subkeys });
    }

    /// The primary key fingerprints of the usable certificates, in order.
    pub fn fingerprints(&self) -> Vec<Fingerprint> {
        self.certs
            .iter()
            .map(|c| c.primary.key.fingerprint)
            .collect()
    }

    /// Fingerprints of the keys that may sign data: primary keys and bound
    /// subkeys whose key flags allow signing.
    pub fn signing_fingerprints(&self) -> Vec<Fingerprint> {
        let mut out = Vec::new();
        for c in &self.certs {
            for e in std::iter::once(&c.primary).chain(&c.subkeys) {
                if e.bound && e.flags.is_none_or(|f| f & KEY_FLAG_SIGN != 0) {
                    out.push(e.key.fingerprint);
                }
            }
        }
        out
    }

    /// What was skipped while reading the keyring, and why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Verifies an InRelease (cleartext-signed message) at the current time.
    pub fn verify_cleartext(&self, signed: &[u8]) -> Result<VerifiedText, OpenPgpError> {
        self.verify_cleartext_at(signed, now())
    }

    /// [`Keyring::verify_cleartext`] as of `now` (unix seconds), for
    /// checking expiry at a chosen time.
    pub fn verify_cleartext_at(
        &self,
        signed: &[u8],
        now: u64,
    ) -> Result<VerifiedText, OpenPgpError> {
        let clear = armor::parse_cleartext(signed)?;
        let sigs = signatures(&clear.signature)?;
        let good = self.verify_all(sigs, now, |sig| {
            if sig.sig_type != signature::TYPE_TEXT {
                return Err(OpenPgpError::WrongSignatureType {
                    issuer: sig.issuer_text(),
                    found: sig.sig_type,
                });
            }
            let digest = sig.digest(Use::Data)?;
            if !clear.hashes.is_empty() && !clear.hashes.iter().any(|h| h == digest.name()) {
                return Err(OpenPgpError::HashHeaderMismatch {
                    issuer: sig.issuer_text(),
                    algorithm: digest.name(),
                });
            }
            Ok(clear.signed.clone())
        })?;
        Ok(VerifiedText {
            text: clear.text,
            signer: good.signer,
            primary: good.primary,
            created: good.created,
        })
    }

    /// Verifies a detached signature (a `Release.gpg`, armored or binary)
    /// over `data` at the current time.
    pub fn verify_detached(
        &self,
        data: &[u8],
        signature: &[u8],
    ) -> Result<VerifiedSignature, OpenPgpError> {
        self.verify_detached_at(data, signature, now())
    }

    /// [`Keyring::verify_detached`] as of `now` (unix seconds).
    pub fn verify_detached_at(
        &self,
        data: &[u8],
        signature: &[u8],
        now: u64,
    ) -> Result<VerifiedSignature, OpenPgpError> {
        let binary = if looks_armored(signature) {
            let text = std::str::from_utf8(signature).map_err(|_| OpenPgpError::Armor {
                line: 1,
                detail: "armored signature is not UTF-8 text".into(),
            })?;
            let mut blocks = armor::dearmor_all(text, armor::SIGNATURE, true)?;
            if blocks.len() != 1 {
                return Err(OpenPgpError::Armor {
                    line: 1,
                    detail: format!("{} signature blocks, expected one", blocks.len()),
                });
            }
            blocks.pop().unwrap_or_default()
        } else {
            signature.to_vec()
        };
        let sigs = signatures(&binary)?;
        self.verify_all(sigs, now, |sig| match sig.sig_type {
            signature::TYPE_BINARY => Ok(data.to_vec()),
            signature::TYPE_TEXT => Ok(armor::canonical_text(data)),
            found => Err(OpenPgpError::WrongSignatureType {
                issuer: sig.issuer_text(),
                found,
            }),
        })
    }

    /// gpgv's rule as apt applies it: at least one good signature by a key
    /// in the keyring; a BAD signature by a key in the keyring fails the
    /// whole file ("At least one invalid signature was encountered");
    /// signatures by unknown, expired or revoked keys are ignored when
    /// another one is good.
    fn verify_all(
        &self,
        sigs: Vec<Result<Signature, OpenPgpError>>,
        now: u64,
        data_for: impl Fn(&Signature) -> Result<Vec<u8>, OpenPgpError>,
    ) -> Result<VerifiedSignature, OpenPgpError> {
        let mut good = None;
        let mut errors = Vec::new();
        for sig in sigs {
            match sig.and_then(|sig| self.verify_one(&sig, now, &data_for)) {
                Ok(v) => {
                    if good.is_none() {
                        good = Some(v);
                    }
                }
                Err(e @ OpenPgpError::BadSignature { .. }) => return Err(e),
                Err(e) => errors.push(e),
            }
        }
        if let Some(v) = good {
            return Ok(v);
        }
        let informative = errors
            .iter()
            .position(|e| !matches!(e, OpenPgpError::UnknownKey { .. }))
            .unwrap_or(0);
        if informative < errors.len() {
            return Err(errors.swap_remove(informative));
        }
        Err(OpenPgpError::NoSignature {
            detail: "the signature block is empty".into(),
        })
    }

    fn verify_one(
        &self,
        sig: &Signature,
        now: u64,
        data_for: &impl Fn(&Signature) -> Result<Vec<u8>, OpenPgpError>,
    ) -> Result<VerifiedSignature, OpenPgpError> {
        let data = data_for(sig)?;
        let digest = sig.digest(Use::Data)?;
        if let Some(kind) = sig.unknown_critical {
            return Err(OpenPgpError::UnknownCritical {
                offset: sig.offset,
                kind,
            });
        }
        if !matches!(
            sig.algorithm,
            key::ALGO_RSA | key::ALGO_RSA_SIGN | key::ALGO_EDDSA
        ) {
            return Err(OpenPgpError::UnsupportedAlgorithm {
                issuer: sig.issuer_text(),
                algorithm: sig.algorithm,
            });
        }
        let mut first_err = None;
        for cert in &self.certs {
            for entry in std::iter::once(&cert.primary).chain(&cert.subkeys) {
                if !sig.names(&entry.key.fingerprint) {
                    continue;
                }
                let result = sig
                    .check(&entry.key, &data, Use::Data)
                    .and_then(|()| validity(sig, cert, entry, now))
                    .map(|()| VerifiedSignature {
                        signer: entry.key.fingerprint,
                        primary: cert.primary.key.fingerprint,
                        created: sig.created.unwrap_or(0),
                        digest: digest.name(),
                    });
                match result {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        if first_err.is_none() {
                            first_err = Some(e);
                        }
                    }
                }
            }
        }
        Err(first_err.unwrap_or_else(|| OpenPgpError::UnknownKey {
            issuer: sig.issuer_text(),
        }))
    }
}

/// After the cryptography holds: is the key allowed to have made it, then?
fn validity(sig: &Signature, cert: &Cert, entry: &Entry, now: u64) -> Result<(), OpenPgpError> {
    let fpr = entry.key.fingerprint;
    if !entry.bound {
        return Err(OpenPgpError::UnboundSubkey { key: fpr });
    }
    if entry.revoked || cert.primary.revoked {
        return Err(OpenPgpError::KeyRevoked { key: fpr });
    }
    let created = sig.created.unwrap_or(0);
    if created < entry.key.created {
        return Err(OpenPgpError::BadCreationTime {
            key: fpr,
            created,
            detail: "before the key was created",
        });
    }
    if u64::from(created) > now {
        return Err(OpenPgpError::BadCreationTime {
            key: fpr,
            created,
            detail: "in the future",
        });
    }
    let expiries = [entry.expires_at(), cert.primary.expires_at()];
    if let Some(expired_at) = expiries.into_iter().flatten().filter(|&t| t <= now).min() {
        return Err(OpenPgpError::KeyExpired {
            key: fpr,
            expired_at,
        });
    }
    if entry.flags.is_some_and(|f| f & KEY_FLAG_SIGN == 0) {
        return Err(OpenPgpError::NotSigningKey { key: fpr });
    }
    if let Some(after) = sig.expires_after.filter(|&a| a != 0) {
        let expired_at = u64::from(created) + u64::from(after);
        if expired_at <= now {
            return Err(OpenPgpError::SignatureExpired {
                key: fpr,
                expired_at,
            });
        }
    }
    Ok(())
}

/// The signature packets of a signature block, each parsed on its own (an
/// unreadable one is ignored when another verifies, as gpgv does); marker
/// packets are skipped, anything else is refused (a detached signature
/// holds only signatures).
fn signatures(binary: &[u8]) -> Result<Vec<Result<Signature, OpenPgpError>>, OpenPgpError> {
    let mut out = Vec::new();
    for p in packet::split(binary)? {
        match p.tag {
            packet::TAG_SIGNATURE => out.push(signature::parse(&p.body, p.offset)),
            packet::TAG_MARKER => {}
            tag => {
                return Err(OpenPgpError::Packet {
                    packet: packet::tag_name(tag),
                    offset: p.offset,
                    detail: format!(
                        "a signature block may hold only signature packets, found tag {tag}"
                    ),
                })
            }
        }
    }
    if out.is_empty() {
        return Err(OpenPgpError::NoSignature {
            detail: "the block holds no signature packet".into(),
        });
    }
    Ok(out)
}

/// Binary OpenPGP starts with a packet tag, whose bit 7 is set; text
/// (ASCII armor, with or without something before it) does not.
fn looks_armored(bytes: &[u8]) -> bool {
    bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b < 0x80)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
