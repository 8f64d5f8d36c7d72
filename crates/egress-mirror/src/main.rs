//! `egress-mirror SNAPSHOT_DIR [--listen ADDR] [--config FILE]
//! [--require-confinement] [--log-requests] [--zero-copy-budget SIZE]
//! [--max-connections-per-client N] [--tls-cert FILE --tls-key FILE]
//! [--instance-dir DIR]`:
//! serves one snapshot directory as a sandbox's only egress, until killed;
//! over https (HTTP/2 and HTTP/1.1 by ALPN) when given a certificate and
//! its key.
//!
//! This binary only parses its flags (here, with clap), reads the config
//! file and merges the two (`egress_mirror::config`), and calls
//! `egress_mirror::run::run`, whose documentation gives the start-up order;
//! every way that can fail comes back as one `Failure` and leaves by the
//! one error path in [`main`].
//!
//! Invariant: no thread is spawned before `run::run` has confined the
//! process with Landlock (see `confine.rs`): Landlock restricts the calling
//! thread and the threads it creates afterwards only, so the flags and the
//! config file are read on the main thread and nothing here starts a
//! thread.
//!
//! Exit codes: 0 help, 2 usage, 4 invalid snapshot (or not signed by a key
//! of `--allowed-signers`), 5 cannot listen,
//! 6 confinement required but not available, 7 bad config file,
//! 8 unusable TLS certificate or key, 9 instance attestation cannot be set
//! up, 10 unusable misses log (cannot be opened for appending, not a
//! regular file, or `--misses-max-line` outside 256..=4096). Every error is one line on stderr; nothing panics.

use clap::builder::NonEmptyStringValueParser;
use clap::{CommandFactory, Parser};
use egress_mirror::admin::cli as admin_cli;
use egress_mirror::config::{
    self, parse_size, read_config, CommandLine, Failure, FileConfig, Settings, SettingsError,
    EXIT_CONFIG, EXIT_USAGE, USAGE,
};
use egress_mirror::misses::cli as misses_cli;
use egress_mirror::proxy_cli;
use egress_mirror::run::{self, SelfTests};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Command-line flags. The `self_test_*` ones are hidden: they run after
/// confinement, report on stdout and exit, so tests can observe from outside
/// what the confined process can and cannot do.
#[derive(Debug, Default, Parser)]
#[command(
    name = "egress-mirror",
    about = "Serves one verified snapshot directory, byte for byte, as a sandbox's only package egress, until killed.",
    override_usage = "egress-mirror SNAPSHOT_DIR [--listen ADDR] [--config FILE] [--require-confinement] [--log-requests] [--zero-copy-budget SIZE] [--max-connections-per-client N] [--tls-cert FILE --tls-key FILE] [--instance-dir DIR] [--allowed-signers FILE] [--misses-log FILE [--misses-max-entries N] [--misses-max-per-client N] [--misses-max-line BYTES]] [--admin-listen ADDR [--admin-allow CIDR]...] [--trusted-proxy CIDR... [--require-proxy-header]]",
    after_help = "Exit codes: 0 help, 2 usage, 4 invalid snapshot, 5 cannot listen, 6 confinement required but not available, 7 bad config file, 8 unusable TLS certificate or key, 9 instance attestation cannot be set up, 10 unusable misses log, 11 unusable admin listener."
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
    #[command(flatten)]
    admin: admin_cli::AdminFlags,
    #[command(flatten)]
    proxy: proxy_cli::ProxyFlags,
    #[arg(long, value_name = "ADDR", hide = true)]
    self_test_connect: Vec<String>,
    #[arg(long, value_name = "PATH", hide = true)]
    self_test_read: Vec<PathBuf>,
}

impl Flags {
    /// What the command line gave, for [`config::settings`].
    fn command_line(&self) -> CommandLine {
        CommandLine {
            dir: self.dir.clone(),
            listen: self.listen.clone(),
            config: self.config.clone(),
            require_confinement: self.require_confinement,
            log_requests: self.log_requests,
            zero_copy_budget: self.zero_copy_budget,
            max_connections_per_client: self.max_connections_per_client,
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            instance_dir: self.instance_dir.clone(),
            allowed_signers: self.allowed_signers.clone(),
            misses: self.misses.clone(),
            admin: self.admin.clone(),
            proxy: self.proxy.clone(),
        }
    }
}

/// The effective settings: flags over the config file over defaults.
fn settings(flags: &Flags, file: FileConfig) -> Result<Settings, SettingsError> {
    config::settings(&flags.command_line(), file)
}

/// The one error path: a [`Failure`] is one line on stderr and its exit
/// code. A closed stderr is a quiet end of that line, never a panic.
fn main() -> ExitCode {
    match start() {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure { code, message }) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "egress-mirror: {message}");
            let _ = err.flush();
            ExitCode::from(code)
        }
    }
}

/// Flags, the config file, the settings, then the library; `Ok` after help
/// or the self-tests (serving never returns).
fn start() -> Result<(), Failure> {
    let flags = match egress_cli::parse::<Flags>("egress-mirror", std::env::args().skip(1)) {
        Ok(Some(flags)) => flags,
        Ok(None) => {
            let help = Flags::command().render_long_help().to_string();
            egress_cli::outln!("{}", help.trim_end());
            return Ok(());
        }
        Err(e) => {
            return Err(Failure::new(
                EXIT_USAGE,
                format!("{}; {USAGE}", egress_cli::usage_line(&e)),
            ))
        }
    };
    let file = match &flags.config {
        Some(path) => read_config(path)
            .map_err(|e| Failure::new(EXIT_CONFIG, format!("bad config file {e}")))?,
        None => FileConfig::default(),
    };
    let s = settings(&flags, file).map_err(|e| Failure::new(e.exit_code(), e.message()))?;
    let self_tests = SelfTests {
        connect: flags.self_test_connect,
        read: flags.self_test_read,
    };
    run::run(&s, &self_tests)
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
            admin: admin_cli::AdminConfig::default(),
            proxy: proxy_cli::ProxyFileConfig::default(),
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
