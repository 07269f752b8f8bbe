//! This gateway as the agent's `gateway` tool sees it ([`GatewayControl`], ARCHITECTURE.md
//! §5.2): the `status` method's answer, a settings change decided by the gate like any other
//! act (§5.1: `Act::Settings`; the model's changes need a human's approval each time, asked of
//! the connected clients), then validated, written atomically (comments kept) and reloaded;
//! and a reload.
//!
//! A change is validated before anyone is asked (an invalid patch bothers nobody) and again on
//! the file as it is once approved (the owner may have edited it meanwhile). One change is
//! written at a time.

use std::sync::{Arc, Mutex};

use lurkbot_agent::gate::{self, Act, Asker, Hold};
use lurkbot_agent::{BoxFuture, GatewayControl};
use lurkbot_core::{ConfigDoc, SessionKey, layout};
use serde_json::{Value, json};

use crate::state::AppState;
use crate::turns::host::SessionHost;

/// What the approval request of a change shows at most of the patch.
const SUMMARY_CHARS: usize = 600;

struct Control {
    state: AppState,
    /// Held while a change is applied and written.
    writing: Mutex<()>,
}

/// Lends the gateway to its sessions' `gateway` tool while it serves.
pub(crate) fn attach(state: &AppState) {
    let control: Arc<dyn GatewayControl> = Arc::new(Control {
        state: state.clone(),
        writing: Mutex::new(()),
    });
    if let Ok(mut slot) = state.host.control.lock() {
        *slot = Some(control);
    }
}

/// Takes it back when serving ends (the control holds the gateway's state).
pub(crate) fn detach(host: &SessionHost) {
    if let Ok(mut slot) = host.control.lock() {
        *slot = None;
    }
}

impl Control {
    /// Applies `keys` to the file as it is now and writes it.
    fn write(&self, keys: &[(String, &Value)]) -> Result<(), String> {
        let _one = self.writing.lock().map_err(|_| "a change failed earlier")?;
        let mut doc =
            ConfigDoc::load(&self.state.home.join(layout::CONFIG)).map_err(|e| e.to_string())?;
        doc.apply_patch(keys).map_err(|e| e.to_string())?;
        doc.save().map_err(|e| e.to_string())
    }
}

impl GatewayControl for Control {
    fn status(&self) -> BoxFuture<'_, Value> {
        Box::pin(crate::ops::status::status_with_browser(&self.state))
    }

    fn patch<'a>(
        &'a self,
        session: &'a SessionKey,
        patch: &'a Value,
        asker: Asker,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let keys = lurkbot_core::patch_keys(patch)?;
            let names: Vec<String> = keys.iter().map(|(k, _)| k.clone()).collect();
            let verdict = gate::decide(asker, &Act::Settings { keys: &names });
            if let gate::Verdict::Refuse(reason) = verdict {
                return Err(reason);
            }
            // Checked before anyone is asked: nothing invalid reaches the owner.
            let path = self.state.home.join(layout::CONFIG);
            ConfigDoc::load(&path)
                .and_then(|mut doc| doc.apply_patch(&keys))
                .map_err(|e| format!("{e} (nothing was changed)"))?;
            let (_, _, approvals) = self.state.host.current();
            let summary: String = format!("config.patch {patch}")
                .chars()
                .take(SUMMARY_CHARS)
                .collect();
            gate::clear(
                verdict,
                Hold {
                    approver: &*self.state.approver,
                    approvals: &approvals,
                    session: session.as_str(),
                    tool: "gateway",
                    summary,
                    key: "gateway:config.patch".into(),
                },
            )
            .await?;
            self.write(&keys)
                .map_err(|e| format!("{e} (nothing was changed)"))?;
            let reload = self.reload()?;
            Ok(json!({"changed": names, "reload": reload}))
        })
    }

    fn reload(&self) -> Result<Value, String> {
        self.state
            .reload()
            .map(|plan| plan.to_json())
            .map_err(|e| e.to_string())
    }

    fn shows_canvas(&self) -> bool {
        self.state.shows_canvas()
    }

    fn canvas_changed(&self, change: lurkbot_agent::canvas::CanvasChange) {
        self.state.hub.emit(crate::protocol::Event::Canvas(change));
    }

    fn has_nodes(&self) -> bool {
        self.state.nodes.any_approved()
    }

    fn nodes<'a>(
        &'a self,
        session: &'a SessionKey,
        args: &'a Value,
        asker: Asker,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            crate::nodes::control::tool(
                &self.state.nodes,
                &self.state.host,
                session.as_str(),
                args,
                asker,
            )
            .await
            .map_err(|e| e.message)
        })
    }
}
