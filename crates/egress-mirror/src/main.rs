//! `egress-mirror SNAPSHOT_DIR [--listen ADDR] [--config FILE]
//! [--require-confinement] [--log-requests] [--zero-copy-budget SIZE]
//! [--max-connections-per-client N] [--tls-cert FILE --tls-key FILE]
//! [--instance-dir DIR]`:
//! serves one snapshot directory as a sandbox's only egress, until killed;
//! over https (HTTP/2 and HTTP/1.1 by ALPN) when given a certificate and
//! its key.
//!
//! Start-up, in this order (each step can only narrow what the process can
//! do next):
//! 1. flags, then the TOML config file if `--config` is given (keys
//!    `snapshot`, `listen`, `require_confinement`, `log_requests`,
//!    `zero_copy_budget`, `max_connections_per_client`, `tls_cert`,
//!    `tls_key`; relative paths are relative to the file; flags override
//!    the file);
//! 2. the listen address is resolved (no name lookups after confinement),
//!    and the TLS certificate and key, if any, are read and checked to
//!    belong together (see `egress_mirror::tls`): after confinement they
//!    could not be read;
//! 3. the snapshot is opened with [`StoredSnapshot::open`]: evidence
//!    documents checked, no blob read (blobs are verified as they are
//!    served); with `--instance-dir DIR`, the instance key is made (in
//!    memory only), its public half written to `DIR/instance.pub`, and the
//!    sha256 of `/proc/self/exe` computed; `DIR/instance.cert`, the lab's
//!    certificate of that key, is read whenever it changes (Landlock allows
//!    reading beneath DIR); with `--misses-log FILE` (config keys
//!    `misses_log`, `misses_max_entries`, `misses_max_per_client`,
//!    `misses_max_line`, `misses_summary_secs`), FILE is opened for appending: Landlock allows no
//!    write afterwards, and the open descriptor keeps working (see
//!    `egress_mirror::misses`);
//! 4. the process confines itself with Landlock where the kernel allows
//!    (see `confine.rs`); anything not enforced is said on one stderr line,
//!    and with `--require-confinement` the mirror refuses to start instead;
//! 5. zero-copy serving, when `--zero-copy-budget` turns it on, is probed
//!    from inside the confinement (a sealed memfd sent with `sendfile`; see
//!    [`Mirror::zero_copy_budget`]), and
//!    the soft limit on open files is raised to the hard one, since every
//!    connection and every cached sealed copy holds a descriptor (the
//!    connection limit is that limit minus a reserve for the files being
//!    sent, and minus the sealed copies' cap when zero-copy is on);
//! 6. the listener is bound and one line is printed on stdout: snapshot ID,
//!    blob count, confinement status, zero-copy status and the URL
//!    (`http://` or `https://`); with `--instance-dir`, a second line names
//!    the instance key, the binary's sha256 and how to certify the key;
//! 7. from then on, a watcher thread swaps to the snapshot at SNAPSHOT_DIR
//!    again on SIGHUP and, when SNAPSHOT_DIR is a symlink, whenever it
//!    resolves to another directory (checked every second): verified
//!    first, by the start-up checks and against the signer keys fixed at
//!    start (`--allowed-signers FILE`, else the snapshot's own
//!    allowed_signers); refused with one stderr line otherwise, the old
//!    snapshot still serving (see `egress_mirror::SwappableMirror`).
//!    Started on a symlink, Landlock also allows reading beneath the
//!    directory that holds it.
//!
//! Exit codes: 0 help, 2 usage, 4 invalid snapshot (or not signed by a key
//! of `--allowed-signers`), 5 cannot listen,
//! 6 confinement required but not available, 7 bad config file,
//! 8 unusable TLS certificate or key, 9 instance attestation cannot be set
//! up, 10 unusable misses log (cannot be opened for appending, not a
//! regular file, or `--misses-max-line` outside 256..=4096). Every error is one line on stderr; nothing panics.

mod confine;
mod misses_cli;

use clap::builder::NonEmptyStringValueParser;
use clap::{CommandFactory, Parser};
use egress_mirror::{Mirror, SwappableMirror};
use egress_signing::AllowedSigners;
use egress_snapshot::StoredSnapshot;
use std::io::Write;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

const USAGE: &str = "usage: egress-mirror SNAPSHOT_DIR [--listen ADDR] [--config FILE] [--require-confinement] [--log-requests] [--zero-copy-budget SIZE] [--max-connections-per-client N] [--tls-cert FILE --tls-key FILE] [--instance-dir DIR] [--allowed-signers FILE] [--misses-log FILE [--misses-max-entries N] [--misses-max-per-client N] [--misses-max-line BYTES]]   (default ADDR 127.0.0.1:8080, SIZE 0, N 64; SIZE is bytes or a number with KiB, MiB or GiB, 0 keeps zero-copy off; N 0 means no per-client limit)";
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// A config file is a handful of keys; anything larger is not one.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

const EXIT_USAGE: u8 = 2;
const EXIT_SNAPSHOT: u8 = 4;
const EXIT_LISTEN: u8 = 5;
const EXIT_CONFINEMENT: u8 = 6;
const EXIT_CONFIG: u8 = 7;
const EXIT_TLS: u8 = 8;
const EXIT_INSTANCE: u8 = 9;
const EXIT_MISSES_LOG: u8 = 10;
/// In `--instance-dir`: the instance's public key, written at start.
const INSTANCE_PUB: &str = "instance.pub";
/// In `--instance-dir`: the lab's certificate of that key, deployed by the
/// operator and read whenever it changes.
const INSTANCE_CERT: &str = "instance.cert";

/// Writes one line; a closed stdout or stderr (a reader that went away) is
/// a quiet end of that output, never a panic.
fn say(mut out: impl Write, line: &str) {
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// One line on stdout, through the one standard-output path.
fn say_out(line: &str) {
    egress_cli::outln!("{line}");
}

fn fail(code: u8, message: &str) -> ExitCode {
    say(
        std::io::stderr().lock(),
        &format!("egress-mirror: {message}"),
    );
    ExitCode::from(code)
}

/// Command-line flags. The `self_test_*` ones are hidden: they run after
/// confinement, report on stdout and exit, so tests can observe from outside
/// what the confined process can and cannot do.
#[derive(Debug, Default, Parser)]
#[command(
    name = "egress-mirror",
    about = "Serves one verified snapshot directory, byte for byte, as a sandbox's only package egress, until killed.",
    override_usage = "egress-mirror SNAPSHOT_DIR [--listen ADDR] [--config FILE] [--require-confinement] [--log-requests] [--zero-copy-budget SIZE] [--max-connections-per-client N] [--tls-cert FILE --tls-key FILE] [--instance-dir DIR] [--allowed-signers FILE] [--misses-log FILE [--misses-max-entries N] [--misses-max-per-client N] [--misses-max-line BYTES]]",
    after_help = "Exit codes: 0 help, 2 usage, 4 invalid snapshot, 5 cannot listen, 6 confinement required but not available, 7 bad config file, 8 unusable TLS certificate or key, 9 instance attestation cannot be set up, 10 unusable misses log."
)]
struct Flags {
    /// The snapshot directory to serve (or `snapshot` in --config).
    #[arg(value_name = "SNAPSHOT_DIR")]
    dir: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, value_name = "ADDR", allow_hyphen_values = true, value_parser = NonEmptyStringValueParser::new())]
    listen: Option<String>,
    /// TOML file with the keys snapshot, listen, require_confinement,
    /// log_requests, zero_copy_budget, max_connections_per_client,
    /// tls_cert and tls_key; flags override it.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    config: Option<PathBuf>,
    /// Refuse to start unless the process could confine itself fully.
    #[arg(long)]
    require_confinement: bool,
    /// Log every request on stderr.
    #[arg(long)]
    log_requests: bool,
    /// Opt-in zero-copy: memory for sealed copies of large blobs served with
    /// sendfile (less server CPU per byte, more memory): bytes, or a number
    /// with KiB, MiB or GiB, e.g. 1GiB [default: 0, large blobs are copied
    /// in chunks from their verified files].
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true, value_parser = parse_size)]
    zero_copy_budget: Option<u64>,
    /// Connections served at once to one client IP address; more get 503
    /// and are closed. 0 means no per-client limit [default: 64].
    #[arg(long, value_name = "N")]
    max_connections_per_client: Option<usize>,
    /// Serve https with this PEM certificate chain (the server's
    /// certificate first); needs --tls-key. HTTP/2 and HTTP/1.1 are offered
    /// by ALPN.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    tls_key: Option<PathBuf>,
    /// Answer attestation nonces with a key made at start: its public key
    /// is written to DIR/instance.pub, the lab's certificate is read from
    /// DIR/instance.cert whenever it changes.
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    instance_dir: Option<PathBuf>,
    /// The OpenSSH allowed_signers file whose keys must have signed the
    /// snapshot served at start and every snapshot swapped to (on SIGHUP,
    /// or when the SNAPSHOT_DIR symlink is re-pointed) [default: the
    /// allowed_signers shipped in the snapshot served at start].
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    allowed_signers: Option<PathBuf>,
    #[command(flatten)]
    misses: misses_cli::MissesFlags,
    #[arg(long, value_name = "ADDR", hide = true)]
    self_test_connect: Vec<String>,
    #[arg(long, value_name = "PATH", hide = true)]
    self_test_read: Vec<PathBuf>,
}

/// Why a size is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SizeError {
    #[error("{0:?}: the units are KiB, MiB and GiB")]
    Unit(String),
    #[error("{0:?} is not a size such as 1GiB, 512MiB or 0")]
    NotASize(String),
}

/// A size in bytes: digits, optionally followed by `KiB`, `MiB` or `GiB`
/// (no space, e.g. `512MiB`).
fn parse_size(text: &str) -> Result<u64, SizeError> {
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
struct FileConfig {
    snapshot: Option<PathBuf>,
    listen: Option<String>,
    require_confinement: Option<bool>,
    log_requests: Option<bool>,
    zero_copy_budget: Option<u64>,
    max_connections_per_client: Option<usize>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    instance_dir: Option<PathBuf>,
    misses: misses_cli::MissesConfig,
}

/// Why a config file cannot be used; shown after "bad config file ".
#[derive(Debug, thiserror::Error)]
enum ConfigError {
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
enum ConfigTextError {
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
    #[error("unknown key {0:?}; the keys are snapshot, listen, require_confinement, log_requests, zero_copy_budget, max_connections_per_client, tls_cert, tls_key, instance_dir, misses_log, misses_max_entries, misses_max_per_client, misses_max_line, misses_summary_secs")]
    UnknownKey(String),
}

/// Reads and parses a config file. Unknown keys and wrong types are errors
/// (a misspelt `require_confinement` must not silently mean "no").
fn read_config(path: &Path) -> Result<FileConfig, ConfigError> {
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

fn parse_config(text: &str) -> Result<FileConfig, ConfigTextError> {
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
            _ => return Err(ConfigTextError::UnknownKey(key.clone())),
        }
    }
    Ok(config)
}

/// Why the command line and the config file together do not say what to
/// serve.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum SettingsError {
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
}

impl SettingsError {
    fn exit_code(&self) -> u8 {
        match self {
            SettingsError::HalfTls { file: Some(_), .. } => EXIT_CONFIG,
            _ => EXIT_USAGE,
        }
    }

    fn message(&self) -> String {
        match self {
            SettingsError::HalfTls {
                file: Some(path), ..
            } => format!("bad config file {}: {self}", path.display()),
            _ => format!("{self}; {USAGE}"),
        }
    }
}

/// The effective settings: flags over file over defaults.
struct Settings {
    dir: PathBuf,
    listen: String,
    /// The config file `listen` came from, for the exit code and message of
    /// a bad address; `None` when it came from a flag or the default.
    listen_from_file: Option<PathBuf>,
    require_confinement: bool,
    log_requests: bool,
    zero_copy_budget: u64,
    max_connections_per_client: usize,
    /// The certificate chain and key to serve https with.
    tls: Option<(PathBuf, PathBuf)>,
    instance_dir: Option<PathBuf>,
    misses: misses_cli::MissesSettings,
}

fn settings(flags: &Flags, file: FileConfig) -> Result<Settings, SettingsError> {
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
        misses: misses_cli::settings(&flags.misses, file.misses),
    })
}

fn main() -> ExitCode {
    let mut instance_line = None;
    let flags = match egress_cli::parse::<Flags>("egress-mirror", std::env::args().skip(1)) {
        Ok(Some(flags)) => flags,
        Ok(None) => {
            let help = Flags::command().render_long_help().to_string();
            say_out(help.trim_end());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            return fail(
                EXIT_USAGE,
                &format!("{}; {USAGE}", egress_cli::usage_line(&e)),
            )
        }
    };
    let file = match &flags.config {
        Some(path) => match read_config(path) {
            Ok(c) => c,
            Err(e) => return fail(EXIT_CONFIG, &format!("bad config file {e}")),
        },
        None => FileConfig::default(),
    };
    let s = match settings(&flags, file) {
        Ok(s) => s,
        Err(e) => return fail(e.exit_code(), &e.message()),
    };

    // Resolved now: after confinement no file (such as /etc/hosts) can be
    // read to look a name up.
    let addrs: Vec<SocketAddr> = match s.listen.to_socket_addrs() {
        Ok(a) if a.len() > 0 => a.collect(),
        _ => {
            let (code, source) = match &s.listen_from_file {
                Some(path) => (
                    EXIT_CONFIG,
                    format!("bad config file {}: listen", path.display()),
                ),
                None => (EXIT_USAGE, "--listen".to_string()),
            };
            return fail(
                code,
                &format!(
                    "{source} {:?} is not an address to listen on (e.g. 127.0.0.1:8080)",
                    s.listen
                ),
            );
        }
    };

    // Read now: after confinement only the snapshot can be read.
    let tls = match &s.tls {
        Some((cert, key)) => match egress_mirror::tls::load(cert, key) {
            Ok(config) => Some(config),
            Err(e) => return fail(EXIT_TLS, &format!("unusable TLS certificate or key: {e}")),
        },
        None => None,
    };

    let store = match StoredSnapshot::open(&s.dir) {
        Ok(store) => store,
        Err(e) => {
            return fail(
                EXIT_SNAPSHOT,
                &format!("snapshot {} is invalid: {e}", s.dir.display()),
            )
        }
    };

    // Read now, as the TLS files are: the keys every snapshot swapped to
    // must be signed by, fixed for the life of the process.
    let signers = match swap_signers(flags.allowed_signers.as_deref(), &store) {
        Ok(signers) => signers,
        Err((code, message)) => return fail(code, &message),
    };
    // Started on a symlink (`current -> v2`): it is watched, and the
    // directory holding it is where the snapshots swapped to live.
    let link_dir = link_directory(&s.dir);

    // Before confinement: the public key is written, the binary read.
    let instance = match &s.instance_dir {
        Some(dir) => match start_instance(dir, &store.id()) {
            Ok(instance) => Some(instance),
            Err(e) => {
                return fail(
                    EXIT_INSTANCE,
                    &format!("--instance-dir {}: {e}", dir.display()),
                )
            }
        },
        None => None,
    };

    // Opened before confinement, which allows no write anywhere; the open
    // descriptor keeps working inside it.
    let misses_log = match misses_cli::open(&s.misses) {
        Ok(log) => log,
        Err(e) => return fail(EXIT_MISSES_LOG, &format!("--misses-log: {e}")),
    };

    // Invariant: no thread has been spawned yet (see confine.rs).
    // The snapshot's directory (a layer holds its whole chain: its
    // parents' files are hard-linked into it, their evidence is its own
    // blobs), and the directory holding the `current` link, if started on
    // one.
    let mut read_roots: Vec<&Path> = vec![store.root()];
    read_roots.extend(link_dir.as_deref());
    let confinement = confine::confine(&read_roots, s.instance_dir.as_deref());
    if let Some(missing) = &confinement.missing {
        if s.require_confinement {
            return fail(
                EXIT_CONFINEMENT,
                &format!("--require-confinement: {missing}; refusing to start"),
            );
        }
        say(
            std::io::stderr().lock(),
            &format!("egress-mirror: confinement incomplete: {missing}"),
        );
    }

    if !flags.self_test_connect.is_empty() || !flags.self_test_read.is_empty() {
        return self_test(&flags, &confinement.summary);
    }

    // Registered before the listener exists: from the startup line on, a
    // SIGHUP asks for a swap and never ends the process.
    let signals = match signal_hook::iterator::Signals::new([signal_hook::consts::SIGHUP]) {
        Ok(signals) => signals,
        Err(e) => return fail(EXIT_LISTEN, &format!("cannot handle SIGHUP: {e}")),
    };

    // The misses log's writer is a thread: started inside the confinement.
    let misses = match misses_log {
        Some(log) => {
            let path = log.path().to_path_buf();
            let stderr: egress_mirror::LogSink =
                Arc::new(|line: &str| say(std::io::stderr().lock(), line));
            match log.start(store.id(), s.misses.limits, stderr) {
                Ok((recorder, _writer)) => Some(recorder),
                Err(e) => {
                    return fail(
                        EXIT_MISSES_LOG,
                        &format!("--misses-log {}: {e}", path.display()),
                    )
                }
            }
        }
        None => None,
    };

    let blobs = store.blob_count();
    let id = store.id();
    // What SNAPSHOT_DIR resolved to when it was opened: a link re-pointed
    // from then on, even before the watcher runs, is a change.
    let opened = store.root().to_path_buf();
    let mut mirror = Mirror::from_store(Arc::new(store))
        .log_requests(s.log_requests)
        .zero_copy_budget(s.zero_copy_budget);
    if let Some(recorder) = &misses {
        mirror = mirror.record_misses(recorder.clone());
    }
    // Before the limits are made: the connection limit follows it.
    raise_open_file_limit();
    let mut shared_attestor = None;
    if let (Some((key, binary, pub_path)), Some(dir)) = (instance, &s.instance_dir) {
        let attestor = egress_mirror::Attestor::new(key, binary, confinement.summary.clone())
            .certificate_file(dir.join(INSTANCE_CERT));
        instance_line = Some(format!(
            "egress-mirror: instance key {} written to {}; binary sha256 {}; {}; certify it with `egress-conformance instance certify --key LAB_KEY --instance-key {} --snapshot {} --out {}`",
            attestor.public().fingerprint(),
            pub_path.display(),
            attestor.binary().to_hex(),
            attestor.certificate_status(&id),
            pub_path.display(),
            s.dir.display(),
            dir.join(INSTANCE_CERT).display(),
        ));
        let attestor = Arc::new(attestor);
        shared_attestor = Some(Arc::clone(&attestor));
        mirror = mirror.attest_shared(attestor);
    }
    let zero_copy = if mirror.zero_copy() {
        // A TLS record cannot be written with sendfile: over https the
        // sealed copies (whose bytes still cannot change) are copied.
        let how = if tls.is_some() {
            "copied through TLS"
        } else {
            "sent with sendfile"
        };
        format!(
            "sealed copies {how}, budget {} MiB",
            s.zero_copy_budget >> 20
        )
    } else {
        "off (large blobs copied in chunks from their verified files)".to_string()
    };
    let paths = mirror.path_count();
    let limits = egress_http::Limits {
        max_connections_per_client: s.max_connections_per_client,
        max_connections: max_connections(mirror.zero_copy()),
        ..egress_http::Limits::default()
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    // Every generation after the first is made the same way.
    let log_requests = s.log_requests;
    let make: Box<egress_mirror::MakeMirror> = Box::new(move |store| {
        let mut next = Mirror::from_store(store).log_requests(log_requests);
        if let Some(recorder) = &misses {
            next = next.record_misses(recorder.clone());
        }
        match &shared_attestor {
            Some(attestor) => next.attest_shared(Arc::clone(attestor)),
            None => next,
        }
    });
    let budget = if mirror.zero_copy() {
        s.zero_copy_budget
    } else {
        0
    };
    let mirror = SwappableMirror::new(mirror, make, budget, signers);
    let server = match egress_mirror::serve_swappable_over(mirror.clone(), &addrs[..], limits, tls)
    {
        Ok(server) => server,
        Err(e) => {
            return fail(
                EXIT_LISTEN,
                &format!(
                    "cannot listen on {}: {e}; choose another --listen address",
                    s.listen
                ),
            )
        }
    };
    say_out(
        &format!(
            "egress-mirror: serving snapshot {} ({blobs} blobs, {paths} paths; confinement: {}; zero-copy: {zero_copy}) at {scheme}://{}/",
            id.to_hex(),
            confinement.summary,
            server.base_url().trim_start_matches("http://")
        ),
    );
    if let Some(line) = instance_line {
        say_out(&line);
    }
    // The server runs on its own threads until the process is killed; this
    // one swaps snapshots when asked (nothing a request can do).
    watch_for_swaps(&mirror, &s.dir, opened, link_dir.is_some(), signals);
    loop {
        std::thread::park();
    }
}

/// How often the `current` symlink the mirror was started on is checked.
const LINK_POLL: Duration = Duration::from_secs(1);

/// The keys a snapshot swapped to must be signed by: those of
/// `--allowed-signers FILE` (which the snapshot served at start must then
/// verify against too), else the allowed_signers shipped in the snapshot
/// served at start; `None` when it ships none (every swap is then refused,
/// with a line saying why). An error is the exit code and message.
fn swap_signers(
    file: Option<&Path>,
    store: &StoredSnapshot,
) -> Result<Option<AllowedSigners>, (u8, String)> {
    let Some(path) = file else {
        return Ok(store
            .allowed_signers()
            .and_then(|text| AllowedSigners::parse(text).ok()));
    };
    let bad = |why: String| {
        (
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
        return Err((
            EXIT_SNAPSHOT,
            format!(
                "snapshot {} is not signed by a key in {}: {e}",
                store.root().display(),
                path.display()
            ),
        ));
    }
    if let Err(e) = egress_snapshot::verify::verify_chain(store, Some(&signers)) {
        return Err((
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
fn link_directory(dir: &Path) -> Option<PathBuf> {
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
fn watch_for_swaps(
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

/// Why attestation cannot be set up.
#[derive(Debug, thiserror::Error)]
enum InstanceError {
    #[error("{0}")]
    Key(#[from] egress_signing::SigningError),
    #[error("cannot write {}: {source}; give a directory the mirror may write to", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read this program's own executable to hash it: {0}")]
    Binary(#[source] std::io::Error),
}

/// Makes the instance key, writes its public half to `dir/instance.pub`
/// (atomically: a temporary file renamed over it) and hashes the running
/// executable. The private half never leaves memory.
fn start_instance(
    dir: &Path,
    snapshot: &egress_model::Sha256Digest,
) -> Result<
    (
        egress_signing::InstanceKey,
        egress_model::Sha256Digest,
        PathBuf,
    ),
    InstanceError,
> {
    let key = egress_signing::InstanceKey::generate()?;
    let path = dir.join(INSTANCE_PUB);
    let line = format!(
        "{}\n",
        key.public().to_openssh(&format!(
            "egress-mirror instance of snapshot {}",
            snapshot.to_hex()
        ))
    );
    let tmp = dir.join(format!(".{INSTANCE_PUB}.{}", std::process::id()));
    std::fs::write(&tmp, line.as_bytes())
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|source| {
            let _ = std::fs::remove_file(&tmp);
            InstanceError::Write {
                path: path.clone(),
                source,
            }
        })?;
    let binary = egress_mirror::own_binary_sha256().map_err(InstanceError::Binary)?;
    Ok((key, binary, path))
}

/// Raises the soft limit on open files to the hard limit (at most 65,536):
/// every connection holds a descriptor, and another while it sends a file,
/// and every cached sealed copy holds one (at most
/// [`egress_snapshot::MAX_SEALED_COPIES`]). The connection limit is the
/// soft limit minus a reserve for file bodies in flight
/// ([`egress_http::default_max_connections`]), and minus
/// `MAX_SEALED_COPIES` when zero-copy is on ([`max_connections`]).
/// Best effort: if it cannot, copies that find no descriptor are served the
/// slower way.
#[cfg(target_os = "linux")]
fn raise_open_file_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    // Plenty for MAX_SEALED_COPIES and every connection; `None` is
    // unlimited.
    const ENOUGH: u64 = 65_536;
    let mut limit = getrlimit(Resource::Nofile);
    let target = limit.maximum.map_or(ENOUGH, |max| max.min(ENOUGH));
    if limit.current.is_some_and(|current| current < target) {
        limit.current = Some(target);
        let _ = setrlimit(Resource::Nofile, limit);
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_open_file_limit() {}

/// The connection limit: egress-http's default (the open-file limit minus
/// a reserve for file bodies in flight), minus the descriptors the cache of
/// sealed copies may hold when zero-copy is on, so that those never eat the
/// reserve; at least 256, as the default.
fn max_connections(zero_copy: bool) -> usize {
    let sealed = if zero_copy {
        egress_snapshot::MAX_SEALED_COPIES
    } else {
        0
    };
    egress_http::default_max_connections()
        .saturating_sub(sealed)
        .max(256)
}

/// Runs the hidden self-tests from inside the (possibly) confined process:
/// one stdout line each, `blocked` or `allowed`, then exit 0.
fn self_test(flags: &Flags, summary: &str) -> ExitCode {
    say_out(&format!("egress-mirror: self-test confinement: {summary}"));
    for target in &flags.self_test_connect {
        let Ok(addr) = target.parse::<SocketAddr>() else {
            return fail(
                EXIT_USAGE,
                &format!("--self-test-connect {target:?} is not IP:PORT"),
            );
        };
        let outcome = match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(_) => "allowed".to_string(),
            Err(e) => format!("blocked ({e})"),
        };
        say_out(&format!(
            "egress-mirror: self-test connect {addr}: {outcome}"
        ));
    }
    for path in &flags.self_test_read {
        let outcome = match std::fs::read(path) {
            Ok(bytes) => format!("allowed ({} bytes)", bytes.len()),
            Err(e) => format!("blocked ({e})"),
        };
        say_out(&format!(
            "egress-mirror: self-test read {}: {outcome}",
            path.display()
        ));
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Result<Option<Flags>, clap::Error> {
        egress_cli::parse::<Flags>("egress-mirror", args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flag_forms() {
        let f = flags(&[
            "d",
            "--listen=1.2.3.4:5",
            "--log-requests",
            "--config",
            "c.toml",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(f.dir, Some(PathBuf::from("d")));
        assert_eq!(f.listen.as_deref(), Some("1.2.3.4:5"));
        assert_eq!(f.config, Some(PathBuf::from("c.toml")));
        assert!(f.log_requests && !f.require_confinement);
        assert!(flags(&["--help"]).unwrap().is_none());
        for bad in [
            &["d", "--listen"][..],
            &["d", "--listen="],
            &["d", "e"],
            &["d", "--bogus"],
            &["d", "--log-requests=yes"],
            &["d", "--zero-copy-budget"],
            &["d", "--zero-copy-budget=1GB"],
            &["d", "--zero-copy-budget=-1"],
            &["--config"],
        ] {
            assert!(flags(bad).is_err(), "{bad:?}");
        }
    }

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

    #[test]
    fn flags_override_the_file() {
        let f = flags(&["flagdir", "--listen", "127.0.0.1:1"])
            .unwrap()
            .unwrap();
        let file = FileConfig {
            snapshot: Some("filedir".into()),
            listen: Some("127.0.0.1:2".into()),
            require_confinement: Some(true),
            log_requests: None,
            zero_copy_budget: Some(7),
            max_connections_per_client: Some(9),
            tls_cert: None,
            tls_key: None,
            instance_dir: None,
            misses: misses_cli::MissesConfig::default(),
        };
        let s = settings(&f, file).unwrap();
        assert_eq!(s.max_connections_per_client, 9);
        assert_eq!(s.dir, PathBuf::from("flagdir"));
        assert_eq!(s.listen, "127.0.0.1:1");
        assert!(s.listen_from_file.is_none());
        assert!(s.require_confinement && !s.log_requests);
        assert_eq!(s.zero_copy_budget, 7);
        let f = flags(&["d", "--zero-copy-budget", "0"]).unwrap().unwrap();
        let s = settings(&f, FileConfig::default()).unwrap();
        assert_eq!(s.zero_copy_budget, 0);
        assert_eq!(
            s.max_connections_per_client,
            egress_http::DEFAULT_MAX_CONNECTIONS_PER_CLIENT
        );
        let f = flags(&["d", "--max-connections-per-client", "0"])
            .unwrap()
            .unwrap();
        let s = settings(&f, FileConfig::default()).unwrap();
        assert_eq!(s.max_connections_per_client, 0);
        let none = flags(&[]).unwrap().unwrap();
        assert!(settings(&none, FileConfig::default()).is_err());
    }

    #[test]
    fn tls_needs_both_files() {
        let f = flags(&["d", "--tls-cert", "c.pem", "--tls-key=k.pem"])
            .unwrap()
            .unwrap();
        let s = settings(&f, FileConfig::default()).unwrap();
        assert_eq!(s.tls, Some(("c.pem".into(), "k.pem".into())));
        assert!(
            settings(&flags(&["d"]).unwrap().unwrap(), FileConfig::default())
                .unwrap()
                .tls
                .is_none()
        );
        // A flag overrides the file's key; the file may give the other.
        let f = flags(&["d", "--config", "m.toml", "--tls-cert", "flag.pem"])
            .unwrap()
            .unwrap();
        let file = FileConfig {
            tls_cert: Some("file.pem".into()),
            tls_key: Some("file.key".into()),
            ..FileConfig::default()
        };
        let s = settings(&f, file).unwrap();
        assert_eq!(s.tls, Some(("flag.pem".into(), "file.key".into())));

        // Half a pair from the command line: a usage error naming the flags.
        let e = settings(
            &flags(&["d", "--tls-key", "k.pem"]).unwrap().unwrap(),
            FileConfig::default(),
        )
        .err()
        .unwrap();
        assert_eq!(e.exit_code(), EXIT_USAGE);
        assert!(e
            .message()
            .starts_with("--tls-key without --tls-cert: give both"));
        // Half a pair from the file: a config error naming its keys.
        let f = flags(&["d", "--config", "m.toml"]).unwrap().unwrap();
        let file = FileConfig {
            tls_cert: Some("c.pem".into()),
            ..FileConfig::default()
        };
        let e = settings(&f, file).err().unwrap();
        assert_eq!(e.exit_code(), EXIT_CONFIG);
        assert_eq!(
            e.message(),
            "bad config file m.toml: tls_cert without tls_key: give both for https, or neither"
        );
    }
}
