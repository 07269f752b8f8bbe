//! The network policy (ARCHITECTURE.md §4.6) for every URL that comes from a command or tool argument
//! (`rss`, `web_fetch`, anything later): only http/https, no credentials, and only public
//! addresses unless `[network] allow_private = true` or the host is in `[network] allow_hosts`.
//! The check is made on **every** address the host resolves to, for the first URL and for every
//! redirect, and the caller connects to the address that was checked (no second lookup, so a
//! rebinding DNS server cannot swap it). URLs from `config.toml` or `.env` (providers, CalDAV)
//! are the owner's and do not come here.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use lurkbot_core::{Config, split_host_port};
use reqwest::Url;

/// Where argument URLs may go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkPolicy {
    /// Non-public addresses are allowed.
    pub allow_private: bool,
    /// Hosts allowed whatever they resolve to (`name`, `name:port`, `ip`, `ip:port`).
    pub allow_hosts: Vec<String>,
}

/// Why a URL may not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NetRefusal {
    /// Not http or https.
    #[error("only http:// and https:// URLs are fetched, not {0}://")]
    Scheme(String),
    /// `user:password@` in the URL.
    #[error("URLs with credentials (user:password@) are refused")]
    Credentials,
    /// No host.
    #[error("the URL has no host")]
    NoHost,
    /// Not a URL at all.
    #[error("{0} is not a URL; give a whole address such as https://example.com/")]
    NotAUrl(String),
    /// A scheme a browser never loads (`file:`, `javascript:`, `chrome:`, …).
    #[error(
        "the browser loads only http: and https: pages (and about:blank), not {0}: URLs; local files, scripts written as URLs, data: pages and the browser's own pages stay out of its reach"
    )]
    PageScheme(String),
    /// DNS failed.
    #[error("cannot resolve {host}: {error}")]
    Resolve {
        /// The host.
        host: String,
        /// What the resolver said.
        error: String,
    },
    /// The host resolves to a non-public address.
    #[error(
        "refused: {host} resolves to the non-public address {ip}; to allow it set [network] allow_private = true, or add \"{host}\" to [network] allow_hosts, in config.toml"
    )]
    Private {
        /// The host as written.
        host: String,
        /// The first non-public address.
        ip: IpAddr,
    },
}

impl NetworkPolicy {
    /// The policy `config.toml` sets (`[network]`, and the older `[tools.web_fetch]
    /// allow_private`).
    pub fn from_config(config: &Config) -> Self {
        Self {
            allow_private: config.allow_private_network(),
            allow_hosts: config.network.allow_hosts.clone(),
        }
    }

    /// Checks `url` and resolves its host; returns the address to connect to.
    ///
    /// # Errors
    /// A [`NetRefusal`] saying what is wrong and which setting would allow it.
    pub async fn check(&self, url: &Url) -> Result<SocketAddr, NetRefusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(NetRefusal::Scheme(url.scheme().to_string()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(NetRefusal::Credentials);
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or(NetRefusal::NoHost)?;
        let port = url.port_or_known_default().unwrap_or(80);
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs: Vec<SocketAddr> = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::net::lookup_host((bare, port))
                .await
                .map_err(|e| NetRefusal::Resolve {
                    host: host.to_string(),
                    error: e.to_string(),
                })?
                .collect(),
        };
        let first = *addrs.first().ok_or_else(|| NetRefusal::Resolve {
            host: host.to_string(),
            error: "no address".into(),
        })?;
        if self.allow_private || self.host_allowed(bare, port) {
            return Ok(first);
        }
        match addrs.iter().find(|a| !is_public(a.ip())) {
            Some(private) => Err(NetRefusal::Private {
                host: host.to_string(),
                ip: private.ip(),
            }),
            None => Ok(first),
        }
    }

    /// Whether `host` (bare, without brackets) on `port` is listed in `allow_hosts`.
    fn host_allowed(&self, host: &str, port: u16) -> bool {
        self.allow_hosts.iter().any(|entry| {
            let entry = entry.trim().to_ascii_lowercase();
            let host = host.to_ascii_lowercase();
            let (name, entry_port) = split_host_port(&entry);
            name == host && entry_port.is_none_or(|p| p == port)
        })
    }
}

/// Whether an address is on the public internet. Loopback, private, link-local (cloud
/// metadata), CGNAT, benchmarking, documentation, reserved, unique-local, multicast and
/// unspecified addresses are not, nor their IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`) forms.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, ..] = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_documentation()
        || v4.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = v6.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // IPv4-compatible `::a.b.c.d` (not `::` and `::1`, checked below).
    if s[..6] == [0; 6] && (s[6] != 0 || s[7] > 1) {
        return is_public_v4(embedded(s[6], s[7]));
    }
    // NAT64 well-known prefix `64:ff9b::/96`.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(s[6], s[7]));
    }
    // 6to4 `2002:AABB:CCDD::/48` carries the IPv4 address AA.BB.CC.DD.
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2]));
    }
    !(v6.is_loopback()
        || v6.is_unspecified()
        || v6.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || (s[0] == 0x2001 && s[1] == 0xdb8)
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn public_and_private_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "::169.254.169.254",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
            "2001:db8::1",
        ] {
            assert!(!is_public(ip(private)), "{private}");
        }
        for public in [
            "1.1.1.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2002:101:101::1",
        ] {
            assert!(is_public(ip(public)), "{public}");
        }
    }

    #[tokio::test]
    async fn refuses_private_unless_allowed() {
        let url = Url::parse("http://127.0.0.1:9/feed").unwrap();
        let strict = NetworkPolicy::default();
        let err = strict.check(&url).await.err();
        assert!(matches!(&err, Some(NetRefusal::Private { .. })), "{err:?}");
        let message = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("[network] allow_private = true"),
            "{message}"
        );
        assert!(message.contains("allow_hosts"), "{message}");
        let open = NetworkPolicy {
            allow_private: true,
            ..NetworkPolicy::default()
        };
        assert!(open.check(&url).await.is_ok());
        for entry in ["127.0.0.1", "127.0.0.1:9"] {
            let listed = NetworkPolicy {
                allow_hosts: vec![entry.into()],
                ..NetworkPolicy::default()
            };
            assert!(listed.check(&url).await.is_ok(), "{entry}");
        }
        let other_port = NetworkPolicy {
            allow_hosts: vec!["127.0.0.1:8080".into()],
            ..NetworkPolicy::default()
        };
        assert!(other_port.check(&url).await.is_err());
        let v6 = Url::parse("http://[::1]:9/").unwrap();
        let listed = NetworkPolicy {
            allow_hosts: vec!["[::1]:9".into()],
            ..NetworkPolicy::default()
        };
        assert!(listed.check(&v6).await.is_ok());
        for bad in ["ftp://example.com/", "http://u:p@example.com/"] {
            let url = Url::parse(bad).unwrap();
            assert!(strict.check(&url).await.is_err(), "{bad}");
        }
    }
}
