//! The linked device's connections, made with what the binary already has: its WebSocket to
//! `wss://web.whatsapp.com/ws/chat` over the channels' TLS (`crate::net`, the platform's
//! certificate roots; tokio-tungstenite) and its media requests over reqwest — so the client
//! brings no second TLS stack, WebSocket library or HTTP client of its own.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{Mutex, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use whatsapp_rust::async_channel;
use whatsapp_rust::async_trait;
use whatsapp_rust::bytes::Bytes;
use whatsapp_rust::wacore::net::{
    DisconnectReason, HttpClient, HttpRequest, HttpResponse, Transport, TransportEvent,
    TransportFactory, WHATSAPP_WEB_ORIGIN, WHATSAPP_WEB_WS_URL,
};

use lurkbot_term::{NetworkPolicy, OutboundError, PolicedGet};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::net::{Io, connect, host_port};

type Socket = tokio_tungstenite::WebSocketStream<Box<dyn Io>>;

/// Opens the device's WebSocket (the web client's origin, as WhatsApp requires).
pub(crate) struct Dialer {
    url: String,
}

impl Dialer {
    /// The dialer of `url`, WhatsApp's own endpoint when `None`.
    pub(crate) fn new(url: Option<&str>) -> Self {
        Self {
            url: url.unwrap_or(WHATSAPP_WEB_WS_URL).to_string(),
        }
    }
}

#[async_trait]
impl TransportFactory for Dialer {
    async fn create_transport(
        &self,
    ) -> whatsapp_rust::anyhow::Result<(Arc<dyn Transport>, async_channel::Receiver<TransportEvent>)>
    {
        let (scheme, host, port) = host_port(&self.url, 443)
            .ok_or_else(|| whatsapp_rust::anyhow::anyhow!("not a WebSocket URL: {}", self.url))?;
        let stream = connect(&host, port, scheme == "wss", "WhatsApp")
            .await
            .map_err(|e| whatsapp_rust::anyhow::anyhow!("{e}"))?;
        let mut request = self.url.as_str().into_client_request()?;
        request
            .headers_mut()
            .insert("Origin", WHATSAPP_WEB_ORIGIN.parse()?);
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(request, stream, Some(crate::ws::config()))
                .await?;
        Ok(Pipe::start(socket))
    }
}

/// An open WebSocket as the client's byte pipe.
struct Pipe {
    sink: Mutex<Option<SplitSink<Socket, Message>>>,
    stop: watch::Sender<bool>,
}

impl Pipe {
    fn start(socket: Socket) -> (Arc<dyn Transport>, async_channel::Receiver<TransportEvent>) {
        let (sink, stream) = socket.split();
        let (events, receiver) = async_channel::bounded(64);
        let (stop, stopped) = watch::channel(false);
        // Connected goes first, before any data.
        let _ = events.try_send(TransportEvent::Connected);
        tokio::spawn(read(stream, events, stopped));
        let pipe = Self {
            sink: Mutex::new(Some(sink)),
            stop,
        };
        (Arc::new(pipe), receiver)
    }
}

#[async_trait]
impl Transport for Pipe {
    async fn send(&self, data: Bytes) -> whatsapp_rust::anyhow::Result<()> {
        let mut sink = self.sink.lock().await;
        let sink = sink
            .as_mut()
            .ok_or_else(|| whatsapp_rust::anyhow::anyhow!("the WhatsApp socket is closed"))?;
        sink.send(Message::Binary(data)).await?;
        Ok(())
    }

    async fn disconnect(&self) {
        let _ = self.stop.send(true);
        if let Some(mut sink) = self.sink.lock().await.take() {
            let _ = sink.close().await;
        }
    }
}

/// Hands the socket's binary frames to the client until it closes; then why.
async fn read(
    mut stream: SplitStream<Socket>,
    events: async_channel::Sender<TransportEvent>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut reason = DisconnectReason::Unknown;
    loop {
        let next = tokio::select! {
            biased;
            _ = stopped.changed() => break,
            next = stream.next() => next,
        };
        match next {
            Some(Ok(Message::Binary(data))) => {
                if events
                    .send(TransportEvent::DataReceived(data))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Some(Ok(Message::Close(frame))) => {
                reason = DisconnectReason::ServerClose {
                    code: frame.as_ref().map(|f| u16::from(f.code)),
                    reason: frame.map(|f| f.reason.to_string()).unwrap_or_default(),
                };
                break;
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                reason = DisconnectReason::ReadError(e.to_string());
                break;
            }
            None => {
                reason = DisconnectReason::StreamEnded;
                break;
            }
        }
    }
    let _ = events.send(TransportEvent::Disconnected(reason)).await;
}

/// The client's media and version requests, through the gate's web rules: a picture's URL can
/// come from the sender (a message's `static_url` is fetched as it is written), so every GET is
/// a [`PolicedGet`] — each hop checked and pinned to the address checked — and every other
/// request (uploads, to the hosts WhatsApp's server names) is checked before it is sent and
/// follows no redirect. A status is an answer, never an error: the client reads 401/404 to
/// refresh its media connection.
pub(crate) struct Fetcher {
    client: reqwest::Client,
    policy: NetworkPolicy,
}

/// Longest exchange: media can be large.
const EXCHANGE: Duration = Duration::from_secs(120);

impl Fetcher {
    /// A fetcher held to `policy`.
    pub(crate) fn new(policy: NetworkPolicy) -> Result<Self, crate::ChannelError> {
        let client = lurkbot_term::http_client_builder()
            .user_agent(USER_AGENT)
            .connect_timeout(Duration::from_secs(20))
            .timeout(EXCHANGE)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| crate::ChannelError::Permanent(format!("HTTP client: {e}")))?;
        Ok(Self { client, policy })
    }
}

const USER_AGENT: &str = concat!("LurkBot/", env!("CARGO_PKG_VERSION"));

#[async_trait]
impl HttpClient for Fetcher {
    async fn execute(&self, request: HttpRequest) -> whatsapp_rust::anyhow::Result<HttpResponse> {
        let url = reqwest::Url::parse(&request.url)?;
        let mut headers = HeaderMap::new();
        for (name, value) in &request.headers {
            headers.insert(
                HeaderName::from_bytes(name.as_bytes())?,
                HeaderValue::from_str(value)?,
            );
        }
        let response = if request.method == "GET" && request.body.is_none() {
            let get = PolicedGet {
                policy: &self.policy,
                user_agent: USER_AGENT,
                headers,
                timeout: Some(EXCHANGE),
                max_redirects: 5,
            };
            get.send(url)
                .await
                .map_err(|e| whatsapp_rust::anyhow::anyhow!("{}", refusal_text(&e)))?
                .response
        } else {
            self.policy.check(&url).await.map_err(|e| {
                whatsapp_rust::anyhow::anyhow!("refused by the network policy: {e}")
            })?;
            let method = reqwest::Method::from_bytes(request.method.as_bytes())?;
            let mut builder = self.client.request(method, url).headers(headers);
            if let Some(body) = request.body {
                builder = builder.body(body);
            }
            builder.send().await.map_err(|e| e.without_url())?
        };
        let status_code = response.status().as_u16();
        let body = response.bytes().await?.to_vec();
        Ok(HttpResponse { status_code, body })
    }
}

/// Why a GET failed, without its URL (a media URL can carry a token).
fn refusal_text(error: &OutboundError) -> String {
    match error {
        OutboundError::Refused { refusal, .. } => {
            format!("refused by the network policy: {refusal}")
        }
        OutboundError::Network { source, .. } => format!("media request failed: {source}"),
        OutboundError::Redirect(_) => "a redirect that cannot be followed".into(),
        OutboundError::Client(why) => why.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_media_url_to_a_private_address_is_refused_before_any_connection() {
        // A listener that would answer: the refusal must come from the policy, not the socket.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let strict = NetworkPolicy {
            allow_private: false,
            allow_hosts: Vec::new(),
        };
        let fetcher = Fetcher::new(strict).unwrap_or_else(|e| panic!("{e}"));
        let url = format!("http://127.0.0.1:{port}/static/picture.enc");
        let get = fetcher.execute(HttpRequest::get(&url)).await;
        let post = fetcher
            .execute(HttpRequest::post(&url).with_body(vec![1, 2, 3]))
            .await;
        for answer in [get, post] {
            let why = answer.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(why.contains("refused by the network policy"), "{why}");
            assert!(
                !why.contains(&port.to_string()) || why.contains("127.0.0.1"),
                "{why}"
            );
        }
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(listener.accept().is_err(), "nothing connected");
    }
}
