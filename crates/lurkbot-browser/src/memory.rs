//! Chromium's memory for `browser status`: the proportional set size (PSS: each shared page
//! divided among the processes that map it, so the sum is not inflated by the zygote's shared
//! pages) of the browser process and every process below it (renderers, GPU and utility
//! helpers), read from `/proc`; the resident set where PSS is not available.

use std::collections::HashMap;

/// Memory in bytes of `pid` and its descendants.
pub(crate) fn tree_memory(pid: u32) -> u64 {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(parent) = parent_of(p) {
                children.entry(parent).or_default().push(p);
            }
        }
    }
    let mut total = 0;
    let mut stack = vec![pid];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        seen += 1;
        if seen > 10_000 {
            break;
        }
        total += memory_of(p);
        if let Some(c) = children.get(&p) {
            stack.extend(c);
        }
    }
    total
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name is in parentheses and may hold spaces: fields follow the last ')'.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    rest.split(' ').nth(1)?.parse().ok()
}

fn memory_of(pid: u32) -> u64 {
    let field = |file: &str, name: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{file}"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
    };
    field("smaps_rollup", "Pss:")
        .or_else(|| field("status", "VmRSS:"))
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn our_own_process_has_memory() {
        assert!(super::tree_memory(std::process::id()) > 1024 * 1024);
    }
}
