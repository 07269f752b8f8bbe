//! The owner's own accounts on a channel, as platform identities only (ARCHITECTURE.md §6.1):
//! `allow_from` lists user ids (Telegram's numeric id, a Discord or Slack user id, a full
//! Matrix id, an e-mail address), never display names. A Telegram `@username` in `allow_from`
//! is resolved to the numeric id of the first account seen with that username and stored in
//! `channels/owner-handles.json` (state): from then on only that id counts, so an account that
//! later takes the name, or a stranger whose first name is the same text, is not the owner.

use std::collections::BTreeMap;

use crate::{CoreError, Home, layout, write_atomic};

/// Where the resolved handles are kept, home-relative.
pub const OWNER_HANDLES_FILE: &str = "channels/owner-handles.json";

type Handles = BTreeMap<String, BTreeMap<String, String>>;

fn load(home: &Home) -> Handles {
    std::fs::read(home.join(OWNER_HANDLES_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// An `allow_from` entry as the platform writes the id: WhatsApp's are phone numbers without
/// the `+` (`+49 155 50001` and `4915550001` are the same account).
fn as_platform_id(channel: &str, entry: &str) -> String {
    if channel == "whatsapp" {
        let digits: String = entry
            .chars()
            .filter(|c| !matches!(c, '+' | ' ' | '-' | '(' | ')'))
            .collect();
        if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()) {
            return digits;
        }
    }
    entry.to_string()
}

/// The ids `allow_from` names on `channel`: its plain entries, and the stored id of each
/// `@handle` entry already resolved.
pub fn owner_ids(home: &Home, channel: &str, allow_from: &[String]) -> Vec<String> {
    let handles = load(home);
    let bound = handles.get(channel);
    allow_from
        .iter()
        .filter_map(|entry| match entry.strip_prefix('@') {
            Some(handle) if channel == "telegram" => bound
                .and_then(|b| b.get(&handle.to_ascii_lowercase()))
                .cloned(),
            _ => Some(as_platform_id(channel, entry)),
        })
        .collect()
}

/// Whether `sender` (a platform id) is one of the owner's accounts on `channel`. A sender
/// whose platform username is `handle` resolves an unresolved `@handle` entry to its id first
/// (Telegram only: its usernames are unique and not display names).
///
/// # Errors
/// The resolution cannot be stored (the sender is then not taken for the owner).
pub fn is_owner(
    home: &Home,
    channel: &str,
    allow_from: &[String],
    sender: &str,
    handle: Option<&str>,
) -> Result<bool, CoreError> {
    if allow_from
        .iter()
        .any(|a| a == sender || as_platform_id(channel, a) == sender)
    {
        return Ok(true);
    }
    let mut handles = load(home);
    let bound = handles.entry(channel.to_string()).or_default();
    for entry in allow_from {
        let Some(wanted) = entry.strip_prefix('@').map(str::to_ascii_lowercase) else {
            continue;
        };
        if channel != "telegram" {
            continue;
        }
        match bound.get(&wanted) {
            Some(id) if id == sender => return Ok(true),
            Some(_) => {}
            None if handle.is_some_and(|h| h.eq_ignore_ascii_case(&wanted)) => {
                bound.insert(wanted, sender.to_string());
                let bytes = serde_json::to_vec_pretty(&handles).map_err(|e| {
                    CoreError::io("encode", OWNER_HANDLES_FILE, std::io::Error::other(e))
                })?;
                let path = home.join(OWNER_HANDLES_FILE);
                crate::create_private_dir(&home.join(layout::CHANNELS))?;
                write_atomic(&path, &bytes)?;
                return Ok(true);
            }
            None => {}
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whatsapp_number_counts_with_or_without_its_plus() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let allow = vec!["+49 155 50001".to_string()];
        let is = |channel, sender| is_owner(&home, channel, &allow, sender, None).ok();
        assert_eq!(is("whatsapp", "4915550001"), Some(true));
        assert_eq!(is("whatsapp", "4915550002"), Some(false));
        assert_eq!(owner_ids(&home, "whatsapp", &allow), ["4915550001"]);
        // Elsewhere an entry is the id as written.
        assert_eq!(is("telegram", "4915550001"), Some(false));
    }

    #[test]
    fn a_handle_is_bound_to_the_first_id_and_names_never_count() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = Home::open(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let allow = vec!["@Alice_Owner".to_string(), "999".to_string()];
        let is = |sender, handle| is_owner(&home, "telegram", &allow, sender, handle).ok();
        // No username at all (a first name is not passed as a handle): not the owner.
        assert_eq!(is("66", None), Some(false));
        assert_eq!(owner_ids(&home, "telegram", &allow), ["999"]);
        assert_eq!(is("42", Some("alice_owner")), Some(true));
        assert_eq!(owner_ids(&home, "telegram", &allow), ["42", "999"]);
        // The name moved to another account: the stored id still decides.
        assert_eq!(is("77", Some("alice_owner")), Some(false));
        assert_eq!(is("42", None), Some(true));
        assert_eq!(is("999", None), Some(true));
        // Elsewhere a leading @ is part of an id (Matrix), never a handle to resolve.
        let matrix = vec!["@alice:example.org".to_string()];
        assert_eq!(
            is_owner(&home, "matrix", &matrix, "@alice:example.org", None).ok(),
            Some(true)
        );
        assert_eq!(
            is_owner(
                &home,
                "matrix",
                &matrix,
                "@eve:example.org",
                Some("alice:example.org")
            )
            .ok(),
            Some(false)
        );
    }
}
