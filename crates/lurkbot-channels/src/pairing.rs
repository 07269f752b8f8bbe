//! Pairing (`dm_policy = "pairing"`): an unknown sender gets a one-time code and nothing else;
//! the owner approves it (`lurkbot pairing approve <channel> <code>`, or the web UI) and the
//! sender is answered from then on. The state is `channels/pairing.json` in the home, written
//! atomically under a lock (the gateway adds requests while the CLI approves them). A code
//! expires after an hour, and a channel holds at most three pending requests (OpenClaw's
//! limits): a flood of strangers cannot grow the file. With the home's state in PostgreSQL the
//! same file is the store's document `channels/pairing.json`, each change one transaction
//! (ARCHITECTURE.md §6.3): every gateway pairs and answers the same senders.

use std::path::PathBuf;

use lurkbot_core::{CoreError, Home, layout};
use serde::{Deserialize, Serialize};

/// How long a code stays valid.
pub const CODE_TTL_MS: u64 = 60 * 60 * 1000;
/// Most pending requests per channel.
pub const MAX_PENDING: usize = 3;
/// Code letters: no 0/O, 1/I/L, so a code read aloud or retyped survives.
const ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// A request waiting for the owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingPairing {
    /// The channel.
    pub channel: String,
    /// The sender's platform id.
    pub sender: String,
    /// Their display name.
    pub name: String,
    /// The one-time code they were sent.
    pub code: String,
    /// When, ms since the epoch.
    pub requested_at_ms: u64,
}

/// A sender the owner approved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approved {
    /// The channel.
    pub channel: String,
    /// The sender's platform id.
    pub sender: String,
    /// Their display name when approved.
    pub name: String,
    /// When, ms since the epoch.
    pub approved_at_ms: u64,
    /// On a shared gateway, the user who approved it: the sender is theirs, and talks to
    /// their agent (ARCHITECTURE.md §6.2). `None`: the gateway owner's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    #[serde(default)]
    pending: Vec<PendingPairing>,
    #[serde(default)]
    approved: Vec<Approved>,
}

/// A pairing failure.
#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    /// No pending request has that code on that channel.
    #[error(
        "no pending pairing {code} on {channel} (`lurkbot pairing list` shows them; codes expire after an hour)"
    )]
    NotFound {
        /// The channel.
        channel: String,
        /// The code.
        code: String,
    },
    /// The state file could not be read or written.
    #[error(transparent)]
    Io(#[from] CoreError),
    /// The state store (PostgreSQL) failed.
    #[error(transparent)]
    State(#[from] lurkbot_state::StateError),
    /// The state file is not what LurkBot writes.
    #[error("{path}: {message} (move it aside; pairings start again)")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

/// The pairings' document in a shared store: the file's path in the home.
const DOC: &str = "channels/pairing.json";

fn parse(bytes: &[u8], path: &std::path::Path) -> Result<State, PairingError> {
    serde_json::from_slice(bytes).map_err(|e| PairingError::Corrupt {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// The home's pairings.
#[derive(Debug, Clone)]
pub struct PairingStore {
    dir: PathBuf,
    home: Home,
}

/// What [`PairingStore::request`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requested {
    /// A new code, to be sent to the sender.
    New(String),
    /// The sender already has a pending code (not sent again).
    Pending,
    /// The channel already holds [`MAX_PENDING`] requests: ignored.
    Full,
}

impl PairingStore {
    /// The store of `home`.
    pub fn open(home: &Home) -> Self {
        Self {
            dir: home.join(layout::CHANNELS),
            home: home.clone(),
        }
    }

    /// The home it belongs to.
    pub fn home(&self) -> &Home {
        &self.home
    }

    fn path(&self) -> PathBuf {
        self.dir.join("pairing.json")
    }

    fn lock(&self) -> Result<std::fs::File, PairingError> {
        lurkbot_core::create_private_dir(&self.dir)?;
        let path = self.dir.join("pairing.lock");
        let file = lurkbot_core::open_private_append(&path)
            .map_err(|e| CoreError::io("open", &path, e))?;
        file.lock().map_err(|e| CoreError::io("lock", &path, e))?;
        Ok(file)
    }

    fn read(&self) -> Result<State, PairingError> {
        let path = self.path();
        if let Some(store) = lurkbot_state::shared::of(&self.home) {
            return match store.document(DOC)? {
                Some(text) => parse(text.as_bytes(), &path),
                None => Ok(State::default()),
            };
        }
        match std::fs::read(&path) {
            Ok(bytes) => parse(&bytes, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => Err(CoreError::io("read", &path, e).into()),
        }
    }

    fn write(&self, state: &State) -> Result<(), PairingError> {
        let bytes = serde_json::to_vec_pretty(state).map_err(|e| PairingError::Corrupt {
            path: self.path().display().to_string(),
            message: e.to_string(),
        })?;
        lurkbot_core::write_atomic_with_mode(&self.path(), &bytes, 0o600)?;
        Ok(())
    }

    /// Changes the state under the lock, expired requests dropped first.
    fn change<T: Send + 'static>(
        &self,
        now_ms: u64,
        f: impl FnOnce(&mut State) -> Result<T, PairingError> + Send + 'static,
    ) -> Result<T, PairingError> {
        if let Some(store) = lurkbot_state::shared::of(&self.home) {
            let path = self.path();
            let shown = path.clone();
            return store
                .edit_value(
                    DOC,
                    move |text| text.map_or(Ok(State::default()), |t| parse(t.as_bytes(), &path)),
                    move |state| {
                        state
                            .pending
                            .retain(|p| now_ms.saturating_sub(p.requested_at_ms) < CODE_TTL_MS);
                        f(state)
                    },
                    move |state| {
                        serde_json::to_string_pretty(state).map_err(|e| PairingError::Corrupt {
                            path: shown.display().to_string(),
                            message: e.to_string(),
                        })
                    },
                )?
                .map(|(value, _)| value);
        }
        let _lock = self.lock()?;
        let mut state = self.read()?;
        state
            .pending
            .retain(|p| now_ms.saturating_sub(p.requested_at_ms) < CODE_TTL_MS);
        let out = f(&mut state)?;
        self.write(&state)?;
        Ok(out)
    }

    /// The requests waiting (expired ones left out).
    ///
    /// # Errors
    /// The state file failing.
    pub fn pending(&self, now_ms: u64) -> Result<Vec<PendingPairing>, PairingError> {
        let mut state = self.read()?;
        state
            .pending
            .retain(|p| now_ms.saturating_sub(p.requested_at_ms) < CODE_TTL_MS);
        Ok(state.pending)
    }

    /// Whether `sender` was approved on `channel`.
    ///
    /// # Errors
    /// The state file failing.
    pub fn is_approved(&self, channel: &str, sender: &str) -> Result<bool, PairingError> {
        Ok(self
            .read()?
            .approved
            .iter()
            .any(|a| a.channel == channel && a.sender == sender))
    }

    /// Records a request from `sender` (a code with `random` letters for a new one).
    ///
    /// # Errors
    /// The state file failing.
    pub fn request(
        &self,
        channel: &str,
        sender: &str,
        name: &str,
        now_ms: u64,
    ) -> Result<Requested, PairingError> {
        let (channel, sender, name) = (channel.to_string(), sender.to_string(), name.to_string());
        self.change(now_ms, move |state| {
            let mine = |p: &&PendingPairing| p.channel == channel;
            if state
                .pending
                .iter()
                .filter(mine)
                .any(|p| p.sender == sender)
            {
                return Ok(Requested::Pending);
            }
            if state.pending.iter().filter(mine).count() >= MAX_PENDING {
                return Ok(Requested::Full);
            }
            let code = new_code();
            state.pending.push(PendingPairing {
                channel: channel.clone(),
                sender: sender.clone(),
                name: lurkbot_core::printable(&name).chars().take(64).collect(),
                code: code.clone(),
                requested_at_ms: now_ms,
            });
            Ok(Requested::New(code))
        })
    }

    /// Approves the request with `code` on `channel`: its sender is answered from now on.
    ///
    /// # Errors
    /// [`PairingError::NotFound`] for an unknown or expired code; the state file failing.
    pub fn approve(
        &self,
        channel: &str,
        code: &str,
        now_ms: u64,
    ) -> Result<PendingPairing, PairingError> {
        self.approve_for(channel, code, now_ms, None)
    }

    /// [`PairingStore::approve`] by `user` of a shared gateway (`None`: the owner): the sender
    /// belongs to that user from now on (an earlier approval of the same sender is replaced).
    ///
    /// # Errors
    /// As [`PairingStore::approve`].
    pub fn approve_for(
        &self,
        channel: &str,
        code: &str,
        now_ms: u64,
        user: Option<&str>,
    ) -> Result<PendingPairing, PairingError> {
        let (channel, code, user) = (
            channel.to_string(),
            code.to_string(),
            user.map(str::to_string),
        );
        self.change(now_ms, move |state| {
            let request = take(state, &channel, &code)?;
            state
                .approved
                .retain(|a| !(a.channel == request.channel && a.sender == request.sender));
            state.approved.push(Approved {
                channel: request.channel.clone(),
                sender: request.sender.clone(),
                name: request.name.clone(),
                approved_at_ms: now_ms,
                user,
            });
            Ok(request)
        })
    }

    /// The user of a shared gateway `sender` on `channel` belongs to, if a user (not the
    /// owner) approved them.
    ///
    /// # Errors
    /// The state file failing.
    pub fn user_of(&self, channel: &str, sender: &str) -> Result<Option<String>, PairingError> {
        Ok(self
            .read()?
            .approved
            .into_iter()
            .find(|a| a.channel == channel && a.sender == sender)
            .and_then(|a| a.user))
    }

    /// Refuses the request with `code` on `channel` (the sender may ask again later).
    ///
    /// # Errors
    /// [`PairingError::NotFound`] for an unknown or expired code; the state file failing.
    pub fn deny(
        &self,
        channel: &str,
        code: &str,
        now_ms: u64,
    ) -> Result<PendingPairing, PairingError> {
        let (channel, code) = (channel.to_string(), code.to_string());
        self.change(now_ms, move |state| take(state, &channel, &code))
    }
}

fn take(state: &mut State, channel: &str, code: &str) -> Result<PendingPairing, PairingError> {
    let code = code.trim().to_ascii_uppercase();
    let at = state
        .pending
        .iter()
        .position(|p| p.channel == channel && p.code == code)
        .ok_or_else(|| PairingError::NotFound {
            channel: channel.into(),
            code: code.clone(),
        })?;
    Ok(state.pending.remove(at))
}

/// Eight letters from [`ALPHABET`].
fn new_code() -> String {
    let hex = lurkbot_core::random_hex(8);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| {
            let byte =
                u8::from_str_radix(std::str::from_utf8(pair).unwrap_or("00"), 16).unwrap_or(0);
            char::from(ALPHABET[usize::from(byte) % ALPHABET.len()])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_approved_once_and_codes_expire_and_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let store = PairingStore::open(&home);
        let Requested::New(code) = store.request("telegram", "42", "Ada", 1_000).unwrap() else {
            panic!("a new code");
        };
        assert_eq!(code.len(), 8);
        assert!(code.bytes().all(|b| ALPHABET.contains(&b)), "{code}");
        assert_eq!(
            store.request("telegram", "42", "Ada", 2_000).unwrap(),
            Requested::Pending
        );
        assert!(!store.is_approved("telegram", "42").unwrap());
        assert!(matches!(
            store.approve("telegram", "NOPE2345", 3_000),
            Err(PairingError::NotFound { .. })
        ));
        let approved = store
            .approve("telegram", &code.to_lowercase(), 3_000)
            .unwrap();
        assert_eq!(approved.sender, "42");
        assert!(store.is_approved("telegram", "42").unwrap());
        assert!(!store.is_approved("matrix", "42").unwrap(), "per channel");
        assert!(store.approve("telegram", &code, 4_000).is_err(), "one-time");

        for sender in ["a", "b", "c"] {
            assert!(matches!(
                store.request("telegram", sender, "", 5_000).unwrap(),
                Requested::New(_)
            ));
        }
        assert_eq!(
            store.request("telegram", "d", "", 5_000).unwrap(),
            Requested::Full
        );
        assert_eq!(store.pending(5_000).unwrap().len(), 3);
        // An hour later they are gone and a new one fits.
        let later = 5_000 + CODE_TTL_MS;
        assert!(store.pending(later).unwrap().is_empty());
        assert!(matches!(
            store.request("telegram", "d", "", later).unwrap(),
            Requested::New(_)
        ));
        let denied = store.pending(later).unwrap()[0].code.clone();
        store.deny("telegram", &denied, later).unwrap();
        assert!(!store.is_approved("telegram", "d").unwrap());
    }
}
