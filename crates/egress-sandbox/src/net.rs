//! What the kernel tells a sandbox about its network, read from the text
//! of /proc and /etc: routes (`/proc/net/route`, `/proc/net/ipv6_route`),
//! addresses (`/proc/net/if_inet6`, `/proc/net/fib_trie`) and resolvers
//! (`/etc/resolv.conf`). Pure functions of that text; lines that do not
//! parse are skipped.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

const RTF_UP: u32 = 0x0001;
const RTF_GATEWAY: u32 = 0x0002;
const RTF_REJECT: u32 = 0x0200;
const RTF_LOCAL: u32 = 0x8000_0000;

/// One route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub dest: IpAddr,
    pub prefix: u8,
    pub gateway: Option<IpAddr>,
    pub dev: String,
    pub flags: u32,
}

impl Route {
    pub fn is_default(&self) -> bool {
        self.prefix == 0
    }

    /// Whether `ip` falls inside this route's destination.
    pub fn covers(&self, ip: IpAddr) -> bool {
        match (self.dest, ip) {
            (IpAddr::V4(d), IpAddr::V4(i)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(d) & mask == u32::from(i) & mask
            }
            (IpAddr::V6(d), IpAddr::V6(i)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(d) & mask == u128::from(i) & mask
            }
            _ => false,
        }
    }

    /// Routes every system has that lead nowhere beyond the host or its
    /// links' own configuration: loopback, local and reject routes, IPv6
    /// link-local and multicast.
    pub fn is_housekeeping(&self) -> bool {
        if self.dev == "lo" || self.flags & (RTF_REJECT | RTF_LOCAL) != 0 {
            return true;
        }
        if self.flags & RTF_UP == 0 {
            return true;
        }
        match self.dest {
            IpAddr::V6(d) => {
                let seg = d.segments()[0];
                (seg & 0xffc0 == 0xfe80 && self.prefix >= 10)
                    || (seg & 0xff00 == 0xff00 && self.prefix >= 8)
            }
            IpAddr::V4(d) => d.is_loopback(),
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let family = if self.dest.is_ipv4() { "IPv4" } else { "IPv6" };
        if self.is_default() {
            write!(f, "{family} default")?;
        } else {
            write!(f, "{family} {}/{}", self.dest, self.prefix)?;
        }
        if let Some(g) = self.gateway {
            write!(f, " via {g}")?;
        }
        write!(f, " dev {}", self.dev)
    }
}

/// `/proc/net/route`: the IPv4 main table, addresses in little-endian hex.
pub fn routes_v4(text: &str) -> Vec<Route> {
    let hex_ip = |s: &str| {
        u32::from_str_radix(s, 16)
            .ok()
            .map(|v| Ipv4Addr::from(v.swap_bytes()))
    };
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let dev = (*f.first()?).to_string();
            let dest = hex_ip(f.get(1)?)?;
            let gw = hex_ip(f.get(2)?)?;
            let flags = u32::from_str_radix(f.get(3)?, 16).ok()?;
            let mask = hex_ip(f.get(7)?)?;
            let prefix = u8::try_from(u32::from(mask).count_ones()).ok()?;
            Some(Route {
                dest: IpAddr::V4(dest),
                prefix,
                gateway: (flags & RTF_GATEWAY != 0 && !gw.is_unspecified())
                    .then_some(IpAddr::V4(gw)),
                dev,
                flags,
            })
        })
        .collect()
}

fn hex_v6(s: &str) -> Option<Ipv6Addr> {
    (s.len() == 32).then_some(())?;
    u128::from_str_radix(s, 16).ok().map(Ipv6Addr::from)
}

/// `/proc/net/ipv6_route`: every table, addresses in big-endian hex.
pub fn routes_v6(text: &str) -> Vec<Route> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let dest = hex_v6(f.first()?)?;
            let prefix = u8::from_str_radix(f.get(1)?, 16)
                .ok()
                .filter(|p| *p <= 128)?;
            let next = hex_v6(f.get(4)?)?;
            let flags = u32::from_str_radix(f.get(8)?, 16).ok()?;
            let dev = (*f.get(9)?).to_string();
            Some(Route {
                dest: IpAddr::V6(dest),
                prefix,
                gateway: (!next.is_unspecified()).then_some(IpAddr::V6(next)),
                dev,
                flags,
            })
        })
        .collect()
}

/// Every gateway the routes point at, each once.
pub fn gateways(routes: &[Route]) -> Vec<IpAddr> {
    let set: BTreeSet<IpAddr> = routes
        .iter()
        .filter(|r| !r.is_housekeeping())
        .filter_map(|r| r.gateway)
        .collect();
    set.into_iter().collect()
}

/// `/proc/net/if_inet6`: (interface, address, prefix length).
pub fn addresses_v6(text: &str) -> Vec<(String, Ipv6Addr, u8)> {
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let addr = hex_v6(f.first()?)?;
            let prefix = u8::from_str_radix(f.get(2)?, 16).ok()?;
            Some(((*f.get(5)?).to_string(), addr, prefix))
        })
        .collect()
}

/// `/proc/net/fib_trie`: the host's own IPv4 addresses (`/32 host LOCAL`).
pub fn local_addresses_v4(text: &str) -> Vec<Ipv4Addr> {
    let mut last: Option<Ipv4Addr> = None;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("|-- ") {
            last = rest.trim().parse().ok();
        } else if t.starts_with("/32 host LOCAL") {
            if let Some(a) = last {
                out.insert(a);
            }
        }
    }
    out.into_iter().collect()
}

/// The `nameserver` addresses of a resolv.conf.
pub fn nameservers(text: &str) -> Vec<IpAddr> {
    text.lines()
        .filter_map(|line| {
            let mut w = line.split_whitespace();
            (w.next()? == "nameserver").then_some(())?;
            let v = w.next()?;
            // A scoped IPv6 address (fe80::1%eth0) keeps only its address.
            v.split('%').next()?.parse().ok()
        })
        .collect()
}

/// The addresses `/etc/hosts` gives `name` (case-insensitive, any alias).
pub fn hosts_lookup(text: &str, name: &str) -> Vec<IpAddr> {
    let name = name.trim_end_matches('.');
    text.lines()
        .filter_map(|line| {
            let mut w = line.split('#').next()?.split_whitespace();
            let ip: IpAddr = w.next()?.split('%').next()?.parse().ok()?;
            w.any(|n| n.trim_end_matches('.').eq_ignore_ascii_case(name))
                .then_some(ip)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: &str =
        "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
eth0\t00000000\t016433C6\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
eth0\t006433C6\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";

    const ROUTE6: &str = "\
20010db8000100000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     veth\n\
fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     veth\n\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 20010db8000100000000000000000001 00000400 00000002 00000000 00000003     veth\n\
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n\
20010db8000100000000000000000002 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000003 00000000 80200001     veth\n\
ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000003 00000000 00000001     veth\n\
00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo\n";

    #[test]
    fn ipv4_routes() {
        let r = routes_v4(ROUTE);
        assert_eq!(r.len(), 2);
        assert!(r[0].is_default());
        assert_eq!(r[0].gateway, Some("198.51.100.1".parse().unwrap()));
        assert_eq!(r[0].to_string(), "IPv4 default via 198.51.100.1 dev eth0");
        assert_eq!(r[1].to_string(), "IPv4 198.51.100.0/24 dev eth0");
        assert!(r[1].covers("198.51.100.7".parse().unwrap()));
        assert!(!r[1].covers("198.51.101.7".parse().unwrap()));
        assert!(r[0].covers("203.0.113.1".parse().unwrap()));
        assert_eq!(
            gateways(&r),
            vec!["198.51.100.1".parse::<IpAddr>().unwrap()]
        );
    }

    #[test]
    fn ipv6_routes_without_housekeeping() {
        let r: Vec<String> = routes_v6(ROUTE6)
            .iter()
            .filter(|r| !r.is_housekeeping())
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            r,
            [
                "IPv6 2001:db8:1::/64 dev veth",
                "IPv6 default via 2001:db8:1::1 dev veth"
            ]
        );
        assert_eq!(
            gateways(&routes_v6(ROUTE6)),
            vec!["2001:db8:1::1".parse::<IpAddr>().unwrap()]
        );
    }

    #[test]
    fn addresses_and_resolvers() {
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 198.51.100.2\n        /32 host LOCAL\n     |-- 198.51.100.0\n        /24 link UNICAST\nLocal:\n     |-- 198.51.100.2\n        /32 host LOCAL\n";
        assert_eq!(
            local_addresses_v4(trie),
            vec!["198.51.100.2".parse::<Ipv4Addr>().unwrap()]
        );
        let if6 = "20010db8000100000000000000000002 05 40 00 80     veth\n";
        assert_eq!(
            addresses_v6(if6),
            vec![("veth".to_string(), "2001:db8:1::2".parse().unwrap(), 64)]
        );
        let conf = "# x\nsearch lab\nnameserver 198.51.100.53\nnameserver fe80::1%eth0\nnameserver bogus\n";
        assert_eq!(
            nameservers(conf),
            vec![
                "198.51.100.53".parse::<IpAddr>().unwrap(),
                "fe80::1".parse().unwrap()
            ]
        );
        let hosts = "127.0.0.1 localhost\n# 192.0.2.9 deb.debian.org\n198.51.100.1 mirror.lab Mirror\n::1 localhost ip6-localhost\nbogus mirror\n";
        assert_eq!(
            hosts_lookup(hosts, "MIRROR."),
            vec!["198.51.100.1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(hosts_lookup(hosts, "localhost").len(), 2);
        assert!(hosts_lookup(hosts, "deb.debian.org").is_empty());
        // Garbage is skipped, never a panic.
        assert!(routes_v4("x\n\u{0}\n").is_empty());
        assert!(routes_v6("zz 99 zz").is_empty());
    }
}
