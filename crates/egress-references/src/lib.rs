//! The references the suite is measured against, and the upstreams it
//! controls, all on loopback. The default command of `egress-conformance`
//! runs them ([`builtin`]); the testbed and the tests use them too.
//!
//! Per protocol, in a folder of its own ([`pypi`], [`npm`]; [`apt`] has its
//! canary and an isolated apt-get so far):
//! - the canary upstream, a small registry of that protocol which the suite
//!   controls. It logs every request, can change what it serves during a
//!   run and carries a tripwire that fires if an artifact's build code ever
//!   runs;
//! - reference (B), a conventional pull-through caching proxy built the way
//!   labs deploy them. It is the *non-conformant* reference: it violates
//!   P1-P6 on purpose, so that the suite can show it tells the two apart;
//! - that protocol's built-in pair: reference (A), the reference mirror
//!   serving a signed snapshot of the canary's files, and (B).
//!
//! The PyPI and npm canaries can also serve a [`universe`]: many versions
//! of a few related packages, upload times on either side of a cutoff, for
//! the tests of `snapshot build`'s universe and closure (off by default).
//!
//! Beside them, shared by every protocol: [`hostile`] servers that misbehave
//! at the HTTP or TCP level, for the suite's robustness tests, the relay and
//! template engine both proxies use, and the request log both canaries keep.
//!
//! Every server here binds to 127.0.0.1 only, and every connection one makes
//! on someone's behalf is checked first to go to a loopback address
//! (127.0.0.0/8 or ::1); anything else is answered `502` without connecting.
//! Two exceptions, for the sandbox scan's network-namespace tests: the
//! canary's [`dns`] responder binds where it is told (`canary --dns`), and
//! the [`tunnel`] fixture (a mirror that accepts CONNECT) binds where it is
//! told and connects to loopback or documentation addresses only, which
//! exist only inside namespaces a test made.

pub mod apt;
pub mod builtin;
pub mod canary_cli;
pub mod cargo;
pub mod control;
pub mod dns;
pub mod haproxy;
pub mod hf;
pub mod hostile;
pub mod kit;
pub mod kit_cli;
mod loopback;
pub mod npm;
pub mod pypi;
pub mod registry;
mod relay;
pub mod remote;
mod request_log;
pub mod standalone;
mod template;
pub mod tunnel;
pub mod universe;

pub use hostile::{Hostile, HostileServer};
pub use pypi::canary::Canary;
pub use pypi::proxy::CachingProxy;
pub use relay::{splice, SLOW_FETCH};
pub use template::render_template;
pub use universe::{Universe, UNIVERSE_CUTOFF};

/// Every protocol, in the order the built-in run reports them: the one
/// place a protocol is registered (its folder's `REGISTRATION`).
pub const PROTOCOLS: [registry::Registration; 5] = [
    pypi::REGISTRATION,
    npm::REGISTRATION,
    apt::REGISTRATION,
    cargo::REGISTRATION,
    hf::REGISTRATION,
];
