//! Snapshots as OCI artifacts (docs/snapshot-format.md, "As an OCI
//! artifact"): `snapshot push` and `snapshot pull` over the OCI
//! distribution API, to any registry. The HTTP client is the suite's
//! ([`egress_transcript`]), as in `snapshot build`; this crate is never in
//! egress-mirror's tree (the mirror has no client: a pull is a step before
//! it starts).
//!
//! - [`reference`]: `HOST[:PORT]/REPO:TAG` or `@sha256:…`, as docker names it;
//! - [`artifact`]: the image manifest, its `artifactType` and media types;
//! - [`auth`]: the Docker config's credential, challenges, bearer tokens;
//! - [`registry`]: one repository, every request authorized;
//! - [`push`] and [`pull`]: the two commands' work.

// Reads what registries send: no indexing or string slicing.
#![warn(clippy::indexing_slicing, clippy::string_slice)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::string_slice))]

pub mod artifact;
pub mod auth;
pub mod cli;
pub mod pull;
pub mod push;
pub mod reference;
pub mod registry;

pub use pull::{pull, Pulled};
pub use push::{push, Pushed, DEFAULT_CHUNK};
pub use reference::Reference;
pub use registry::Connect;

/// Why a push or pull stopped; each is one line, with the exit code's kind.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// A bad reference or flag, or DIR exists.
    #[error("{0}")]
    Usage(String),
    /// A local input is unreadable or wrong (the snapshot to push, the
    /// Docker config, the CA file).
    #[error("{0}")]
    Input(String),
    /// The registry could not be used: unreachable, an error status, a
    /// refused credential, an answer outside the protocol.
    #[error("{0}")]
    Registry(String),
    /// What the registry served does not verify: a blob or manifest whose
    /// digest differs, an artifact that is not a snapshot, a snapshot whose
    /// signature or files do not verify. Nothing was written at DIR.
    #[error("{0}")]
    Unverified(String),
    /// A local file could not be written.
    #[error("{0}")]
    Local(String),
}
