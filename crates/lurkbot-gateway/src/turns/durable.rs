//! Turns that survive a crash (ARCHITECTURE.md §6.3): every turn the host runs is admitted to
//! the home's state store ([`lurkbot_state::Store`]) before it starts, journals its steps as it
//! goes ([`lurkbot_agent::journal::Journal`]), and ends in one durable write with the messages
//! it sends (the outbox). At start, every turn not ended is resumed
//! ([`SessionHost::resume_unfinished`]) and every message not sent is sent.

use std::sync::Arc;

use lurkbot_agent::journal::Journal;
use lurkbot_core::SessionKey;
use lurkbot_state::{Admitted, NewOutgoing, NewTurn, Store, TurnRecord};
use serde_json::{Value, json};

use crate::protocol::{ErrorCode, MethodError};
use crate::turns::host::SessionHost;
use crate::turns::run::{Origin, Resume, TurnOptions};

/// A turn started this many times without ending (each start killed the gateway, or it was
/// killed during each) is failed instead of being started again.
pub(crate) const MAX_STARTS: u32 = 3;

/// What a channel answers when its turn failed (the details are the owner's, in the log).
pub(crate) const APOLOGY: &str = "Sorry, I could not answer that just now.";

/// How a turn's options are journalled (images are not: a turn resumed before its message
/// reached the transcript goes without them).
fn options_json(options: &TurnOptions, ephemeral: bool) -> Value {
    json!({"model": options.model, "thinking": options.thinking,
        "untrusted": options.untrusted, "ephemeral": ephemeral})
}

fn options_from(value: &Value) -> (TurnOptions, bool) {
    let text = |k: &str| value.get(k).and_then(Value::as_str).map(str::to_string);
    let flag = |k: &str| value.get(k).and_then(Value::as_bool).unwrap_or(false);
    (
        TurnOptions {
            model: text("model"),
            thinking: text("thinking"),
            untrusted: flag("untrusted"),
            ..TurnOptions::default()
        },
        flag("ephemeral"),
    )
}

/// How every refusal of a turn the state store could not record begins (the HTTP API answers
/// it `503` with `Retry-After`, wherever it was refused).
pub(crate) const NOT_RECORDED: &str = "the turn could not be recorded";

fn unavailable(e: impl std::fmt::Display) -> MethodError {
    MethodError::new(
        ErrorCode::Unavailable,
        format!("{NOT_RECORDED}, so it was not started: {e}"),
    )
}

/// A session's lease while its turn runs (see [`SessionHost::hold_session`]): given back
/// when dropped — the turn ended, failed to start, or was aborted.
pub(crate) struct SessionLease(Option<(Store, String)>);

impl Drop for SessionLease {
    fn drop(&mut self) {
        if let Some((store, name)) = self.0.take()
            && let Err(e) = store.give_back_lease(&name)
        {
            tracing::warn!(lease = name, error = %e, "a session's lease was not given back");
        }
    }
}

impl SessionHost {
    /// The home's state store.
    pub(crate) fn store(&self) -> Option<&Store> {
        self.store.as_ref()
    }

    /// Admits a turn from a source with an id of its own (an `Idempotency-Key`, a channel
    /// message) under `run_id`: `None` when it is new (start it with
    /// [`TurnOptions::admitted`]), or the turn that source started before.
    ///
    /// # Errors
    /// `UNAVAILABLE` when the store cannot record it.
    pub(crate) fn admit_source(
        &self,
        run_id: &str,
        source: &str,
        key: &SessionKey,
        message: &str,
        options: &TurnOptions,
        ephemeral: bool,
    ) -> Result<Option<TurnRecord>, MethodError> {
        let Some(store) = self.store() else {
            return Ok(None);
        };
        let admitted = store
            .admit(&NewTurn {
                id: run_id.to_string(),
                source: Some(source.to_string()),
                session: key.as_str().to_string(),
                origin: serde_json::to_value(&options.origin).unwrap_or(Value::Null),
                message: message.to_string(),
                options: options_json(options, ephemeral),
            })
            .map_err(unavailable)?;
        Ok(match admitted {
            Admitted::New => None,
            Admitted::Known(turn) => Some(*turn),
        })
    }

    /// The journal of a turn about to start: the admitted one's, or a new record for a turn
    /// without a source id. Marks it running.
    pub(crate) fn journal_for(
        &self,
        run_id: &str,
        key: &SessionKey,
        message: &str,
        options: &TurnOptions,
        ephemeral: bool,
    ) -> Result<Option<Journal>, MethodError> {
        let Some(store) = self.store() else {
            return Ok(None);
        };
        if !options.admitted {
            store
                .admit(&NewTurn {
                    id: run_id.to_string(),
                    source: None,
                    session: key.as_str().to_string(),
                    origin: serde_json::to_value(&options.origin).unwrap_or(Value::Null),
                    message: message.to_string(),
                    options: options_json(options, ephemeral),
                })
                .map_err(unavailable)?;
        }
        store.begin(run_id).map_err(unavailable)?;
        Ok(Some(Journal::new(store.clone(), run_id)))
    }

    /// On a database several gateways share, one turn at a time per session across all of
    /// them: the turn holds the lease `session:<key>` (taken here, given back by the
    /// [`SessionLease`] when the turn ends or is dropped). A session another live gateway
    /// runs is refused like a session busy here. On the embedded store (one machine, its
    /// gateways for failover) nothing is taken.
    ///
    /// # Errors
    /// `UNAVAILABLE`: the session runs on another gateway, or the store failed.
    pub(crate) fn hold_session(&self, key: &SessionKey) -> Result<SessionLease, MethodError> {
        let Some(store) = self.store().filter(|s| s.shares_events()) else {
            return Ok(SessionLease(None));
        };
        let name = format!("session:{}", key.as_str());
        if store.take_lease(&name).map_err(unavailable)? {
            return Ok(SessionLease(Some((store.clone(), name))));
        }
        let holder = store.lease_holder(&name).ok().flatten().unwrap_or_default();
        Err(MethodError::new(
            ErrorCode::Unavailable,
            format!(
                "session {} is running a turn on gateway {holder}; wait for it or send chat.abort there",
                key.as_str()
            ),
        ))
    }

    /// Takes back an admitted turn its caller could not start (see [`lurkbot_state::Store::withdraw`]).
    pub(crate) fn withdraw(&self, run_id: &str) {
        if let Some(store) = self.store()
            && let Err(e) = store.withdraw(run_id)
        {
            tracing::warn!(run_id, error = %e, "turn not withdrawn");
        }
    }

    /// Ends a turn in the journal with what it sends, then sends it.
    pub(crate) fn journal_end(
        &self,
        run_id: &str,
        origin: &Origin,
        result: Result<&str, &str>,
        voice_notes: &[String],
    ) {
        let Some(store) = self.store() else {
            return;
        };
        let outgoing: Vec<NewOutgoing> = match origin {
            Origin::Client => Vec::new(),
            Origin::Channel {
                channel,
                chat,
                reply_to,
            } => {
                let text = match result {
                    Ok(text) => text,
                    Err(_) => APOLOGY,
                };
                // Pictures the reply names on `MEDIA:` lines go after its text (§6.1.2).
                let (text, pictures) =
                    lurkbot_channels::picture::split_media_lines(text, self.home.root());
                let message = |kind: &str, body: &str| NewOutgoing {
                    channel: channel.clone(),
                    chat: chat.clone(),
                    reply_to: reply_to.clone(),
                    kind: kind.into(),
                    body: body.to_string(),
                };
                // The answer, its pictures, then the voice notes the turn made, in order.
                (!text.trim().is_empty())
                    .then(|| message("text", &text))
                    .into_iter()
                    .chain(pictures.iter().map(|path| message("picture", path)))
                    .chain(voice_notes.iter().map(|name| message("voice", name)))
                    .collect()
            }
        };
        match store.finish_or_defer(run_id, result, &outgoing) {
            Ok(recorded) => self.send_recorded(store, recorded),
            Err(e) => tracing::warn!(
                run_id,
                error = %e,
                "turn end not recorded now: kept, and written again until it is"
            ),
        }
    }

    /// Sends messages just recorded in the outbox, in order, in the background (a failure is
    /// kept in the outbox, and sent again if it may succeed).
    fn send_recorded(&self, store: &Store, recorded: Vec<lurkbot_state::Outgoing>) {
        if recorded.is_empty() {
            return;
        }
        let (channels, store, home) = (self.channels.clone(), store.clone(), self.home.clone());
        let trace = lurkbot_core::trace::current();
        tokio::spawn(lurkbot_core::trace::scope(trace, async move {
            for message in recorded {
                let _ = channels.send_recorded(&home, &store, &message).await;
            }
        }));
    }

    /// Writes the turns' ends (answers, usage records, budget releases) the store could not
    /// take when they happened, and sends what they answer; a store still down is tried
    /// again at the next call.
    pub(crate) fn flush_deferred(&self) {
        let Some(store) = self.store() else {
            return;
        };
        match store.flush_deferred() {
            Ok(recorded) => self.send_recorded(store, recorded),
            Err(e) => tracing::warn!(
                error = %e,
                waiting = store.deferred_waiting(),
                "turn ends still not recorded: tried again in 2 s"
            ),
        }
    }

    /// [`SessionHost::wait`] for a run this process does not know: its end from the journal,
    /// or — while it waits to be resumed — the live run once it starts, up to `timeout`.
    ///
    /// # Errors
    /// `NOT_FOUND` when the journal has no such turn either.
    pub(crate) async fn wait_journalled(
        &self,
        run_id: &str,
        timeout: std::time::Duration,
    ) -> Result<Option<crate::turns::run::RunEnd>, MethodError> {
        use crate::turns::run::RunEnd;
        use lurkbot_state::TurnState;
        let not_found = || MethodError::new(ErrorCode::NotFound, format!("no run {run_id}"));
        let store = self.store().ok_or_else(not_found)?;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let turn = store
                .turn(run_id)
                .map_err(|e| MethodError::new(ErrorCode::Unavailable, e.to_string()))?
                .ok_or_else(not_found)?;
            match turn.state {
                TurnState::Done => {
                    return Ok(Some(RunEnd::Done {
                        text: turn.reply.unwrap_or_default(),
                        model: String::new(),
                    }));
                }
                TurnState::Failed if turn.error.as_deref() == Some("aborted") => {
                    return Ok(Some(RunEnd::Aborted));
                }
                TurnState::Failed => {
                    return Ok(Some(RunEnd::Failed(turn.error.unwrap_or_default())));
                }
                TurnState::Queued | TurnState::Running => {}
            }
            if let Some(mut rx) = self.live_run(run_id) {
                let left = deadline.saturating_duration_since(tokio::time::Instant::now());
                return Ok(tokio::time::timeout(left, rx.wait_for(Option::is_some))
                    .await
                    .ok()
                    .and_then(|end| end.ok().and_then(|end| end.clone())));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Resumes every turn the journal holds unended whose gateway is gone (it stopped or died
    /// during the turn), taking over its lease, oldest first, each in its session's order; one started [`MAX_STARTS`] times is failed.
    pub(crate) fn resume_unfinished(self: &Arc<Self>) {
        let Some(store) = self.store().cloned() else {
            return;
        };
        // First the ends that wait to be recorded (this gateway's, and those a gateway that
        // died left in the home): a turn whose answer was made is not run again.
        self.flush_deferred();
        // Only turns nobody runs: this gateway's own, and those of another gateway alive on
        // this home, keep running where they are.
        let open = match store.claim_unfinished() {
            Ok(open) => open,
            Err(e) => {
                tracing::error!(error = %e, "unfinished turns not read: none resumed");
                return;
            }
        };
        for turn in open {
            let origin: Origin = serde_json::from_value(turn.origin.clone()).unwrap_or_default();
            if turn.starts >= MAX_STARTS {
                tracing::warn!(
                    run_id = turn.id.as_str(),
                    starts = turn.starts,
                    "turn not resumed: it never ended"
                );
                let error = format!(
                    "stopped: this turn was started {} times and the gateway stopped during each",
                    turn.starts
                );
                self.journal_end(&turn.id, &origin, Err(&error), &[]);
                continue;
            }
            let Ok(key) = SessionKey::parse(&turn.session) else {
                self.journal_end(&turn.id, &origin, Err("its session key is not valid"), &[]);
                continue;
            };
            let (mut options, ephemeral) = options_from(&turn.options);
            options.origin = origin;
            options.admitted = true;
            options.resume = Some(Resume {
                base: turn.base,
                tool: turn.tool.clone(),
            });
            tracing::info!(
                run_id = turn.id.as_str(),
                session = key.as_str(),
                step = turn.step,
                "resuming a turn cut by a restart"
            );
            let host = Arc::clone(self);
            let spawned = turn
                .source
                .as_deref()
                .and_then(lurkbot_agent::SpawnSource::parse);
            tokio::spawn(async move {
                // Its approvals wait for a client to come back.
                host.approver.resuming(key.as_str(), true);
                let session = key.as_str().to_string();
                let started = host
                    .start_when_free_as(
                        key,
                        turn.message.clone(),
                        options,
                        ephemeral,
                        turn.id.clone(),
                    )
                    .await;
                let task = match started {
                    Ok((_, task)) => task,
                    Err(e) => {
                        host.approver.resuming(&session, false);
                        tracing::warn!(
                            run_id = turn.id.as_str(),
                            error = e.message.as_str(),
                            "turn not resumed"
                        );
                        return;
                    }
                };
                let result = match task.await {
                    Ok(result) => result.map_err(|e| e.message),
                    Err(_) => Err("aborted".to_string()),
                };
                host.approver.resuming(&session, false);
                // A sub-agent's turn reports to the session that spawned it, as its spawn
                // would have (the process that spawned it is gone).
                if let Some(spawned) = spawned {
                    host.report_resumed(&turn, &spawned, &result).await;
                }
            });
        }
    }
}

impl SessionHost {
    /// Reports a resumed sub-agent's end to its requester, once (`report:<run id>`).
    async fn report_resumed(
        self: &Arc<Self>,
        turn: &TurnRecord,
        spawned: &lurkbot_agent::SpawnSource,
        result: &Result<lurkbot_agent::TurnOutcome, String>,
    ) {
        let (Ok(child), Ok(requester)) = (
            SessionKey::parse(&spawned.child),
            SessionKey::parse(&spawned.requester),
        ) else {
            return;
        };
        let elapsed = std::time::Duration::from_millis(
            lurkbot_core::now_ms().saturating_sub(turn.created_ms),
        );
        let message = lurkbot_agent::announcement(&turn.message, &child, result, elapsed);
        if spawned.delete {
            let _ = lurkbot_agent::Sessions::open(&self.home, child.agent_id()).delete(&child);
        }
        let runtime =
            crate::turns::runtime::HostRuntime::new(Arc::downgrade(self), self.subagents.clone());
        let request = lurkbot_agent::report_request(&requester, message, &turn.id);
        match lurkbot_agent::Runtime::start(&runtime, request).await {
            Ok(report) => {
                if let Err(e) = report.done.await {
                    tracing::warn!(session = requester.as_str(), error = %e, "sub-agent report turn failed");
                }
            }
            Err(e) => {
                tracing::warn!(session = requester.as_str(), error = %e, "sub-agent report not made");
            }
        }
    }
}

/// Renews the leases of `host`'s store every [`lurkbot_state::LEASE_RENEW_MS`] and takes over
/// the turns another gateway on the home left when it died (ARCHITECTURE.md §6.3). Runs until
/// aborted.
pub(crate) fn keep_leases(host: Arc<SessionHost>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let every = std::time::Duration::from_millis(lurkbot_state::LEASE_RENEW_MS);
        loop {
            tokio::time::sleep(every).await;
            let Some(store) = host.store() else {
                return;
            };
            if let Err(e) = store.renew_leases() {
                tracing::warn!(error = %e, "leases not renewed");
            }
            if store.backend() == "postgres" {
                crate::events::presence::advertise(store, host.hub.listeners());
            }
            if !host.drain.is_draining() {
                host.resume_unfinished();
            }
        }
    })
}
