//! `lurkbot-bench archive`: extract and create throughput of `lurkbot exec zip|tar` against
//! Info-ZIP `zip`/`unzip` and GNU `tar`, measured in the same run on the same generated corpus
//! (2,000 files of mixed sizes and compressibility, ~200 MiB by default), printed as ratios
//! (peer time ÷ our time: ≥ 1.0 means LurkBot is at least as fast). Also prints the peak RSS of
//! extraction for the full corpus and for a quarter of it: streaming means it does not grow.
//! Then `zip list --out` of 25,000 and 100,000 entries (`zip_listing.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::startup::ms;

const FILES: usize = 2000;

/// A tiny deterministic generator (xorshift64*), so every run uses the same corpus.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// Writes the corpus: mostly small files, some medium, a few large; text-like (compressible)
/// and random (incompressible) content alternate. Returns the bytes written.
fn make_corpus(dir: &Path, total_mib: u64, files: usize) -> Result<u64, String> {
    let words = [
        "agent ",
        "session ",
        "archive ",
        "terminal ",
        "gateway ",
        "memory ",
        "the ",
        "of ",
        "and ",
        "lurkbot ",
        "compress ",
        "stream ",
        "file ",
        "audit ",
        "token ",
        "\n",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let budget = total_mib * 1024 * 1024;
    // Shares of the budget: 15 % small, 45 % medium, 40 % large.
    let small_n = files * 90 / 100;
    let medium_n = files * 9 / 100;
    let large_n = files - small_n - medium_n;
    let sizes = [
        (small_n, budget * 15 / 100 / small_n as u64),
        (medium_n, budget * 45 / 100 / medium_n.max(1) as u64),
        (large_n, budget * 40 / 100 / large_n.max(1) as u64),
    ];
    let mut written = 0u64;
    let mut index = 0usize;
    for (count, mean) in sizes {
        for _ in 0..count {
            let size = (mean / 2 + rng.next() % mean.max(1)) as usize;
            let sub = dir.join(format!("d{:02}", index % 40));
            std::fs::create_dir_all(&sub).map_err(|e| e.to_string())?;
            let mut data = Vec::with_capacity(size);
            if index.is_multiple_of(2) {
                while data.len() < size {
                    data.extend_from_slice(words[(rng.next() % 16) as usize].as_bytes());
                }
                data.truncate(size);
            } else {
                while data.len() < size {
                    data.extend_from_slice(&rng.next().to_le_bytes());
                }
                data.truncate(size);
            }
            let path = sub.join(format!(
                "f{index:04}.{}",
                if index.is_multiple_of(2) {
                    "txt"
                } else {
                    "bin"
                }
            ));
            std::fs::File::create(&path)
                .and_then(|mut f| f.write_all(&data))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            written += size as u64;
            index += 1;
        }
    }
    Ok(written)
}

/// Runs a command, returning its wall time and peak RSS (KiB, from /proc, polled).
pub(crate) fn timed(cmd: &mut Command) -> Result<(Duration, u64), String> {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let mut peak = 0u64;
    let status = loop {
        peak = peak.max(crate::proc_group::status_kib(child.id(), "VmHWM:"));
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let elapsed = start.elapsed();
    if !status.success() {
        let mut stderr = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
        }
        return Err(format!("{cmd:?} failed with {status}: {stderr}"));
    }
    Ok((elapsed, peak))
}

/// Median time and max peak RSS over `runs`, running `prepare` before each.
fn measure(
    runs: usize,
    mut prepare: impl FnMut(),
    mut cmd: impl FnMut() -> Command,
) -> Result<(Duration, u64), String> {
    let mut times = Vec::new();
    let mut peak = 0;
    for _ in 0..runs {
        prepare();
        let (t, p) = timed(&mut cmd())?;
        times.push(t);
        peak = peak.max(p);
    }
    times.sort();
    Ok((times[times.len() / 2], peak))
}

struct Bench<'a> {
    bin: &'a Path,
    home: PathBuf,
    runs: usize,
}

impl Bench<'_> {
    fn ws(&self) -> PathBuf {
        self.home.join("workspace")
    }

    fn ours(&self, command: &str) -> Command {
        let mut c = Command::new(self.bin);
        c.arg("--home").arg(&self.home).arg("exec").arg(command);
        c
    }

    fn peer(&self, program: &str, args: &[&str]) -> Command {
        let mut c = Command::new(program);
        c.args(args).current_dir(self.ws());
        c
    }

    fn clean(&self, rel: &str) {
        let p = self.ws().join(rel);
        let _ = std::fs::remove_dir_all(&p);
        let _ = std::fs::remove_file(&p);
    }

    /// One comparison row: (name, peer time, our time, our peak RSS).
    fn compare(
        &self,
        name: &str,
        peer: (&str, &[&str]),
        ours: &str,
        outputs: &[&str],
    ) -> Result<(String, Duration, Duration, u64), String> {
        let clean_all = || outputs.iter().for_each(|o| self.clean(o));
        let (peer_time, _) = measure(self.runs, clean_all, || self.peer(peer.0, peer.1))?;
        let (our_time, our_peak) = measure(self.runs, clean_all, || self.ours(ours))?;
        clean_all();
        Ok((name.to_string(), peer_time, our_time, our_peak))
    }
}

/// The benchmark.
pub(crate) fn archive(bin: &Path, runs: usize, mib: u64) -> Result<(), String> {
    for tool in ["zip", "unzip", "tar", "gzip"] {
        let found = Command::new("which")
            .arg(tool)
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            return Err(format!(
                "'{tool}' is not installed (apt-get install zip unzip tar gzip bzip2)"
            ));
        }
    }
    let home = std::env::temp_dir().join(format!("lurkbot-archive-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let b = Bench {
        bin,
        home: home.clone(),
        runs,
    };
    std::fs::create_dir_all(b.ws()).map_err(|e| e.to_string())?;
    let corpus_bytes = make_corpus(&b.ws().join("corpus"), mib, FILES)?;
    make_corpus(&b.ws().join("quarter"), mib / 4, FILES / 4)?;
    // Reference archives made by the classic tools, extracted by both sides.
    timed(&mut b.peer("zip", &["-qr", "-6", "ref.zip", "corpus"]))?;
    timed(&mut b.peer("tar", &["czf", "ref.tar.gz", "corpus"]))?;
    timed(&mut b.peer("tar", &["cf", "ref.tar", "corpus"]))?;
    timed(&mut b.peer("zip", &["-qr", "-6", "quarter.zip", "quarter"]))?;
    let lim = "--max-files 100000 --max-bytes 100000000000";
    let rows = vec![
        b.compare(
            "zip create (level 6)",
            ("zip", &["-qr", "-6", "peer.zip", "corpus"]),
            "zip create --src workspace/corpus --out workspace/ours.zip --confirm --level 6",
            &["peer.zip", "ours.zip"],
        )?,
        b.compare(
            "zip extract",
            ("unzip", &["-q", "ref.zip", "-d", "x-peer"]),
            &format!("zip extract --in workspace/ref.zip --dest workspace/x-ours --confirm {lim}"),
            &["x-peer", "x-ours"],
        )?,
        b.compare(
            "tar.gz create",
            ("tar", &["czf", "peer.tar.gz", "corpus"]),
            "tar create --src workspace/corpus --out workspace/ours.tar.gz --confirm",
            &["peer.tar.gz", "ours.tar.gz"],
        )?,
        b.compare(
            "tar.gz extract",
            ("tar", &["xzf", "ref.tar.gz", "--one-top-level=x-peer"]),
            &format!(
                "tar extract --in workspace/ref.tar.gz --dest workspace/x-ours --confirm {lim}"
            ),
            &["x-peer", "x-ours"],
        )?,
        b.compare(
            "tar.bz2 create",
            ("tar", &["cjf", "peer.tar.bz2", "corpus"]),
            "tar create --src workspace/corpus --out workspace/ours.tar.bz2 --confirm",
            &["peer.tar.bz2", "ours.tar.bz2"],
        )?,
        b.compare(
            "tar create (uncompressed)",
            ("tar", &["cf", "peer.tar", "corpus"]),
            "tar create --src workspace/corpus --out workspace/ours.tar --confirm",
            &["peer.tar", "ours.tar"],
        )?,
        // LurkBot syncs a new archive before renaming it into place (a crash leaves the old file
        // or the whole new one); GNU tar does not. Uncompressed, that sync is about half of the
        // time, so the same work is also measured: the peer's archive synced as well.
        b.compare(
            "tar create, both synced",
            ("sh", &["-c", "tar cf peer.tar corpus && sync peer.tar"]),
            "tar create --src workspace/corpus --out workspace/ours.tar --confirm",
            &["peer.tar", "ours.tar"],
        )?,
        b.compare(
            "tar extract (uncompressed)",
            ("tar", &["xf", "ref.tar", "--one-top-level=x-peer"]),
            &format!("tar extract --in workspace/ref.tar --dest workspace/x-ours --confirm {lim}"),
            &["x-peer", "x-ours"],
        )?,
    ];
    let (_, quarter_peak) = measure(
        runs,
        || b.clean("x-quarter"),
        || {
            b.ours(&format!(
                "zip extract --in workspace/quarter.zip --dest workspace/x-quarter --confirm {lim}"
            ))
        },
    )?;
    let full_peak = rows[1].3;
    for dir in ["corpus", "quarter"] {
        b.clean(dir);
    }
    let listing = crate::zip_listing::zip_listing(bin, &home, &b.ws());
    let _ = std::fs::remove_dir_all(&home);

    let mib_total = corpus_bytes as f64 / 1024.0 / 1024.0;
    println!(
        "LurkBot archive benchmark — corpus {FILES} files, {mib_total:.0} MiB; median of {runs} runs; same machine, same run"
    );
    println!(
        "{:<28} {:>14} {:>14} {:>10} {:>10} {:>12}",
        "operation", "peer", "lurkbot", "MiB/s", "ratio", "peak RSS"
    );
    for (name, peer, ours, peak) in &rows {
        println!(
            "{name:<28} {:>11.0} ms {:>11.0} ms {:>10.0} {:>9.2}x {:>9.1} MiB",
            ms(*peer),
            ms(*ours),
            mib_total / ours.as_secs_f64(),
            peer.as_secs_f64() / ours.as_secs_f64(),
            *peak as f64 / 1024.0
        );
    }
    println!(
        "ratio = peer time / lurkbot time (>= 1.0: at least as fast). Peers: Info-ZIP zip 3.0 / unzip 6.0, GNU tar (+gzip)."
    );
    println!(
        "streaming: peak RSS of zip extract is {:.1} MiB for the full corpus and {:.1} MiB for a quarter of it",
        full_peak as f64 / 1024.0,
        quarter_peak as f64 / 1024.0
    );
    listing
}
