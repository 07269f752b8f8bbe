//! Measuring a whole process tree from /proc: a peer's CLI often starts further processes
//! (OpenClaw's launcher starts `openclaw-gateway`, which starts workers, some in a session of
//! their own), so memory is summed over the spawned command's descendants and the process group
//! it leads (`process_group(0)`; the group keeps orphans whose parent has exited).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kernel page size assumed for `/proc/PID/stat`'s rss field (x86_64 and aarch64 Linux: 4 KiB).
const PAGE_KIB: u64 = 4;

/// One process's line of `/proc/PID/stat`, the fields after the command name.
struct Stat {
    pid: u32,
    state: char,
    ppid: u32,
    pgrp: u32,
    rss_kib: u64,
}

fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    Some(Stat {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        rss_kib: num(21)? * PAGE_KIB,
    })
}

/// The live processes of `leader`'s tree: its descendants and the members of the process
/// group it leads.
fn members(leader: u32) -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let all: Vec<Stat> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect();
    let mut inside: Vec<u32> = vec![leader];
    let mut grew = true;
    while grew {
        grew = false;
        for s in &all {
            if !inside.contains(&s.pid) && (s.pgrp == leader || inside.contains(&s.ppid)) {
                inside.push(s.pid);
                grew = true;
            }
        }
    }
    all.into_iter()
        .filter(|s| inside.contains(&s.pid) && s.state != 'Z')
        .collect()
}

/// Resident memory of every process in `leader`'s tree, KiB.
pub(crate) fn group_rss_kib(leader: u32) -> u64 {
    members(leader).iter().map(|s| s.rss_kib).sum()
}

/// A `kB` field of `/proc/PID/status` (`"VmRSS:"`, `"VmHWM:"`, `"RssAnon:"` …), KiB; 0 when the
/// process is gone.
pub(crate) fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// User + system CPU of every child this process has reaped so far (and of what they reaped),
/// to the microsecond. `/proc/PID/stat` counts 10 ms ticks, which rounds a LurkBot turn to 0.
fn reaped_children_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(Duration::ZERO, |usage| {
        let micros = |t: nix::sys::time::TimeVal| {
            Duration::from_secs(t.tv_sec().max(0) as u64)
                + Duration::from_micros(t.tv_usec().max(0) as u64)
        };
        micros(usage.user_time()) + micros(usage.system_time())
    })
}

/// What one command cost.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Cost {
    pub(crate) wall: Duration,
    /// User + system CPU of the command and every child it waited for.
    pub(crate) cpu: Duration,
    /// The most memory resident at once in the tree, KiB (sampled every 5% of the time so far,
    /// 0.1–20 ms apart; at least the leader's own high-water mark).
    pub(crate) peak_kib: u64,
}

/// Spawns `cmd` as the leader of a new process group, its output written to `log`.
pub(crate) fn spawn_group(cmd: &mut Command, log: &Path) -> Result<Child, String> {
    use std::os::unix::process::CommandExt;
    let out = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    cmd.process_group(0)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))
}

/// Runs `cmd` to the end and measures it. The CPU is what reaping it added to this process's
/// children's usage (its own and that of the children it waited for); measurements run one at a
/// time, so nothing else is reaped meanwhile.
pub(crate) fn measure(cmd: &mut Command, log: &Path) -> Result<Cost, String> {
    let cpu_before = reaped_children_cpu();
    let start = Instant::now();
    let log_file = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let err_file = log_file.try_clone().map_err(|e| e.to_string())?;
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(err_file)
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let pid = child.id();
    let mut peak = 0u64;
    loop {
        match stat(pid) {
            Some(s) if s.state == 'Z' => break,
            Some(_) => {
                peak = peak.max(group_rss_kib(pid)).max(status_kib(pid, "VmHWM:"));
            }
            None => break,
        }
        if start.elapsed() > Duration::from_secs(600) {
            stop_group(&mut child);
            return Err(format!("{cmd:?} ran for 10 minutes; see {}", log.display()));
        }
        // Fine at first (a LurkBot turn takes milliseconds), coarser later: every sample reads
        // all of /proc, which would cost the measured program CPU if done every millisecond.
        let pause =
            (start.elapsed() / 20).clamp(Duration::from_micros(100), Duration::from_millis(20));
        std::thread::sleep(pause);
    }
    let wall = start.elapsed();
    let status = child.wait().map_err(|e| e.to_string())?;
    let cpu = reaped_children_cpu().saturating_sub(cpu_before);
    stop_group(&mut child);
    if !status.success() {
        return Err(format!(
            "{cmd:?} failed with {status}; its output is in {}",
            log.display()
        ));
    }
    Ok(Cost {
        wall,
        cpu,
        peak_kib: peak,
    })
}

/// Ends every process of the tree `child` leads: TERM, then KILL after 10 s, then waits until
/// none is left (so the next run finds its ports free).
pub(crate) fn stop_group(child: &mut Child) {
    let leader = child.id();
    // Taken before any signal: once the leader is gone its children lose the link to it.
    let pids: Vec<String> = members(leader).iter().map(|s| s.pid.to_string()).collect();
    let signal = |sig: &str| {
        let mut cmd = Command::new("kill");
        cmd.args([sig, "--", &format!("-{leader}")]).args(&pids);
        let _ = cmd.stderr(Stdio::null()).status();
    };
    signal("-TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    let alive = |pids: &[String]| {
        pids.iter()
            .filter_map(|p| p.parse().ok())
            .filter_map(stat)
            .any(|s| s.state != 'Z')
    };
    loop {
        let _ = child.try_wait();
        if !alive(&pids) && members(leader).is_empty() {
            break;
        }
        if Instant::now() > deadline {
            signal("-KILL");
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
