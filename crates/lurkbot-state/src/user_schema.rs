//! Where a user's state lives on PostgreSQL: a schema of their own, named by the user's name
//! (its own encoding: two names never share one), and the rename of a schema an older build
//! named (ARCHITECTURE.md §6.3).

use crate::StateError;
use crate::postgres::{advisory_key, db};

/// The schema of user `user`'s state: `lurkbot_u_` and the name itself, always quoted. User
/// names are 1–32 of `a-z 0-9 - _` (checked where users are made), so the name is its own
/// encoding and two names never share a schema; a name outside that set (it cannot be made
/// through `users add`) is refused rather than mapped onto another's.
pub(crate) fn schema_for(user: &str) -> Result<String, StateError> {
    let fits = (1..=MAX_USER_CHARS).contains(&user.len())
        && user
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !fits {
        return Err(StateError::Postgres(format!(
            "'{user}' cannot name a user's schema: 1 to {MAX_USER_CHARS} of a-z 0-9 - _"
        )));
    }
    Ok(format!("{USER_SCHEMA_PREFIX}{user}"))
}

/// What every user's schema starts with.
pub(crate) const USER_SCHEMA_PREFIX: &str = "lurkbot_u_";

/// The longest user name a schema takes (PostgreSQL names are at most 63 bytes).
const MAX_USER_CHARS: usize = 48;

/// The schema builds before 2026-11-29 gave user `user`: the name with every character other
/// than a letter or digit made `_`, cut at 32, and 32 bits of its hash — two names could
/// share one. Renamed to [`schema_for`]'s at the user's first connection (`migrate`).
pub(crate) fn legacy_schema_for(user: &str) -> String {
    let safe: String = user
        .chars()
        .take(32)
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let hash = u64::from_ne_bytes(advisory_key(user).to_ne_bytes()) & 0xffff_ffff;
    format!("lurkbot_user_{safe}_{hash:08x}")
}

/// Renames `legacy` (a user's schema as builds before 2026-11-29 named it) to `schema`, once:
/// the first user to connect whose old name it was takes it (two crafted names that shared it
/// cannot be told apart; the second starts afresh).
pub(crate) fn adopt_legacy(
    tx: &mut postgres::Transaction<'_>,
    schema: &str,
    legacy: &str,
) -> Result<(), StateError> {
    let exists = |tx: &mut postgres::Transaction<'_>, name: &str| {
        tx.query_opt(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = $1",
            &[&name],
        )
        .map(|row| row.is_some())
        .map_err(db)
    };
    if !exists(tx, schema)? && exists(tx, legacy)? {
        tx.batch_execute(&format!("ALTER SCHEMA \"{legacy}\" RENAME TO \"{schema}\""))
            .map_err(db)?;
        tracing::info!(from = legacy, to = schema, "a user's schema renamed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_get_schemas_apart() {
        let of = |name: &str| schema_for(name).unwrap();
        assert_ne!(of("a-b"), of("a_b"));
        assert_eq!(of("ada"), "lurkbot_u_ada");
        assert!(of(&"x".repeat(48)).len() <= 63);
        // The two names the review found sharing one schema under the old mapping.
        let (one, two) = (
            "u_-_-_-_-__--___-----_____-_--_",
            "u__-__-_____--__--_--___--_--__",
        );
        assert_eq!(legacy_schema_for(one), legacy_schema_for(two));
        assert_ne!(of(one), of(two));
        for bad in ["", "Ada", "a\"b", "a b", &"x".repeat(49)] {
            assert!(schema_for(bad).is_err(), "{bad:?}");
        }
    }
}
