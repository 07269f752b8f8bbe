//! Operator scopes (OpenClaw's names): what a connection may do. Every method declares the one
//! it needs. A client that lists `scopes` in its `connect` request gets only those (a read-only
//! dashboard cannot start turns or run commands); a client that lists none gets them all.
//! `operator.admin` includes every other scope and `operator.write` includes `operator.read`.

/// One scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Reading status, sessions and history.
    Read,
    /// Starting and aborting turns, running terminal commands.
    Write,
    /// Resetting and deleting sessions.
    Admin,
    /// Answering approval requests.
    Approvals,
    /// Reading and answering the agent's questions (OpenClaw's; LurkBot's list is empty).
    Questions,
    /// Listing, approving and rejecting devices that ask to join as nodes.
    Pairing,
}

impl Scope {
    /// Every scope.
    pub const ALL: &[Self] = &[
        Self::Read,
        Self::Write,
        Self::Admin,
        Self::Approvals,
        Self::Questions,
        Self::Pairing,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "operator.read",
            Self::Write => "operator.write",
            Self::Admin => "operator.admin",
            Self::Approvals => "operator.approvals",
            Self::Questions => "operator.questions",
            Self::Pairing => "operator.pairing",
        }
    }

    /// The scope a wire name names, if any.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.as_str() == name)
    }
}

/// The scopes granted to one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grants(Vec<Scope>);

impl Grants {
    /// Every scope (a client that asked for none).
    pub fn all() -> Self {
        Self(Scope::ALL.to_vec())
    }

    /// No scope (a node).
    pub fn none() -> Self {
        Self(Vec::new())
    }

    /// The scopes named in `connect`'s `scopes` (unknown names are ignored); every scope when
    /// the field is absent (or null).
    ///
    /// # Errors
    /// `scopes` is there but not a list of strings (a string would otherwise grant nothing
    /// or, read leniently, everything): the connect is refused.
    pub fn from_connect(scopes: Option<&serde_json::Value>) -> Result<Self, String> {
        match scopes {
            None | Some(serde_json::Value::Null) => Ok(Self::all()),
            Some(serde_json::Value::Array(names)) => names
                .iter()
                .map(|n| {
                    n.as_str()
                        .ok_or_else(|| "every entry of `scopes` must be a string".to_string())
                })
                .filter_map(|n| n.map(Scope::parse).transpose())
                .collect::<Result<Vec<_>, _>>()
                .map(Self),
            Some(_) => {
                Err("`scopes` must be a list of scope names, e.g. [\"operator.read\"]".to_string())
            }
        }
    }

    /// Whether `needed` is granted (directly or through a wider scope).
    pub fn allows(&self, needed: Scope) -> bool {
        self.0.iter().any(|g| {
            *g == needed || *g == Scope::Admin || (*g == Scope::Write && needed == Scope::Read)
        })
    }

    /// The granted names, for `hello-ok`.
    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|s| s.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wider_scopes_include_narrower_ones_and_absence_grants_all() {
        let grants = |v| Grants::from_connect(Some(&v)).unwrap_or(Grants(Vec::new()));
        let read = grants(json!(["operator.read", "bogus"]));
        assert!(read.allows(Scope::Read));
        assert!(!read.allows(Scope::Write) && !read.allows(Scope::Approvals));
        let write = grants(json!(["operator.write"]));
        assert!(write.allows(Scope::Read) && !write.allows(Scope::Admin));
        let admin = grants(json!(["operator.admin"]));
        assert!(Scope::ALL.iter().all(|s| admin.allows(*s)));
        assert_eq!(Grants::from_connect(None), Ok(Grants::all()));
        assert!(!grants(json!([])).allows(Scope::Read));
        for bad in [
            json!("operator.admin"),
            json!({"operator.admin": true}),
            json!([1]),
        ] {
            assert!(Grants::from_connect(Some(&bad)).is_err(), "{bad}");
        }
    }
}
