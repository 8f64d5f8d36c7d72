//! The canaries' optional **universe** content: many versions of a few
//! related packages, with upload times on either side of one cutoff, for
//! the tests of `snapshot build --pypi-universe/--npm-universe
//! --exclude-newer ... --closure` (issue 24).
//!
//! Off by default: a canary started as before ([`crate::Canary::start`],
//! [`crate::npm::canary::NpmCanary::start`]) serves exactly what it always
//! did. Started with a [`Universe`] (`Canary::start_with`,
//! `NpmCanary::start_with`, or `serve_with` for a bound address and a
//! control API) it serves the universe's packages beside its own. What they
//! are is each protocol's table: [`crate::pypi::universe`] (names `eu-*`)
//! and [`crate::npm::universe`] (names `eu-*` and the scope `@eu/`).
//!
//! Every file is built by `egress-artifacts`, the same bytes on every run,
//! and every upload time is written in the table, so that a test can place
//! [`UNIVERSE_CUTOFF`] between them.

/// The cutoff the universe tables are written around (RFC 3339): every
/// upload the tables call "before" is before it, every "after" after it,
/// none at it.
pub const UNIVERSE_CUTOFF: &str = "2025-06-01T00:00:00Z";

/// Which universe a canary serves beside its own content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Universe {
    /// Also serve each protocol's `eu-no-time` (`NO_TIME`), a package
    /// listed without any upload time: for the "upstream lists no upload
    /// times while `--exclude-newer` is given" error. Off by default.
    pub no_time: bool,
}

impl Universe {
    /// The universe with the `eu-no-time` package too.
    pub const fn with_no_time() -> Self {
        Self { no_time: true }
    }
}

/// Unix seconds of a table's RFC 3339 time.
///
/// # Panics
/// If the table holds something else, or a time before 1970 (a mistake in
/// the fixture, caught by the tables' unit tests).
pub(crate) fn unix_secs(rfc3339: &str) -> u64 {
    let t = egress_model::Timestamp::parse(rfc3339).expect("universe times are RFC 3339");
    u64::try_from(t.unix_secs()).expect("universe times are after 1970")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cutoff_reads() {
        assert_eq!(unix_secs(UNIVERSE_CUTOFF), 1_748_736_000);
    }
}
