//! PyPI: the canary upstream, the caching proxy (B), and the built-in pair.

pub mod builtin;
pub mod canary;
pub mod kit;
pub mod proxy;
pub mod universe;

use crate::registry::Registration;
use crate::standalone::{control_line, Running};

pub const REGISTRATION: Registration = Registration {
    protocol: egress_suite::Protocol::Pypi,
    title: "PyPI",
    run: builtin::run_both,
    serve: |o| Ok(Box::new(canary::Canary::serve(o)?)),
    kit: kit::files,
    kit_use: |dir| format!("snapshot build ... --dist {}", dir.display()),
    tripwire: true,
};

impl Running for canary::Canary {
    fn lines(&self, _keyring: Option<&std::path::Path>) -> Vec<String> {
        vec![
            format!("index URL: {}", self.index_url()),
            control_line(&self.base_url()),
        ]
    }

    fn stop(self: Box<Self>) {
        canary::Canary::stop(*self);
    }
}
