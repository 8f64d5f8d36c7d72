//! The standalone canary of any protocol (`egress-conformance canary`): a
//! canary upstream served until stopped, for a lab to point its mirror's
//! upstream at during a conformance run, its log and mutations behind a
//! secret ([`crate::control`]). Each protocol's canary is [`Running`] in
//! its own folder, and started by its `crate::registry::Registration`
//! (`crate::registry::serve`).

use crate::control::CONTROL_PREFIX;
use std::path::{Path, PathBuf};

/// A running standalone canary.
pub trait Running: Send {
    /// Where a lab points its mirror and `check --canary`, one line each,
    /// in order; `keyring` is the file its [`keyring`](Running::keyring)
    /// was written to, named in an apt canary's lines.
    fn lines(&self, keyring: Option<&Path>) -> Vec<String>;

    /// The public OpenPGP keyring a canary signs with (binary): apt's;
    /// `None` for the others.
    fn keyring(&self) -> Option<Vec<u8>> {
        None
    }

    fn stop(self: Box<Self>);
}

/// The control API's line: `control URL: BASE/_egress-canary/`.
pub fn control_line(base: &str) -> String {
    format!("control URL: {base}{CONTROL_PREFIX}")
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
