//! cargo: the canary upstream (a sparse registry of its own fixture
//! crates, or of the crates cargo cached here), the caching proxy (B) and
//! the built-in run of (A) against (B).

pub mod builtin;
pub mod canary;
pub mod kit;
pub mod proxy;

use crate::registry::Registration;
use crate::standalone::{control_line, Running};

pub const REGISTRATION: Registration = Registration {
    protocol: egress_suite::Protocol::Cargo,
    title: "cargo",
    run: builtin::run_cargo_both,
    serve: |o| Ok(Box::new(canary::CargoCanary::serve(o)?)),
    kit: kit::files,
    kit_use: |dir| {
        format!(
            "snapshot build --cargo-lock {} --cargo-index-url CANARY/index/",
            dir.join("Cargo.lock").display()
        )
    },
    // cargo runs no code of a crate it fetches.
    tripwire: false,
};

impl Running for canary::CargoCanary {
    fn lines(&self, _keyring: Option<&std::path::Path>) -> Vec<String> {
        vec![
            format!("index URL: sparse+{}", self.index_url()),
            format!("download origin: {}", self.dl_origin()),
            control_line(self.base_url()),
        ]
    }

    fn stop(self: Box<Self>) {}
}
