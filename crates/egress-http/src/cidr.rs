//! An address range as the mirror's `--admin-allow` and `--trusted-proxy`
//! take it: `ADDR/BITS`, or one address.

use std::net::IpAddr;

/// `ADDR/BITS` (IPv4 or IPv6), IPv4-mapped IPv6 peers matched as IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    bits: u8,
}

/// Why a range is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an address range such as 10.0.0.0/8, 192.0.2.7 or fd00::/8")]
pub struct BadCidr(pub String);

impl std::str::FromStr for Cidr {
    type Err = BadCidr;

    fn from_str(s: &str) -> Result<Self, BadCidr> {
        let bad = || BadCidr(s.to_string());
        let (addr, bits) = match s.split_once('/') {
            Some((a, b)) => (a, Some(b)),
            None => (s, None),
        };
        let net: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if net.is_ipv4() { 32 } else { 128 };
        let bits = match bits {
            None => max,
            Some(b) if !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()) => {
                b.parse::<u8>().ok().filter(|&n| n <= max).ok_or_else(bad)?
            }
            Some(_) => return Err(bad()),
        };
        Ok(Cidr {
            net: net.to_canonical(),
            bits,
        })
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.net, self.bits)
    }
}

impl Cidr {
    /// Whether `ip` is in the range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(ip)) << 96,
                self.bits,
            ),
            (IpAddr::V6(net), IpAddr::V6(ip)) => prefix(u128::from(net), u128::from(ip), self.bits),
            _ => false,
        }
    }
}

/// Whether `a` and `b` agree in their first `bits` bits.
fn prefix(a: u128, b: u128, bits: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
    a & mask == b & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(s: &str) -> Cidr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_contain_what_they_should() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(c("10.0.0.0/8").contains(ip("10.200.1.1")));
        assert!(!c("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(c("192.0.2.7").contains(ip("192.0.2.7")));
        assert!(!c("192.0.2.7").contains(ip("192.0.2.8")));
        assert!(c("0.0.0.0/0").contains(ip("203.0.113.9")));
        assert!(
            c("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")),
            "mapped IPv4"
        );
        assert!(c("fd00::/8").contains(ip("fd12::1")));
        assert!(!c("fd00::/8").contains(ip("10.0.0.1")));
        assert!(c("::/0").contains(ip("2001:db8::1")));
    }

    #[test]
    fn bad_ranges_are_refused() {
        for s in [
            "",
            "10.0.0.0/33",
            "10.0.0.0/",
            "10.0.0.0/-1",
            "::/129",
            "host/8",
            "10.0.0.0/8/8",
            "10.0.0.0/+8",
        ] {
            assert!(s.parse::<Cidr>().is_err(), "{s}");
        }
        assert_eq!(c("10.1.2.3/8").to_string(), "10.1.2.3/8");
    }
}
