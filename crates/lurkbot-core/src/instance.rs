//! This gateway's own files in a home several gateways share over a network filesystem
//! (ARCHITECTURE.md §6.3): what each keeps for itself — its memory index, derived from the shared
//! memory files, and its browser profile, which Chromium locks — is named after it. A gateway
//! whose state is in PostgreSQL sets its name at start ([`set_instance`]: its `[gateway] id`,
//! else the machine's host name); elsewhere nothing is set and the plain names stay.

use std::sync::OnceLock;

static INSTANCE: OnceLock<String> = OnceLock::new();

/// Names this process's own files after `name` (letters, digits, `-`, `_` and `.`; anything
/// else is refused and the plain names stay). Set once; later calls change nothing.
pub fn set_instance(name: &str) -> bool {
    crate::valid_gateway_id(name) && INSTANCE.set(name.to_string()).is_ok()
}

/// `name` (a path in the home, `memory/index.sqlite`) as this process's own: `memory/
/// index-<instance>.sqlite` when an instance is set, else `name` itself.
pub fn local_name(name: &str) -> String {
    own_name(name, INSTANCE.get().map(String::as_str))
}

fn own_name(name: &str, instance: Option<&str>) -> String {
    let Some(instance) = instance else {
        return name.to_string();
    };
    let (dir, file) = name.rsplit_once('/').map_or(("", name), |(d, f)| (d, f));
    let (stem, ext) = match file.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => (stem, format!(".{ext}")),
        _ => (file, String::new()),
    };
    let own = format!("{stem}-{instance}{ext}");
    if dir.is_empty() {
        own
    } else {
        format!("{dir}/{own}")
    }
}

/// The machine's host name (a gateway's name when it has no `[gateway] id`).
pub fn host_name() -> Option<String> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let host: String = host
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    (!host.is_empty()).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::own_name;

    #[test]
    fn own_files_carry_the_instance_before_their_extension() {
        assert_eq!(own_name("memory/index.sqlite", None), "memory/index.sqlite");
        assert_eq!(
            own_name("memory/index.sqlite", Some("gw-a")),
            "memory/index-gw-a.sqlite"
        );
        assert_eq!(
            own_name("browser/profile", Some("gw-a")),
            "browser/profile-gw-a"
        );
        assert_eq!(own_name("index.sqlite", Some("b")), "index-b.sqlite");
    }
}
