//! Every protocol's kit, by protocol: one line per protocol (the kits
//! themselves are each protocol's `kit` module, over [`crate::kit`]).

use crate::kit::KitFile;

/// The kit of `protocol`, its tripwire aimed at `canary`: each protocol's
/// `kit::files`.
pub fn files(protocol: egress_suite::Protocol, canary: &str) -> Vec<KitFile> {
    match protocol {
        egress_suite::Protocol::Pypi => crate::pypi::kit::files(canary),
        egress_suite::Protocol::Npm => crate::npm::kit::files(canary),
        egress_suite::Protocol::Apt => crate::apt::kit::files(canary),
        egress_suite::Protocol::Cargo => crate::cargo::kit::files(canary),
        egress_suite::Protocol::Hf => crate::hf::kit::files(canary),
    }
}
