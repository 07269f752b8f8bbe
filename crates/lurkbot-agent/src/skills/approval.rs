//! Which skills the owner approved (ARCHITECTURE.md §7): a SKILL.md reaches every prompt, so a
//! skill is offered only when its text is one the owner approved — the bundled skills as
//! compiled in, anything else after `lurkbot skills approve NAME`. LurkBot cannot tell who
//! wrote a file (the owner by hand, a tool, an extracted archive), so it asks once per content:
//! a skill whose SKILL.md changes is pending again. The decisions are kept by path and SHA-256
//! in `skills-approved.json` at the home's root, state that only the owner's command writes.

use std::collections::BTreeMap;

use lurkbot_core::{CoreError, Home, write_atomic};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The approvals file, home-relative.
pub use lurkbot_core::SKILL_APPROVALS_FILE;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Approved {
    /// Home-relative SKILL.md path → the SHA-256 (hex) of the approved text.
    approved: BTreeMap<String, String>,
}

fn load(home: &Home) -> Approved {
    std::fs::read(home.join(SKILL_APPROVALS_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// The SHA-256 of `text`, in hex.
pub(crate) fn digest(text: &[u8]) -> String {
    Sha256::digest(text)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The approved digests by path.
pub(crate) fn approved(home: &Home) -> BTreeMap<String, String> {
    load(home).approved
}

/// Approves the text `digest` of the SKILL.md at `path` (home-relative).
///
/// # Errors
/// The file cannot be written.
pub fn approve(home: &Home, path: &str, digest: &str) -> Result<(), CoreError> {
    let mut approved = load(home);
    approved
        .approved
        .insert(path.to_string(), digest.to_string());
    let bytes = serde_json::to_vec_pretty(&approved)
        .map_err(|e| CoreError::io("encode", SKILL_APPROVALS_FILE, std::io::Error::other(e)))?;
    write_atomic(&home.join(SKILL_APPROVALS_FILE), &bytes)
}
