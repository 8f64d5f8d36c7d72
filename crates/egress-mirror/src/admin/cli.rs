//! The admin listener's flags and config keys (`--admin-listen ADDR`,
//! `--admin-allow CIDR`), flattened into the `egress-mirror` binary's
//! flags and read by [`crate::config`]; the listener is [`crate::admin`].

use super::{address, AdminError, Cidr};
use std::net::SocketAddr;

/// The config file's keys for the admin listener.
pub const KEYS: &[&str] = &["admin_listen", "admin_allow"];

/// The admin listener's flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct AdminFlags {
    /// Serve /livez, /readyz and /metrics (Prometheus) on ADDR, an IP and
    /// port apart from the serving listener (off by default).
    #[arg(long, value_name = "ADDR")]
    pub admin_listen: Option<String>,
    /// An address range that may read the admin listener (repeatable);
    /// needed when --admin-listen is not a loopback address.
    #[arg(long, value_name = "CIDR")]
    pub admin_allow: Vec<String>,
}

/// The config file's admin keys; each optional.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct AdminConfig {
    pub listen: Option<String>,
    pub allow: Option<Vec<String>>,
}

impl AdminConfig {
    /// Sets `key` (one of [`KEYS`]) from `value`; `Err` names what the
    /// value must be.
    pub fn set(&mut self, key: &str, value: &toml::Value) -> Result<(), &'static str> {
        match key {
            "admin_listen" => self.listen = Some(value.as_str().ok_or("a string")?.to_string()),
            "admin_allow" => {
                let list = value.as_array().ok_or("a list of strings")?;
                let ranges = list
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("a list of strings")?;
                self.allow = Some(ranges);
            }
            _ => return Err("a known key"),
        }
        Ok(())
    }
}

/// The admin listener to start, if any: flags over the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdminSettings {
    pub listen: Option<String>,
    pub allow: Vec<String>,
}

/// The admin settings: flags over the file.
pub fn settings(flags: &AdminFlags, file: AdminConfig) -> AdminSettings {
    AdminSettings {
        listen: flags.admin_listen.clone().or(file.listen),
        allow: if flags.admin_allow.is_empty() {
            file.allow.unwrap_or_default()
        } else {
            flags.admin_allow.clone()
        },
    }
}

/// Why the admin settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum AdminSettingsError {
    #[error("--admin-allow: {0}")]
    Range(#[from] egress_http::BadCidr),
    #[error(transparent)]
    Address(#[from] AdminError),
}

/// The address and ranges, checked before anything starts; `None` without
/// `--admin-listen`.
pub fn resolve(s: &AdminSettings) -> Result<Option<(SocketAddr, Vec<Cidr>)>, AdminSettingsError> {
    let allow = s
        .allow
        .iter()
        .map(|c| c.parse::<Cidr>())
        .collect::<Result<Vec<_>, _>>()?;
    let Some(listen) = &s.listen else {
        return Ok(None);
    };
    Ok(Some((address(listen, &allow)?, allow)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_over_file_and_checked_before_start() {
        let mut file = AdminConfig::default();
        let t: toml::Table = "admin_listen = \"0.0.0.0:9090\"\nadmin_allow = [\"10.0.0.0/8\"]\n"
            .parse()
            .unwrap();
        for (k, v) in &t {
            assert!(KEYS.contains(&k.as_str()));
            file.set(k, v).unwrap();
        }
        let s = settings(&AdminFlags::default(), file);
        let (addr, allow) = resolve(&s).unwrap().unwrap();
        assert_eq!(addr.port(), 9090);
        assert_eq!(allow.len(), 1);
        let flags = AdminFlags {
            admin_listen: Some("0.0.0.0:9091".into()),
            admin_allow: Vec::new(),
        };
        assert!(matches!(
            resolve(&settings(&flags, AdminConfig::default())),
            Err(AdminSettingsError::Address(AdminError::NotLoopback(_)))
        ));
        let flags = AdminFlags {
            admin_listen: None,
            admin_allow: vec!["nope".into()],
        };
        assert!(matches!(
            resolve(&settings(&flags, AdminConfig::default())),
            Err(AdminSettingsError::Range(_))
        ));
        assert_eq!(resolve(&AdminSettings::default()).unwrap(), None);
        let mut c = AdminConfig::default();
        assert_eq!(
            c.set("admin_allow", &toml::Value::Integer(1)),
            Err("a list of strings")
        );
    }
}
