//! PyPI: PEP 440 versions and specifiers, PEP 508 requirements and
//! markers, PEP 425 wheel tags and the targets that select wheels, computed
//! as pip (and the `packaging` library it vendors) computes them.
//!
//! Written from the PEPs and from pip's and `packaging`'s documented and
//! observed behaviour; where their versions differ, the item says which one
//! it follows. Project names: `egress_model::ProjectName` (PEP 503).

mod lexer;
mod marker;
mod platforms;
mod requirement;
mod specifier;
mod tags;
mod target;
mod text;
mod version;

pub use marker::{Environment, Marker, MarkerError};
pub use requirement::{Requirement, RequirementError};
pub use specifier::{Operator, Specifier, SpecifierError, Specifiers};
pub use tags::{parse_tag, wheel_tags, Tag, TagError};
pub use target::{Target, TargetError};
pub use version::{Pep440Version, PreKind, VersionError};
