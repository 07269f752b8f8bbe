//! A command on a node (ARCHITECTURE.md §5.2): the owner's own invocations go ahead (the owner
//! is the human); the model's `system.run` needs a human's approval each time unless the owner
//! allowed that command for that node in `[nodes] allow` (never one carrying `--confirm`);
//! the model's other commands (`system.which`, `device.info`, …) go ahead, audited.

use super::{Asker, Verdict};

/// Commands that run something on the node.
pub const RUN_COMMANDS: &[&str] = &["system.run", "system.run.prepare"];

/// Decides a command `command` (`line`: what it runs, for `system.run`) on node `node`;
/// `allowed` says whether the owner's `[nodes] allow` covers it.
pub(super) fn node_command(
    asker: Asker,
    node: &str,
    command: &str,
    line: &str,
    allowed: bool,
) -> Verdict {
    if asker.is_owner() || !RUN_COMMANDS.contains(&command) {
        return Verdict::Allow;
    }
    if allowed {
        return Verdict::Allow;
    }
    Verdict::ApproveEach(format!(
        "the model asks to run `{line}` on node {node}; a command on a node needs your approval each time unless [nodes] allow lists it for that node"
    ))
}

#[cfg(test)]
mod tests {
    use super::super::{Act, decide};
    use super::*;

    fn act(command: &'static str, allowed: bool) -> Act<'static> {
        Act::NodeCommand {
            node: "laptop",
            command,
            line: "help",
            allowed,
        }
    }

    #[test]
    fn the_models_runs_on_a_node_wait_for_a_human_unless_allowed() {
        assert!(matches!(
            decide(Asker::Model, &act("system.run", false)),
            Verdict::ApproveEach(r) if r.contains("laptop")
        ));
        assert_eq!(
            decide(Asker::Model, &act("system.run", true)),
            Verdict::Allow
        );
        assert_eq!(
            decide(Asker::Model, &act("system.which", false)),
            Verdict::Allow
        );
    }
}
