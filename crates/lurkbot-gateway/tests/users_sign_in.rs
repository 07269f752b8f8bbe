//! Signing in to a shared gateway (ARCHITECTURE.md §6.2): argon2id passwords, the sign-in
//! cookie's flags, sign-out closing the socket it signed in, and wrong passwords limited per
//! address and per user name with one answer for all.

use serde_json::{Value, json};

use crate::common::{Client, Gateway, TOKEN};
use crate::users::{USERS_ON, add, tls_provider};

/// Who `cookie` (`lurkbot_session=…`) signs in, as `GET /auth/me` says.
pub(crate) async fn me(gw: &Gateway, cookie: &str) -> Value {
    let text = reqwest::Client::new()
        .get(gw.url("/auth/me"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Signs in over HTTP from `local` (a loopback address of its own, for the per-address limit).
async fn sign_in(gw: &Gateway, local: [u8; 4], user: &str, password: &str) -> reqwest::Response {
    let http = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from(local))
        .build()
        .unwrap();
    http.post(gw.url("/auth/login"))
        .header("content-type", "application/json")
        .body(json!({"user": user, "password": password}).to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn passwords_sign_in_with_a_cookie_and_wrong_ones_are_limited() {
    tls_provider();
    let mut gw = Gateway::start(USERS_ON, vec![]).await;
    let (mut owner, _) = Client::connect(&gw, TOKEN).await;
    add(&mut owner, "alice").await;
    add(&mut owner, "bob").await;
    for (name, password) in [
        ("alice", "alice's long password"),
        ("bob", "bob's long password"),
    ] {
        let set = owner
            .request("users.passwd", json!({"name": name, "password": password}))
            .await;
        assert_eq!(set["ok"], true, "{set}");
    }
    let short = owner
        .request("users.passwd", json!({"name": "bob", "password": "short"}))
        .await;
    assert_eq!(short["error"]["code"], "INVALID_REQUEST");
    let stored = std::fs::read_to_string(gw.home.join("users/users.json")).unwrap();
    assert!(stored.contains("$argon2id$") && !stored.contains("long password"));

    // A wrong password and an unknown user read the same.
    let wrong = sign_in(&gw, [127, 0, 0, 1], "alice", "not her password").await;
    assert_eq!(wrong.status(), 401);
    assert!(wrong.headers().get("set-cookie").is_none());
    let wrong_text = wrong.text().await.unwrap();
    let nobody = sign_in(&gw, [127, 0, 0, 1], "mallory", "whatever it is").await;
    assert_eq!(nobody.status(), 401);
    assert_eq!(nobody.text().await.unwrap(), wrong_text);

    // The right one: an HttpOnly, SameSite=Strict cookie with an expiry, not Secure over HTTP.
    let ok = sign_in(&gw, [127, 0, 0, 3], "alice", "alice's long password").await;
    assert_eq!(ok.status(), 200);
    let set = ok.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.starts_with("lurkbot_session="), "{set}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=604800"] {
        assert!(set.contains(flag), "{flag} missing: {set}");
    }
    assert!(!set.contains("Secure"), "{set}");
    let cookie = set.split(';').next().unwrap().to_string();
    // The cookie signs a WebSocket in as Alice.
    let mut c = Client::open_with(&gw, &[("cookie", &cookie)])
        .await
        .unwrap();
    let _challenge = c.recv().await;
    let hello = c
        .request("connect", crate::common::connect_params(""))
        .await;
    assert_eq!(hello["payload"]["signedIn"]["user"], "alice", "{hello}");
    let signed = me(&gw, &cookie).await;
    assert_eq!(signed["signedIn"]["user"], "alice");
    // Behind a TLS proxy the cookie is Secure.
    let http = reqwest::Client::new();
    let tls = http
        .post(gw.url("/auth/login"))
        .header("x-forwarded-proto", "https")
        .header("content-type", "application/json")
        .body(json!({"user": "bob", "password": "bob's long password"}).to_string())
        .send()
        .await
        .unwrap();
    assert!(
        tls.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("; Secure")
    );
    // Signing out ends the sign-in: the open socket closes, the cookie signs in nobody.
    let out = http
        .post(gw.url("/auth/logout"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert!(
        out.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    assert_eq!(c.close_code().await, Some(4001));
    let mut again = Client::open_with(&gw, &[("cookie", &cookie)])
        .await
        .unwrap();
    let _challenge = again.recv().await;
    let refused = again
        .request("connect", crate::common::connect_params(""))
        .await;
    assert_eq!(refused["error"]["code"], "UNAUTHORIZED", "{refused}");

    // Five wrong passwords for Alice from one address: that address waits, and so does the
    // name Alice from any other address, while Bob still signs in from there.
    // (127.0.0.1 has two failures already, Alice one.)
    for _ in 0..3 {
        let r = sign_in(&gw, [127, 0, 0, 1], "alice", "guess guess guess").await;
        assert_eq!(r.status(), 401);
    }
    let fifth = sign_in(&gw, [127, 0, 0, 2], "alice", "guess guess guess").await;
    assert_eq!(fifth.status(), 401);
    let blocked = sign_in(&gw, [127, 0, 0, 1], "bob", "bob's long password").await;
    assert_eq!(blocked.status(), 429, "the address is blocked");
    let by_name = sign_in(&gw, [127, 0, 0, 2], "alice", "alice's long password").await;
    assert_eq!(by_name.status(), 429, "the name is blocked");
    let other = sign_in(&gw, [127, 0, 0, 2], "bob", "bob's long password").await;
    assert_eq!(other.status(), 200);
    // A new password ends the user's sign-ins.
    let bob_cookie = other.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    owner
        .request(
            "users.passwd",
            json!({"name": "bob", "password": "bob's newer password"}),
        )
        .await;
    let signed = me(&gw, &bob_cookie).await;
    assert_eq!(signed["signedIn"], Value::Null, "{signed}");
    gw.stop().await;
}
