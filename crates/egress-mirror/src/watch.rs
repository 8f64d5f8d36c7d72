//! Watching for a swap: the one caller of [`SwappableMirror::swap_to`].
//!
//! The `egress-mirror` binary, once it serves, swaps to the snapshot at
//! SNAPSHOT_DIR again on SIGHUP and, when SNAPSHOT_DIR is a symlink (a
//! `current` link), whenever it resolves to another directory, checked
//! every [`LINK_POLL`]. Nothing a request can do reaches this code. The
//! signer keys every swap is verified against are fixed at start
//! ([`swap_signers`]); the swap itself, its checks and the generations it
//! keeps are [`crate::swap`].

use crate::config::say;
use crate::config::{Failure, EXIT_SNAPSHOT, EXIT_USAGE, MAX_CONFIG_BYTES};
use crate::SwappableMirror;
use egress_signing::AllowedSigners;
use egress_snapshot::StoredSnapshot;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often the `current` symlink the mirror was started on is checked.
const LINK_POLL: Duration = Duration::from_secs(1);

/// The keys a snapshot swapped to must be signed by: those of
/// `--allowed-signers FILE` (which the snapshot served at start must then
/// verify against too), else the allowed_signers shipped in the snapshot
/// served at start; `None` when it ships none (every swap is then refused,
/// with a line saying why).
pub(crate) fn swap_signers(
    file: Option<&Path>,
    store: &StoredSnapshot,
) -> Result<Option<AllowedSigners>, Failure> {
    let Some(path) = file else {
        return Ok(store
            .allowed_signers()
            .and_then(|text| AllowedSigners::parse(text).ok()));
    };
    let bad = |why: String| {
        Failure::new(
            EXIT_USAGE,
            format!("--allowed-signers {}: {why}", path.display()),
        )
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return Err(bad(format!(
            "not a regular file of at most {MAX_CONFIG_BYTES} bytes"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let signers = AllowedSigners::parse(&text)
        .map_err(|e| bad(format!("not an allowed_signers file: {e}")))?;
    if let Err(e) = store.verify_signature(&signers) {
        return Err(Failure::new(
            EXIT_SNAPSHOT,
            format!(
                "snapshot {} is not signed by a key in {}: {e}",
                store.root().display(),
                path.display()
            ),
        ));
    }
    if let Err(e) = egress_snapshot::verify::verify_chain(store, Some(&signers)) {
        return Err(Failure::new(
            EXIT_SNAPSHOT,
            format!(
                "snapshot {} is a layer whose chain does not hold: {e}",
                store.root().display()
            ),
        ));
    }
    Ok(Some(signers))
}

/// The directory holding `dir` when `dir` is a symlink (canonicalised),
/// else `None`.
pub(crate) fn link_directory(dir: &Path) -> Option<PathBuf> {
    let is_link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return None;
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::canonicalize(parent).ok()
}

/// Swaps to the snapshot at `dir` on SIGHUP and, when `dir` is a symlink,
/// whenever it resolves to another directory (checked every [`LINK_POLL`]).
/// One stderr line per attempt: what was swapped, or why not and which
/// snapshot is still served. A target that was refused is not tried again
/// until the link changes once more or a SIGHUP asks.
pub(crate) fn watch_for_swaps(
    mirror: &SwappableMirror,
    dir: &Path,
    opened: PathBuf,
    link: bool,
    mut signals: signal_hook::iterator::Signals,
) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("sighup".into())
        .spawn(move || {
            for _ in signals.forever() {
                if tx.send(()).is_err() {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        say(
            std::io::stderr().lock(),
            &format!("egress-mirror: cannot watch for SIGHUP ({e}); swaps only follow the symlink"),
        );
    }
    let mirror = mirror.clone();
    let dir = dir.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("swap".into())
        .spawn(move || {
            let mut seen = Some(opened);
            loop {
                let reason = match rx.recv_timeout(LINK_POLL) {
                    Ok(()) => "SIGHUP",
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) if link => {
                        let now = std::fs::canonicalize(&dir).ok();
                        if now.is_none() || now == seen {
                            continue;
                        }
                        "the symlink changed"
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) if link => {
                        std::thread::sleep(LINK_POLL);
                        continue;
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                };
                seen = std::fs::canonicalize(&dir).ok();
                let line = match mirror.swap_to(&dir) {
                    Ok(swapped) => format!("egress-mirror: {reason}: {swapped}"),
                    Err(e) => format!(
                        "egress-mirror: {reason}: swap to {} refused: {e}; still serving snapshot {}",
                        dir.display(),
                        mirror.id().to_hex()
                    ),
                };
                say(std::io::stderr().lock(), &one_line(&line));
            }
        });
    if let Err(e) = spawned {
        say(
            std::io::stderr().lock(),
            &format!("egress-mirror: cannot start the swap watcher ({e}); this process will not swap snapshots"),
        );
    }
}

/// `text` on one line: any line break becomes a space.
fn one_line(text: &str) -> String {
    text.replace(['\r', '\n'], " ")
}
