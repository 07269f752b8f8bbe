//! Delivering one reply: formatted for the platform, cut into messages it accepts, each sent
//! with the channel's retry policy — a `429` waits the platform's `retry_after`, a server error
//! or network failure backs off 1 s, 2 s, 4 s …, a permanent refusal (blocked, unknown chat,
//! bad request) is not retried and is reported.

use std::time::Duration;

use crate::chunk::chunks;
use crate::{Channel, ChannelError};

/// How hard a channel tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries per message, the first included.
    pub attempts: u32,
    /// The first back-off after a transient failure (doubled each time).
    pub backoff: Duration,
    /// The longest wait accepted (a longer `retry_after` fails the message).
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 5,
            backoff: Duration::from_secs(1),
            max_wait: Duration::from_secs(60),
        }
    }
}

/// Sends `markdown` to `chat`: the number of messages it took.
///
/// # Errors
/// The first message that could not be sent (permanent, or still failing after the retries);
/// the messages before it were sent.
pub async fn deliver(
    channel: &dyn Channel,
    chat: &str,
    markdown: &str,
    reply_to: Option<&str>,
    policy: RetryPolicy,
) -> Result<usize, ChannelError> {
    let pieces = formatted_pieces(channel, markdown);
    for (i, piece) in pieces.iter().enumerate() {
        // Only the first piece replies to the message; the rest follow it.
        let reply = if i == 0 { reply_to } else { None };
        send_with_retry(channel, chat, piece, reply, policy).await?;
    }
    Ok(pieces.len())
}

/// Sends the pieces of `markdown` from piece `first` on, each under the idempotency key
/// `<key>.<piece>` ([`Channel::send_once`]), telling `sent` after each (pieces sent so far, the
/// platform's id): the outbox records it, so a restart sends only the rest. The number of
/// pieces.
///
/// # Errors
/// The first piece that could not be sent (permanent, or still failing after the retries).
pub async fn deliver_from(
    channel: &dyn Channel,
    chat: &str,
    markdown: &str,
    reply_to: Option<&str>,
    policy: RetryPolicy,
    (key, first): (&str, usize),
    sent: &mut (dyn FnMut(usize, Option<&str>) + Send),
) -> Result<usize, ChannelError> {
    let pieces = formatted_pieces(channel, markdown);
    for (i, piece) in pieces.iter().enumerate().skip(first) {
        let reply = if i == 0 { reply_to } else { None };
        let piece_key = format!("{key}.{i}");
        let id = retrying(channel, policy, || {
            channel.send_once(chat, piece, reply, &piece_key)
        })
        .await?;
        sent(i + 1, id.as_deref());
    }
    Ok(pieces.len())
}

/// Sends a voice note with the policy's retries.
///
/// # Errors
/// Refused for good, or still failing after the retries.
pub async fn deliver_voice(
    channel: &dyn Channel,
    chat: &str,
    note: crate::VoiceNote<'_>,
    reply_to: Option<&str>,
    policy: RetryPolicy,
) -> Result<(), ChannelError> {
    retrying(channel, policy, || channel.send_voice(chat, note, reply_to)).await
}

/// Sends a picture with the policy's retries.
///
/// # Errors
/// Refused for good, or still failing after the retries.
pub async fn deliver_picture(
    channel: &dyn Channel,
    chat: &str,
    picture: crate::Picture<'_>,
    reply_to: Option<&str>,
    policy: RetryPolicy,
) -> Result<(), ChannelError> {
    retrying(channel, policy, || {
        channel.send_picture(chat, picture, reply_to)
    })
    .await
}

/// The formatted messages for `markdown`: each raw piece is cut again until its formatted
/// form (escaping makes it longer) fits.
fn formatted_pieces(channel: &dyn Channel, markdown: &str) -> Vec<String> {
    let limit = channel.max_chars();
    let mut out = Vec::new();
    let mut pending: Vec<(String, usize)> = chunks(markdown, limit)
        .into_iter()
        .rev()
        .map(|p| (p, limit))
        .collect();
    while let Some((raw, size)) = pending.pop() {
        let formatted = channel.format(&raw);
        if formatted.chars().count() <= limit || size <= 1 {
            out.push(formatted);
            continue;
        }
        let smaller = (size * 3 / 4).max(1);
        for piece in chunks(&raw, smaller).into_iter().rev() {
            pending.push((piece, smaller));
        }
    }
    out
}

/// One message, retried by the policy.
async fn send_with_retry(
    channel: &dyn Channel,
    chat: &str,
    text: &str,
    reply_to: Option<&str>,
    policy: RetryPolicy,
) -> Result<(), ChannelError> {
    retrying(channel, policy, || channel.send(chat, text, reply_to)).await
}

/// Runs `attempt` until it succeeds, fails for good, or the policy's tries are spent.
async fn retrying<'a, T>(
    channel: &dyn Channel,
    policy: RetryPolicy,
    mut attempt: impl FnMut() -> crate::BoxFuture<'a, Result<T, ChannelError>>,
) -> Result<T, ChannelError> {
    let mut backoff = policy.backoff;
    let mut tries = 1;
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        let wait = match &error {
            ChannelError::Permanent(_) => return Err(error),
            ChannelError::RetryAfter(wait, _) if *wait > policy.max_wait => return Err(error),
            ChannelError::RetryAfter(wait, _) => *wait,
            ChannelError::Transient(_) => {
                let wait = backoff;
                backoff = (backoff * 2).min(policy.max_wait);
                wait
            }
        };
        if tries >= policy.attempts {
            return Err(error);
        }
        tracing::warn!(
            channel = channel.name(),
            attempt = tries,
            wait_ms = wait.as_millis() as u64,
            error = %error,
            "message not sent; retrying"
        );
        lurkbot_core::metrics::CHANNEL_MESSAGES.inc(&[channel.name(), "retried"]);
        tokio::time::sleep(wait).await;
        tries += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::{BoxFuture, Inbound};

    /// A channel whose sends answer from a script, recording what was tried.
    struct Scripted {
        answers: Mutex<Vec<Result<(), ChannelError>>>,
        sent: Mutex<Vec<String>>,
    }

    impl Channel for Scripted {
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn max_chars(&self) -> usize {
            10
        }
        fn format(&self, markdown: &str) -> String {
            markdown.replace('.', "\\.")
        }
        fn receive(&self) -> BoxFuture<'_, Result<Vec<Inbound>, ChannelError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn send<'a>(
            &'a self,
            _chat: &'a str,
            text: &'a str,
            _reply_to: Option<&'a str>,
        ) -> BoxFuture<'a, Result<(), ChannelError>> {
            self.sent.lock().unwrap().push(text.to_string());
            let answer = self.answers.lock().unwrap().pop().unwrap_or(Ok(()));
            Box::pin(async move { answer })
        }
        fn typing<'a>(&'a self, _chat: &'a str) -> BoxFuture<'a, ()> {
            Box::pin(async {})
        }
    }

    fn scripted(mut answers: Vec<Result<(), ChannelError>>) -> Scripted {
        answers.reverse();
        Scripted {
            answers: Mutex::new(answers),
            sent: Mutex::new(Vec::new()),
        }
    }

    const FAST: RetryPolicy = RetryPolicy {
        attempts: 3,
        backoff: Duration::from_millis(1),
        max_wait: Duration::from_secs(5),
    };

    #[tokio::test]
    async fn transient_failures_are_retried_and_permanent_ones_are_not() {
        let ch = scripted(vec![Err(ChannelError::Transient("502".into())), Ok(())]);
        assert_eq!(deliver(&ch, "c", "hello", None, FAST).await, Ok(1));
        assert_eq!(ch.sent.lock().unwrap().len(), 2);

        let ch = scripted(vec![Err(ChannelError::Permanent("403 blocked".into()))]);
        let error = deliver(&ch, "c", "hello", None, FAST).await.unwrap_err();
        assert_eq!(error, ChannelError::Permanent("403 blocked".into()));
        assert_eq!(ch.sent.lock().unwrap().len(), 1, "not retried");

        let always = (0..5)
            .map(|_| Err(ChannelError::Transient("down".into())))
            .collect();
        let ch = scripted(always);
        assert!(deliver(&ch, "c", "hello", None, FAST).await.is_err());
        assert_eq!(ch.sent.lock().unwrap().len(), 3, "attempts are capped");

        let too_long = ChannelError::RetryAfter(Duration::from_secs(600), "slow down".into());
        let ch = scripted(vec![Err(too_long)]);
        assert!(deliver(&ch, "c", "hello", None, FAST).await.is_err());
        assert_eq!(
            ch.sent.lock().unwrap().len(),
            1,
            "a wait over max_wait fails at once"
        );
    }

    #[tokio::test]
    async fn escaped_pieces_still_fit_the_limit() {
        let ch = scripted(Vec::new());
        let n = deliver(&ch, "c", "a.b.c.d.e.f.g.h.i.j.k.l", None, FAST)
            .await
            .unwrap();
        let sent = ch.sent.lock().unwrap().clone();
        assert_eq!(n, sent.len());
        assert!(sent.iter().all(|s| s.chars().count() <= 10), "{sent:?}");
        assert_eq!(sent.concat().replace('\\', ""), "a.b.c.d.e.f.g.h.i.j.k.l");
    }
}
