//! Self-confinement of the mirror process with Landlock (Linux).
//!
//! What is asked of the kernel, best effort:
//! - network (Landlock ABI 4, Linux 6.7): `connect` on TCP is handled and no
//!   port is allowed, so the process can make no outbound TCP connection at
//!   all. `bind` is deliberately not handled: the listener is bound after
//!   confinement;
//! - filesystem (ABI 1, Linux 5.13, and whatever later ABIs add): every
//!   access right is handled, and the only rules grant reading files and
//!   listing directories beneath the read roots: the snapshot directory
//!   and, when the mirror was started on a symlink such as
//!   `/srv/snaps/current`, the directory holding that link (`/srv/snaps`),
//!   where the snapshots it may swap to live (a snapshot elsewhere cannot
//!   be opened, so a swap to it is refused). Nothing can be written,
//!   created, removed or executed anywhere, and nothing outside the read
//!   roots can be opened (files opened before confinement, such as
//!   standard error, stay usable); with `--instance-dir`, a further rule
//!   grants reading files beneath that directory, where the operator
//!   deploys the instance certificate;
//! - scopes (ABI 6): no connecting to abstract UNIX sockets and no signals to
//!   processes outside the sandbox.
//!
//! Invariant: [`confine`] runs on the main thread before any other thread of
//! the process exists (`run::run` calls it before it starts one, and the
//! binary calls `run::run` from `main` before it starts one). Landlock
//! restricts the calling thread and the threads it creates afterwards, so
//! the accept and connection threads started later are all confined. (UDP is not covered by Landlock; the mirror has no
//! code that uses it.)

use std::path::Path;

/// What the kernel enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Confinement {
    /// A one-line description for the startup line.
    pub summary: String,
    /// What `--require-confinement` requires but is not enforced, and why:
    /// `None` exactly when outbound TCP is denied and the filesystem is
    /// read-only beneath the snapshot directory.
    pub missing: Option<String>,
}

/// Confines the calling process; see the module documentation.
#[cfg(target_os = "linux")]
pub(crate) fn confine(read_roots: &[&Path], instance_dir: Option<&Path>) -> Confinement {
    use landlock::{
        Access, AccessFs, AccessNet, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus, Scope, ABI,
    };

    let not_enforced = |why: String| Confinement {
        summary: "NOT confined".to_string(),
        missing: Some(format!(
            "{why}; outbound TCP and filesystem access are NOT restricted"
        )),
    };
    let mut roots = Vec::with_capacity(read_roots.len());
    for root in read_roots {
        match PathFd::new(root) {
            Ok(fd) => roots.push(fd),
            Err(e) => {
                return not_enforced(format!("cannot open {} for Landlock: {e}", root.display()))
            }
        }
    }
    let instance = match instance_dir.map(PathFd::new).transpose() {
        Ok(fd) => fd,
        Err(e) => {
            return not_enforced(format!(
                "cannot open the instance directory for Landlock: {e}"
            ))
        }
    };
    // The newest ABI this crate knows: the kernel enforces the subset it has
    // (best-effort compatibility), and what it has is reported below.
    let wanted = ABI::V10;
    let restricted = Ruleset::default()
        .handle_access(AccessFs::from_all(wanted))
        .and_then(|r| r.handle_access(AccessNet::ConnectTcp))
        .and_then(|r| r.scope(Scope::from_all(wanted)))
        .and_then(|r| r.create())
        .and_then(|r| {
            r.add_rules(
                roots
                    .into_iter()
                    .map(|fd| Ok(PathBeneath::new(fd, AccessFs::ReadFile | AccessFs::ReadDir))),
            )
        })
        .and_then(|r| match instance {
            Some(fd) => r.add_rule(PathBeneath::new(fd, AccessFs::ReadFile)),
            None => Ok(r),
        })
        .and_then(|r| r.restrict_self());
    let status = match restricted {
        Ok(status) => status,
        Err(e) => return not_enforced(format!("Landlock refused the ruleset: {e}")),
    };
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled => {
            return not_enforced(
                "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot parameter)"
                    .into(),
            )
        }
        LandlockStatus::NotImplemented => {
            return not_enforced("this kernel has no Landlock (needs Linux 5.13 or later)".into())
        }
    };
    if status.ruleset == RulesetStatus::NotEnforced {
        return not_enforced(format!("Landlock ABI {} enforced nothing", abi as i32));
    }
    // Every ABI restricts the filesystem as asked (ABI 1 has reading, and
    // every write right but truncation and renames across directories,
    // which ABI 2 and 3 add); TCP needs ABI 4.
    let tcp_denied = abi >= ABI::V4;
    let mut enforced = Vec::new();
    if tcp_denied {
        enforced.push("outbound TCP denied".to_string());
    }
    let beneath: Vec<String> = read_roots
        .iter()
        .map(|root| root.display().to_string())
        .collect();
    enforced.push(format!("read-only beneath {}", beneath.join(" and ")));
    if let Some(dir) = instance_dir {
        enforced.push(format!("certificate read beneath {}", dir.display()));
    }
    let missing = (!tcp_denied).then(|| {
        format!(
            "outbound TCP connections are NOT denied: that needs Landlock ABI 4 (Linux 6.7), this kernel has ABI {}",
            abi as i32
        )
    });
    Confinement {
        summary: format!("landlock ABI {}: {}", abi as i32, enforced.join(", ")),
        missing,
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn confine(_read_roots: &[&Path], _instance_dir: Option<&Path>) -> Confinement {
    Confinement {
        summary: "NOT confined".to_string(),
        missing: Some(
            "Landlock exists only on Linux; outbound TCP and filesystem access are NOT restricted"
                .to_string(),
        ),
    }
}
