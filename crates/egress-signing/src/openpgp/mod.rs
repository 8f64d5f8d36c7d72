//! OpenPGP as apt uses it: keyrings (`Signed-By`, the Debian archive
//! keyring), cleartext-signed `InRelease` files and detached `Release.gpg`
//! signatures, checked as gpgv checks them; and signing with the lab's
//! ed25519 key so apt accepts the lab's own repositories.
//!
//! Written from RFC 4880 over bytes, like the rest of this crate: every
//! read is bounds-checked ([`packet`]), malformed input is a typed
//! [`OpenPgpError`] naming the packet and offset (or line), never a panic.
//! Supported: version 4 keys and signatures; RSA (PKCS#1 v1.5, through
//! ring) and legacy EdDSA on Ed25519 (algorithm 22); digests SHA256,
//! SHA384 and SHA512 for data signatures (MD5, SHA1 and RIPEMD160 refused,
//! as apt does), SHA1 also accepted in key self-signatures as gpg does.

mod armor;
mod error;
mod fingerprint;
mod key;
mod keyring;
mod packet;
mod sign;
mod signature;

pub use error::OpenPgpError;
pub use fingerprint::Fingerprint;
pub use keyring::{Keyring, Skipped, VerifiedSignature, VerifiedText};
pub use sign::OpenPgpKey;

#[cfg(test)]
mod tests;
