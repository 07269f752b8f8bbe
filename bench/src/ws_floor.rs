//! `lurkbot-bench ws-floor --port P`: the floor the 1,000-client figure is read against. A bare
//! WebSocket server on the same stack as the gateway (tokio with two workers, tungstenite)
//! that speaks just enough of the protocol for the bench's clients: the challenge event, `res`
//! to `connect`, and `res` with the `health` payload to every other request, each parsed and
//! answered as JSON. No authentication, routing, tasks per request, logging or hub: what is
//! left is the runtime, the WebSocket framing and the loopback TCP path, on the same cores.

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use lurkbot_gateway::protocol::{self, Challenge, Event, EventFrame, ProtocolVersion};

/// Serves until killed.
pub(crate) fn ws_floor(port: u16) -> Result<(), String> {
    // Two workers, as `lurkbot gateway` runs.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        // The gateway's own listen backlog (4096), so 1,000 connections at once are not
        // refused into SYN retries.
        let socket = TcpSocket::new_v4().map_err(|e| e.to_string())?;
        socket
            .bind((std::net::Ipv4Addr::LOCALHOST, port).into())
            .map_err(|e| e.to_string())?;
        let listener = socket.listen(4096).map_err(|e| e.to_string())?;
        loop {
            let (stream, _) = listener.accept().await.map_err(|e| e.to_string())?;
            tokio::spawn(connection(stream));
        }
    })
}

async fn connection(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let challenge = ProtocolVersion::V1.event_frame(&EventFrame {
        event: Event::ConnectChallenge(Challenge {
            nonce: "floor".into(),
            ts: 0,
        }),
        seq: 1,
    });
    if ws
        .send(Message::Text(challenge.to_string().into()))
        .await
        .is_err()
    {
        return;
    }
    while let Some(Ok(message)) = ws.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(request) = serde_json::from_str::<Value>(text.as_str()) else {
            continue;
        };
        let id = request["id"].as_str().unwrap_or_default();
        let payload = if request["method"] == protocol::method::CONNECT {
            json!({"type": "hello-ok"})
        } else {
            protocol::health()
        };
        let answer = protocol::ok(id, payload);
        if ws
            .send(Message::Text(answer.to_string().into()))
            .await
            .is_err()
        {
            return;
        }
    }
}
