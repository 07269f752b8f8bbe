//! What each channel needs from the home's `.env` before it can start — said once, for
//! `lurkbot doctor` (an enabled channel without its credentials is flagged before the gateway
//! runs) and the gateway's own refusal to start it.

/// The variables channel `name` needs in `mode` (`[channels.<name>] mode`): alternatives,
/// each a set needed whole (Matrix takes an access token, or a user and a password). Empty for
/// a channel with no secret (IRC's live in its skill's `.env`; WhatsApp's linked device keeps
/// its keys in the state store) or an unknown one.
pub fn required_variables(name: &str, mode: Option<&str>) -> &'static [&'static [&'static str]] {
    match name {
        "whatsapp" if mode != Some("cloud") => &[],
        "telegram" => &[&["TELEGRAM_BOT_TOKEN"]],
        "discord" => &[&["DISCORD_BOT_TOKEN"]],
        "slack" => &[&["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"]],
        "email" => &[&[
            "EMAIL_IMAP_URL",
            "EMAIL_SMTP_URL",
            "EMAIL_USER",
            "EMAIL_PASSWORD",
            "EMAIL_FROM",
        ]],
        "whatsapp" => &[&[
            "WHATSAPP_ACCESS_TOKEN",
            "WHATSAPP_APP_SECRET",
            "WHATSAPP_VERIFY_TOKEN",
        ]],
        "matrix" => &[
            &["MATRIX_ACCESS_TOKEN"],
            &["MATRIX_USER", "MATRIX_PASSWORD"],
        ],
        _ => &[],
    }
}

/// What channel `name` (in `mode`) lacks, given which variables are set (`is_set`): `None` when one of its
/// alternatives is complete, else the sentence to show ("set TELEGRAM_BOT_TOKEN in the home's
/// .env").
pub fn missing_variables(
    name: &str,
    mode: Option<&str>,
    is_set: impl Fn(&str) -> bool,
) -> Option<String> {
    let ways = required_variables(name, mode);
    if ways.is_empty() || ways.iter().any(|way| way.iter().all(|v| is_set(v))) {
        return None;
    }
    let said: Vec<String> = ways
        .iter()
        .map(|way| {
            way.iter()
                .filter(|v| !is_set(v))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    Some(format!("set {} in the home's .env", said.join(" — or ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_lacking_its_variables_says_which() {
        let none = |_: &str| false;
        assert_eq!(
            missing_variables("telegram", None, none).as_deref(),
            Some("set TELEGRAM_BOT_TOKEN in the home's .env")
        );
        assert_eq!(
            missing_variables("slack", None, |v| v == "SLACK_BOT_TOKEN").as_deref(),
            Some("set SLACK_APP_TOKEN in the home's .env")
        );
        assert_eq!(
            missing_variables("matrix", None, none).as_deref(),
            Some("set MATRIX_ACCESS_TOKEN — or MATRIX_USER, MATRIX_PASSWORD in the home's .env")
        );
        assert!(
            missing_variables("matrix", None, |v| v.starts_with("MATRIX_U")
                || v == "MATRIX_PASSWORD")
            .is_none()
        );
        assert!(missing_variables("irc", None, none).is_none());
        // WhatsApp's Cloud API needs its tokens; the linked device (the default) none.
        assert!(missing_variables("whatsapp", None, none).is_none());
        assert!(missing_variables("whatsapp", Some("linked"), none).is_none());
        assert!(
            missing_variables("whatsapp", Some("cloud"), none)
                .is_some_and(|m| m.contains("WHATSAPP_APP_SECRET"))
        );
    }
}
