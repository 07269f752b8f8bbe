//! The page as the model sees it: Chromium's accessibility tree, one line per node, each node
//! the model can act on given a ref (`e1`, `e2`, …) that stands for its DOM node. Ignored and
//! nameless generic nodes are skipped (their children kept); text that repeats its parent's
//! name is dropped. At most [`MAX_CHARS`] characters, with a note when cut.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::Value;

/// Most characters of one snapshot.
pub const MAX_CHARS: usize = 15_000;
/// Most characters of one name or value.
const MAX_NAME: usize = 200;

/// One node of `Accessibility.getFullAXTree`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AxNode {
    node_id: String,
    #[serde(default)]
    ignored: bool,
    role: Option<AxValue>,
    name: Option<AxValue>,
    value: Option<AxValue>,
    #[serde(default)]
    properties: Vec<AxProperty>,
    #[serde(default)]
    child_ids: Vec<String>,
    #[serde(rename = "backendDOMNodeId")]
    backend_dom_node_id: Option<i64>,
    parent_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AxValue {
    #[serde(default)]
    value: Value,
}

#[derive(Debug, Deserialize)]
struct AxProperty {
    name: String,
    value: AxValue,
}

/// The answer of `Accessibility.getFullAXTree`.
#[derive(Debug, Deserialize)]
pub(crate) struct AxTree {
    pub(crate) nodes: Vec<AxNode>,
}

/// Roles that only group other nodes: shown through their children.
const TRANSPARENT: &[&str] = &[
    "generic",
    "none",
    "GenericContainer",
    "InlineTextBox",
    "LineBreak",
    "LayoutTable",
    "LayoutTableRow",
    "LayoutTableCell",
];

/// Properties worth a word in the snapshot.
const SHOWN_PROPERTIES: &[&str] = &[
    "level", "checked", "disabled", "expanded", "selected", "pressed", "required", "readonly",
];

/// A snapshot being written, across the frames of a page.
pub(crate) struct Writer {
    pub(crate) text: String,
    /// Ref → DOM node (backend id).
    pub(crate) refs: HashMap<String, i64>,
    next_ref: usize,
    /// Nodes left out because the snapshot was full.
    pub(crate) left_out: usize,
    /// Whether nodes get refs (not in a frame of another site: its node ids belong to another
    /// process, and acting on them from the page would hit other nodes).
    pub(crate) refs_on: bool,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Self {
            text: String::new(),
            refs: HashMap::new(),
            next_ref: 1,
            left_out: 0,
            refs_on: true,
        }
    }

    /// Adds one frame's tree, indented by `depth`.
    pub(crate) fn add_tree(&mut self, tree: &AxTree, depth: usize) {
        let by_id: HashMap<&str, &AxNode> =
            tree.nodes.iter().map(|n| (n.node_id.as_str(), n)).collect();
        let roots = tree.nodes.iter().filter(|n| {
            n.parent_id
                .as_deref()
                .is_none_or(|p| !by_id.contains_key(p))
        });
        for root in roots {
            self.add_node(&by_id, root, depth, "", 0);
        }
    }

    /// Adds a heading line (an iframe's section).
    pub(crate) fn add_line(&mut self, depth: usize, line: &str) {
        self.push(depth, line);
    }

    fn add_node(
        &mut self,
        by_id: &HashMap<&str, &AxNode>,
        node: &AxNode,
        depth: usize,
        parent_name: &str,
        guard: usize,
    ) {
        if guard > 512 {
            return;
        }
        let role = node
            .role
            .as_ref()
            .and_then(|r| r.value.as_str())
            .unwrap_or_default();
        let name = clean(node.name.as_ref().map(|v| &v.value));
        let children = |w: &mut Self, depth: usize, name: &str| {
            for id in &node.child_ids {
                if let Some(child) = by_id.get(id.as_str()) {
                    w.add_node(by_id, child, depth, name, guard + 1);
                }
            }
        };
        if node.ignored || role == "RootWebArea" || (TRANSPARENT.contains(&role) && name.is_empty())
        {
            return children(self, depth, parent_name);
        }
        if role == "StaticText" {
            if !name.is_empty() && name != parent_name {
                self.push(depth, &format!("- text: {name}"));
            }
            return;
        }
        let mut line = format!("- {role}");
        if !name.is_empty() {
            let _ = write!(line, " \"{name}\"");
        }
        for p in &node.properties {
            if !SHOWN_PROPERTIES.contains(&p.name.as_str()) {
                continue;
            }
            match &p.value.value {
                Value::Bool(true) => {
                    let _ = write!(line, " [{}]", p.name);
                }
                Value::Bool(false) | Value::Null => {}
                Value::String(s) if s == "false" => {}
                other => {
                    let _ = write!(line, " [{}={}]", p.name, clean(Some(other)));
                }
            }
        }
        if let Some(id) = node.backend_dom_node_id.filter(|_| self.refs_on) {
            let r = format!("e{}", self.next_ref);
            self.next_ref += 1;
            let _ = write!(line, " [ref={r}]");
            self.refs.insert(r, id);
        }
        let value = clean(node.value.as_ref().map(|v| &v.value));
        if !value.is_empty() && value != name {
            let _ = write!(line, ": {value}");
        }
        self.push(depth, &line);
        children(self, depth + 1, &name);
    }

    fn push(&mut self, depth: usize, line: &str) {
        let needed = depth * 2 + line.len() + 1;
        if self.left_out > 0 || self.text.len() + needed > MAX_CHARS - 200 {
            self.left_out += 1;
            return;
        }
        for _ in 0..depth {
            self.text.push_str("  ");
        }
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// The finished text, with a note when it was cut.
    pub(crate) fn finish(mut self) -> (String, HashMap<String, i64>) {
        if self.left_out > 0 {
            let _ = writeln!(
                self.text,
                "[snapshot cut at {MAX_CHARS} characters: {} more nodes not shown; scroll, or act on what is shown and snapshot again]",
                self.left_out
            );
        }
        (self.text, self.refs)
    }
}

/// A name or value on one line, at most [`MAX_NAME`] characters, quotes kept readable.
fn clean(value: Option<&Value>) -> String {
    let raw = match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    };
    let one_line: String = raw
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('"', "'");
    if one_line.chars().count() > MAX_NAME {
        let cut: String = one_line.chars().take(MAX_NAME).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(json: serde_json::Value) -> AxTree {
        serde_json::from_value(json).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn refs_name_nodes_and_generic_wrappers_disappear() {
        let t = tree(serde_json::json!({"nodes": [
            {"nodeId": "1", "role": {"value": "RootWebArea"}, "name": {"value": "Page"}, "childIds": ["2"], "backendDOMNodeId": 1},
            {"nodeId": "2", "parentId": "1", "role": {"value": "generic"}, "childIds": ["3", "5"], "backendDOMNodeId": 2},
            {"nodeId": "3", "parentId": "2", "role": {"value": "button"}, "name": {"value": "Send \"now\""}, "childIds": ["4"], "backendDOMNodeId": 3},
            {"nodeId": "4", "parentId": "3", "role": {"value": "StaticText"}, "name": {"value": "Send \"now\""}},
            {"nodeId": "5", "parentId": "2", "role": {"value": "textbox"}, "name": {"value": "Name"}, "value": {"value": "Ada"},
             "properties": [{"name": "required", "value": {"value": true}}], "backendDOMNodeId": 5}
        ]}));
        let mut w = Writer::new();
        w.add_tree(&t, 0);
        let (text, refs) = w.finish();
        assert_eq!(
            text,
            "- button \"Send 'now'\" [ref=e1]\n- textbox \"Name\" [required] [ref=e2]: Ada\n"
        );
        assert_eq!(refs.get("e1"), Some(&3));
        assert_eq!(refs.get("e2"), Some(&5));
    }

    #[test]
    fn a_large_tree_is_cut_with_a_note() {
        let mut nodes = vec![
            serde_json::json!({"nodeId": "0", "role": {"value": "RootWebArea"},
            "childIds": (1..3000).map(|i| i.to_string()).collect::<Vec<_>>()}),
        ];
        for i in 1..3000 {
            nodes.push(serde_json::json!({"nodeId": i.to_string(), "parentId": "0",
                "role": {"value": "link"}, "name": {"value": format!("link number {i}")}, "backendDOMNodeId": i}));
        }
        let mut w = Writer::new();
        w.add_tree(&tree(serde_json::json!({ "nodes": nodes })), 0);
        let (text, _) = w.finish();
        assert!(text.len() <= MAX_CHARS, "{}", text.len());
        assert!(text.contains("more nodes not shown"), "{text}");
        assert!(text.starts_with("- link \"link number 1\" [ref=e1]"));
    }
}
