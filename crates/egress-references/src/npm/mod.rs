//! npm: the canary upstream, the caching proxy (B), the built-in pair, and
//! an isolated npm client for the tests.

pub mod builtin;
pub mod canary;
pub mod client;
pub mod kit;
pub mod proxy;
pub mod universe;

use crate::registry::Registration;
use crate::standalone::{control_line, Running};

pub const REGISTRATION: Registration = Registration {
    protocol: egress_suite::Protocol::Npm,
    title: "npm",
    run: builtin::run_npm_both,
    serve: |o| Ok(Box::new(canary::NpmCanary::serve(o)?)),
    kit: kit::files,
    kit_use: |dir| {
        format!(
            "snapshot build ... --npm-registry-url URL --npm-dist {}",
            dir.display()
        )
    },
    tripwire: true,
};

impl Running for canary::NpmCanary {
    fn lines(&self, _keyring: Option<&std::path::Path>) -> Vec<String> {
        vec![
            format!("registry URL: {}", self.registry_url()),
            format!("tarball origin: {}", self.offsite_origin()),
            control_line(&self.base_url()),
        ]
    }

    fn stop(self: Box<Self>) {
        canary::NpmCanary::stop(*self);
    }
}
