//! Requests to the web (ARCHITECTURE.md §5.1 → §4.6). What a request may reach depends on where
//! its URL came from, not on which tool carries it: a URL the owner wrote in `config.toml` or
//! `.env` (a search provider, a homeserver) goes where it says; every other URL — a tool
//! argument, a search result, a channel's file link, a page's redirect — is checked on every hop
//! against the network policy, whoever asked, because text a model read can put it there.
//!
//! Every fetcher in the agent and the gateway takes its rules from [`web_rules`]; the structure
//! test `network_rules_come_from_the_gate` keeps `NetworkPolicy::from_config` out of them.

use lurkbot_core::Config;
use lurkbot_term::NetworkPolicy;

/// Where a URL to fetch came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlFrom {
    /// The owner's settings (`config.toml`, `.env`): not filtered (§4.6).
    Settings,
    /// Anywhere else: a tool argument, a search result, a channel attachment, a redirect.
    Elsewhere,
}

/// The rules a request whose URL came `from` there is held to.
pub fn web_rules(from: UrlFrom, config: &Config) -> NetworkPolicy {
    match from {
        UrlFrom::Settings => NetworkPolicy {
            allow_private: true,
            allow_hosts: Vec::new(),
        },
        UrlFrom::Elsewhere => NetworkPolicy::from_config(config),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_the_owners_settings_reach_private_addresses() {
        let config = Config::default();
        let url = reqwest::Url::parse("http://127.0.0.1:9/").unwrap_or_else(|_| unreachable!());
        assert!(
            web_rules(UrlFrom::Settings, &config)
                .check(&url)
                .await
                .is_ok()
        );
        let refused = web_rules(UrlFrom::Elsewhere, &config).check(&url).await;
        assert!(
            matches!(&refused, Err(e) if e.to_string().contains("allow_private")),
            "{refused:?}"
        );
        let mut open = Config::default();
        open.network.allow_hosts = vec!["127.0.0.1:9".into()];
        assert!(
            web_rules(UrlFrom::Elsewhere, &open)
                .check(&url)
                .await
                .is_ok()
        );
    }
}
