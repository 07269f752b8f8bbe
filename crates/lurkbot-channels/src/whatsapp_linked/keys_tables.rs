//! The linked device's app-state and protocol tables (sync keys, mutation MACs, sender-key
//! devices, LID mappings, device lists, trusted-contact tokens, sent and pending messages) on
//! the state store, beside the Signal tables of [`super::keys`].

use std::collections::BTreeMap;

use whatsapp_rust::async_trait;
use whatsapp_rust::wacore::appstate::hash::HashState;
use whatsapp_rust::wacore::appstate::processor::AppStateMutationMAC;
use whatsapp_rust::wacore::store::error::Result;
use whatsapp_rust::wacore::store::traits::{
    AppStateSyncKey, AppSyncStore, DeviceListRecord, LidPnMappingEntry, ProtocolStore, TcTokenEntry,
};

use super::keys::{Blob, Stamped, StoredKeys, failed, hex, now, triple, unreadable};

#[async_trait]
impl AppSyncStore for StoredKeys {
    async fn get_sync_key(&self, key_id: &[u8]) -> Result<Option<AppStateSyncKey>> {
        self.get("sync-key", &hex(key_id))
    }

    async fn set_sync_key(&self, key_id: &[u8], key: AppStateSyncKey) -> Result<()> {
        self.put("sync-key", &hex(key_id), &key)?;
        self.put("latest-sync-key", "id", &Blob(key_id.to_vec()))
    }

    async fn get_version(&self, name: &str) -> Result<HashState> {
        Ok(self.get("app-state-version", name)?.unwrap_or_default())
    }

    async fn set_version(&self, name: &str, state: HashState) -> Result<()> {
        self.put("app-state-version", name, &state)
    }

    async fn put_mutation_macs(
        &self,
        name: &str,
        _version: u64,
        mutations: &[AppStateMutationMAC],
    ) -> Result<()> {
        let rows: Vec<(String, Blob)> = mutations
            .iter()
            .map(|m| {
                (
                    format!("{name}/{}", hex(&m.index_mac)),
                    Blob(m.value_mac.clone()),
                )
            })
            .collect();
        self.put_many("mutation-mac", rows.iter().map(|(k, v)| (k.clone(), v)))
    }

    async fn get_mutation_mac(&self, name: &str, index_mac: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .get::<Blob>("mutation-mac", &format!("{name}/{}", hex(index_mac)))?
            .map(|b| b.0))
    }

    async fn delete_mutation_macs(&self, name: &str, index_macs: &[Vec<u8>]) -> Result<()> {
        let keys = index_macs.iter().map(|m| format!("{name}/{}", hex(m)));
        self.delete_many("mutation-mac", keys)
    }

    async fn clear_mutation_macs(&self, name: &str) -> Result<()> {
        let keys = self.all::<Blob>("mutation-mac", &format!("{name}/"))?;
        self.delete_many("mutation-mac", keys.into_iter().map(|(k, _)| k))
    }

    async fn get_latest_sync_key_id(&self) -> Result<Option<Vec<u8>>> {
        Ok(self.get::<Blob>("latest-sync-key", "id")?.map(|b| b.0))
    }
}

#[async_trait]
impl ProtocolStore for StoredKeys {
    async fn get_sender_key_devices(&self, group_jid: &str) -> Result<Vec<(String, bool)>> {
        let devices: BTreeMap<String, bool> = self
            .get("sender-key-devices", group_jid)?
            .unwrap_or_default();
        Ok(devices.into_iter().collect())
    }

    async fn set_sender_key_status(&self, group_jid: &str, entries: &[(&str, bool)]) -> Result<()> {
        let mut devices: BTreeMap<String, bool> = self
            .get("sender-key-devices", group_jid)?
            .unwrap_or_default();
        for (device, has) in entries {
            devices.insert((*device).to_string(), *has);
        }
        self.put("sender-key-devices", group_jid, &devices)
    }

    async fn clear_sender_key_devices(&self, group_jid: &str) -> Result<()> {
        self.delete_many("sender-key-devices", [group_jid.to_string()])
    }

    async fn delete_sender_key_device_rows(&self, device_jids: &[&str]) -> Result<()> {
        let mut changed = Vec::new();
        for (group, mut devices) in self.all::<BTreeMap<String, bool>>("sender-key-devices", "")? {
            let before = devices.len();
            devices.retain(|device, _| !device_jids.contains(&device.as_str()));
            if devices.len() != before {
                changed.push((group, devices));
            }
        }
        self.put_many(
            "sender-key-devices",
            changed.iter().map(|(k, v)| (k.clone(), v)),
        )
    }

    async fn clear_all_sender_key_devices(&self) -> Result<()> {
        let groups = self.all::<BTreeMap<String, bool>>("sender-key-devices", "")?;
        self.delete_many("sender-key-devices", groups.into_iter().map(|(k, _)| k))
    }

    async fn get_lid_mapping(&self, lid: &str) -> Result<Option<LidPnMappingEntry>> {
        self.get("lid", lid)
    }

    async fn get_pn_mapping(&self, phone: &str) -> Result<Option<LidPnMappingEntry>> {
        match self.get::<Blob>("pn", phone)? {
            Some(lid) => self.get("lid", &String::from_utf8_lossy(&lid.0)),
            None => Ok(None),
        }
    }

    async fn put_lid_mapping(&self, entry: &LidPnMappingEntry) -> Result<()> {
        self.put_lid_mappings(std::slice::from_ref(entry)).await
    }

    async fn put_lid_mappings(&self, entries: &[LidPnMappingEntry]) -> Result<()> {
        let mut writes = Vec::new();
        for entry in entries {
            let body = serde_json::to_string(entry).map_err(unreadable)?;
            writes.push((Self::name("lid", &entry.lid), Some(body)));
            let lid =
                serde_json::to_string(&Blob(entry.lid.as_bytes().to_vec())).map_err(unreadable)?;
            writes.push((Self::name("pn", &entry.phone_number), Some(lid)));
        }
        self.store.write_documents(writes).map_err(failed)
    }

    async fn get_all_lid_mappings(&self) -> Result<Vec<LidPnMappingEntry>> {
        Ok(self
            .all::<LidPnMappingEntry>("lid", "")?
            .into_iter()
            .map(|(_, entry)| entry)
            .collect())
    }

    async fn save_base_key(&self, address: &str, message_id: &str, base_key: &[u8]) -> Result<()> {
        let key = format!("{address}|{message_id}");
        self.put("base-key", &key, &Blob(base_key.to_vec()))
    }

    async fn has_same_base_key(
        &self,
        address: &str,
        message_id: &str,
        current_base_key: &[u8],
    ) -> Result<bool> {
        let key = format!("{address}|{message_id}");
        Ok(self
            .get::<Blob>("base-key", &key)?
            .is_some_and(|stored| stored.0 == current_base_key))
    }

    async fn delete_base_key(&self, address: &str, message_id: &str) -> Result<()> {
        self.delete_many("base-key", [format!("{address}|{message_id}")])
    }

    async fn update_device_list(&self, record: DeviceListRecord) -> Result<()> {
        self.put("devices", &record.user.clone(), &record)
    }

    async fn update_device_lists(&self, records: Vec<DeviceListRecord>) -> Result<()> {
        self.put_many("devices", records.iter().map(|r| (r.user.clone(), r)))
    }

    async fn get_devices(&self, user: &str) -> Result<Option<DeviceListRecord>> {
        self.get("devices", user)
    }

    async fn delete_devices(&self, user: &str) -> Result<()> {
        self.delete_many("devices", [user.to_string()])
    }

    async fn get_group_metadata(&self, group_jid: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.get::<Blob>("group", group_jid)?.map(|b| b.0))
    }

    async fn put_group_metadata(&self, group_jid: &str, blob: &[u8]) -> Result<()> {
        self.put("group", group_jid, &Blob(blob.to_vec()))
    }

    async fn delete_group_metadata(&self, group_jid: &str) -> Result<()> {
        self.delete_many("group", [group_jid.to_string()])
    }

    async fn get_tc_token(&self, jid: &str) -> Result<Option<TcTokenEntry>> {
        self.get("tc-token", jid)
    }

    async fn put_tc_token(&self, jid: &str, entry: &TcTokenEntry) -> Result<()> {
        self.put("tc-token", jid, entry)
    }

    async fn delete_tc_token(&self, jid: &str) -> Result<()> {
        self.delete_many("tc-token", [jid.to_string()])
    }

    async fn get_all_tc_token_jids(&self) -> Result<Vec<String>> {
        Ok(self
            .all::<TcTokenEntry>("tc-token", "")?
            .into_iter()
            .map(|(jid, _)| jid)
            .collect())
    }

    async fn delete_expired_tc_tokens(&self, token_cutoff: i64, sender_cutoff: i64) -> Result<u32> {
        self.sweep("tc-token", |entry: &TcTokenEntry| {
            let token_live = !entry.token.is_empty() && entry.token_timestamp >= token_cutoff;
            let sender_live = entry.sender_timestamp.is_some_and(|ts| ts >= sender_cutoff);
            !(token_live || sender_live)
        })
    }

    async fn store_sent_message(
        &self,
        chat_jid: &str,
        message_id: &str,
        payload: &[u8],
    ) -> Result<()> {
        let row = Stamped {
            bytes: payload.to_vec(),
            at: now(),
        };
        self.put("sent", &format!("{chat_jid}|{message_id}"), &row)
    }

    async fn take_sent_message(&self, chat_jid: &str, message_id: &str) -> Result<Option<Vec<u8>>> {
        let key = format!("{chat_jid}|{message_id}");
        let row = self.get::<Stamped>("sent", &key)?;
        if row.is_some() {
            self.delete_many("sent", [key])?;
        }
        Ok(row.map(|r| r.bytes))
    }

    async fn delete_expired_sent_messages(&self, cutoff_timestamp: i64) -> Result<u32> {
        self.sweep("sent", |row: &Stamped| row.at < cutoff_timestamp)
    }

    async fn store_pending_inbound(
        &self,
        chat: &str,
        sender: &str,
        id: &str,
        message: &[u8],
    ) -> Result<()> {
        let row = Stamped {
            bytes: message.to_vec(),
            at: now(),
        };
        self.put("pending-inbound", &triple(chat, sender, id), &row)
    }

    async fn get_pending_inbound(
        &self,
        chat: &str,
        sender: &str,
        id: &str,
    ) -> Result<Option<Vec<u8>>> {
        Ok(self
            .get::<Stamped>("pending-inbound", &triple(chat, sender, id))?
            .map(|r| r.bytes))
    }

    async fn delete_pending_inbound(&self, chat: &str, sender: &str, id: &str) -> Result<()> {
        self.delete_many("pending-inbound", [triple(chat, sender, id)])
    }

    async fn delete_expired_pending_inbound(&self, cutoff_timestamp: i64) -> Result<u32> {
        self.sweep("pending-inbound", |row: &Stamped| row.at < cutoff_timestamp)
    }
}
