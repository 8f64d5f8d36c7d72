//! npm: semver versions and ranges, and the platform fields (`os`, `cpu`,
//! `libc`), computed as npm computes them.
//!
//! Written from node-semver's documentation and behaviour (the `semver`
//! package, 7.8, which npm and `npm-pick-manifest` use) and from
//! `npm-install-checks`' `checkPlatform`. Checked against the real thing:
//! `tests/node_semver.rs` compares every answer with what node-semver
//! 7.8.5 gave for a few thousand random ranges and versions (fixtures in
//! `tests/data/node-semver/`, with the script that wrote them).
//!
//! - [`Semver`]: `new SemVer(text)`, its precedence ([`Semver`]'s `Ord`;
//!   build metadata ignored).
//! - [`Range`]: `new Range(text)` with `||`, hyphen ranges, x-ranges,
//!   `~`, `^` (with its `0.x` rules), comparators and `v`/`=` before a
//!   version; [`Range::satisfies`] with node-semver's pre-release rule and
//!   its `includePrerelease` option; [`max_satisfying`].
//! - [`Platform::accepts`]: a package's `os`, `cpu` and `libc` lists
//!   (with `!x` negations; an empty list accepts all) against a target.
//!
//! Where this module knowingly differs from node-semver:
//!
//! - Only the strict grammar is read. npm itself passes `loose: true` when
//!   it picks a version (`npm-pick-manifest`), which also admits
//!   `1.2.3beta`, leading zeros and comparators it cannot read (dropped);
//!   such ranges are refused here.
//! - Numeric pre-release identifiers beyond 2^53 compare exactly as
//!   integers (node-semver compares them as floating-point numbers).
//! - A range is at most 4096 bytes (node-semver sets no limit).
//! - A package whose `libc` is present but an empty list fails npm's check
//!   off Linux; [`Platform::accepts`] cannot tell an empty list from an
//!   absent one and lets it pass.

mod platform;
mod range;
mod semver;

pub use platform::{check_list, Platform};
pub use range::{max_satisfying, Comparator, Op, Range, RangeError};
pub use semver::{Identifier, Semver, SemverError, MAX_LENGTH, MAX_SAFE_INTEGER};
