//! The Hugging Face Hub: the canary upstream the tests and the suite put
//! in front of a Hub mirror, the caching proxy (B), the built-in pair and
//! the conformance kit.

pub mod builtin;
pub mod canary;
pub mod kit;
pub mod proxy;

use crate::registry::Registration;
use crate::standalone::{control_line, Running};

pub const REGISTRATION: Registration = Registration {
    protocol: egress_suite::Protocol::Hf,
    title: "hf",
    run: builtin::run_hf_both,
    serve: |o| Ok(Box::new(canary::HfCanary::serve(o)?)),
    kit: kit::files,
    kit_use: |dir| {
        format!(
            "snapshot build --hf-lock {} --hf-endpoint CANARY",
            dir.join("hf.lock").display()
        )
    },
    // The Hub's code that runs on artifacts is its viewer, whose routes on
    // the canary are the tripwire; nothing in the kit calls out.
    tripwire: false,
};

impl Running for canary::HfCanary {
    fn lines(&self, _keyring: Option<&std::path::Path>) -> Vec<String> {
        vec![
            format!("endpoint (HF_ENDPOINT): {}", self.endpoint()),
            format!("LFS origin: {}", self.cdn_origin()),
            control_line(self.endpoint()),
        ]
    }

    fn stop(self: Box<Self>) {}
}
