//! PyPI: PEP 440 versions and specifiers, PEP 508 requirements and
//! markers, PEP 425 wheel tags and the targets that select wheels, computed
//! as pip (and the `packaging` library it vendors) computes them.
//!
//! Written from the PEPs and from pip's and `packaging`'s behaviour; where
//! their versions differ, the item says which one it follows. Project
//! names: `egress_model::ProjectName` (PEP 503).
//!
//! Checked against the real thing: `tests/pip_tags.rs` compares
//! [`Target::supported_tags`] with what pip 24.2 prints (fixtures in
//! `tests/data/pip-tags/`), and the parsers and comparisons were run against
//! `packaging` 24.1 and 25.0 on random inputs while they were written.
//!
//! Where this module knowingly differs from pip:
//!
//! - `pip download --platform manylinux_2_17_x86_64` accepts no older
//!   manylinux wheel (pip expands only `manylinux2014`/`manylinux2010` and
//!   macOS); [`Target::new`] does the same, and
//!   [`Target::with_platform_expansion`] gives what pip computes on such a
//!   machine instead.
//! - Without ABIs, a non-CPython target gets only `none`: pip adds the ABI
//!   of the interpreter it runs on.
//! - pip 24.3 and later also expand `ios_*` and `android_*` platforms; here
//!   they stand for themselves (as in pip 23 to 24.2).
//! - The pre-release rule of [`Specifiers::contains`] is `packaging` 25's
//!   (pip 25.1 and later): a `<` or `>` naming a pre-release lets
//!   pre-releases in; `packaging` 24 (pip 24) counts only `==`, `>=`, `<=`,
//!   `~=`, `===`.
//! - `~=` with a non-normal spelling (`~=V1.0`, `~=1.0.RC1`) follows PEP
//!   440; `packaging` builds its prefix from the text as written and then
//!   matches nothing.
//! - Markers: a comparison of two variables compares their values
//!   (`packaging` compares the left value with the right variable's
//!   *name*), one of two strings compares them (`packaging` raises), and a
//!   version operator whose left side is not a version falls back to
//!   comparing strings (`packaging` 22 and later raise). Quoted strings are
//!   taken as written (`packaging` evaluates Python escapes in them).
//! - Release, epoch, pre, post and dev numbers above 2^64 - 1 are refused.

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
