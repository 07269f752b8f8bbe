//! A share of a CPU for one process, as a machine of its own would have: a cgroup (v1 `cpu`
//! controller) with a CFS quota, e.g. 0.15 of a core. Made as root only; elsewhere the bench
//! says so and measures without it. Removed when dropped (once its process has ended).
//!
//! And the CPU a process (or a whole PostgreSQL cluster) has used, from `/proc`.

use std::path::{Path, PathBuf};

const ROOT: &str = "/sys/fs/cgroup/cpu";
const PERIOD_US: u64 = 100_000;

/// A cgroup with a CPU quota.
pub(crate) struct CpuShare {
    dir: PathBuf,
}

impl CpuShare {
    /// A cgroup named `name` allowed `cores` of a core; `Err` saying why when none can be made.
    pub(crate) fn new(name: &str, cores: f64) -> Result<Self, String> {
        let root = Path::new(ROOT);
        if !root.join("cpu.cfs_quota_us").exists() {
            return Err(format!("no cgroup v1 cpu controller at {ROOT}"));
        }
        let dir = root.join(format!("lurkbot-bench-{name}-{}", std::process::id()));
        std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        let share = Self { dir };
        let quota = (cores * PERIOD_US as f64).round() as u64;
        share.write("cpu.cfs_period_us", &PERIOD_US.to_string())?;
        share.write("cpu.cfs_quota_us", &quota.to_string())?;
        Ok(share)
    }

    /// Puts process `pid` (all its threads) in the share.
    pub(crate) fn add(&self, pid: u32) -> Result<(), String> {
        self.write("cgroup.procs", &pid.to_string())
    }

    /// Periods the share's processes were held back in (the quota used up), from `cpu.stat`.
    pub(crate) fn throttled_periods(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("cpu.stat"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("nr_throttled ")?.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| format!("{}/{file}: {e}", self.dir.display()))
    }
}

impl Drop for CpuShare {
    fn drop(&mut self) {
        // Its processes end first (the gateways are killed before); a few tries while the
        // kernel lets go of them.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Clock ticks a second (`getconf CLK_TCK`: 100 on Linux).
const TICKS: f64 = 100.0;

/// (user + system, children's user + system) CPU of `pid`, seconds.
fn cpu_of(pid: u32) -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return (0.0, 0.0);
    };
    // Fields after the command (which may hold spaces), from field 3 on.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return (0.0, 0.0);
    };
    let fields: Vec<f64> = rest
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    // utime, stime, cutime, cstime are fields 14–17 (index 11–14 after the state).
    let at = |i: usize| fields.get(i).copied().unwrap_or(0.0) / TICKS;
    (at(11) + at(12), at(13) + at(14))
}

/// CPU seconds process `pid` has used.
pub(crate) fn process_cpu(pid: u32) -> f64 {
    cpu_of(pid).0
}

/// CPU seconds the process tree under `leader` has used: the leader, the children it has
/// reaped, and those alive now (a PostgreSQL cluster: the postmaster and its backends).
pub(crate) fn tree_cpu(leader: u32) -> f64 {
    let (own, reaped) = cpu_of(leader);
    let alive: f64 = children_of(leader).into_iter().map(|c| cpu_of(c).0).sum();
    own + reaped + alive
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    let (_, rest) = s.rsplit_once(')')?;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}
