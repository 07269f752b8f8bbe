//! Device identity (OpenClaw's protocol 3–4): a device is an Ed25519 key pair; its id is the
//! hex SHA-256 of the raw public key; on every `connect` it signs the gateway's challenge
//! nonce, bound to the role, scopes, client and token, as
//! `v3|id|clientId|clientMode|role|scopes|signedAtMs|token|nonce|platform|deviceFamily`
//! (`v2|…|nonce` without the last two fields from older clients). Keys and signatures travel
//! as unpadded base64url. Used by the gateway to verify a node and by `lurkbot node run` to
//! sign as one.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use serde_json::{Value, json};

/// How far a signature's `signedAt` may be from the gateway's clock (the nonce already binds
/// it to this connection; this only refuses a stale clock's oddities).
pub const SIGNED_AT_SKEW_MS: u64 = 10 * 60 * 1000;

/// The fields a signature covers besides the device's own.
#[derive(Debug, Clone, Copy)]
pub struct Signed<'a> {
    /// `client.id`.
    pub client_id: &'a str,
    /// `client.mode`.
    pub client_mode: &'a str,
    /// `role`.
    pub role: &'a str,
    /// `scopes`, in the order sent.
    pub scopes: &'a [&'a str],
    /// `auth.token` (empty when none).
    pub token: &'a str,
    /// `client.platform`.
    pub platform: &'a str,
    /// `client.deviceFamily`.
    pub device_family: &'a str,
}

/// The text signed, version 3 (or 2 without platform and family).
fn payload(
    version: u8,
    device_id: &str,
    signed: &Signed<'_>,
    signed_at: u64,
    nonce: &str,
) -> String {
    let mut text = format!(
        "v{version}|{device_id}|{}|{}|{}|{}|{signed_at}|{}|{nonce}",
        signed.client_id,
        signed.client_mode,
        signed.role,
        signed.scopes.join(","),
        signed.token,
    );
    if version >= 3 {
        let norm = |s: &str| s.trim().to_ascii_lowercase();
        text.push_str(&format!(
            "|{}|{}",
            norm(signed.platform),
            norm(signed.device_family)
        ));
    }
    text
}

/// The device id of a raw public key: its SHA-256 in lower-case hex.
pub fn device_id(public_key: &[u8]) -> String {
    sha256_hex(public_key)
}

/// The SHA-256 of `bytes` in lower-case hex (device ids, the users' token digests).
pub fn sha256_hex(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A device identity proven on one `connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenDevice {
    /// The device id.
    pub id: String,
    /// The raw public key, base64url.
    pub public_key: String,
}

/// Checks `connect`'s `device` against the challenge `nonce` the gateway sent.
///
/// # Errors
/// What is missing or wrong, in words for the one who connects: no identity, a nonce other than
/// this connection's (a replay), an id that is not the key's, a signature that does not verify.
pub fn verify(params: &Value, nonce: &str, now_ms: u64) -> Result<ProvenDevice, String> {
    let device = params
        .get("device")
        .filter(|d| d.is_object())
        .ok_or("a node must present its signed device identity (device {id, publicKey, signature, signedAt, nonce})")?;
    let field = |name: &str| {
        device
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("device.{name} is missing"))
    };
    let (id, key_text, signature) = (field("id")?, field("publicKey")?, field("signature")?);
    let signed_at = device
        .get("signedAt")
        .and_then(Value::as_u64)
        .ok_or("device.signedAt is missing")?;
    if field("nonce")? != nonce {
        return Err(
            "device.nonce is not this connection's challenge (a replayed signature?)".into(),
        );
    }
    if signed_at.abs_diff(now_ms) > SIGNED_AT_SKEW_MS {
        return Err("device.signedAt is more than 10 minutes from the gateway's clock".into());
    }
    let key = URL_SAFE_NO_PAD
        .decode(key_text.trim_end_matches('='))
        .ok()
        .filter(|k| k.len() == 32)
        .ok_or("device.publicKey is not a base64url Ed25519 public key")?;
    if device_id(&key) != id {
        return Err("device.id is not the SHA-256 of device.publicKey".into());
    }
    let signature = URL_SAFE_NO_PAD
        .decode(signature.trim_end_matches('='))
        .map_err(|_| "device.signature is not base64url")?;
    let text = |name: &str| {
        params
            .pointer(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let scopes: Vec<&str> = params
        .get("scopes")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let signed = Signed {
        client_id: text("/client/id"),
        client_mode: text("/client/mode"),
        role: text("/role"),
        scopes: &scopes,
        token: ["/auth/token", "/auth/password"]
            .iter()
            .map(|p| text(p))
            .find(|t| !t.is_empty())
            .unwrap_or_default(),
        platform: text("/client/platform"),
        device_family: text("/client/deviceFamily"),
    };
    let public = UnparsedPublicKey::new(&ED25519, &key);
    let verified = [3, 2].iter().any(|&version| {
        let message = payload(version, id, &signed, signed_at, nonce);
        public.verify(message.as_bytes(), &signature).is_ok()
    });
    if !verified {
        return Err("device.signature does not verify with device.publicKey".into());
    }
    Ok(ProvenDevice {
        id: id.to_string(),
        public_key: URL_SAFE_NO_PAD.encode(&key),
    })
}

/// A device's own key pair (`lurkbot node run`), kept as PKCS#8.
pub struct Identity {
    pair: Ed25519KeyPair,
    pkcs8: Vec<u8>,
}

impl Identity {
    /// A new identity.
    ///
    /// # Errors
    /// The system's random source failed.
    pub fn generate() -> Result<Self, String> {
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new())
            .map_err(|_| "the system's random source failed".to_string())?;
        Self::from_pkcs8(pkcs8.as_ref())
    }

    /// An identity from its PKCS#8 bytes.
    ///
    /// # Errors
    /// The bytes are not an Ed25519 PKCS#8 key.
    pub fn from_pkcs8(pkcs8: &[u8]) -> Result<Self, String> {
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(pkcs8)
            .map_err(|e| format!("not an Ed25519 key: {e}"))?;
        Ok(Self {
            pair,
            pkcs8: pkcs8.to_vec(),
        })
    }

    /// The PKCS#8 bytes, to keep.
    pub fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The device id.
    pub fn id(&self) -> String {
        device_id(self.pair.public_key().as_ref())
    }

    /// `connect`'s `device` object answering `nonce` (challenge time `ts`).
    pub fn sign(&self, signed: &Signed<'_>, nonce: &str, ts: u64) -> Value {
        let id = self.id();
        let message = payload(3, &id, signed, ts, nonce);
        json!({
            "id": id,
            "publicKey": URL_SAFE_NO_PAD.encode(self.pair.public_key().as_ref()),
            "signature": URL_SAFE_NO_PAD.encode(self.pair.sign(message.as_bytes()).as_ref()),
            "signedAt": ts,
            "nonce": nonce,
        })
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenClaw 2026.9.6's node host, captured connecting to OpenClaw's gateway (token and
    /// all): the v3 signature verifies.
    #[test]
    fn openclaws_own_node_signature_verifies() {
        let params = json!({"client": {"id": "node-host", "platform": "linux", "deviceFamily": "Linux", "mode": "node"},
            "auth": {"token": "tok-0123456789abcdef0123456789"}, "role": "node", "scopes": [],
            "device": {"id": "9e83f8c6228f09619f99ce906e068566443d60fda2cb0433e313f7cb29c88032",
                "publicKey": "crXSYqO4CKAjdgXi9AKIWtap-eRUFU3EfhYElFmuFfs",
                "signature": "MzTNTIugWYYrS1d-37t4IYJa6PNVtYCg_KSKSSytAJZZcbdjuvyw7ROTf-lO_09vwnumc4HjQefPB7TJBfG-CQ",
                "signedAt": 1795659925566u64, "nonce": "2f7a3598-7f97-4bc6-bd51-19196f2dd2b4"}});
        let nonce = "2f7a3598-7f97-4bc6-bd51-19196f2dd2b4";
        let proven = verify(&params, nonce, 1795659925566).expect("verifies");
        assert_eq!(proven.id, params["device"]["id"]);
        // Anything signed changed: refused.
        for (at, value) in [
            ("/auth/token", json!("another-token-0123456789abcdef")),
            ("/role", json!("operator")),
            ("/scopes", json!(["operator.admin"])),
            ("/client/platform", json!("macos")),
        ] {
            let mut changed = params.clone();
            if let Some(slot) = changed.pointer_mut(at) {
                *slot = value;
            }
            assert!(verify(&changed, nonce, 1795659925566).is_err(), "{at}");
        }
        // Another connection's nonce: a replay.
        let err = verify(&params, "another-nonce", 1795659925566).unwrap_err();
        assert!(err.contains("replayed"), "{err}");
    }

    #[test]
    fn a_signed_connect_round_trips_and_another_key_cannot_claim_the_id() {
        let me = Identity::generate().expect("key");
        let again = Identity::from_pkcs8(me.pkcs8()).expect("kept key");
        assert_eq!(me.id(), again.id());
        let signed = Signed {
            client_id: "node-host",
            client_mode: "node",
            role: "node",
            scopes: &[],
            token: "t",
            platform: "Linux",
            device_family: "",
        };
        let mut params = json!({"client": {"id": "node-host", "mode": "node", "platform": "Linux"},
            "role": "node", "scopes": [], "auth": {"token": "t"}});
        params["device"] = me.sign(&signed, "n1", 1000);
        assert_eq!(verify(&params, "n1", 2000).map(|d| d.id), Ok(me.id()));
        // Too far from the clock.
        assert!(verify(&params, "n1", 1000 + SIGNED_AT_SKEW_MS + 1).is_err());
        // A forger's key, the victim's id: the id is not its key's.
        let forger = Identity::generate().expect("key");
        let mut forged = params.clone();
        forged["device"] = forger.sign(&signed, "n1", 1000);
        forged["device"]["id"] = json!(me.id());
        let err = verify(&forged, "n1", 1000).unwrap_err();
        assert!(err.contains("SHA-256"), "{err}");
        // The victim's key and id, the forger's signature.
        forged["device"]["publicKey"] = params["device"]["publicKey"].clone();
        let err = verify(&forged, "n1", 1000).unwrap_err();
        assert!(err.contains("does not verify"), "{err}");
    }
}
