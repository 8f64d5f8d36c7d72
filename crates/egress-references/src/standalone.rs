//! The standalone canary of any protocol (`egress-conformance canary`): a
//! canary upstream served until stopped, for a lab to point its mirror's
//! upstream at during a conformance run, its log and mutations behind a
//! secret ([`crate::control`]). The canaries themselves are
//! `crate::{pypi, npm, apt, cargo, hf}::canary`.

use crate::apt::canary::{AptCanary, KEYRING_PATH};
use crate::cargo::canary::CargoCanary;
use crate::control::{ServeOptions, CONTROL_PREFIX};
use crate::hf::canary::HfCanary;
use crate::npm::canary::NpmCanary;
use crate::Canary;
use egress_suite::Protocol;
use std::io;
use std::path::{Path, PathBuf};

/// A running standalone canary.
pub enum Standalone {
    Pypi(Canary),
    Npm(NpmCanary),
    Apt(AptCanary),
    Cargo(CargoCanary),
    Hf(HfCanary),
}

impl Standalone {
    /// Starts the canary of `protocol` with `options`.
    pub fn serve(protocol: Protocol, options: &ServeOptions) -> io::Result<Self> {
        Ok(match protocol {
            Protocol::Pypi => Self::Pypi(Canary::serve(options)?),
            Protocol::Npm => Self::Npm(NpmCanary::serve(options)?),
            Protocol::Apt => Self::Apt(AptCanary::serve(options)?),
            Protocol::Cargo => Self::Cargo(CargoCanary::serve(options)?),
            Protocol::Hf => Self::Hf(HfCanary::serve(options)?),
        })
    }

    /// The public OpenPGP keyring an apt canary signs its `Release` with
    /// (binary); `None` for the other protocols.
    pub fn keyring(&self) -> Option<Vec<u8>> {
        match self {
            Self::Apt(c) => Some(c.keyring()),
            Self::Pypi(_) | Self::Npm(_) | Self::Cargo(_) | Self::Hf(_) => None,
        }
    }

    /// Where a lab points its mirror and `check --canary`, one line each,
    /// in order; `keyring` is the file its [`keyring`](Self::keyring) was
    /// written to, named in an apt canary's lines.
    pub fn lines(&self, keyring: Option<&Path>) -> Vec<String> {
        let control = |base: &str| format!("control URL: {base}{CONTROL_PREFIX}");
        match self {
            Self::Pypi(c) => vec![
                format!("index URL: {}", c.index_url()),
                control(&c.base_url()),
            ],
            Self::Npm(c) => vec![
                format!("registry URL: {}", c.registry_url()),
                format!("tarball origin: {}", c.offsite_origin()),
                control(&c.base_url()),
            ],
            Self::Cargo(c) => vec![
                format!("index URL: sparse+{}", c.index_url()),
                format!("download origin: {}", c.dl_origin()),
                control(c.base_url()),
            ],
            Self::Hf(c) => vec![
                format!("endpoint (HF_ENDPOINT): {}", c.endpoint()),
                format!("LFS origin: {}", c.cdn_origin()),
                control(c.endpoint()),
            ],
            Self::Apt(c) => {
                let mut lines = vec![
                    format!("archive URL: {}", c.archive_url()),
                    format!("dist: {} (component {})", c.dist(), c.component()),
                ];
                if let Some(k) = keyring {
                    lines.push(format!("keyring: {}", k.display()));
                }
                lines.push(format!("keyring URL: {}{KEYRING_PATH}", c.base_url()));
                lines.push(control(&c.base_url()));
                lines
            }
        }
    }

    pub fn stop(self) {
        match self {
            Self::Pypi(c) => c.stop(),
            Self::Npm(c) => c.stop(),
            Self::Apt(c) => c.stop(),
            Self::Cargo(c) => drop(c),
            Self::Hf(c) => drop(c),
        }
    }
}

/// Where `canary --protocol apt` writes its public keyring: beside the
/// secret file, with the extension `.apt-keyring.gpg`
/// (`egress-canary.secret` -> `egress-canary.apt-keyring.gpg`).
pub fn apt_keyring_path(secret_file: &Path) -> PathBuf {
    let beside = secret_file.with_extension("apt-keyring.gpg");
    if beside == secret_file {
        // Never over the secret itself.
        let mut name = secret_file.as_os_str().to_os_string();
        name.push(".apt-keyring.gpg");
        return PathBuf::from(name);
    }
    beside
}
