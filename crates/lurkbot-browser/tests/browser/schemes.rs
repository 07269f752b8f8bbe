//! Only http and https leave the browser (ARCHITECTURE.md §5.3): the model's `navigate`/`open`
//! with any other scheme is refused before Chromium sees it; a page's link, redirect,
//! `window.open` or `location` to a local file or the browser's own pages reaches nothing; a
//! download that does not come from an allowed http(s) page is never kept; WebRTC sends nothing
//! around the proxy.

use std::net::{TcpListener, UdpSocket};

use lurkbot_browser::{Action, BrowserError};
use lurkbot_test_support::feed_server::{FeedServer, Reply};

use super::{browser_allowing, ref_of};

/// Every scheme the model may not open, with a URL of it.
fn refused_urls(secret: &str, server: &FeedServer) -> Vec<(&'static str, String)> {
    vec![
        ("file", format!("file://{secret}")),
        ("file", "FILE:///etc/hostname".into()),
        ("javascript", "javascript:document.title='PWNED'".into()),
        (
            "javascript",
            "JavaScript:void(document.body.innerHTML='PWNED')".into(),
        ),
        (
            "data",
            "data:text/html,<title>DATA-PAGE</title><script>document.title='PWNED'</script>".into(),
        ),
        ("chrome", "chrome://version".into()),
        (
            "chrome-extension",
            "chrome-extension://abcdefghijklmnop/page.html".into(),
        ),
        (
            "devtools",
            "devtools://devtools/bundled/inspector.html".into(),
        ),
        (
            "view-source",
            format!("view-source:{}", server.url("/start.html")),
        ),
        (
            "blob",
            "blob:http://example.com/1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed".into(),
        ),
        (
            "filesystem",
            "filesystem:http://example.com/temporary/x".into(),
        ),
        ("ftp", "ftp://127.0.0.1:21/pub/file".into()),
        ("about", "about:version".into()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_opens_only_http_and_https_pages() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-CONTENT").unwrap();
    let secret = secret.display().to_string();
    let server = FeedServer::start();
    server.serve_bytes(
        "/start.html",
        "text/html",
        b"<!doctype html><title>Start</title><p>The start page.</p>".to_vec(),
    );
    let (b, policy) = browser_allowing(dir.path(), &server).await;

    // Refused before Chromium is even started.
    let first = b
        .act(
            Action::Navigate {
                url: format!("file://{secret}"),
            },
            policy.clone(),
        )
        .await;
    assert!(matches!(first, Err(BrowserError::Refused(_))), "{first:?}");
    assert!(
        !b.status().await.running,
        "Chromium was started for a refused URL"
    );

    b.act(
        Action::Navigate {
            url: server.url("/start.html"),
        },
        policy.clone(),
    )
    .await
    .unwrap();
    for (scheme, url) in refused_urls(&secret, &server) {
        for action in [
            Action::Navigate { url: url.clone() },
            Action::Open { url: url.clone() },
        ] {
            let refused = b.act(action.clone(), policy.clone()).await;
            let Err(e) = refused else {
                panic!("{action:?} was carried out: {refused:?}");
            };
            assert_eq!(e.code(), "PermissionDenied", "{action:?}: {e}");
            let message = e.to_string();
            assert!(
                message.contains(&format!("not {scheme}: URLs")),
                "{message}"
            );
            assert!(!message.contains("SECRET-CONTENT"), "{message}");
        }
    }
    // The page is the one the model loaded: no script of the model's ran in it, no tab opened.
    let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    assert!(
        snap.contains("Start") && snap.contains("The start page."),
        "{snap}"
    );
    for absent in [
        "SECRET-CONTENT",
        "PWNED",
        "DATA-PAGE",
        "Chromium",
        "hostname",
    ] {
        assert!(!snap.contains(absent), "{absent} in {snap}");
    }
    let tabs = b.act(Action::Tabs, policy.clone()).await.unwrap().text;
    assert_eq!(tabs.lines().count(), 1, "{tabs}");
    assert!(tabs.contains(&server.url("/start.html")), "{tabs}");
    b.stop().await;
}

const LURE: &str = r#"<!doctype html><title>Lure</title>
<a id="file" href="FILE_URL">a local file</a>
<a href="/to-file">a redirect to it</a>
<a href="/to-chrome">a redirect to chrome</a>
<a href="chrome://version">chrome version</a>
<a href="data:text/html,<title>DATA-PAGE</title>">a data page</a>
<a href="FILE_URL" download="secret.txt">download the file</a>
<a href="data:text/plain,DATA-FILE" download="data.txt">download data</a>
<a id="blob" download="made.txt">download a blob</a>
<button onclick="window.open('FILE_URL')">pop up the file</button>
<button onclick="location.href = 'FILE_URL'">go to the file</button>
<button onclick="location.href = 'chrome://version'">go to chrome</button>
<iframe src="FILE_URL" name="framed"></iframe>
<script>
document.getElementById('blob').href = URL.createObjectURL(new Blob(['BLOB-FILE'], {type: 'text/plain'}));
</script>"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_reaches_no_local_file_and_keeps_no_download_but_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-CONTENT").unwrap();
    let file_url = format!("file://{}", secret.display());
    let server = FeedServer::start();
    server.serve_bytes(
        "/lure.html",
        "text/html",
        LURE.replace("FILE_URL", &file_url).into_bytes(),
    );
    let to_file = file_url.clone();
    server.route("/to-file", move |_| {
        Reply::status(302).header("Location", &to_file)
    });
    server.route("/to-chrome", |_| {
        Reply::status(302).header("Location", "chrome://version")
    });
    let (b, policy) = browser_allowing(dir.path(), &server).await;
    let lure = server.url("/lure.html");
    b.act(Action::Navigate { url: lure.clone() }, policy.clone())
        .await
        .unwrap();

    let mut told = Vec::new();
    for name in [
        "link \"a local file\"",
        "link \"a redirect to it\"",
        "link \"a redirect to chrome\"",
        "link \"chrome version\"",
        "link \"a data page\"",
        "button \"pop up the file\"",
        "button \"go to the file\"",
        "button \"go to chrome\"",
    ] {
        let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
        let clicked = b
            .act(
                Action::Click {
                    r: ref_of(&snap, name),
                },
                policy.clone(),
            )
            .await
            .unwrap();
        told.push(format!("{name}: {} {:?}", clicked.text, clicked.footer()));
        let after = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
        for absent in ["SECRET-CONTENT", "DATA-PAGE", "Chromium"] {
            assert!(!after.contains(absent), "{name}: {absent} in {after}");
        }
        let tabs = b.act(Action::Tabs, policy.clone()).await.unwrap().text;
        assert!(
            !tabs.contains("file:") && !tabs.contains("chrome:"),
            "{name}: {tabs}"
        );
        // Back on the lure for the next route.
        b.act(Action::Navigate { url: lure.clone() }, policy.clone())
            .await
            .unwrap();
    }
    let told = told.join("\n");
    assert!(!told.contains("SECRET-CONTENT"), "{told}");

    // Downloads: a local file and a data: URL are never kept; the page's own blob is. (The
    // local file's link starts no download at all: it is clicked, not waited for.)
    let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    let clicked = b
        .act(
            Action::Click {
                r: ref_of(&snap, "link \"download the file\""),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    assert!(clicked.downloads.is_empty(), "{clicked:?}");
    let mut kept = Vec::new();
    let mut notes = Vec::new();
    for name in ["link \"download data\"", "link \"download a blob\""] {
        let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
        let done = b
            .act(
                Action::Download {
                    r: ref_of(&snap, name),
                },
                policy.clone(),
            )
            .await;
        match done {
            Ok(outcome) => {
                kept.extend(
                    outcome
                        .downloads
                        .iter()
                        .map(|d| std::fs::read_to_string(&d.staged).unwrap_or_default()),
                );
                notes.extend(outcome.notes);
            }
            Err(e) => notes.push(format!("{name}: {}: {e}", e.code())),
        }
    }
    assert_eq!(kept, vec!["BLOB-FILE".to_string()], "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n
                .starts_with("DownloadRefused: data.txt was not kept: it came from a data: URL")),
        "{notes:?}"
    );
    let staged: Vec<String> = std::fs::read_dir(dir.path().join("staging"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        staged.iter().all(|s| s == "BLOB-FILE"),
        "a refused download was left in the staging folder: {staged:?}"
    );
    b.stop().await;
}

/// A page that aims WebRTC at loopback listeners: a STUN server and a peer's data channel on
/// UDP, a TURN server on TCP. It says `ICE-DONE` once the peer's candidate is set and gathering
/// is complete (a STUN request would already have been sent) — or at once, with
/// `UDP-CANDIDATE`, when it gathered a UDP candidate at all.
fn webrtc_page(udp: u16, tcp: u16) -> String {
    format!(
        r#"<!doctype html><title>Call</title><p id="out">calling</p><script>
const say = (t) => {{ document.getElementById('out').textContent += ' ' + t; }};
const pc = new RTCPeerConnection({{iceServers: [
  {{urls: 'stun:127.0.0.1:{udp}'}},
  {{urls: 'turn:127.0.0.1:{tcp}?transport=tcp', username: 'u', credential: 'p'}}]}});
pc.createDataChannel('x');
let gathered = false, answered = false;
const done = () => {{ if ((gathered || udp) && answered) say('ICE-DONE'); }};
let udp = false;
pc.onicecandidate = (e) => {{ if (e.candidate && / udp /i.test(e.candidate.candidate)) {{ udp = true; say('UDP-CANDIDATE'); done(); }} }};
pc.onicegatheringstatechange = () => {{ if (pc.iceGatheringState === 'complete') {{ gathered = true; done(); }} }};
pc.createOffer().then((o) => pc.setLocalDescription(o)).then(() => {{
  let sdp = pc.localDescription.sdp
    .replace(/a=ice-ufrag:.*\r\n/, 'a=ice-ufrag:abcd\r\n')
    .replace(/a=ice-pwd:.*\r\n/, 'a=ice-pwd:abcdefghijklmnopqrstuv\r\n')
    .replace('a=setup:actpass', 'a=setup:active')
    .replace(/a=candidate.*\r\n/g, '');
  return pc.setRemoteDescription({{type: 'answer', sdp}});
}}).then(() => pc.addIceCandidate({{candidate: 'candidate:1 1 udp 2122260223 127.0.0.1 {udp} typ host', sdpMid: '0'}}))
  .then(() => {{ answered = true; done(); }}, (e) => say('error ' + e));
</script>"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webrtc_sends_nothing_around_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let (udp_port, tcp_port) = (
        udp.local_addr().unwrap().port(),
        tcp.local_addr().unwrap().port(),
    );
    let server = FeedServer::start();
    server.serve_bytes(
        "/call.html",
        "text/html",
        webrtc_page(udp_port, tcp_port).into_bytes(),
    );
    let (b, policy) = browser_allowing(dir.path(), &server).await;
    let loaded = b
        .act(
            Action::Navigate {
                url: server.url("/call.html"),
            },
            policy.clone(),
        )
        .await
        .unwrap();
    let waited = b
        .act(
            Action::Wait {
                text: Some("ICE-DONE".into()),
            },
            policy.clone(),
        )
        .await;
    let waited = match waited {
        Ok(w) => w,
        Err(e) => {
            let snap = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
            panic!("{e}: {snap}");
        }
    };
    // The TURN server was asked for through the proxy, which refused it (the page's WebRTC ran).
    let blocked: Vec<String> = loaded
        .blocked
        .iter()
        .chain(&waited.blocked)
        .map(|b| b.target.clone())
        .collect();
    assert!(
        blocked.contains(&format!("127.0.0.1:{tcp_port}")),
        "the TURN request did not reach the proxy: {blocked:?}"
    );
    // Loopback delivers at once: anything sent before ICE-DONE is waiting in the sockets.
    let mut buf = [0u8; 2048];
    let datagram = udp.recv_from(&mut buf);
    assert!(
        datagram.is_err(),
        "a UDP packet reached the listener: {datagram:?}"
    );
    let connection = tcp.accept();
    assert!(
        connection.is_err(),
        "a TCP connection went around the proxy: {connection:?}"
    );
    let text = b.act(Action::Snapshot, policy.clone()).await.unwrap().text;
    assert!(!text.contains("error"), "{text}");
    assert!(
        !text.contains("UDP-CANDIDATE"),
        "WebRTC gathered a UDP candidate: {text}"
    );
    b.stop().await;
}
