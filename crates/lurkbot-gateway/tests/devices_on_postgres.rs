//! Paired devices in a shared PostgreSQL store (Debian's 15 on loopback): two gateways' device
//! stores over one database — each admission is one transaction, so the pending cap holds
//! across them, and a decision made through one is read by the other.

use lurkbot_core::Home;
use lurkbot_gateway::devices::{Declared, DeviceError, DeviceState, DeviceStore, MAX_PENDING};
use lurkbot_gateway::protocol::device::ProvenDevice;
use lurkbot_state::{Location, StateUrl, Store};
use lurkbot_test_support::postgres::Postgres;

fn proven(i: usize) -> ProvenDevice {
    ProvenDevice {
        id: format!("dev{i:05}"),
        public_key: format!("K{i}"),
    }
}

#[test]
fn the_pending_cap_and_the_owners_decisions_hold_across_gateways() {
    let pg = Postgres::start();
    let at = Location::Postgres(Box::new(StateUrl::parse(&pg.database("devices")).unwrap()));
    let dir = tempfile::tempdir().unwrap();
    let home = Home::open(dir.path()).unwrap();
    let store = Store::open_at(&home, &at, Some("gw-a")).unwrap();
    lurkbot_state::shared::share(&home, &store);
    let (mut a, mut b) = (DeviceStore::open(&home), DeviceStore::open(&home));
    let seen = |name: &str| Declared {
        name: name.into(),
        ..Declared::default()
    };
    // Half the cap through each gateway; one more through either is refused.
    for i in 0..MAX_PENDING {
        let store = if i % 2 == 0 { &mut a } else { &mut b };
        store.admit(&proven(i), seen(&format!("d{i}"))).unwrap();
    }
    assert_eq!(
        a.admit(&proven(MAX_PENDING), seen("one more")),
        Err(DeviceError::TooManyPending)
    );
    assert_eq!(
        b.admit(&proven(MAX_PENDING + 1), seen("one more")),
        Err(DeviceError::TooManyPending)
    );
    // Approved through B, read through A; the file of the home is not written.
    b.refresh();
    b.decide("d0", DeviceState::Approved).unwrap();
    a.refresh();
    assert_eq!(a.find("d0").unwrap().state, DeviceState::Approved);
    assert_eq!(a.list().unwrap().len(), MAX_PENDING);
    assert!(!home.join(lurkbot_gateway::devices::DEVICES_FILE).exists());
    // Room again for a new device.
    a.admit(&proven(MAX_PENDING + 2), seen("next")).unwrap();
}
