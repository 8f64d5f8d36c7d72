//! What the `egress-mirror` binary is asked to do: its usage line and exit
//! codes, the TOML config file (`--config FILE`), and the effective
//! [`Settings`]: flags over the file over the defaults.
//!
//! The binary parses its flags (clap) into a [`CommandLine`]; everything
//! after that is here and in [`crate::run`], where it can be tested.
//! Config keys: `snapshot`, `listen`, `require_confinement`,
//! `log_requests`, `zero_copy_budget`, `max_connections_per_client`,
//! `tls_cert`, `tls_key`, `instance_dir`, the misses log's
//! ([`crate::misses::cli::KEYS`]), the admin listener's
//! ([`crate::admin::cli::KEYS`]) and the trusted proxies'
//! ([`crate::proxy_cli::KEYS`]); relative paths are relative to the file.

use crate::admin::cli as admin_cli;
use crate::misses::cli as misses_cli;
use crate::proxy_cli;
use std::path::{Path, PathBuf};

/// The usage line, said after every usage error.
pub const USAGE: &str = "usage: egress-mirror SNAPSHOT_DIR [--listen ADDR] [--config FILE] [--require-confinement] [--log-requests] [--zero-copy-budget SIZE] [--max-connections-per-client N] [--tls-cert FILE --tls-key FILE] [--instance-dir DIR] [--allowed-signers FILE] [--misses-log FILE [--misses-max-entries N] [--misses-max-per-client N] [--misses-max-line BYTES]] [--admin-listen ADDR [--admin-allow CIDR]...] [--trusted-proxy CIDR... [--require-proxy-header]]   (default ADDR 127.0.0.1:8080, SIZE 0, N 64; SIZE is bytes or a number with KiB, MiB or GiB, 0 keeps zero-copy off; N 0 means no per-client limit)";
/// The listen address when neither a flag nor the file gives one.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// A config file is a handful of keys; anything larger is not one.
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// Exit code: a usage error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code: an invalid snapshot, or not signed by a key of
/// `--allowed-signers`.
pub const EXIT_SNAPSHOT: u8 = 4;
/// Exit code: cannot listen.
pub const EXIT_LISTEN: u8 = 5;
/// Exit code: confinement required but not available.
pub const EXIT_CONFINEMENT: u8 = 6;
/// Exit code: a bad config file.
pub const EXIT_CONFIG: u8 = 7;
/// Exit code: an unusable TLS certificate or key.
pub const EXIT_TLS: u8 = 8;
/// Exit code: instance attestation cannot be set up.
pub const EXIT_INSTANCE: u8 = 9;
/// Exit code: an unusable misses log.
pub const EXIT_MISSES_LOG: u8 = 10;
/// Exit code: an unusable admin listener (`--admin-listen`, `--admin-allow`).
pub const EXIT_ADMIN: u8 = 11;

/// Why the binary ends without serving: its exit code and the one line said
/// on stderr after `egress-mirror: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }
}

/// What the command line gave: `None` (or `false`) for a flag not given.
#[derive(Debug, Clone, Default)]
pub struct CommandLine {
    pub dir: Option<PathBuf>,
    pub listen: Option<String>,
    pub config: Option<PathBuf>,
    pub require_confinement: bool,
    pub log_requests: bool,
    pub zero_copy_budget: Option<u64>,
    pub max_connections_per_client: Option<usize>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub instance_dir: Option<PathBuf>,
    pub allowed_signers: Option<PathBuf>,
    pub misses: misses_cli::MissesFlags,
    pub admin: admin_cli::AdminFlags,
    pub proxy: proxy_cli::ProxyFlags,
}

/// Why a size is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    #[error("{0:?}: the units are KiB, MiB and GiB")]
    Unit(String),
    #[error("{0:?} is not a size such as 1GiB, 512MiB or 0")]
    NotASize(String),
}

/// A size in bytes: digits, optionally followed by `KiB`, `MiB` or `GiB`
/// (no space, e.g. `512MiB`).
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at_checked(i).unwrap_or((text, "")),
        None => (text, ""),
    };
    let shift = match unit {
        "" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return Err(SizeError::Unit(text.to_string())),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| SizeError::NotASize(text.to_string()))
}

/// The config file's settings; every key is optional.
#[derive(Debug, Default, PartialEq)]
pub struct FileConfig {
    pub snapshot: Option<PathBuf>,
    pub listen: Option<String>,
    pub require_confinement: Option<bool>,
    pub log_requests: Option<bool>,
    pub zero_copy_budget: Option<u64>,
    pub max_connections_per_client: Option<usize>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub instance_dir: Option<PathBuf>,
    pub misses: misses_cli::MissesConfig,
    pub admin: admin_cli::AdminConfig,
    pub proxy: proxy_cli::ProxyFileConfig,
}

/// Why a config file cannot be used; shown after "bad config file ".
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is not a regular file of at most {MAX_CONFIG_BYTES} bytes", path.display())]
    NotAFile { path: PathBuf },
    #[error("{}: {source}", path.display())]
    Parse {
        path: PathBuf,
        #[source]
        source: ConfigTextError,
    },
}

/// What is wrong inside a config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigTextError {
    #[error("line {line}: {message}")]
    TomlAt { line: usize, message: String },
    #[error("{0}")]
    Toml(String),
    #[error("{0} must be a string")]
    NotAString(String),
    #[error("{0} must be true or false")]
    NotABool(String),
    #[error("{0} must be a number of bytes or a size such as \"1GiB\"")]
    NotASize(String),
    #[error("{0} must be a whole number (0 = no limit)")]
    NotACount(String),
    #[error("{0} must be {1}")]
    Misses(String, &'static str),
    #[error("unknown key {0:?}; the keys are snapshot, listen, require_confinement, log_requests, zero_copy_budget, max_connections_per_client, tls_cert, tls_key, instance_dir, misses_log, misses_max_entries, misses_max_per_client, misses_max_line, misses_summary_secs, admin_listen, admin_allow, trusted_proxy, require_proxy_header")]
    UnknownKey(String),
}

/// Reads and parses a config file. Unknown keys and wrong types are errors
/// (a misspelt `require_confinement` must not silently mean "no").
pub fn read_config(path: &Path) -> Result<FileConfig, ConfigError> {
    let read = |source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(read)?;
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    let mut config = parse_config(&text).map_err(|source| ConfigError::Parse {
        path: path.to_path_buf(),
        source,
    })?;
    let base = path.parent().unwrap_or(Path::new(""));
    for relative in [
        &mut config.snapshot,
        &mut config.tls_cert,
        &mut config.tls_key,
        &mut config.instance_dir,
    ] {
        if let Some(p) = relative.as_mut().filter(|p| p.is_relative()) {
            *p = base.join(&*p);
        }
    }
    config.misses.relative_to(base);
    Ok(config)
}

/// Parses a config file's text; relative paths are left as they are.
pub fn parse_config(text: &str) -> Result<FileConfig, ConfigTextError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| {
            // Counted in bytes: a span is not trusted to fall on a
            // character boundary, and this must not panic.
            text.bytes().take(s.start).filter(|&b| b == b'\n').count() + 1
        });
        let message = e.message().replace('\n', " ").trim().to_string();
        match line {
            Some(line) => ConfigTextError::TomlAt { line, message },
            None => ConfigTextError::Toml(message),
        }
    })?;
    let mut config = FileConfig::default();
    for (key, value) in &table {
        let string = || {
            value
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| ConfigTextError::NotAString(key.clone()))
        };
        let boolean = || {
            value
                .as_bool()
                .ok_or_else(|| ConfigTextError::NotABool(key.clone()))
        };
        match key.as_str() {
            "snapshot" => config.snapshot = Some(PathBuf::from(string()?)),
            "listen" => config.listen = Some(string()?),
            "require_confinement" => config.require_confinement = Some(boolean()?),
            "log_requests" => config.log_requests = Some(boolean()?),
            "tls_cert" => config.tls_cert = Some(PathBuf::from(string()?)),
            "tls_key" => config.tls_key = Some(PathBuf::from(string()?)),
            "instance_dir" => config.instance_dir = Some(PathBuf::from(string()?)),
            // Bytes as an integer, or a string with a unit ("512MiB").
            "zero_copy_budget" => {
                let bytes = match value {
                    toml::Value::Integer(n) => u64::try_from(*n).ok(),
                    toml::Value::String(s) => parse_size(s).ok(),
                    _ => None,
                };
                config.zero_copy_budget =
                    Some(bytes.ok_or_else(|| ConfigTextError::NotASize(key.clone()))?);
            }
            "max_connections_per_client" => {
                let n = value.as_integer().and_then(|n| usize::try_from(n).ok());
                config.max_connections_per_client =
                    Some(n.ok_or_else(|| ConfigTextError::NotACount(key.clone()))?);
            }
            k if misses_cli::KEYS.contains(&k) => config
                .misses
                .set(k, value)
                .map_err(|want| ConfigTextError::Misses(key.clone(), want))?,
            k if proxy_cli::KEYS.contains(&k) => config
                .proxy
                .set(k, value)
                .map_err(|want| ConfigTextError::Misses(key.clone(), want))?,
            k if admin_cli::KEYS.contains(&k) => config
                .admin
                .set(k, value)
                .map_err(|want| ConfigTextError::Misses(key.clone(), want))?,
            _ => return Err(ConfigTextError::UnknownKey(key.clone())),
        }
    }
    Ok(config)
}

/// Why the command line and the config file together do not say what to
/// serve.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("missing SNAPSHOT_DIR (give it, or `snapshot` in --config)")]
    MissingSnapshot,
    /// A certificate without a key or a key without a certificate; `file`
    /// when the config file gave the one there is.
    #[error("{given} without {missing}: give both for https, or neither")]
    HalfTls {
        given: &'static str,
        missing: &'static str,
        file: Option<PathBuf>,
    },
    #[error("--trusted-proxy: {0}")]
    TrustedProxy(String),
}

impl SettingsError {
    /// The exit code: a config error when the file gave half the pair,
    /// else a usage error.
    pub fn exit_code(&self) -> u8 {
        match self {
            SettingsError::HalfTls { file: Some(_), .. } => EXIT_CONFIG,
            _ => EXIT_USAGE,
        }
    }

    /// The one line said on stderr (after `egress-mirror: `).
    pub fn message(&self) -> String {
        match self {
            SettingsError::HalfTls {
                file: Some(path), ..
            } => format!("bad config file {}: {self}", path.display()),
            _ => format!("{self}; {USAGE}"),
        }
    }
}

/// The effective settings: flags over file over defaults.
#[derive(Debug)]
pub struct Settings {
    pub dir: PathBuf,
    pub listen: String,
    /// The config file `listen` came from, for the exit code and message of
    /// a bad address; `None` when it came from a flag or the default.
    pub listen_from_file: Option<PathBuf>,
    pub require_confinement: bool,
    pub log_requests: bool,
    pub zero_copy_budget: u64,
    pub max_connections_per_client: usize,
    /// The certificate chain and key to serve https with.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub instance_dir: Option<PathBuf>,
    /// `--allowed-signers FILE` (a flag only, no config key).
    pub allowed_signers: Option<PathBuf>,
    pub misses: misses_cli::MissesSettings,
    pub admin: admin_cli::AdminSettings,
    /// The load balancers trusted to send PROXY headers.
    pub proxy: egress_http::ProxyConfig,
}

/// The effective settings of `flags` over `file` (what `flags.config`
/// said, or nothing) over the defaults.
pub fn settings(flags: &CommandLine, file: FileConfig) -> Result<Settings, SettingsError> {
    let dir = flags
        .dir
        .clone()
        .or(file.snapshot)
        .ok_or(SettingsError::MissingSnapshot)?;
    let tls = match (
        flags.tls_cert.clone().or(file.tls_cert),
        flags.tls_key.clone().or(file.tls_key),
    ) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        (cert, _) => {
            let has_cert = cert.is_some();
            let from_flag = if has_cert {
                flags.tls_cert.is_some()
            } else {
                flags.tls_key.is_some()
            };
            let file = flags.config.clone().filter(|_| !from_flag);
            let (given, missing) = match (has_cert, file.is_some()) {
                (true, false) => ("--tls-cert", "--tls-key"),
                (false, false) => ("--tls-key", "--tls-cert"),
                (true, true) => ("tls_cert", "tls_key"),
                (false, true) => ("tls_key", "tls_cert"),
            };
            return Err(SettingsError::HalfTls {
                given,
                missing,
                file,
            });
        }
    };
    let listen_from_file = match (&flags.listen, &file.listen, &flags.config) {
        (None, Some(_), Some(path)) => Some(path.clone()),
        _ => None,
    };
    Ok(Settings {
        dir,
        listen: flags
            .listen
            .clone()
            .or(file.listen)
            .unwrap_or_else(|| DEFAULT_LISTEN.to_string()),
        listen_from_file,
        require_confinement: flags.require_confinement || file.require_confinement == Some(true),
        log_requests: flags.log_requests || file.log_requests == Some(true),
        zero_copy_budget: flags
            .zero_copy_budget
            .or(file.zero_copy_budget)
            .unwrap_or(egress_snapshot::DEFAULT_ZERO_COPY_BUDGET),
        max_connections_per_client: flags
            .max_connections_per_client
            .or(file.max_connections_per_client)
            .unwrap_or(egress_http::DEFAULT_MAX_CONNECTIONS_PER_CLIENT),
        tls,
        instance_dir: flags.instance_dir.clone().or(file.instance_dir),
        allowed_signers: flags.allowed_signers.clone(),
        misses: misses_cli::settings(&flags.misses, file.misses),
        admin: admin_cli::settings(&flags.admin, file.admin),
        proxy: proxy_cli::settings(&flags.proxy, file.proxy)
            .map_err(|e| SettingsError::TrustedProxy(e.to_string()))?,
    })
}

/// Writes one line; a closed stdout or stderr (a reader that went away) is
/// a quiet end of that output, never a panic.
pub(crate) fn say(mut out: impl std::io::Write, line: &str) {
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        for bad in [
            "",
            "1GB",
            "1 GiB",
            "GiB",
            "-1",
            "99999999999999999999",
            "17179869184GiB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn config_keys_and_errors() {
        let c = parse_config(
            "snapshot = \"/srv/snap\"\nlisten = \"0.0.0.0:80\"\nrequire_confinement = true\nlog_requests = false\nzero_copy_budget = \"512MiB\"\n",
        )
        .unwrap();
        assert_eq!(
            c,
            FileConfig {
                snapshot: Some(PathBuf::from("/srv/snap")),
                listen: Some("0.0.0.0:80".into()),
                require_confinement: Some(true),
                log_requests: Some(false),
                zero_copy_budget: Some(512 << 20),
                max_connections_per_client: None,
                tls_cert: None,
                tls_key: None,
                instance_dir: None,
                misses: misses_cli::MissesConfig::default(),
                admin: admin_cli::AdminConfig::default(),
                proxy: proxy_cli::ProxyFileConfig::default(),
            }
        );
        let c = parse_config("tls_cert = \"cert.pem\"\ntls_key = \"/etc/key.pem\"\n").unwrap();
        assert_eq!(c.tls_cert, Some(PathBuf::from("cert.pem")));
        assert_eq!(c.tls_key, Some(PathBuf::from("/etc/key.pem")));
        assert_eq!(
            parse_config("max_connections_per_client = 8\n")
                .unwrap()
                .max_connections_per_client,
            Some(8)
        );
        assert_eq!(
            parse_config("zero_copy_budget = 0\n")
                .unwrap()
                .zero_copy_budget,
            Some(0)
        );
        assert_eq!(parse_config("").unwrap(), FileConfig::default());
        for (bad, want) in [
            ("require_confinment = true\n", "unknown key"),
            ("require_confinement = \"yes\"\n", "true or false"),
            ("listen = 80\n", "must be a string"),
            ("tls_cert = true\n", "must be a string"),
            ("tls-key = \"k\"\n", "unknown key"),
            ("zero_copy_budget = -1\n", "number of bytes"),
            ("zero_copy_budget = \"1 GB\"\n", "number of bytes"),
            ("zero_copy_budget = true\n", "number of bytes"),
            ("max_connections_per_client = -1\n", "whole number"),
            ("max_connections_per_client = \"64\"\n", "whole number"),
            ("listen = \"a\"\nlisten = \"b\"\n", "line 2"),
            (
                "misses_max_entries = -1\n",
                "misses_max_entries must be a whole number",
            ),
            ("misses_log = 7\n", "misses_log must be a string"),
            ("[oops\n", "line 1"),
        ] {
            let e = parse_config(bad).unwrap_err().to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{bad:?}: {e}");
        }
    }
}
