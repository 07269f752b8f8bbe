//! Which tools a session is offered: the policy's, less those a setting turns off (`[browser]
//! enabled`), and those that need a gateway — `gateway` in any of its sessions, `canvas` only
//! while a client that can show widgets is attached, `nodes` once a node is paired — and `tts` only where a speech provider is
//! set up.

use std::sync::Arc;

use lurkbot_llm::ToolSpec;

use super::Agent;
use crate::error::AgentError;
use crate::policy::Policy;

impl Agent {
    pub(super) fn offered_by(&self, policy: &Policy) -> Result<Vec<Arc<ToolSpec>>, AgentError> {
        let mcp = self.mcp.as_ref().map(|hub| hub.specs()).unwrap_or_default();
        let mut offered = Vec::with_capacity(self.tools.specs().len() + mcp.len());
        let mcp = mcp.into_iter().map(Arc::new);
        for spec in self.tools.specs().iter().cloned().chain(mcp) {
            if !policy.allows(&spec.name).map_err(AgentError::Config)? {
                continue;
            }
            // Offered only in a gateway's sessions (the CLI has no gateway to read or change),
            // the canvas only while a client that can show it is attached.
            let gateway = || self.runtime.as_ref().and_then(|r| r.gateway());
            match spec.name.as_str() {
                "gateway" if gateway().is_none() => continue,
                "canvas" if !gateway().is_some_and(|g| g.shows_canvas()) => continue,
                // Nodes only once the owner has paired one.
                "nodes" if !gateway().is_some_and(|g| g.has_nodes()) => continue,
                // Speech only where a provider is set up (espeak-ng installed, or a key).
                "tts" if !crate::speech::can_speak(&self.home, &self.config) => continue,
                _ => {}
            }
            if spec.name == "browser" {
                // `[browser] enabled = false` hides it; `evaluate` is listed only when allowed.
                if !self.config.browser.enabled {
                    continue;
                }
                if self.config.browser.evaluate {
                    offered.push(Arc::new(crate::tools::browser::spec(true)));
                    continue;
                }
            }
            offered.push(spec);
        }
        Ok(offered)
    }
}
