//! The signing side: an OpenPGP v4 EdDSA key made from the lab's OpenSSH
//! ed25519 seed, its public keyring, and InRelease / Release.gpg signatures.

use super::armor;
use super::fingerprint::Fingerprint;
use super::key;
use super::packet;
use super::signature::{self, HASH_SHA256, HASH_SHA512};
use crate::SigningKey;
use std::fmt;

/// Key flags of the lab key: certify (0x01) and sign (0x02).
const FLAGS_CERTIFY_SIGN: u8 = 0x03;

/// An OpenPGP v4 EdDSA (Ed25519, legacy algorithm 22) signing key sharing
/// its 32-byte seed with the lab's OpenSSH key. The fixed creation time
/// makes the fingerprint and the public keyring deterministic.
#[derive(Clone)]
pub struct OpenPgpKey {
    secret: ed25519_dalek::SigningKey,
    public_body: Vec<u8>,
    fingerprint: Fingerprint,
    user_id: String,
    self_sig: Vec<u8>,
}

impl fmt::Debug for OpenPgpKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenPgpKey")
            .field("fingerprint", &self.fingerprint)
            .field("user_id", &self.user_id)
            .finish_non_exhaustive()
    }
}

impl OpenPgpKey {
    /// The OpenPGP key of `key`'s seed, created at `created` (unix
    /// seconds), with one User ID and a positive self-certification
    /// (creation time, key flags certify+sign, preferred hashes SHA512 and
    /// SHA256, issuer fingerprint; issuer key ID unhashed).
    pub fn from_signing_key(key: &SigningKey, user_id: &str, created: u32) -> Self {
        let secret = key.key.clone();
        let public_body = key::ed25519_body(secret.verifying_key().as_bytes(), created);
        let fingerprint = key::fingerprint_of(&public_body);
        let mut data = key::hash_prefix(&public_body);
        data.push(0xB4);
        data.extend_from_slice(
            &u32::try_from(user_id.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        data.extend_from_slice(user_id.as_bytes());
        let self_sig = signature::build_ed25519(
            &secret,
            &fingerprint,
            signature::TYPE_POSITIVE_CERT,
            created,
            &[
                (signature::SUBPACKET_KEY_FLAGS, vec![FLAGS_CERTIFY_SIGN]),
                (
                    signature::SUBPACKET_PREFERRED_HASH,
                    vec![HASH_SHA512, HASH_SHA256],
                ),
            ],
            &data,
        );
        Self {
            secret,
            public_body,
            fingerprint,
            user_id: user_id.to_owned(),
            self_sig,
        }
    }

    /// The v4 fingerprint (Display: 40 uppercase hexadecimal digits).
    pub fn fingerprint(&self) -> Fingerprint {
        self.fingerprint
    }

    pub fn user_id(&self) -> &str {
        &self.user_id
    }

    /// The binary transferable public key (key, User ID, self-signature),
    /// laid out as `gpg --export` writes it (old-format packet headers, so
    /// the file starts with 0x98 as apt expects of a `.gpg` keyring).
    pub fn public_keyring(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(256);
        packet::write_old(&mut out, packet::TAG_PUBLIC_KEY, &self.public_body);
        packet::write_old(&mut out, packet::TAG_USER_ID, self.user_id.as_bytes());
        packet::write_old(&mut out, packet::TAG_SIGNATURE, &self.self_sig);
        out
    }

    /// [`OpenPgpKey::public_keyring`], ASCII-armored (a `.asc` file).
    pub fn public_keyring_armored(&self) -> String {
        armor::armor(armor::PUBLIC_KEY_BLOCK, &self.public_keyring())
    }

    /// A cleartext-signed message (an InRelease) over `text`: the header,
    /// the dash-escaped text and an armored text signature (type 0x01,
    /// SHA512) made at `created`. A text without a final newline is signed
    /// as if it had one (the format cannot tell them apart).
    pub fn sign_cleartext(&self, text: &str, created: u32) -> String {
        let mut out = armor::cleartext_body(text);
        let signed = armor::cleartext_signed_bytes(text);
        let sig = self.signature_packet(signature::TYPE_TEXT, created, &signed);
        out.push_str(&armor::armor(armor::SIGNATURE, &sig));
        out
    }

    /// An armored detached binary signature (type 0x00, SHA512) over
    /// `data`, made at `created`: a `Release.gpg`.
    pub fn sign_detached(&self, data: &[u8], created: u32) -> String {
        let sig = self.signature_packet(signature::TYPE_BINARY, created, data);
        armor::armor(armor::SIGNATURE, &sig)
    }

    fn signature_packet(&self, sig_type: u8, created: u32, data: &[u8]) -> Vec<u8> {
        let body = signature::build_ed25519(
            &self.secret,
            &self.fingerprint,
            sig_type,
            created,
            &[],
            data,
        );
        let mut out = Vec::with_capacity(body.len() + 3);
        packet::write_old(&mut out, packet::TAG_SIGNATURE, &body);
        out
    }
}
