//! The misses log's flags and config keys (`--misses-log FILE` and its
//! bounds), flattened into the `egress-mirror` binary's flags and read by
//! [`crate::config`]; the log itself is [`crate::misses`].

use super::{writer, Limits, MissesLog, OpenError, MAX_LINE};
use std::path::{Path, PathBuf};

/// The config file's keys for the misses log.
pub const KEYS: &[&str] = &[
    "misses_log",
    "misses_max_entries",
    "misses_max_per_client",
    "misses_max_line",
    "misses_summary_secs",
];

/// The misses log's flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MissesFlags {
    /// Append one JSON line per distinct ask for a project, version or
    /// file the snapshot lacks (and per name served) to FILE, for
    /// `egress-conformance snapshot misses`; opened before confinement.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true)]
    pub misses_log: Option<PathBuf>,
    /// Distinct misses (and served names) logged per run; more are dropped
    /// and counted [default: 10000].
    #[arg(long, value_name = "N")]
    pub misses_max_entries: Option<usize>,
    /// Misses logged per client address per run [default: 1000].
    #[arg(long, value_name = "N")]
    pub misses_max_per_client: Option<usize>,
    /// The longest line logged, in bytes, 256 to 4096 [default: 1024].
    #[arg(long, value_name = "BYTES")]
    pub misses_max_line: Option<usize>,
    /// Seconds between summary lines (the counts, drops included) while
    /// the counts change; one is also written at the first drop
    /// [default: 60].
    #[arg(long, value_name = "SECS")]
    pub misses_summary_secs: Option<u64>,
}

/// The config file's misses-log keys; each optional.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct MissesConfig {
    pub log: Option<PathBuf>,
    pub entries: Option<usize>,
    pub per_client: Option<usize>,
    pub line: Option<usize>,
    pub summary_secs: Option<u64>,
}

impl MissesConfig {
    /// Sets `key` (one of [`KEYS`]) from `value`; `Err` names what the
    /// value must be.
    pub fn set(&mut self, key: &str, value: &toml::Value) -> Result<(), &'static str> {
        let count = || {
            value
                .as_integer()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or("a whole number")
        };
        match key {
            "misses_log" => {
                self.log = Some(PathBuf::from(value.as_str().ok_or("a string")?));
            }
            "misses_max_entries" => self.entries = Some(count()?),
            "misses_max_per_client" => self.per_client = Some(count()?),
            "misses_max_line" => self.line = Some(count()?),
            "misses_summary_secs" => {
                self.summary_secs = Some(u64::try_from(count()?).map_err(|_| "a whole number")?)
            }
            _ => return Err("a known key"),
        }
        Ok(())
    }

    /// A relative `misses_log` is relative to the config file's directory.
    pub fn relative_to(&mut self, base: &Path) {
        if let Some(p) = self.log.as_mut().filter(|p| p.is_relative()) {
            *p = base.join(&*p);
        }
    }
}

/// The misses log to write, if any, and its bounds: flags over the file
/// over the defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissesSettings {
    pub log: Option<PathBuf>,
    pub limits: Limits,
}

/// The misses log's settings: flags over the file over the defaults.
pub fn settings(flags: &MissesFlags, file: MissesConfig) -> MissesSettings {
    MissesSettings {
        log: flags.misses_log.clone().or(file.log),
        limits: Limits {
            entries: flags
                .misses_max_entries
                .or(file.entries)
                .unwrap_or(writer::DEFAULT_ENTRIES),
            per_client: flags
                .misses_max_per_client
                .or(file.per_client)
                .unwrap_or(writer::DEFAULT_PER_CLIENT),
            line: flags
                .misses_max_line
                .or(file.line)
                .unwrap_or(writer::DEFAULT_LINE),
            summary_every: flags
                .misses_summary_secs
                .or(file.summary_secs)
                .map_or(Limits::default().summary_every, |s| {
                    std::time::Duration::from_secs(s.max(1))
                }),
            ..Limits::default()
        },
    }
}

/// Opens the log (before confinement); `None` without `--misses-log`. A
/// line bound out of range is refused here, before anything is opened.
pub fn open(s: &MissesSettings) -> Result<Option<MissesLog>, OpenError> {
    let Some(path) = &s.log else {
        return Ok(None);
    };
    if !(writer::MIN_LINE..=MAX_LINE).contains(&s.limits.line) {
        return Err(OpenError::LineBound(s.limits.line));
    }
    MissesLog::open(path).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_over_file_over_defaults() {
        let file = MissesConfig {
            log: Some("file.log".into()),
            entries: Some(5),
            per_client: None,
            line: Some(300),
            summary_secs: None,
        };
        let flags = MissesFlags {
            misses_max_line: Some(512),
            ..MissesFlags::default()
        };
        let s = settings(&flags, file);
        assert_eq!(s.log, Some(PathBuf::from("file.log")));
        assert_eq!(
            (s.limits.entries, s.limits.per_client, s.limits.line),
            (5, writer::DEFAULT_PER_CLIENT, 512)
        );
        let s = settings(&MissesFlags::default(), MissesConfig::default());
        assert!(s.log.is_none() && s.limits == Limits::default());
        assert!(open(&s).unwrap().is_none());
        let bad = MissesSettings {
            log: Some("/nonexistent/x".into()),
            limits: Limits {
                line: 100,
                ..Limits::default()
            },
        };
        assert!(matches!(open(&bad), Err(OpenError::LineBound(100))));
    }

    #[test]
    fn config_keys() {
        let mut c = MissesConfig::default();
        let t: toml::Table = "misses_log = \"m.log\"\nmisses_max_entries = 7\nmisses_max_per_client = 2\nmisses_max_line = 600\n"
            .parse()
            .unwrap();
        for (k, v) in &t {
            assert!(KEYS.contains(&k.as_str()));
            c.set(k, v).unwrap();
        }
        c.relative_to(Path::new("/etc/mirror"));
        assert_eq!(
            c,
            MissesConfig {
                log: Some("/etc/mirror/m.log".into()),
                entries: Some(7),
                per_client: Some(2),
                line: Some(600),
                summary_secs: None,
            }
        );
        assert_eq!(
            c.set("misses_max_entries", &toml::Value::Integer(-1)),
            Err("a whole number")
        );
        assert_eq!(
            c.set("misses_log", &toml::Value::Integer(1)),
            Err("a string")
        );
    }
}
