//! Requests the browser refused, and how they are told to the model: the scheme guard's and the
//! proxy's refusals, one line each kind.

/// A refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// `host:port` it was aimed at, or the URL of a scheme the browser never loads.
    pub target: String,
    /// What the policy said.
    pub reason: String,
    /// Refused for its scheme (`file:`, `chrome:`…), not for where its host is.
    pub scheme: bool,
}

/// Blocked requests in a line or two for the model: URLs of a scheme the browser never loads,
/// then requests the network policy refused for where they went.
pub(crate) fn blocked_lines(blocked: &[Blocked]) -> Vec<String> {
    let (schemes, addresses): (Vec<&Blocked>, Vec<&Blocked>) =
        blocked.iter().partition(|b| b.scheme);
    let mut lines = Vec::new();
    if !schemes.is_empty() {
        lines.push(format!(
            "blocked: {} ({}); the browser loads only http: and https: pages",
            requests(
                schemes.len(),
                "for a URL the browser never loads",
                "for URLs the browser never loads"
            ),
            counted(&schemes)
        ));
    }
    if !addresses.is_empty() {
        let private = addresses
            .iter()
            .filter(|b| b.reason.contains("non-public"))
            .count();
        let kind = if private == addresses.len() {
            "to private addresses"
        } else {
            "refused by the network policy"
        };
        lines.push(format!(
            "blocked: {} {kind} ({}); the owner can open a host with [network] allow_hosts",
            requests(addresses.len(), "", ""),
            counted(&addresses)
        ));
    }
    lines
}

/// "1 request …" or "3 requests …".
fn requests(n: usize, one: &str, many: &str) -> String {
    let (noun, rest) = if n == 1 {
        ("request", one)
    } else {
        ("requests", many)
    };
    if rest.is_empty() {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun} {rest}")
    }
}

/// The targets, each once, with a count when repeated.
fn counted(blocked: &[&Blocked]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for b in blocked {
        match counts.iter_mut().find(|(t, _)| *t == b.target) {
            Some((_, n)) => *n += 1,
            None => counts.push((&b.target, 1)),
        }
    }
    let list: Vec<String> = counts
        .iter()
        .map(|(t, n)| {
            if *n > 1 {
                format!("{t} ×{n}")
            } else {
                (*t).to_string()
            }
        })
        .collect();
    list.join(", ")
}
