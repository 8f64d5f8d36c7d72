//! Shared domain types for egress-conformance.
//!
//! Every crate in the workspace uses these types for the concepts they name, so
//! there is exactly one definition of a digest, an npm integrity, an `Accept`
//! header, an HTTP method, a project name, an npm name, a version, a
//! distribution filename and an evidence record.

// A parser of untrusted bytes: no indexing, string slicing or unwrap that
// could panic; tests may.
#![warn(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::string_slice, clippy::unwrap_used)
)]

pub mod accept;
pub mod base64;
pub mod crate_name;
pub mod digest;
pub mod evidence;
pub mod filename;
pub mod h2;
pub mod hf;
pub mod integrity;
pub mod method;
pub mod name;
mod newtype;
pub mod npm_name;
pub mod report_text;
pub mod smuggling;
pub mod time;
pub mod upstream;
pub mod url;
pub mod version;
pub mod wire;

pub use accept::{Accept, MediaRange};
pub use crate_name::{CrateName, InvalidCrateName};
pub use digest::{GitBlobId, Sha256Digest};
pub use evidence::{
    Afterwards, BodyEnd, Exchange, ListenEnd, Observation, PredicateVerdict, ProbeRecord,
    ResponseRecord, Status, UpstreamRequest, WireBytes,
};
pub use filename::{DistFilename, DistKind};
pub use h2::{H2Conversation, H2Frame, H2Request, H2Stream, H2Via};
pub use hf::{HfCommit, HfRepoId, HfRepoType, InvalidHfRepoId, NotACommit};
pub use integrity::{Integrity, IntegrityError};
pub use method::{is_token, ExtensionMethod, InvalidMethod, Method};
pub use name::ProjectName;
pub use npm_name::NpmName;
pub use time::{InvalidTimestamp, Timestamp};
pub use upstream::{
    HfUpstreamPlan, Upstream, UpstreamError, UpstreamPlan, TEMPLATE_MARKERS, TRIPWIRE_PATH,
};
pub use url::Url;
pub use version::Version;
