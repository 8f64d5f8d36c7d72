//! Real npm, isolated, for the tests that drive it: one registry, its own
//! cache, no user or global configuration and no proxy variables, so that a
//! test never reads the machine's npm set-up nor reaches past loopback.

use std::path::Path;
use std::process::Command;

/// `npm` run in `dir` against `registry`, with `cache` as its cache (made if
/// missing). Add the subcommand and its arguments; `--registry` and the
/// isolation flags are already there (npm takes options in any order).
pub fn isolated_npm(dir: &Path, cache: &Path, registry: &str) -> std::io::Result<Command> {
    std::fs::create_dir_all(cache)?;
    // npm refuses to load one file as both user and global config.
    let empty_rc = cache.join("empty-globalconfig");
    std::fs::write(&empty_rc, "")?;
    let mut cmd = Command::new("npm");
    cmd.current_dir(dir)
        .args(["--registry", registry])
        .args(["--no-audit", "--no-fund", "--no-update-notifier"])
        .arg("--cache")
        .arg(cache)
        .args(["--userconfig", "/dev/null", "--globalconfig"])
        .arg(&empty_rc);
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy().to_ascii_lowercase();
        if k.starts_with("npm_config_") || k.ends_with("_proxy") {
            cmd.env_remove(&key);
        }
    }
    Ok(cmd)
}
