//! `[gateway] trusted_proxies`: behind a load balancer every request comes from the balancer's
//! address, so rate limits and logs would lump all clients together. A request whose peer is a
//! listed proxy is taken to come from the address its `X-Forwarded-For` names last that is not
//! itself a trusted proxy (the address the nearest untrusted hop connected from); any other
//! request's header is ignored, since a client can write whatever it likes there. The guard
//! puts that address in the request's `ConnectInfo`, so every later reader sees the client.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::extract::Request;

/// The client address of a request that came from `peer`, given the trusted proxies.
pub(crate) fn client(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[String]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| {
        trusted
            .iter()
            .any(|t| t.trim().parse::<IpAddr>().ok() == Some(*ip))
    };
    if !is_trusted(&peer) {
        return peer;
    }
    let Some(header) = forwarded_for else {
        return peer;
    };
    let mut hops = header.split(',').map(str::trim).rev();
    let mut client = peer;
    for hop in hops.by_ref() {
        let Ok(ip) = hop.parse::<IpAddr>() else {
            // A hop that is not an address: nothing before it can be believed.
            return client;
        };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    client
}

/// Rewrites the request's peer to its client when it came through a trusted proxy.
pub(crate) fn rewrite(request: &mut Request, trusted: &[String]) {
    if trusted.is_empty() {
        return;
    }
    let Some(ConnectInfo(peer)) = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .copied()
    else {
        return;
    };
    let header = request
        .headers()
        .get("x-forwarded-for")
        .and_then(|v| v.to_str().ok());
    let ip = client(peer.ip(), header, trusted);
    if ip != peer.ip() {
        request
            .extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(ip, peer.port())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]))
    }

    #[test]
    fn only_a_trusted_proxys_header_is_believed_and_only_up_to_the_first_untrusted_hop() {
        let trusted = ["127.0.0.1".to_string(), "10.0.0.2".to_string()];
        // Not through a proxy: the header is the client's own words.
        assert_eq!(
            client(ip("203.0.113.9"), Some("198.51.100.1"), &trusted),
            ip("203.0.113.9")
        );
        // Through the proxy: the last hop it added.
        assert_eq!(
            client(ip("127.0.0.1"), Some("198.51.100.1"), &trusted),
            ip("198.51.100.1")
        );
        // A client-written first entry is skipped: the nearest untrusted hop counts.
        assert_eq!(
            client(
                ip("127.0.0.1"),
                Some("6.6.6.6, 198.51.100.1, 10.0.0.2"),
                &trusted
            ),
            ip("198.51.100.1")
        );
        // No header, or garbage in it: the proxy itself, or the last address believed.
        assert_eq!(client(ip("127.0.0.1"), None, &trusted), ip("127.0.0.1"));
        assert_eq!(
            client(ip("127.0.0.1"), Some("not-an-ip"), &trusted),
            ip("127.0.0.1")
        );
        // Nothing trusted: nothing believed.
        assert_eq!(
            client(ip("127.0.0.1"), Some("198.51.100.1"), &[]),
            ip("127.0.0.1")
        );
    }
}
