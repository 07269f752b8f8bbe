//! `host[:port]` as written in a `Host` header, an origin or a setting such as
//! `network.allow_hosts`: `name`, `name:port`, `v4:port`, `[v6]:port`, `[v6]`, or a bare v6.

/// The host (without brackets) and the port, if one is given and valid.
pub fn split_host_port(text: &str) -> (&str, Option<u16>) {
    if let Some(rest) = text.strip_prefix('[') {
        let (name, tail) = rest.split_once(']').unwrap_or((rest, ""));
        return (name, tail.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match text.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => (name, port.parse().ok()),
        _ => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form() {
        assert_eq!(split_host_port("lurk.lan"), ("lurk.lan", None));
        assert_eq!(split_host_port("lurk.lan:8080"), ("lurk.lan", Some(8080)));
        assert_eq!(split_host_port("127.0.0.1:1"), ("127.0.0.1", Some(1)));
        assert_eq!(split_host_port("[::1]:9"), ("::1", Some(9)));
        assert_eq!(split_host_port("[::1]"), ("::1", None));
        assert_eq!(split_host_port("::1"), ("::1", None));
        assert_eq!(split_host_port("host:notaport"), ("host", None));
    }
}
