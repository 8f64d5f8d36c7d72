//! The in-memory, content-addressed blob store.

use egress_model::Sha256Digest;
use std::collections::HashMap;
use std::sync::Arc;

/// Blobs by their SHA-256.
///
/// Invariant: every stored blob hashes to the digest it is stored under. The
/// map is private and the only way in outside this crate is
/// [`BlobStore::insert`], which computes the digest itself; inside the crate,
/// `insert_hashed` is called only with a digest just computed from the same
/// bytes. So whoever serves a blob from here serves bytes that match its
/// digest, without re-hashing on every request.
#[derive(Debug, Clone, Default)]
pub struct BlobStore {
    blobs: HashMap<Sha256Digest, Arc<[u8]>>,
}

impl BlobStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `bytes` and returns their digest. Storing the same bytes again
    /// is a no-op.
    pub fn insert(&mut self, bytes: Vec<u8>) -> Sha256Digest {
        let digest = Sha256Digest::of(&bytes);
        self.insert_hashed(digest, bytes);
        digest
    }

    /// Only for a `digest` computed from `bytes` by the caller (see the type's
    /// invariant).
    pub(crate) fn insert_hashed(&mut self, digest: Sha256Digest, bytes: Vec<u8>) {
        self.blobs.entry(digest).or_insert_with(|| Arc::from(bytes));
    }

    pub fn get(&self, digest: &Sha256Digest) -> Option<Arc<[u8]>> {
        self.blobs.get(digest).cloned()
    }

    pub fn contains(&self, digest: &Sha256Digest) -> bool {
        self.blobs.contains_key(digest)
    }

    pub fn len(&self) -> usize {
        self.blobs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }

    pub fn digests(&self) -> impl Iterator<Item = &Sha256Digest> {
        self.blobs.keys()
    }
}
