//! Behind a load balancer: `--trusted-proxy CIDR` (repeatable) and
//! `--require-proxy-header`, config keys `trusted_proxy` (a list) and
//! `require_proxy_header`; flattened into the binary's flags and read by
//! [`crate::config`]. From those peers a connection begins with a PROXY
//! protocol header (v1 or v2, `egress_http::proxy`) naming the sandbox,
//! and the per-client limit, the misses log and the request log key on
//! the sandbox's address.

use egress_http::{BadCidr, Cidr, ProxyConfig};

/// The config file's keys.
pub const KEYS: &[&str] = &["trusted_proxy", "require_proxy_header"];

/// The flags.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ProxyFlags {
    /// A load balancer's address range (repeatable): its connections begin
    /// with a PROXY protocol header (v1 or v2, as HAProxy's send-proxy-v2
    /// sends) naming the client, whose address the per-client limit and the
    /// logs then key on. Nobody else's PROXY header is read.
    #[arg(long, value_name = "CIDR")]
    pub trusted_proxy: Vec<String>,
    /// Close a --trusted-proxy connection that does not begin with a PROXY
    /// header.
    #[arg(long)]
    pub require_proxy_header: bool,
}

/// The config file's keys; each optional.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ProxyFileConfig {
    pub trusted: Option<Vec<Cidr>>,
    pub require: Option<bool>,
}

impl ProxyFileConfig {
    /// Sets `key` (one of [`KEYS`]) from `value`; `Err` names what the
    /// value must be.
    pub fn set(&mut self, key: &str, value: &toml::Value) -> Result<(), &'static str> {
        const RANGES: &str = "a list of address ranges such as [\"10.0.0.0/8\"]";
        match key {
            "trusted_proxy" => {
                let list = value.as_array().ok_or(RANGES)?;
                let ranges = list
                    .iter()
                    .map(|v| v.as_str().and_then(|s| s.parse::<Cidr>().ok()))
                    .collect::<Option<Vec<_>>>()
                    .ok_or(RANGES)?;
                self.trusted = Some(ranges);
            }
            "require_proxy_header" => self.require = Some(value.as_bool().ok_or("true or false")?),
            _ => return Err("a known key"),
        }
        Ok(())
    }
}

/// The flags over the file: `Err` for a flag that is not an address range.
pub fn settings(flags: &ProxyFlags, file: ProxyFileConfig) -> Result<ProxyConfig, BadCidr> {
    let trusted = if flags.trusted_proxy.is_empty() {
        file.trusted.unwrap_or_default()
    } else {
        flags
            .trusted_proxy
            .iter()
            .map(|s| s.parse::<Cidr>())
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok(ProxyConfig {
        trusted,
        require_header: flags.require_proxy_header || file.require == Some(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_over_file() {
        let mut file = ProxyFileConfig::default();
        let t: toml::Table = "trusted_proxy = [\"192.0.2.0/24\"]\nrequire_proxy_header = true\n"
            .parse()
            .unwrap();
        for (k, v) in &t {
            assert!(KEYS.contains(&k.as_str()));
            file.set(k, v).unwrap();
        }
        let c = settings(&ProxyFlags::default(), file).unwrap();
        assert_eq!(c.trusted.len(), 1);
        assert!(c.require_header);
        let flags = ProxyFlags {
            trusted_proxy: vec!["10.0.0.1".into(), "fd00::/8".into()],
            require_proxy_header: false,
        };
        let c = settings(&flags, ProxyFileConfig::default()).unwrap();
        assert_eq!(c.trusted.len(), 2);
        assert!(!c.require_header);
        let bad = ProxyFlags {
            trusted_proxy: vec!["10.0.0.0/99".into()],
            require_proxy_header: false,
        };
        assert!(settings(&bad, ProxyFileConfig::default()).is_err());
        let mut f = ProxyFileConfig::default();
        assert!(f
            .set("trusted_proxy", &toml::Value::String("10.0.0.0/8".into()))
            .is_err());
        assert!(f
            .set(
                "trusted_proxy",
                &toml::Value::Array(vec![toml::Value::String("nope".into())])
            )
            .is_err());
    }
}
