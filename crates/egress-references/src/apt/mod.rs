//! apt: the canary upstream (a signed Debian repository), an isolated
//! apt-get for the tests, the caching proxy (B) and the built-in run.

pub mod builtin;
pub mod canary;
pub mod client;
pub mod kit;
pub mod proxy;

use crate::registry::Registration;
use crate::standalone::{control_line, Running};

pub const REGISTRATION: Registration = Registration {
    protocol: egress_suite::Protocol::Apt,
    title: "apt",
    run: builtin::run_apt_both,
    serve: |o| Ok(Box::new(canary::AptCanary::serve(o)?)),
    kit: kit::files,
    kit_use: |dir| {
        format!(
            "snapshot build --apt-uris FILE ... --apt-debs {}",
            dir.display()
        )
    },
    tripwire: true,
};

impl Running for canary::AptCanary {
    fn lines(&self, keyring: Option<&std::path::Path>) -> Vec<String> {
        let mut lines = vec![
            format!("archive URL: {}", self.archive_url()),
            format!("dist: {} (component {})", self.dist(), self.component()),
        ];
        if let Some(k) = keyring {
            lines.push(format!("keyring: {}", k.display()));
        }
        lines.push(format!(
            "keyring URL: {}{}",
            self.base_url(),
            canary::KEYRING_PATH
        ));
        lines.push(control_line(&self.base_url()));
        lines
    }

    fn keyring(&self) -> Option<Vec<u8>> {
        Some(canary::AptCanary::keyring(self))
    }

    fn stop(self: Box<Self>) {
        canary::AptCanary::stop(*self);
    }
}
