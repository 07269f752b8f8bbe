//! The devices that asked to join this gateway as nodes, and the owner's decision on each
//! (ARCHITECTURE.md §5.2): `devices/paired.json` in the home (0600, written atomically, state
//! only the gateway writes). A device is known by the id its key proves on every `connect`
//! ([`crate::protocol::device`]); its public key is kept, so the same id with another key is
//! refused. A new device is `pending` until the owner approves or rejects it.
//!
//! A file that cannot be read is never written over: the gateway then admits no node and says
//! why, and the owner repairs or removes the file.
//!
//! With the home's state in PostgreSQL the same file is the store's document
//! `devices/paired.json` (ARCHITECTURE.md §6.3): each admission or decision reads, changes and
//! writes it in one transaction — the pending cap holds across gateways — and every use reads it
//! again, so a device the owner approved through one gateway may serve through any.

use std::path::PathBuf;

use lurkbot_core::Home;
use serde::{Deserialize, Serialize};

use crate::protocol::device::ProvenDevice;

/// Most devices waiting for the owner at once: past it a new device is refused until the owner
/// approves or rejects some (a token holder cannot grow the store without bound).
pub const MAX_PENDING: usize = 64;

/// The store, relative to the home.
pub const DEVICES_FILE: &str = "devices/paired.json";

/// The owner's decision on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceState {
    /// Waiting for the owner.
    Pending,
    /// May serve as a node.
    Approved,
    /// Refused; its connects are refused until the owner approves it.
    Rejected,
}

impl DeviceState {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
        }
    }
}

/// One device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRecord {
    /// The device id (hex SHA-256 of its public key).
    pub id: String,
    /// Its Ed25519 public key, base64url.
    pub public_key: String,
    /// The name it gave (`client.displayName`, else `client.id`).
    pub name: String,
    /// `client.platform`.
    #[serde(default)]
    pub platform: String,
    /// `node` (the only role that needs pairing).
    pub role: String,
    /// What its last connect said it runs: `userAgent` (`lurkbot-node/0.1.0`), else
    /// `client.id` (OpenClaw's `node-host`).
    #[serde(default)]
    pub client: String,
    /// The owner's decision.
    pub state: DeviceState,
    /// When it first asked (ms since the epoch).
    pub requested_at_ms: u64,
    /// When the owner decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at_ms: Option<u64>,
    /// The commands it declared on its last connect.
    #[serde(default)]
    pub commands: Vec<String>,
    /// The commands the owner approved (those it declared when approved): a device that later
    /// declares more gets none of the new ones until the owner approves it again.
    #[serde(default)]
    pub approved_commands: Vec<String>,
    /// The capabilities it declared on its last connect.
    #[serde(default)]
    pub caps: Vec<String>,
}

impl DeviceRecord {
    /// The commands it may be sent: declared on its last connect and approved by the owner.
    pub fn usable_commands(&self) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| self.approved_commands.contains(c))
            .cloned()
            .collect()
    }

    /// Commands it declared that the owner has not approved yet (`devices approve` again).
    pub fn unapproved_commands(&self) -> Vec<String> {
        self.commands
            .iter()
            .filter(|c| !self.approved_commands.contains(c))
            .cloned()
            .collect()
    }

    /// The owner CLI's row: `{id, name, platform, role, state, requestedAtMs}`.
    /// `unapprovedCommands` is added for an approved device that declared more since.
    pub fn row(&self) -> serde_json::Value {
        let mut row = serde_json::json!({
            "id": self.id, "name": self.name, "platform": self.platform, "role": self.role,
            "state": self.state.as_str(), "requestedAtMs": self.requested_at_ms,
        });
        let more = self.unapproved_commands();
        if self.state == DeviceState::Approved && !more.is_empty() {
            row["unapprovedCommands"] = more.into();
        }
        row
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    devices: Vec<DeviceRecord>,
}

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// The file exists but cannot be read as a store.
    #[error(
        "{path} cannot be read ({reason}); no node is admitted until it is repaired or removed"
    )]
    Unreadable {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// Writing failed.
    #[error("{0}")]
    Write(String),
    /// No device matches.
    #[error("no device '{0}'; `lurkbot devices list` shows them")]
    Unknown(String),
    /// Several devices match a prefix or name.
    #[error("'{0}' names more than one device; give more of its id")]
    Ambiguous(String),
    /// Too many devices wait already.
    #[error(
        "{MAX_PENDING} devices already wait for the owner's approval; `lurkbot devices list` shows them, approve or reject some"
    )]
    TooManyPending,
    /// The id is known with another key.
    #[error("device {0} is paired with another public key; this connect is refused")]
    KeyMismatch(String),
}

/// The devices of one home, held in memory and written through.
#[derive(Debug)]
pub struct DeviceStore {
    path: PathBuf,
    home: Home,
    loaded: Result<Vec<DeviceRecord>, DeviceError>,
}

fn parse(bytes: &[u8]) -> Result<Vec<DeviceRecord>, DeviceError> {
    serde_json::from_slice::<File>(bytes)
        .map(|f| f.devices)
        .map_err(unreadable)
}

fn unreadable(e: impl std::fmt::Display) -> DeviceError {
    DeviceError::Unreadable {
        path: DEVICES_FILE.into(),
        reason: e.to_string(),
    }
}

impl DeviceStore {
    /// Reads the store of `home` (none yet is an empty store).
    pub fn open(home: &Home) -> Self {
        let path = home.join(DEVICES_FILE);
        let loaded = match std::fs::read(&path) {
            Ok(bytes) => parse(&bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(unreadable(e)),
        };
        let mut store = Self {
            path,
            home: home.clone(),
            loaded,
        };
        store.refresh();
        store
    }

    /// Reads the devices again from a shared store (another gateway may have changed them);
    /// nothing for the file, which only this gateway writes.
    pub fn refresh(&mut self) {
        if let Some(store) = lurkbot_state::shared::of(&self.home) {
            self.loaded = match store.document(DEVICES_FILE) {
                Ok(Some(text)) => parse(text.as_bytes()),
                Ok(None) => Ok(Vec::new()),
                Err(e) => Err(unreadable(e)),
            };
        }
    }

    /// Applies `change` to the devices and writes them: in one transaction of the shared
    /// store, or to the memory and the file.
    fn change<T: Send + 'static>(
        &mut self,
        change: impl FnOnce(&mut Vec<DeviceRecord>) -> Result<T, DeviceError> + Send + 'static,
    ) -> Result<T, DeviceError> {
        if let Some(store) = lurkbot_state::shared::of(&self.home) {
            let (value, list) = store
                .edit_value(
                    DEVICES_FILE,
                    |text| text.map_or(Ok(Vec::new()), |text| parse(text.as_bytes())),
                    change,
                    |list| {
                        serde_json::to_string_pretty(&serde_json::json!({"devices": list}))
                            .map_err(|e| DeviceError::Write(e.to_string()))
                    },
                )
                .map_err(|e| DeviceError::Write(e.to_string()))??;
            self.loaded = Ok(list);
            return Ok(value);
        }
        let list = self.loaded.as_mut().map_err(|e| e.clone())?;
        let value = change(list)?;
        self.save()?;
        Ok(value)
    }

    /// Every device, oldest request first.
    ///
    /// # Errors
    /// The file could not be read.
    pub fn list(&self) -> Result<&[DeviceRecord], DeviceError> {
        self.loaded.as_deref().map_err(Clone::clone)
    }

    /// The device `wanted` names: its id, a unique id prefix of at least 6 characters, or its
    /// name (case-insensitive, when unique).
    ///
    /// # Errors
    /// None or several match, or the file could not be read.
    pub fn find(&self, wanted: &str) -> Result<&DeviceRecord, DeviceError> {
        let all = self.list()?;
        let wanted = wanted.trim();
        if let Some(exact) = all.iter().find(|d| d.id == wanted) {
            return Ok(exact);
        }
        let lower = wanted.to_lowercase();
        let matches: Vec<&DeviceRecord> = all
            .iter()
            .filter(|d| {
                (wanted.len() >= 6 && d.id.starts_with(&lower)) || d.name.to_lowercase() == lower
            })
            .collect();
        match matches.as_slice() {
            [one] => Ok(one),
            [] => Err(DeviceError::Unknown(wanted.into())),
            _ => Err(DeviceError::Ambiguous(wanted.into())),
        }
    }

    /// Records a proven connect: a new device is added as pending; a known one keeps its state
    /// and has its name and declarations refreshed. The record as it is now.
    ///
    /// # Errors
    /// The id is known with another key, or the file cannot be read or written.
    pub fn admit(
        &mut self,
        proven: &ProvenDevice,
        seen: Declared,
    ) -> Result<DeviceRecord, DeviceError> {
        let proven = proven.clone();
        self.change(move |list| admit_in(list, &proven, seen))
    }

    /// Sets the owner's decision on the device `wanted` names; the record as it is now.
    ///
    /// # Errors
    /// No such device, or the file cannot be read or written.
    pub fn decide(
        &mut self,
        wanted: &str,
        state: DeviceState,
    ) -> Result<DeviceRecord, DeviceError> {
        let id = self.find(wanted)?.id.clone();
        let wanted = wanted.to_string();
        self.change(move |list| {
            let Some(record) = list.iter_mut().find(|d| d.id == id) else {
                return Err(DeviceError::Unknown(wanted));
            };
            record.state = state;
            record.decided_at_ms = Some(lurkbot_core::now_ms());
            record.approved_commands = match state {
                DeviceState::Approved => record.commands.clone(),
                _ => Vec::new(),
            };
            Ok(record.clone())
        })
    }

    fn save(&self) -> Result<(), DeviceError> {
        let list = self.loaded.as_ref().map_err(|e| e.clone())?;
        let text = serde_json::to_vec_pretty(&serde_json::json!({"devices": list}))
            .map_err(|e| DeviceError::Write(e.to_string()))?;
        if let Some(dir) = self.path.parent() {
            lurkbot_core::create_private_dir(dir).map_err(|e| DeviceError::Write(e.to_string()))?;
        }
        lurkbot_core::write_atomic_with_mode(&self.path, &text, 0o600)
            .map_err(|e| DeviceError::Write(e.to_string()))
    }
}

/// Records a proven connect in `list` (see [`DeviceStore::admit`]): the pending cap is checked
/// against what `list` holds, in the same change.
fn admit_in(
    list: &mut Vec<DeviceRecord>,
    proven: &ProvenDevice,
    seen: Declared,
) -> Result<DeviceRecord, DeviceError> {
    let record = match list.iter_mut().find(|d| d.id == proven.id) {
        Some(known) if known.public_key != proven.public_key => {
            return Err(DeviceError::KeyMismatch(proven.id.clone()));
        }
        Some(known) => {
            known.name = seen.name;
            known.client = seen.client;
            known.platform = seen.platform;
            known.commands = seen.commands;
            known.caps = seen.caps;
            known.clone()
        }
        None => {
            if list
                .iter()
                .filter(|d| d.state == DeviceState::Pending)
                .count()
                >= MAX_PENDING
            {
                return Err(DeviceError::TooManyPending);
            }
            let record = DeviceRecord {
                id: proven.id.clone(),
                public_key: proven.public_key.clone(),
                name: seen.name,
                platform: seen.platform,
                role: "node".into(),
                client: seen.client,
                state: DeviceState::Pending,
                requested_at_ms: lurkbot_core::now_ms(),
                decided_at_ms: None,
                commands: seen.commands,
                approved_commands: Vec::new(),
                caps: seen.caps,
            };
            list.push(record.clone());
            record
        }
    };
    Ok(record)
}

/// What a device declared on `connect`.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    /// Its name.
    pub name: String,
    /// Its platform.
    pub platform: String,
    /// Its `userAgent`, else its `client.id`.
    pub client: String,
    /// Its commands.
    pub commands: Vec<String>,
    /// Its capabilities.
    pub caps: Vec<String>,
}

impl Declared {
    /// From `connect`'s params (names bounded, lists capped: a device declares, it does not
    /// flood).
    pub fn from_connect(params: &serde_json::Value) -> Self {
        let text = |at: &str| {
            params
                .pointer(at)
                .and_then(serde_json::Value::as_str)
                .map(|s| {
                    lurkbot_core::printable(s)
                        .chars()
                        .take(80)
                        .collect::<String>()
                })
                .filter(|s| !s.trim().is_empty())
        };
        let list = |key: &str| {
            params
                .get(key)
                .and_then(serde_json::Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(serde_json::Value::as_str)
                        .filter(|c| c.len() <= 80)
                        .take(256)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        Self {
            name: text("/client/displayName")
                .or_else(|| text("/client/id"))
                .unwrap_or_else(|| "node".into()),
            platform: text("/client/platform").unwrap_or_default(),
            client: text("/userAgent")
                .or_else(|| text("/client/id"))
                .unwrap_or_default(),
            commands: list("commands"),
            caps: list("caps"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proven(id: &str, key: &str) -> ProvenDevice {
        ProvenDevice {
            id: id.into(),
            public_key: key.into(),
        }
    }

    #[test]
    fn a_new_device_waits_and_keeps_its_key_and_the_owners_decision() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let mut store = DeviceStore::open(&home);
        let seen = Declared {
            name: "phone".into(),
            commands: vec!["system.which".into()],
            ..Declared::default()
        };
        let first = store
            .admit(&proven("abcdef01", "K1"), seen.clone())
            .unwrap();
        assert_eq!(first.state, DeviceState::Pending);
        store.decide("phone", DeviceState::Approved).unwrap();
        // Read back from disk: the decision and the key survive, 0600.
        let mut store = DeviceStore::open(&home);
        assert_eq!(store.find("abcdef").unwrap().state, DeviceState::Approved);
        assert_eq!(
            store.admit(&proven("abcdef01", "K2"), seen.clone()),
            Err(DeviceError::KeyMismatch("abcdef01".into()))
        );
        assert_eq!(
            store.admit(&proven("abcdef01", "K1"), seen).unwrap().state,
            DeviceState::Approved
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(home.join(DEVICES_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(matches!(store.find("abc"), Err(DeviceError::Unknown(_))));
    }

    #[test]
    fn new_devices_wait_in_bounded_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        let mut store = DeviceStore::open(&home);
        for n in 0..MAX_PENDING {
            store
                .admit(&proven(&format!("d{n}"), "K"), Declared::default())
                .unwrap();
        }
        let refused = store.admit(&proven("one-more", "K"), Declared::default());
        assert_eq!(refused, Err(DeviceError::TooManyPending));
        // A decision makes room.
        store.decide("d0", DeviceState::Rejected).unwrap();
        assert!(
            store
                .admit(&proven("one-more", "K"), Declared::default())
                .is_ok()
        );
    }

    #[test]
    fn an_unreadable_store_admits_nobody_and_is_not_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(dir.path()).unwrap();
        std::fs::create_dir_all(home.join("devices")).unwrap();
        std::fs::write(home.join(DEVICES_FILE), "{not json").unwrap();
        let mut store = DeviceStore::open(&home);
        let err = store
            .admit(&proven("ab", "K"), Declared::default())
            .unwrap_err();
        assert!(err.to_string().contains("repaired"), "{err}");
        assert_eq!(
            std::fs::read_to_string(home.join(DEVICES_FILE)).unwrap(),
            "{not json"
        );
    }
}
