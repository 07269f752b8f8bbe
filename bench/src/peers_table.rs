//! The side-by-side table of `lurkbot-bench peers`, printed and (with `--readme`) written into
//! the README between its markers.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::proc_group::Cost;

const BEGIN: &str = "<!-- bench:peers:begin -->";
const END: &str = "<!-- bench:peers:end -->";

/// One program's figures.
pub(crate) struct Figures {
    pub(crate) name: &'static str,
    /// The first line `--version` printed.
    pub(crate) version: String,
    pub(crate) install_bytes: u64,
    pub(crate) install_note: &'static str,
    pub(crate) version_time: Duration,
    pub(crate) ready: Duration,
    pub(crate) idle_kib: u64,
    pub(crate) turn: Cost,
}

/// The version number in a `--version` line (`Hermes Agent v0.19.0 (2026.7.20)` → `0.19.0`).
fn version_number(line: &str) -> &str {
    line.split_whitespace()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| {
            w.split('.').count() >= 2
                && w.split('.')
                    .all(|p| p.bytes().all(|b| b.is_ascii_digit()) && !p.is_empty())
        })
        .unwrap_or("?")
}

fn time(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.1} ms")
    }
}

fn mib(kib: u64) -> String {
    let m = kib as f64 / 1024.0;
    if m >= 100.0 {
        format!("{m:.0} MiB")
    } else {
        format!("{m:.1} MiB")
    }
}

/// `value` with its ratio to LurkBot's when it is a peer's.
fn with_ratio(text: String, value: f64, ours: f64, peer: bool) -> String {
    if !peer || ours <= 0.0 {
        return text;
    }
    let ratio = value / ours;
    if ratio >= 10.0 {
        format!("{text} ({ratio:.0}×)")
    } else {
        format!("{text} ({ratio:.1}×)")
    }
}

fn today() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(1)
}

/// The table in Markdown.
fn markdown(all: &[Figures], runs: usize, idle_secs: u64) -> String {
    let Some(ours) = all.first() else {
        return String::new();
    };
    let mut out = format!(
        "Measured by `bench/run.sh peers` on {} ({} {}, {} cores) in one run, against the same \
         scripted model on loopback; `--version` median of {runs} runs, gateway start median of 3, \
         turn: median wall, mean CPU and highest peak over 3–30 turns after a warm-up; ratios \
         are to LurkBot.\n\n",
        today(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        cores()
    );
    out.push_str("| |");
    for f in all {
        out.push_str(&format!(" {} {} |", f.name, version_number(&f.version)));
    }
    out.push_str("\n|---|");
    for _ in all {
        out.push_str("---:|");
    }
    out.push('\n');
    type Cell = fn(&Figures) -> (String, f64);
    let rows: [(String, Cell); 7] = [
        ("install size".into(), |f| {
            (
                format!("{} ({})", mib(f.install_bytes / 1024), f.install_note),
                f.install_bytes as f64,
            )
        }),
        ("`--version`".into(), |f| {
            (time(f.version_time), f.version_time.as_secs_f64())
        }),
        ("gateway start → health".into(), |f| {
            (time(f.ready), f.ready.as_secs_f64())
        }),
        (format!("gateway idle RSS after {idle_secs} s"), |f| {
            (mib(f.idle_kib), f.idle_kib as f64)
        }),
        ("one tool-call turn: wall".into(), |f| {
            (time(f.turn.wall), f.turn.wall.as_secs_f64())
        }),
        ("one tool-call turn: CPU".into(), |f| {
            (time(f.turn.cpu), f.turn.cpu.as_secs_f64())
        }),
        ("one tool-call turn: peak RSS".into(), |f| {
            (mib(f.turn.peak_kib), f.turn.peak_kib as f64)
        }),
    ];
    for (label, cell) in rows {
        out.push_str(&format!("| {label} |"));
        let (_, base) = cell(ours);
        for (i, f) in all.iter().enumerate() {
            let (text, value) = cell(f);
            out.push_str(&format!(" {} |", with_ratio(text, value, base, i > 0)));
        }
        out.push('\n');
    }
    out
}

/// Prints the table and, with `readme`, replaces the README's table between the markers.
pub(crate) fn write_table(
    all: &[Figures],
    runs: usize,
    idle_secs: u64,
    readme: Option<&Path>,
) -> Result<(), String> {
    let table = markdown(all, runs, idle_secs);
    println!("\n{table}");
    let Some(readme) = readme else {
        return Ok(());
    };
    let text = std::fs::read_to_string(readme).map_err(|e| format!("{}: {e}", readme.display()))?;
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(format!(
            "{} has no {BEGIN} … {END} markers",
            readme.display()
        ));
    };
    if end < begin {
        return Err(format!(
            "{}: the markers are out of order",
            readme.display()
        ));
    }
    let updated = format!("{}{BEGIN}\n{table}{}", &text[..begin], &text[end..]);
    let tmp = readme.with_extension("md.tmp");
    std::fs::write(&tmp, updated).map_err(|e| e.to_string())?;
    std::fs::rename(&tmp, readme).map_err(|e| e.to_string())?;
    println!("wrote the table into {}", readme.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::version_number;

    #[test]
    fn version_numbers_are_found_in_the_peers_version_lines() {
        assert_eq!(version_number("Hermes Agent v0.19.0 (2026.7.20)"), "0.19.0");
        assert_eq!(version_number("🐈 nanobot v0.3.5"), "0.3.5");
        assert_eq!(version_number("lurkbot 0.1.0"), "0.1.0");
        assert_eq!(version_number("OpenClaw 2026.9.6 (abc1234)"), "2026.9.6");
        assert_eq!(version_number("no number here"), "?");
    }
}
