//! WhatsApp's linked device keeps its keys, sessions and app state in the state store, so the
//! gateway that takes the channel over connects as the same device: written through the
//! client's store traits by one store handle (gateway A), read back by another (gateway B) —
//! on the embedded store across a restart, and on PostgreSQL by two gateways at once — and
//! forgotten whole by `channels logout`.

use std::sync::Arc;

use lurkbot_channels::whatsapp_linked::client::bytes::Bytes;
use lurkbot_channels::whatsapp_linked::client::wacore::store::Device;
use lurkbot_channels::whatsapp_linked::client::wacore::store::traits::{
    AppStateSyncKey, AppSyncStore, DeviceStore, LidPnMappingEntry, MsgSecretEntry, MsgSecretStore,
    ProtocolStore, SignalStore,
};
use lurkbot_channels::whatsapp_linked::keys::StoredKeys;
use lurkbot_core::Home;
use lurkbot_state::{Location, Store};
use lurkbot_test_support::postgres::Postgres;

use crate::util::Test;

fn embedded(t: &Test) -> Store {
    let home = Home::open(&t.home).unwrap_or_else(|e| panic!("{e}"));
    Store::open(&home).unwrap_or_else(|e| panic!("{e}"))
}

fn on_postgres(t: &Test, url: &str, owner: &str) -> Store {
    let home = Home::open(&t.home).unwrap_or_else(|e| panic!("{e}"));
    let location = Location::resolve(Some(url), &|_| None).unwrap_or_else(|e| panic!("{e}"));
    Store::open_at(&home, &location, Some(owner)).unwrap_or_else(|e| panic!("{e}"))
}

/// Gateway A links: the device and what a first connection stores.
async fn link(a: &StoredKeys) -> serde_json::Value {
    assert_eq!(a.create().await.ok(), Some(1));
    let mut device = Device::new();
    device.push_name = "LurkBot".into();
    a.save(&device).await.unwrap_or_else(|e| panic!("{e}"));
    a.put_identity("4915550001.0", [7; 32])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let sessions = [(Arc::from("4915550001.0"), Bytes::from_static(b"ratchet-1"))];
    a.put_sessions_batch(&sessions)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let prekeys: Vec<(u32, Bytes)> = (1..=12)
        .map(|i| (i, Bytes::from(vec![i as u8; 4])))
        .collect();
    a.store_prekeys_batch(&prekeys, false)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    a.mark_prekeys_uploaded(&[1, 2])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    a.store_signed_prekey(1, b"signed")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    a.put_lid_mapping(&LidPnMappingEntry {
        lid: "100000011111111".into(),
        phone_number: "4915550001".into(),
        created_at: 1,
        updated_at: 1,
        learning_source: "usync".into(),
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let sync = AppStateSyncKey {
        key_data: vec![1, 2, 3],
        fingerprint: vec![4],
        timestamp: 5,
    };
    a.set_sync_key(&[0xAB, 0xCD], sync)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let secret = |expires_at| MsgSecretEntry {
        chat: Arc::from("4915550001@s.whatsapp.net"),
        sender: Arc::from("4915550001@s.whatsapp.net"),
        msg_id: Arc::from("ABC"),
        secret: [9; 32],
        expires_at,
        message_ts: 0,
    };
    a.put_msg_secrets(vec![secret(100)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // A redelivery never shortens the window.
    a.put_msg_secrets(vec![secret(50)])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    a.store_pending_inbound("c@s.whatsapp.net", "s@s.whatsapp.net", "P1", b"sealed")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_value(
        a.load()
            .await
            .ok()
            .flatten()
            .map(|d| serde_json::to_value(d).ok()),
    )
    .unwrap_or_default()
}

/// Gateway B reads what A stored: the same device.
async fn same_device(b: &StoredKeys, device: &serde_json::Value) {
    let loaded = b
        .load()
        .await
        .ok()
        .flatten()
        .map(|d| serde_json::to_value(d).ok());
    assert_eq!(&serde_json::to_value(loaded).unwrap_or_default(), device);
    assert_eq!(
        b.load_identity("4915550001.0").await.ok().flatten(),
        Some([7; 32])
    );
    assert_eq!(
        b.get_session("4915550001.0").await.ok().flatten(),
        Some(Bytes::from_static(b"ratchet-1"))
    );
    assert_eq!(b.get_max_prekey_id().await.ok(), Some(12));
    assert_eq!(
        b.load_prekeys_batch(&[2, 12, 99])
            .await
            .ok()
            .map(|k| k.len()),
        Some(2)
    );
    assert_eq!(
        b.load_all_signed_prekeys().await.ok(),
        Some(vec![(1, b"signed".to_vec())])
    );
    let by_phone = b.get_pn_mapping("4915550001").await.ok().flatten();
    assert_eq!(by_phone.map(|e| e.lid), Some("100000011111111".to_string()));
    assert_eq!(
        b.get_latest_sync_key_id().await.ok().flatten(),
        Some(vec![0xAB, 0xCD])
    );
    assert_eq!(
        b.get_sync_key(&[0xAB, 0xCD])
            .await
            .ok()
            .flatten()
            .map(|k| k.key_data),
        Some(vec![1, 2, 3])
    );
    assert_eq!(
        b.delete_expired_msg_secrets(60).await.ok(),
        Some(0),
        "the later deadline kept"
    );
    assert_eq!(b.delete_expired_msg_secrets(100).await.ok(), Some(1));
    assert_eq!(
        b.get_pending_inbound("c@s.whatsapp.net", "s@s.whatsapp.net", "P1")
            .await
            .ok()
            .flatten(),
        Some(b"sealed".to_vec())
    );
}

async fn forgotten(b: &StoredKeys) {
    assert_eq!(b.linked().ok(), Some(true));
    let count = b.forget().unwrap_or_else(|e| panic!("{e}"));
    assert!(count >= 18, "{count}");
    assert_eq!(b.linked().ok(), Some(false));
    assert_eq!(b.exists().await.ok(), Some(false));
    assert_eq!(b.get_session("4915550001.0").await.ok().flatten(), None);
    assert_eq!(b.get_max_prekey_id().await.ok(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_device_survives_a_restart_on_the_embedded_store() {
    let t = Test::init();
    let device = {
        let a = StoredKeys::new(embedded(&t));
        link(&a).await
    };
    assert!(device.is_object(), "{device}");
    let b = StoredKeys::new(embedded(&t));
    same_device(&b, &device).await;
    forgotten(&b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_gateway_on_postgresql_is_the_same_device() {
    let pg = Postgres::start();
    let url = pg.database("whatsapp_keys");
    let (ta, tb) = (Test::init(), Test::init());
    let a = StoredKeys::new(on_postgres(&ta, &url, "gw-a"));
    let b = StoredKeys::new(on_postgres(&tb, &url, "gw-b"));
    let device = link(&a).await;
    assert!(device.is_object(), "{device}");
    same_device(&b, &device).await;
    assert!(
        pg.psql(
            "whatsapp_keys",
            "SELECT count(*) FROM documents WHERE name LIKE 'channels/whatsapp/%'"
        )
        .parse::<u32>()
        .is_ok_and(|n| n >= 18)
    );
    forgotten(&b).await;
    assert_eq!(
        a.exists().await.ok(),
        Some(false),
        "A sees the device gone too"
    );
}
