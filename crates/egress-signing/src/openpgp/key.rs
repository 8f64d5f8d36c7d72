//! Version 4 public key packets (RFC 4880 section 5.5.2) and fingerprints.

use super::error::OpenPgpError;
use super::fingerprint::Fingerprint;
use super::packet::{self, Reader};

pub(crate) const ALGO_RSA: u8 = 1;
pub(crate) const ALGO_RSA_ENCRYPT: u8 = 2;
pub(crate) const ALGO_RSA_SIGN: u8 = 3;
pub(crate) const ALGO_EDDSA: u8 = 22;
/// The curve OID of Ed25519 for legacy EdDSA (1.3.6.1.4.1.11591.15.1).
pub(crate) const OID_ED25519: &[u8] = &[0x2B, 0x06, 0x01, 0x04, 0x01, 0xDA, 0x47, 0x0F, 0x01];
/// RSA moduli beyond this are refused as absurd (ring verifies up to 8192).
const MAX_RSA_BITS: u16 = 16384;

pub(crate) fn hex_key_id(id: &[u8; 8]) -> String {
    id.iter().map(|b| format!("{b:02X}")).collect()
}

/// Public key material this crate can verify with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Material {
    /// RSA modulus and exponent, big-endian without leading zeros.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// A legacy EdDSA key on Ed25519.
    Ed25519([u8; 32]),
}

/// A parsed version 4 public key or subkey packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KeyPacket {
    pub(crate) created: u32,
    pub(crate) algorithm: u8,
    pub(crate) material: Material,
    /// The packet body, as hashed for fingerprints and key signatures.
    pub(crate) body: Vec<u8>,
    pub(crate) fingerprint: Fingerprint,
}

/// What a key packet turned out to be.
pub(crate) enum Parsed {
    Key(KeyPacket),
    /// A key this crate does not verify with (another version, algorithm
    /// or curve): skipped, with the reason.
    Unsupported {
        detail: String,
    },
}

/// Parses the body of a public key or subkey packet found at `offset`.
pub(crate) fn parse(body: &[u8], offset: usize) -> Result<Parsed, OpenPgpError> {
    let mut r = Reader::new(body, "public key", offset);
    if body.len() > usize::from(u16::MAX) {
        return Err(r.error("key packet longer than 65535 bytes"));
    }
    let version = r.u8()?;
    if version != 4 {
        return Ok(Parsed::Unsupported {
            detail: format!("key version {version} (only version 4 is supported)"),
        });
    }
    let created = r.u32()?;
    let algorithm = r.u8()?;
    let material = match algorithm {
        ALGO_RSA | ALGO_RSA_ENCRYPT | ALGO_RSA_SIGN => {
            let n = r.mpi(MAX_RSA_BITS)?.to_vec();
            let e = r.mpi(MAX_RSA_BITS)?.to_vec();
            if n.is_empty() || e.is_empty() {
                return Err(r.error("RSA modulus or exponent is zero"));
            }
            Material::Rsa { n, e }
        }
        ALGO_EDDSA => {
            let oid_len = usize::from(r.u8()?);
            if oid_len == 0 || oid_len == 0xFF {
                return Err(r.error(format!("reserved curve OID length {oid_len}")));
            }
            let oid = r.bytes(oid_len)?;
            if oid != OID_ED25519 {
                return Ok(Parsed::Unsupported {
                    detail: "EdDSA key on a curve other than Ed25519".into(),
                });
            }
            let point = r.mpi(263)?;
            let Some((&0x40, raw)) = point.split_first() else {
                return Err(r.error("Ed25519 point does not start with the 0x40 prefix"));
            };
            let raw: [u8; 32] = raw
                .try_into()
                .map_err(|_| r.error("Ed25519 point is not 32 bytes"))?;
            Material::Ed25519(raw)
        }
        other => {
            return Ok(Parsed::Unsupported {
                detail: format!("public-key algorithm {other}"),
            })
        }
    };
    if !r.is_empty() {
        return Err(r.error("trailing bytes after the key material"));
    }
    Ok(Parsed::Key(KeyPacket {
        created,
        algorithm,
        material,
        body: body.to_vec(),
        fingerprint: fingerprint_of(body),
    }))
}

/// The bytes a key contributes to a signature hash or fingerprint:
/// 0x99, a two-octet length, the packet body.
pub(crate) fn hash_prefix(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 3);
    out.push(0x99);
    out.extend_from_slice(&u16::try_from(body.len()).unwrap_or(u16::MAX).to_be_bytes());
    out.extend_from_slice(body);
    out
}

pub(crate) fn fingerprint_of(body: &[u8]) -> Fingerprint {
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &hash_prefix(body));
    let mut out = [0u8; 20];
    for (slot, b) in out.iter_mut().zip(digest.as_ref()) {
        *slot = *b;
    }
    Fingerprint(out)
}

/// The body of a v4 EdDSA (Ed25519) public key packet.
pub(crate) fn ed25519_body(public: &[u8; 32], created: u32) -> Vec<u8> {
    let mut body = Vec::with_capacity(51);
    body.push(4);
    body.extend_from_slice(&created.to_be_bytes());
    body.push(ALGO_EDDSA);
    body.push(OID_ED25519.len() as u8);
    body.extend_from_slice(OID_ED25519);
    let mut point = Vec::with_capacity(33);
    point.push(0x40);
    point.extend_from_slice(public);
    packet::write_mpi(&mut body, &point);
    body
}
