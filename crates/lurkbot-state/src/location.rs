//! Where the state lives: the home's embedded store (the default), or a PostgreSQL database
//! that several gateways share, named by `[state] url` in `config.toml` or
//! `LURKBOT_STATE_URL` (the environment, or the home's `.env`).
//!
//! The password is a secret: `config.toml` may not carry one (it is read by tools and shown by
//! `config get`); it comes with `LURKBOT_STATE_URL` or as `LURKBOT_STATE_PASSWORD`, from the
//! environment or `.env`. Everything this crate prints names the database without it.
//!
//! TLS: `sslmode=disable` connects in the clear; `prefer` uses TLS when the server offers it;
//! `require`, `verify-ca` and `verify-full` insist on it. Whenever TLS is used the server's
//! certificate is verified — against the system's roots, or the CA file `sslrootcert=<path>`
//! names — and its name checked (libpq's `verify-full`; libpq's weaker `require`, which trusts any
//! certificate, is not offered). Without `sslmode`, a database on a loopback address or a Unix
//! socket is reached in the clear and any other over verified TLS.

use std::net::IpAddr;
use std::path::PathBuf;

use crate::StateError;

/// The variable naming the database (with its password, if it needs one).
pub const STATE_URL_VAR: &str = "LURKBOT_STATE_URL";
/// The variable holding the password for `[state] url`.
pub const STATE_PASSWORD_VAR: &str = "LURKBOT_STATE_PASSWORD";

/// Where a home's state is kept.
#[derive(Debug, Clone)]
pub enum Location {
    /// `state/state.sqlite` in the home.
    Embedded,
    /// A PostgreSQL database.
    Postgres(Box<StateUrl>),
}

impl Location {
    /// The location `[state] url` (`config_url`) and the variables (`var`: the environment,
    /// then the home's `.env`) name; `LURKBOT_STATE_URL` wins over `[state] url`.
    ///
    /// # Errors
    /// [`StateError::Url`]: a URL that is not a PostgreSQL one, or a password in
    /// `config.toml`.
    pub fn resolve(
        config_url: Option<&str>,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, StateError> {
        let from_var = var(STATE_URL_VAR).filter(|u| !u.trim().is_empty());
        let (text, source) = match (&from_var, config_url.filter(|u| !u.trim().is_empty())) {
            (Some(url), _) => (url.trim().to_string(), STATE_URL_VAR),
            (None, Some(url)) => (url.trim().to_string(), "[state] url"),
            (None, None) => return Ok(Self::Embedded),
        };
        let mut url = StateUrl::parse(&text).map_err(|e| match e {
            StateError::Url(reason) => StateError::Url(format!("{source}: {reason}")),
            other => other,
        })?;
        if from_var.is_none() && url.config.get_password().is_some() {
            return Err(StateError::Url(format!(
                "[state] url in config.toml carries a password: remove it and put it in the home's .env as {STATE_PASSWORD_VAR} (or the whole URL as {STATE_URL_VAR})"
            )));
        }
        if url.config.get_password().is_none()
            && let Some(password) = var(STATE_PASSWORD_VAR).filter(|p| !p.is_empty())
        {
            url.config.password(password);
        }
        Ok(Self::Postgres(Box::new(url)))
    }
}

/// A PostgreSQL database to connect to: its connection settings (password included) and how
/// it is shown (without it).
#[derive(Clone)]
pub struct StateUrl {
    pub(crate) config: postgres::Config,
    pub(crate) tls: Tls,
    shown: String,
}

/// How the connection is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tls {
    /// In the clear.
    Off,
    /// TLS, the server's certificate verified against the system's roots or `roots`.
    Verified {
        /// The CA file `sslrootcert` names.
        roots: Option<PathBuf>,
    },
}

impl std::fmt::Debug for StateUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StateUrl({})", self.shown)
    }
}

impl std::fmt::Display for StateUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl StateUrl {
    /// Reads `postgres://user[:password]@host[:port]/database[?sslmode=…&sslrootcert=…]`.
    ///
    /// # Errors
    /// [`StateError::Url`] saying what is wrong (never repeating the password).
    pub fn parse(text: &str) -> Result<Self, StateError> {
        let bad = |why: &str| StateError::Url(why.to_string());
        let mut url = url::Url::parse(text).map_err(|e| {
            StateError::Url(format!(
                "not a URL ({e}): write postgres://user@host:5432/database"
            ))
        })?;
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(bad(
                "the state URL must start with postgres:// (write postgres://user@host:5432/database)",
            ));
        }
        if url.path().trim_start_matches('/').is_empty() {
            return Err(bad(
                "the state URL names no database: add one after the host (postgres://user@host/lurkbot)",
            ));
        }
        let mut mode = None;
        let mut roots = None;
        let mut socket_host = false;
        let mut kept = Vec::new();
        for (key, value) in url.query_pairs() {
            match &*key {
                "sslmode" => mode = Some(value.into_owned()),
                "sslrootcert" => roots = Some(PathBuf::from(value.into_owned())),
                "host" if value.starts_with('/') => {
                    socket_host = true;
                    kept.push((key.into_owned(), value.into_owned()));
                }
                _ => kept.push((key.into_owned(), value.into_owned())),
            }
        }
        let local = socket_host
            || url.host_str().is_none_or(|h| {
                h.is_empty()
                    || h.eq_ignore_ascii_case("localhost")
                    || h.trim_matches(['[', ']'])
                        .parse::<IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            });
        let (tls, wire_mode) = match mode.as_deref() {
            Some("disable") => (Tls::Off, "disable"),
            Some("allow" | "prefer") => (Tls::Verified { roots }, "prefer"),
            Some("require" | "verify-ca" | "verify-full") => (Tls::Verified { roots }, "require"),
            Some(other) => {
                return Err(StateError::Url(format!(
                    "sslmode '{other}' is not known: use disable, prefer, require, verify-ca or verify-full"
                )));
            }
            None if local && roots.is_none() => (Tls::Off, "disable"),
            None => (Tls::Verified { roots }, "require"),
        };
        kept.push(("sslmode".to_string(), wire_mode.to_string()));
        url.query_pairs_mut().clear().extend_pairs(&kept);
        let config: postgres::Config = url.as_str().parse().map_err(|e| {
            StateError::Url(format!(
                "the state URL cannot be used: {e} (write postgres://user@host:5432/database)"
            ))
        })?;
        let mut shown = url.clone();
        let _ = shown.set_password(None);
        let shown = shown.to_string();
        Ok(Self { config, tls, shown })
    }

    /// Whether the URL carries a password.
    pub fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }

    /// Whether the connection will use TLS.
    pub fn tls(&self) -> bool {
        self.tls != Tls::Off
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn no_url_is_the_embedded_store() {
        assert!(matches!(
            Location::resolve(None, &none),
            Ok(Location::Embedded)
        ));
        assert!(matches!(
            Location::resolve(Some("  "), &none),
            Ok(Location::Embedded)
        ));
    }

    #[test]
    fn a_password_is_never_shown_and_never_taken_from_config() {
        let url = StateUrl::parse("postgres://lurk:s3cret-pw@db.example:5433/lb").unwrap();
        assert_eq!(
            url.to_string(),
            "postgres://lurk@db.example:5433/lb?sslmode=require"
        );
        assert!(!format!("{url:?}").contains("s3cret-pw"));
        let refused =
            Location::resolve(Some("postgres://lurk:s3cret-pw@db.example/lb"), &none).unwrap_err();
        assert!(
            refused.to_string().contains(STATE_PASSWORD_VAR),
            "{refused}"
        );
        assert!(!refused.to_string().contains("s3cret-pw"), "{refused}");
        let vars = |name: &str| (name == STATE_PASSWORD_VAR).then(|| "from-env".to_string());
        let Ok(Location::Postgres(url)) =
            Location::resolve(Some("postgres://lurk@db.example/lb"), &vars)
        else {
            panic!("a URL with its password from .env")
        };
        assert_eq!(url.config.get_password(), Some(&b"from-env"[..]));
    }

    #[test]
    fn the_variable_wins_over_config() {
        let vars =
            |name: &str| (name == STATE_URL_VAR).then(|| "postgres://a:pw@127.0.0.1/x".to_string());
        let Ok(Location::Postgres(url)) = Location::resolve(Some("postgres://b@10.0.0.1/y"), &vars)
        else {
            panic!("the variable's database")
        };
        assert_eq!(url.to_string(), "postgres://a@127.0.0.1/x?sslmode=disable");
        assert_eq!(url.config.get_password(), Some(&b"pw"[..]));
    }

    #[test]
    fn tls_is_verified_off_loopback_by_default() {
        let remote = StateUrl::parse("postgres://u@db.example/x").unwrap();
        assert_eq!(remote.tls, Tls::Verified { roots: None });
        let local = StateUrl::parse("postgresql://u@localhost:5432/x").unwrap();
        assert_eq!(local.tls, Tls::Off);
        let socket = StateUrl::parse("postgres:///x?host=/run/postgresql&user=u").unwrap();
        assert_eq!(socket.tls, Tls::Off);
        let pinned =
            StateUrl::parse("postgres://u@127.0.0.1/x?sslmode=verify-full&sslrootcert=/ca.pem")
                .unwrap();
        assert_eq!(
            pinned.tls,
            Tls::Verified {
                roots: Some(PathBuf::from("/ca.pem"))
            }
        );
        assert!(!pinned.to_string().contains("sslrootcert"));
    }

    #[test]
    fn bad_urls_say_what_to_write() {
        for (text, says) in [
            ("mysql://u@h/x", "postgres://"),
            ("postgres://u@h", "names no database"),
            ("postgres://u@h/x?sslmode=maybe", "sslmode 'maybe'"),
            ("not a url", "not a URL"),
        ] {
            let e = StateUrl::parse(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
