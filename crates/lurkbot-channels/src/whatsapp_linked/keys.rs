//! The linked device's keys, sessions and app state in the state store (ARCHITECTURE.md
//! §6.1.1): every table the WhatsApp client keeps is a set of documents named
//! `channels/whatsapp/<table>/<key>` in the one store the gateway already uses — the embedded
//! one, or PostgreSQL when several gateways share it — so the gateway that takes the channel's
//! lease over connects as the same device. Batches are written in one durable transaction;
//! the client keeps its own cache in front, so reads here are the cold path.

use std::collections::HashMap;
use std::sync::Arc;

use lurkbot_state::Store;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use whatsapp_rust::async_trait;
use whatsapp_rust::bytes::Bytes;
use whatsapp_rust::wacore::store::Device;
use whatsapp_rust::wacore::store::error::{Result, StoreError};
use whatsapp_rust::wacore::store::traits::{
    DeviceStore, MsgSecretEntry, MsgSecretStore, SignalStore, merge_msg_secret_expiry,
    merge_msg_secret_message_ts,
};

/// Where the documents live: everything the device knows is under it, so unlinking deletes it.
pub const KEYS_PREFIX: &str = "channels/whatsapp/";

/// The linked device's storage on the state store.
#[derive(Clone)]
pub struct StoredKeys {
    pub(super) store: Store,
}

/// Bytes as base64 text in a document.
#[derive(Serialize, Deserialize)]
pub(super) struct Blob(#[serde(with = "base64_text")] pub(super) Vec<u8>);

/// Bytes with the time they were written (sent messages, pending inbound messages).
#[derive(Serialize, Deserialize)]
pub(super) struct Stamped {
    #[serde(with = "base64_text")]
    pub(super) bytes: Vec<u8>,
    pub(super) at: i64,
}

/// A one-time pre-key and whether the server has it.
#[derive(Serialize, Deserialize)]
struct PreKey {
    #[serde(with = "base64_text")]
    record: Vec<u8>,
    uploaded: bool,
}

/// A message secret with its deadline and its message's time.
#[derive(Serialize, Deserialize)]
struct Secret {
    #[serde(with = "base64_text")]
    secret: Vec<u8>,
    expires_at: i64,
    message_ts: i64,
}

pub(super) mod base64_text {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

pub(super) fn failed(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Database(Box::new(e))
}

pub(super) fn unreadable(e: serde_json::Error) -> StoreError {
    StoreError::Serialization(Box::new(e))
}

pub(super) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `chat`, `sender` and `id` as one key (none of them holds a `|`).
pub(super) fn triple(chat: &str, sender: &str, id: &str) -> String {
    format!("{chat}|{sender}|{id}")
}

impl StoredKeys {
    /// The device's storage in `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    pub(super) fn name(table: &str, key: &str) -> String {
        format!("{KEYS_PREFIX}{table}/{key}")
    }

    pub(super) fn get<T: DeserializeOwned>(&self, table: &str, key: &str) -> Result<Option<T>> {
        match self
            .store
            .document(&Self::name(table, key))
            .map_err(failed)?
        {
            Some(body) => serde_json::from_str(&body).map(Some).map_err(unreadable),
            None => Ok(None),
        }
    }

    pub(super) fn put<T: Serialize>(&self, table: &str, key: &str, value: &T) -> Result<()> {
        self.put_many(table, [(key.to_string(), value)])
    }

    pub(super) fn put_many<'v, T: Serialize + 'v>(
        &self,
        table: &str,
        rows: impl IntoIterator<Item = (String, &'v T)>,
    ) -> Result<()> {
        let mut writes = Vec::new();
        for (key, value) in rows {
            let body = serde_json::to_string(value).map_err(unreadable)?;
            writes.push((Self::name(table, &key), Some(body)));
        }
        self.store.write_documents(writes).map_err(failed)
    }

    pub(super) fn delete_many(
        &self,
        table: &str,
        keys: impl IntoIterator<Item = String>,
    ) -> Result<()> {
        let writes = keys
            .into_iter()
            .map(|key| (Self::name(table, &key), None))
            .collect();
        self.store.write_documents(writes).map_err(failed)
    }

    /// Every row of `table` (or of the rows whose key starts with `start`): (key, value).
    pub(super) fn all<T: DeserializeOwned>(
        &self,
        table: &str,
        start: &str,
    ) -> Result<Vec<(String, T)>> {
        let prefix = Self::name(table, start);
        let skip = Self::name(table, "").len();
        let mut rows = Vec::new();
        for (name, body) in self.store.documents_under(&prefix).map_err(failed)? {
            let value = serde_json::from_str(&body).map_err(unreadable)?;
            rows.push((name.get(skip..).unwrap_or_default().to_string(), value));
        }
        Ok(rows)
    }

    /// Deletes the rows of `table` that `dead` picks; how many.
    pub(super) fn sweep<T: DeserializeOwned>(
        &self,
        table: &str,
        dead: impl Fn(&T) -> bool,
    ) -> Result<u32> {
        let keys: Vec<String> = self
            .all::<T>(table, "")?
            .into_iter()
            .filter(|(_, value)| dead(value))
            .map(|(key, _)| key)
            .collect();
        let count = u32::try_from(keys.len()).unwrap_or(u32::MAX);
        self.delete_many(table, keys)?;
        Ok(count)
    }

    /// Whether a device is stored (linked, or half-way through linking).
    ///
    /// # Errors
    /// Store failures.
    pub fn linked(&self) -> std::result::Result<bool, lurkbot_state::StateError> {
        Ok(self.store.document(&Self::name("device", "1"))?.is_some())
    }

    /// Forgets the device: every key, session and setting (`channels logout whatsapp`).
    ///
    /// # Errors
    /// Store failures.
    pub fn forget(&self) -> std::result::Result<usize, lurkbot_state::StateError> {
        let names: Vec<(String, Option<String>)> = self
            .store
            .documents_under(KEYS_PREFIX)?
            .into_iter()
            .map(|(name, _)| (name, None))
            .collect();
        let count = names.len();
        self.store.write_documents(names)?;
        Ok(count)
    }
}

#[async_trait]
impl SignalStore for StoredKeys {
    async fn put_identity(&self, address: &str, key: [u8; 32]) -> Result<()> {
        self.put("identity", address, &Blob(key.to_vec()))
    }

    async fn put_identities_batch(&self, identities: &[(Arc<str>, [u8; 32])]) -> Result<()> {
        let blobs: Vec<(String, Blob)> = identities
            .iter()
            .map(|(address, key)| (address.to_string(), Blob(key.to_vec())))
            .collect();
        self.put_many("identity", blobs.iter().map(|(k, v)| (k.clone(), v)))
    }

    async fn load_identity(&self, address: &str) -> Result<Option<[u8; 32]>> {
        Ok(self
            .get::<Blob>("identity", address)?
            .and_then(|blob| blob.0.try_into().ok()))
    }

    async fn delete_identity(&self, address: &str) -> Result<()> {
        self.delete_many("identity", [address.to_string()])
    }

    async fn get_session(&self, address: &str) -> Result<Option<Bytes>> {
        Ok(self
            .get::<Blob>("session", address)?
            .map(|b| Bytes::from(b.0)))
    }

    async fn put_session(&self, address: &str, session: &[u8]) -> Result<()> {
        self.put("session", address, &Blob(session.to_vec()))
    }

    async fn put_sessions_batch(&self, sessions: &[(Arc<str>, Bytes)]) -> Result<()> {
        let blobs: Vec<(String, Blob)> = sessions
            .iter()
            .map(|(address, s)| (address.to_string(), Blob(s.to_vec())))
            .collect();
        self.put_many("session", blobs.iter().map(|(k, v)| (k.clone(), v)))
    }

    async fn delete_session(&self, address: &str) -> Result<()> {
        self.delete_many("session", [address.to_string()])
    }

    async fn store_prekey(&self, id: u32, record: &[u8], uploaded: bool) -> Result<()> {
        let key = PreKey {
            record: record.to_vec(),
            uploaded,
        };
        self.put("prekey", &format!("{id:010}"), &key)
    }

    async fn store_prekeys_batch(&self, keys: &[(u32, Bytes)], uploaded: bool) -> Result<()> {
        let rows: Vec<(String, PreKey)> = keys
            .iter()
            .map(|(id, record)| {
                let record = record.to_vec();
                (format!("{id:010}"), PreKey { record, uploaded })
            })
            .collect();
        self.put_many("prekey", rows.iter().map(|(k, v)| (k.clone(), v)))
    }

    async fn load_prekey(&self, id: u32) -> Result<Option<Bytes>> {
        Ok(self
            .get::<PreKey>("prekey", &format!("{id:010}"))?
            .map(|k| Bytes::from(k.record)))
    }

    async fn mark_prekeys_uploaded(&self, ids: &[u32]) -> Result<()> {
        let mut rows = Vec::new();
        for id in ids {
            let key = format!("{id:010}");
            if let Some(mut prekey) = self.get::<PreKey>("prekey", &key)? {
                prekey.uploaded = true;
                rows.push((key, prekey));
            }
        }
        self.put_many("prekey", rows.iter().map(|(k, v)| (k.clone(), v)))
    }

    async fn remove_prekey(&self, id: u32) -> Result<()> {
        self.delete_many("prekey", [format!("{id:010}")])
    }

    async fn get_max_prekey_id(&self) -> Result<u32> {
        // Keys are zero-padded, so the last by name is the largest.
        let names = self
            .store
            .documents_under(&Self::name("prekey", ""))
            .map_err(failed)?;
        Ok(names
            .last()
            .and_then(|(name, _)| name.rsplit('/').next()?.parse().ok())
            .unwrap_or(0))
    }

    async fn store_signed_prekey(&self, id: u32, record: &[u8]) -> Result<()> {
        self.put(
            "signed-prekey",
            &format!("{id:010}"),
            &Blob(record.to_vec()),
        )
    }

    async fn load_signed_prekey(&self, id: u32) -> Result<Option<Vec<u8>>> {
        Ok(self
            .get::<Blob>("signed-prekey", &format!("{id:010}"))?
            .map(|b| b.0))
    }

    async fn load_all_signed_prekeys(&self) -> Result<Vec<(u32, Vec<u8>)>> {
        Ok(self
            .all::<Blob>("signed-prekey", "")?
            .into_iter()
            .filter_map(|(key, blob)| Some((key.parse().ok()?, blob.0)))
            .collect())
    }

    async fn remove_signed_prekey(&self, id: u32) -> Result<()> {
        self.delete_many("signed-prekey", [format!("{id:010}")])
    }

    async fn put_sender_key(&self, address: &str, record: &[u8]) -> Result<()> {
        self.put("sender-key", address, &Blob(record.to_vec()))
    }

    async fn put_sender_keys_batch(&self, sender_keys: &[(Arc<str>, Bytes)]) -> Result<()> {
        let blobs: Vec<(String, Blob)> = sender_keys
            .iter()
            .map(|(address, r)| (address.to_string(), Blob(r.to_vec())))
            .collect();
        self.put_many("sender-key", blobs.iter().map(|(k, v)| (k.clone(), v)))
    }

    async fn get_sender_key(&self, address: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.get::<Blob>("sender-key", address)?.map(|b| b.0))
    }

    async fn delete_sender_key(&self, address: &str) -> Result<()> {
        self.delete_many("sender-key", [address.to_string()])
    }
}

#[async_trait]
impl MsgSecretStore for StoredKeys {
    async fn put_msg_secrets(&self, entries: Vec<MsgSecretEntry>) -> Result<usize> {
        let count = entries.len();
        let mut rows: HashMap<String, Secret> = HashMap::new();
        for entry in entries {
            let key = triple(&entry.chat, &entry.sender, &entry.msg_id);
            let known = match rows.remove(&key) {
                Some(row) => Some(row),
                None => self.get::<Secret>("msg-secret", &key)?,
            };
            let row = match known {
                Some(old) => Secret {
                    secret: entry.secret.to_vec(),
                    expires_at: merge_msg_secret_expiry(old.expires_at, entry.expires_at),
                    message_ts: merge_msg_secret_message_ts(old.message_ts, entry.message_ts),
                },
                None => Secret {
                    secret: entry.secret.to_vec(),
                    expires_at: entry.expires_at,
                    message_ts: entry.message_ts,
                },
            };
            rows.insert(key, row);
        }
        self.put_many("msg-secret", rows.iter().map(|(k, v)| (k.clone(), v)))?;
        Ok(count)
    }

    async fn get_msg_secret(
        &self,
        chat: &str,
        sender: &str,
        msg_id: &str,
    ) -> Result<Option<Vec<u8>>> {
        Ok(self
            .get::<Secret>("msg-secret", &triple(chat, sender, msg_id))?
            .map(|s| s.secret))
    }

    async fn get_msg_secret_with_ts(
        &self,
        chat: &str,
        sender: &str,
        msg_id: &str,
    ) -> Result<Option<(Vec<u8>, i64)>> {
        Ok(self
            .get::<Secret>("msg-secret", &triple(chat, sender, msg_id))?
            .map(|s| (s.secret, s.message_ts)))
    }

    async fn delete_expired_msg_secrets(&self, cutoff_timestamp: i64) -> Result<u32> {
        self.sweep("msg-secret", |s: &Secret| {
            s.expires_at != 0 && s.expires_at <= cutoff_timestamp
        })
    }
}

#[async_trait]
impl DeviceStore for StoredKeys {
    async fn save(&self, device: &Device) -> Result<()> {
        self.put("device", "1", device)
    }

    async fn load(&self) -> Result<Option<Device>> {
        self.get("device", "1")
    }

    async fn exists(&self) -> Result<bool> {
        Ok(self.get::<serde_json::Value>("device", "1")?.is_some())
    }

    async fn create(&self) -> Result<i32> {
        if !self.exists().await? {
            self.save(&Device::new()).await?;
        }
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    #[test]
    fn bytes_are_base64_text_and_keys_hex() {
        let blob = serde_json::to_string(&Blob(vec![1, 2, 3])).unwrap_or_default();
        assert_eq!(blob, format!("\"{}\"", STANDARD.encode([1, 2, 3])));
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(
            StoredKeys::name("session", "1.0:2"),
            "channels/whatsapp/session/1.0:2"
        );
    }
}
