//! Real apt-get, isolated, for the tests that drive it: its own
//! configuration, sources, keyrings, state, lists and package cache under
//! one directory, and an empty dpkg status, so that a test never reads nor
//! changes the machine's own apt set-up and never reaches past loopback.
//!
//! How the isolation holds (apt.conf(5)):
//! - `APT_CONFIG` names a private `apt.conf`, read before anything else;
//!   it points `Dir::Etc::Parts` at an empty directory and `Dir::Etc::Main`
//!   at an empty file, so neither `/etc/apt/apt.conf.d/` (whose hooks, index
//!   targets and proxies would otherwise apply) nor `/etc/apt/apt.conf` is
//!   read. Those two can only be set there: the command line is applied
//!   after the configuration files were read.
//! - every `Dir::…` apt reads or writes is under the root, given again on
//!   the command line (`-o`) so that each command shows what it uses;
//! - every proxy variable is removed from the environment and
//!   `Acquire::http::Proxy` is `DIRECT` (apt-transport-http(1): the special
//!   value for "no proxy"), with no proxy auto-detection;
//! - `Debug::NoLocking` keeps apt from taking the system's locks,
//!   `APT::Sandbox::User=root` keeps its download methods from dropping to
//!   `_apt` (which could not read a private root), and the architecture is
//!   fixed to amd64 with no foreign ones.
//!
//! apt verifies signatures itself: its `gpgv` method runs `/usr/bin/gpgv`
//! with the keyring a source's `signed-by` names. That file must be
//! readable and end in `.gpg` (a binary keyring) or `.asc` (armored);
//! [`AptClient::add_keyring`] writes one.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// An isolated apt under one directory; see the module docs.
#[derive(Debug, Clone)]
pub struct AptClient {
    root: PathBuf,
}

/// The private tree, relative to the root.
const ETC: &str = "etc";
const PARTS: &str = "etc/apt.conf.d";
const MAIN: &str = "etc/apt.conf.main";
const CONF: &str = "etc/apt.conf";
const SOURCE_LIST: &str = "etc/sources.list";
const SOURCE_PARTS: &str = "etc/sources.list.d";
const TRUSTED: &str = "etc/trusted.gpg";
const TRUSTED_PARTS: &str = "etc/trusted.gpg.d";
const PREFERENCES: &str = "etc/preferences";
const PREFERENCES_PARTS: &str = "etc/preferences.d";
const NETRC: &str = "etc/auth.conf";
const NETRC_PARTS: &str = "etc/auth.conf.d";
const KEYRINGS: &str = "keyrings";
const STATE: &str = "state";
const STATUS: &str = "state/status";
const CACHE: &str = "cache";
const LOG: &str = "log";

impl AptClient {
    /// Makes the private tree under `root` (which may already exist): an
    /// empty configuration, no sources, no trusted keys, no preferences, an
    /// empty dpkg status, empty lists and an empty package cache.
    pub fn new(root: &Path) -> io::Result<AptClient> {
        let client = AptClient {
            root: root.to_path_buf(),
        };
        for dir in [
            ETC,
            PARTS,
            SOURCE_PARTS,
            TRUSTED_PARTS,
            PREFERENCES_PARTS,
            NETRC_PARTS,
            KEYRINGS,
            STATE,
            "state/lists/partial",
            CACHE,
            "cache/archives/partial",
            LOG,
        ] {
            std::fs::create_dir_all(root.join(dir))?;
        }
        for file in [MAIN, SOURCE_LIST, STATUS, PREFERENCES, NETRC] {
            std::fs::write(root.join(file), "")?;
        }
        std::fs::write(root.join(CONF), client.apt_conf())?;
        Ok(client)
    }

    /// The private `apt.conf` that `APT_CONFIG` names: only what cannot be
    /// set on the command line.
    fn apt_conf(&self) -> String {
        format!(
            "// Written by egress-references' AptClient: an isolated apt.\n\
             Dir::Etc::Parts \"{}\";\nDir::Etc::Main \"{}\";\n",
            self.path(PARTS).display(),
            self.path(MAIN).display(),
        )
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The root the tree is under.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `download` leaves the `.deb`s.
    pub fn archives_dir(&self) -> PathBuf {
        self.path("cache/archives")
    }

    /// Where `update` leaves the indexes (as apt names them, e.g.
    /// `127.0.0.1:PORT_debian_dists_canary_InRelease`).
    pub fn lists_dir(&self) -> PathBuf {
        self.path("state/lists")
    }

    /// Writes `keyring` (a binary OpenPGP keyring) as `<name>.gpg` in the
    /// private tree and returns its path, for a source's `signed-by`.
    pub fn add_keyring(&self, name: &str, keyring: &[u8]) -> io::Result<PathBuf> {
        let path = self.path(KEYRINGS).join(format!("{name}.gpg"));
        std::fs::write(&path, keyring)?;
        Ok(path)
    }

    /// Appends a one-line source (`deb [signed-by=FILE] URL DIST COMPONENT`)
    /// to the private `sources.list`.
    pub fn add_source(&self, line: &str) -> io::Result<()> {
        let path = self.path(SOURCE_LIST);
        let mut text = std::fs::read_to_string(&path)?;
        text.push_str(line.trim_end());
        text.push('\n');
        std::fs::write(path, text)
    }

    /// Replaces every source with none (the lists apt already fetched
    /// stay until the next `update`).
    pub fn clear_sources(&self) -> io::Result<()> {
        std::fs::write(self.path(SOURCE_LIST), "")
    }

    /// The `-o` options every command gets.
    pub fn options(&self) -> Vec<String> {
        let p = |rel: &str| self.path(rel).display().to_string();
        let mut o = vec![
            format!("Dir={}", self.root.display()),
            format!("Dir::State={}", p(STATE)),
            format!("Dir::State::status={}", p(STATUS)),
            format!("Dir::Etc={}", p(ETC)),
            format!("Dir::Etc::SourceList={}", p(SOURCE_LIST)),
            format!("Dir::Etc::SourceParts={}", p(SOURCE_PARTS)),
            format!("Dir::Etc::Trusted={}", p(TRUSTED)),
            format!("Dir::Etc::TrustedParts={}", p(TRUSTED_PARTS)),
            format!("Dir::Etc::Preferences={}", p(PREFERENCES)),
            format!("Dir::Etc::PreferencesParts={}", p(PREFERENCES_PARTS)),
            format!("Dir::Etc::netrc={}", p(NETRC)),
            format!("Dir::Etc::netrcparts={}", p(NETRC_PARTS)),
            format!("Dir::Cache={}", p(CACHE)),
            format!("Dir::Log={}", p(LOG)),
            "Debug::NoLocking=1".into(),
            "APT::Architecture=amd64".into(),
            "APT::Architectures=amd64".into(),
            "APT::Sandbox::User=root".into(),
            "Acquire::Languages=none".into(),
            "Acquire::http::Proxy=DIRECT".into(),
            "Acquire::http::Proxy-Auto-Detect=".into(),
            "Acquire::Retries=0".into(),
        ];
        // Whatever the binaries live under, the methods are the system's.
        o.push("Dir::Bin::Methods=/usr/lib/apt/methods".into());
        o
    }

    /// `apt-get` with the isolation in place; add the subcommand and its
    /// arguments.
    pub fn command(&self) -> Command {
        self.tool("apt-get")
    }

    /// `program` (`apt-get`, `apt-cache`, `apt-config`...) with the
    /// isolation in place.
    pub fn tool(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("APT_CONFIG", self.path(CONF));
        for (key, _) in std::env::vars_os() {
            if is_proxy_variable(&key) {
                cmd.env_remove(&key);
            }
        }
        cmd.env("LC_ALL", "C");
        for o in self.options() {
            cmd.arg("-o").arg(o);
        }
        cmd
    }

    /// `apt-get update`.
    pub fn update(&self) -> io::Result<Output> {
        self.command().arg("update").output()
    }

    /// `apt-get install --print-uris -qq PKG…`: one `'URL' FILE SIZE HASH`
    /// line per package apt would fetch, nothing fetched.
    pub fn print_uris(&self, packages: &[&str]) -> io::Result<Output> {
        self.command()
            .args(["install", "--print-uris", "-qq"])
            .args(packages)
            .output()
    }

    /// `apt-get install --download-only -y PKG…`: the `.deb`s, with their
    /// dependencies, into [`AptClient::archives_dir`]; nothing unpacked.
    pub fn download(&self, packages: &[&str]) -> io::Result<Output> {
        self.command()
            .args(["install", "--download-only", "-y"])
            .args(packages)
            .output()
    }

    /// Removes every `.deb` from the package cache, so that the next
    /// `download` fetches again.
    pub fn clean_archives(&self) -> io::Result<()> {
        for entry in std::fs::read_dir(self.archives_dir())? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "deb") {
                std::fs::remove_file(path)?;
            }
        }
        Ok(())
    }

    /// Whether `apt-get` can be run here.
    pub fn available() -> bool {
        Command::new("apt-get")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }
}

/// `http_proxy`, `HTTPS_PROXY`, `no_proxy`, `all_proxy`, `ftp_proxy`...
fn is_proxy_variable(key: &OsString) -> bool {
    let k = key.to_string_lossy().to_ascii_lowercase();
    k.ends_with("_proxy")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The machine's `/etc/apt/apt.conf.d/` (hooks, index targets, proxies)
    /// is not read, and every directory apt uses is the private one.
    #[test]
    fn the_configuration_is_private() {
        if !AptClient::available() {
            eprintln!("skipping: apt-get is not installed");
            return;
        }
        let root = std::env::temp_dir().join(format!("egress-apt-client-{}", std::process::id()));
        let apt = AptClient::new(&root).unwrap();
        let out = apt.tool("apt-config").arg("dump").output().unwrap();
        let _ = std::fs::remove_dir_all(&root);
        assert!(out.status.success());
        let dump = String::from_utf8_lossy(&out.stdout);
        let root = root.display().to_string();
        for key in [
            "Dir::Etc::parts",
            "Dir::Etc::main",
            "Dir::Etc::sourcelist",
            "Dir::Etc::trustedparts",
            "Dir::State::status",
            "Dir::Cache",
        ] {
            let line = dump
                .lines()
                .find(|l| l.starts_with(&format!("{key} ")))
                .unwrap_or_else(|| panic!("no {key} in {dump}"));
            assert!(line.contains(&root), "{line}");
        }
        for system in ["Post-Invoke", "DEP-11", "Pre-Invoke"] {
            assert!(!dump.contains(system), "{system} in {dump}");
        }
        assert!(dump.contains("Acquire::http::Proxy \"DIRECT\";"), "{dump}");
    }
}
