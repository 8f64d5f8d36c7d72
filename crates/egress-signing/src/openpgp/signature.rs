//! Version 4 signature packets (RFC 4880 section 5.2.3): parsing, the hash
//! they cover, and the RSA / Ed25519 check.

use super::error::OpenPgpError;
use super::fingerprint::Fingerprint;
use super::key::{self, Material, ALGO_EDDSA, ALGO_RSA, ALGO_RSA_SIGN};
use super::packet::{self, Reader};
use ring::digest;

pub(crate) const TYPE_BINARY: u8 = 0x00;
pub(crate) const TYPE_TEXT: u8 = 0x01;
pub(crate) const TYPE_POSITIVE_CERT: u8 = 0x13;
pub(crate) const TYPE_SUBKEY_BINDING: u8 = 0x18;
pub(crate) const TYPE_DIRECT_KEY: u8 = 0x1F;
pub(crate) const TYPE_KEY_REVOCATION: u8 = 0x20;
pub(crate) const TYPE_SUBKEY_REVOCATION: u8 = 0x28;

pub(crate) const HASH_SHA256: u8 = 8;
pub(crate) const HASH_SHA384: u8 = 9;
pub(crate) const HASH_SHA512: u8 = 10;

const SUB_CREATION: u8 = 2;
const SUB_SIG_EXPIRATION: u8 = 3;
const SUB_KEY_EXPIRATION: u8 = 9;
const SUB_PREFERRED_HASH: u8 = 21;
const SUB_ISSUER: u8 = 16;
const SUB_KEY_FLAGS: u8 = 27;
const SUB_ISSUER_FPR: u8 = 33;
/// Subpacket types whose meaning is understood well enough to accept them
/// marked critical: everything RFC 4880 defines that does not restrict
/// where a signature applies in ways this verifier ignores.
const UNDERSTOOD: &[u8] = &[2, 3, 4, 7, 9, 11, 16, 21, 22, 23, 25, 27, 28, 30, 32, 33];

pub(crate) const KEY_FLAG_SIGN: u8 = 0x02;

/// A digest algorithm a signature names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Digest {
    Sha1,
    Sha256,
    Sha384,
    Sha512,
}

impl Digest {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Sha1 => "SHA1",
            Self::Sha256 => "SHA256",
            Self::Sha384 => "SHA384",
            Self::Sha512 => "SHA512",
        }
    }

    fn ring(self) -> &'static digest::Algorithm {
        match self {
            Self::Sha1 => &digest::SHA1_FOR_LEGACY_USE_ONLY,
            Self::Sha256 => &digest::SHA256,
            Self::Sha384 => &digest::SHA384,
            Self::Sha512 => &digest::SHA512,
        }
    }

    fn rsa(self) -> &'static ring::signature::RsaParameters {
        use ring::signature as s;
        match self {
            Self::Sha1 => &s::RSA_PKCS1_2048_8192_SHA1_FOR_LEGACY_USE_ONLY,
            Self::Sha256 => &s::RSA_PKCS1_2048_8192_SHA256,
            Self::Sha384 => &s::RSA_PKCS1_2048_8192_SHA384,
            Self::Sha512 => &s::RSA_PKCS1_2048_8192_SHA512,
        }
    }
}

/// Where a signature's digest is allowed: data signatures refuse SHA-1 as
/// apt does; key self-signatures accept it, as gpg does for old keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    Data,
    Key,
}

/// The signature values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Values {
    Rsa(Vec<u8>),
    EdDsa {
        r: Vec<u8>,
        s: Vec<u8>,
    },
    /// Another public-key algorithm: kept so the packet still parses.
    Other,
}

/// A parsed version 4 signature packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signature {
    pub(crate) offset: usize,
    pub(crate) sig_type: u8,
    pub(crate) algorithm: u8,
    pub(crate) hash: u8,
    /// Version through hashed subpackets: the first part of the trailer.
    pub(crate) hashed: Vec<u8>,
    pub(crate) prefix: [u8; 2],
    pub(crate) values: Values,
    pub(crate) created: Option<u32>,
    pub(crate) expires_after: Option<u32>,
    pub(crate) key_expires_after: Option<u32>,
    pub(crate) key_flags: Option<u8>,
    pub(crate) issuer_fpr: Option<Fingerprint>,
    pub(crate) issuer_id: Option<[u8; 8]>,
    pub(crate) unknown_critical: Option<u8>,
}

impl Signature {
    /// The issuer as text for messages: fingerprint, else key ID.
    pub(crate) fn issuer_text(&self) -> String {
        match (self.issuer_fpr, self.issuer_id) {
            (Some(f), _) => f.to_string(),
            (None, Some(id)) => key::hex_key_id(&id),
            (None, None) => "(no issuer subpacket)".into(),
        }
    }

    /// Whether this signature names `fpr` as its issuer (by fingerprint or
    /// key ID). A signature naming no issuer matches every key.
    pub(crate) fn names(&self, fpr: &Fingerprint) -> bool {
        match (self.issuer_fpr, self.issuer_id) {
            (Some(f), _) => f == *fpr,
            (None, Some(id)) => id == fpr.key_id(),
            (None, None) => true,
        }
    }

    /// The digest algorithm, refused if weak for this use or unknown.
    pub(crate) fn digest(&self, usage: Use) -> Result<Digest, OpenPgpError> {
        let weak = |algorithm| OpenPgpError::WeakDigest {
            issuer: self.issuer_text(),
            algorithm,
        };
        match self.hash {
            1 => Err(weak("MD5")),
            2 if usage == Use::Data => Err(weak("SHA1")),
            2 => Ok(Digest::Sha1),
            3 => Err(weak("RIPEMD160")),
            HASH_SHA256 => Ok(Digest::Sha256),
            HASH_SHA384 => Ok(Digest::Sha384),
            HASH_SHA512 => Ok(Digest::Sha512),
            other => Err(OpenPgpError::UnsupportedDigest {
                issuer: self.issuer_text(),
                algorithm: other,
            }),
        }
    }

    /// The v4 trailer: the hashed part, then 0x04 0xFF and its length.
    fn trailer(&self) -> Vec<u8> {
        let mut out = self.hashed.clone();
        out.extend_from_slice(&[0x04, 0xFF]);
        out.extend_from_slice(
            &u32::try_from(self.hashed.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        out
    }

    /// Checks the signature over `data` (already in the form the signature
    /// type hashes) with `key`. Checks the left 16 bits of the hash first,
    /// then the cryptography.
    pub(crate) fn check(
        &self,
        key: &key::KeyPacket,
        data: &[u8],
        usage: Use,
    ) -> Result<(), OpenPgpError> {
        let digest = self.digest(usage)?;
        let bad = |detail: &str| OpenPgpError::BadSignature {
            key: key.fingerprint,
            detail: detail.to_owned(),
        };
        if self.algorithm != key.algorithm
            && !(matches!(self.algorithm, ALGO_RSA | ALGO_RSA_SIGN)
                && matches!(key.algorithm, ALGO_RSA | ALGO_RSA_SIGN))
        {
            return Err(bad("the signature's algorithm differs from the key's"));
        }
        let mut message = Vec::with_capacity(data.len() + self.hashed.len() + 6);
        message.extend_from_slice(data);
        message.extend_from_slice(&self.trailer());
        let hash = digest::digest(digest.ring(), &message);
        let [p0, p1, ..] = hash.as_ref() else {
            return Err(bad("empty digest"));
        };
        if [*p0, *p1] != self.prefix {
            return Err(bad("the hash prefix does not match (the data differs)"));
        }
        match (&key.material, &self.values) {
            (Material::Rsa { n, e }, Values::Rsa(s)) => {
                let bits = n.len() * 8;
                if !(2048..=8192).contains(&bits) {
                    return Err(bad(&format!(
                        "RSA key of about {bits} bits (2048 to 8192 are verified)"
                    )));
                }
                if s.len() > n.len() {
                    return Err(bad("RSA signature longer than the modulus"));
                }
                let mut padded = vec![0u8; n.len() - s.len()];
                padded.extend_from_slice(s);
                let components = ring::signature::RsaPublicKeyComponents {
                    n: n.as_slice(),
                    e: e.as_slice(),
                };
                components
                    .verify(digest.rsa(), &message, &padded)
                    .map_err(|_| bad("RSA PKCS#1 v1.5 verification failed"))
            }
            (Material::Ed25519(public), Values::EdDsa { r, s }) => {
                if r.len() > 32 || s.len() > 32 {
                    return Err(bad("EdDSA signature value longer than 32 bytes"));
                }
                let mut raw = [0u8; 64];
                let (rr, ss) = raw.split_at_mut(32);
                rr.iter_mut()
                    .skip(32 - r.len())
                    .zip(r)
                    .for_each(|(d, b)| *d = *b);
                ss.iter_mut()
                    .skip(32 - s.len())
                    .zip(s)
                    .for_each(|(d, b)| *d = *b);
                let vk = ed25519_dalek::VerifyingKey::from_bytes(public)
                    .map_err(|_| bad("the Ed25519 public key is not a valid point"))?;
                let sig = ed25519_dalek::Signature::from_bytes(&raw);
                vk.verify_strict(hash.as_ref(), &sig)
                    .map_err(|_| bad("Ed25519 verification failed"))
            }
            _ => Err(bad("the signature values do not fit the key's algorithm")),
        }
    }
}

/// Parses a signature packet body found at `offset`.
pub(crate) fn parse(body: &[u8], offset: usize) -> Result<Signature, OpenPgpError> {
    let mut r = Reader::new(body, "signature", offset);
    let version = r.u8()?;
    if version != 4 {
        return Err(OpenPgpError::UnsupportedSignatureVersion { offset, version });
    }
    let sig_type = r.u8()?;
    let algorithm = r.u8()?;
    let hash = r.u8()?;
    let hashed_len = usize::from(r.u16()?);
    let hashed_area = r.bytes(hashed_len)?;
    let hashed = body.get(..6 + hashed_len).unwrap_or_default().to_vec();
    let unhashed_offset = r.offset();
    let unhashed_len = usize::from(r.u16()?);
    let unhashed_area = r.bytes(unhashed_len)?;
    let prefix = r.array::<2>()?;
    let values = match algorithm {
        ALGO_RSA | ALGO_RSA_SIGN => Values::Rsa(r.mpi(16384)?.to_vec()),
        ALGO_EDDSA => {
            let rv = r.mpi(256)?.to_vec();
            let sv = r.mpi(256)?.to_vec();
            Values::EdDsa { r: rv, s: sv }
        }
        _ => {
            r.rest();
            Values::Other
        }
    };
    if !r.is_empty() {
        return Err(r.error("trailing bytes after the signature values"));
    }
    let mut sig = Signature {
        offset,
        sig_type,
        algorithm,
        hash,
        hashed,
        prefix,
        values,
        created: None,
        expires_after: None,
        key_expires_after: None,
        key_flags: None,
        issuer_fpr: None,
        issuer_id: None,
        unknown_critical: None,
    };
    subpackets(&mut sig, hashed_area, offset + 6, true)?;
    subpackets(&mut sig, unhashed_area, unhashed_offset + 2, false)?;
    if sig.created.is_none() {
        return Err(OpenPgpError::Packet {
            packet: "signature",
            offset,
            detail: "no signature creation time in the hashed subpackets".into(),
        });
    }
    Ok(sig)
}

fn subpackets(
    sig: &mut Signature,
    area: &[u8],
    base: usize,
    hashed: bool,
) -> Result<(), OpenPgpError> {
    let mut r = Reader::new(area, "signature subpacket", base);
    while !r.is_empty() {
        let start = r.offset();
        let first = r.u8()?;
        let len = match first {
            0..=191 => usize::from(first),
            192..=254 => ((usize::from(first) - 192) << 8) + usize::from(r.u8()?) + 192,
            255 => usize::try_from(r.u32()?).unwrap_or(usize::MAX),
        };
        if len == 0 {
            return Err(r.error_at(start, "subpacket of length 0 (no type)"));
        }
        let data = r.bytes(len)?;
        let Some((&kind_byte, value)) = data.split_first() else {
            return Err(r.error_at(start, "empty subpacket"));
        };
        let critical = kind_byte & 0x80 != 0;
        let kind = kind_byte & 0x7f;
        let mut v = Reader::new(value, "signature subpacket", start);
        let exact = |v: &Reader<'_>| {
            if v.is_empty() {
                Ok(())
            } else {
                Err(v.error(format!("subpacket type {kind} has trailing bytes")))
            }
        };
        // Issuer hints count from either area (they only pick the key to
        // try); everything else only from the hashed area.
        match kind {
            SUB_ISSUER => {
                sig.issuer_id = Some(v.array()?);
                exact(&v)?;
            }
            SUB_ISSUER_FPR => {
                let version = v.u8()?;
                if version == 4 {
                    sig.issuer_fpr = Some(Fingerprint(v.array()?));
                    exact(&v)?;
                }
            }
            SUB_CREATION if hashed => {
                sig.created = Some(v.u32()?);
                exact(&v)?;
            }
            SUB_SIG_EXPIRATION if hashed => {
                sig.expires_after = Some(v.u32()?);
                exact(&v)?;
            }
            SUB_KEY_EXPIRATION if hashed => {
                sig.key_expires_after = Some(v.u32()?);
                exact(&v)?;
            }
            SUB_KEY_FLAGS if hashed => {
                sig.key_flags = Some(v.rest().first().copied().unwrap_or(0));
            }
            _ => {}
        }
        if critical && hashed && !UNDERSTOOD.contains(&kind) && sig.unknown_critical.is_none() {
            sig.unknown_critical = Some(kind);
        }
    }
    Ok(())
}

/// Builds a v4 signature packet body over `data` (already in the form the
/// signature type hashes), signed with an Ed25519 key, SHA-512.
pub(crate) fn build_ed25519(
    key: &ed25519_dalek::SigningKey,
    fingerprint: &Fingerprint,
    sig_type: u8,
    created: u32,
    extra_hashed: &[(u8, Vec<u8>)],
    data: &[u8],
) -> Vec<u8> {
    use ed25519_dalek::Signer as _;
    let mut hashed_sub = Vec::new();
    let put = |out: &mut Vec<u8>, kind: u8, value: &[u8]| {
        // Every subpacket we write is shorter than 192 bytes.
        out.push((value.len() + 1) as u8);
        out.push(kind);
        out.extend_from_slice(value);
    };
    let mut fpr = vec![4u8];
    fpr.extend_from_slice(fingerprint.as_bytes());
    put(&mut hashed_sub, SUB_ISSUER_FPR, &fpr);
    put(&mut hashed_sub, SUB_CREATION, &created.to_be_bytes());
    for (kind, value) in extra_hashed {
        put(&mut hashed_sub, *kind, value);
    }
    let mut unhashed_sub = Vec::new();
    put(&mut unhashed_sub, SUB_ISSUER, &fingerprint.key_id());

    let mut body = vec![4, sig_type, ALGO_EDDSA, HASH_SHA512];
    body.extend_from_slice(
        &u16::try_from(hashed_sub.len())
            .unwrap_or(u16::MAX)
            .to_be_bytes(),
    );
    body.extend_from_slice(&hashed_sub);
    let hashed_len = body.len();
    let mut message = data.to_vec();
    message.extend_from_slice(&body);
    message.extend_from_slice(&[0x04, 0xFF]);
    message.extend_from_slice(&u32::try_from(hashed_len).unwrap_or(u32::MAX).to_be_bytes());
    let hash = digest::digest(&digest::SHA512, &message);
    let signature = key.sign(hash.as_ref()).to_bytes();
    let (r, s) = signature.split_at(32);

    body.extend_from_slice(
        &u16::try_from(unhashed_sub.len())
            .unwrap_or(u16::MAX)
            .to_be_bytes(),
    );
    body.extend_from_slice(&unhashed_sub);
    body.extend_from_slice(hash.as_ref().get(..2).unwrap_or_default());
    packet::write_mpi(&mut body, r);
    packet::write_mpi(&mut body, s);
    body
}

/// Subpacket type numbers the signing side writes into self-signatures.
pub(crate) const SUBPACKET_KEY_FLAGS: u8 = SUB_KEY_FLAGS;
pub(crate) const SUBPACKET_PREFERRED_HASH: u8 = SUB_PREFERRED_HASH;
