//! `lurkbot-bench speech [--runs 5]`: the `tts` path on a 500-character reply — espeak-ng's
//! speech encoded to OGG/Opus in-process — beside the pipeline a peer would run, espeak-ng piped
//! into `ffmpeg -c:a libopus`, in the same run. Each side runs in a child process that reports
//! its median wall time and peak RSS (ours: `VmHWM` of the child; the pipeline: the largest
//! `ru_maxrss` of its processes), and the in-process encoder's share is timed alone.

use std::process::{Command, Stdio};
use std::time::Instant;

/// A reply of 500 characters, as a model writes one.
pub(crate) const REPLY: &str = "Here is your morning summary. You have three meetings today: the design review at ten, lunch with Maria at half past twelve, and the budget call at four. Two parcels are due before noon, so someone should be home. The weather will be dry and mild, around fourteen degrees, with wind from the west in the afternoon. Your train to Leeds on Friday leaves at eight fifteen from platform two. Finally, the library books are due back on Thursday, and the dentist asked you to confirm next week's appointment.";

/// The child: `lurkbot-bench child-speech RUNS` prints the median milliseconds of the whole
/// `tts` path, of the encoding alone, its peak RSS in KiB and the file's bytes and seconds.
pub(crate) fn child(runs: usize) -> Result<(), String> {
    let setup =
        lurkbot_media::speech::TtsSetup::espeak_only(lurkbot_browser::find_executable("espeak-ng"));
    if setup.espeak.is_none() {
        return Err("espeak-ng is not installed (apt-get install espeak-ng)".into());
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let client = lurkbot_term::http_client_builder()
        .build()
        .map_err(|e| e.to_string())?;
    let mut whole = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let t = Instant::now();
        let spoken = runtime
            .block_on(lurkbot_media::speech::speak(&client, &setup, REPLY, None))
            .map_err(|e| e.to_string())?;
        whole.push(t.elapsed().as_secs_f64() * 1000.0);
        last = Some(spoken);
    }
    let spoken = last.ok_or("no run")?;
    // The encoder alone, on the same speech (decoded back from espeak-ng's WAV).
    let wav = Command::new("espeak-ng")
        .args(["-v", "en", "--stdout", REPLY])
        .output()
        .map_err(|e| e.to_string())?
        .stdout;
    let pcm = lurkbot_media::speech::Pcm::from_wav(&wav).map_err(|e| e.to_string())?;
    let mut encode = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        lurkbot_media::speech::encode_ogg_opus(&pcm).map_err(|e| e.to_string())?;
        encode.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "{} {} {} {} {}",
        median(&mut whole),
        median(&mut encode),
        crate::media::peak_kib(),
        spoken.ogg.len(),
        spoken.seconds
    );
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The benchmark; with `symbols` (a release build that kept its symbol table), also what the
/// encoder adds to the binary.
pub(crate) fn speech(runs: usize, symbols: Option<&std::path::Path>) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(&me)
        .args(["child-speech", &runs.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let figures: Vec<f64> = text
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    let [whole, encode, kib, bytes, seconds] = figures[..] else {
        return Err(format!("unexpected output: {text}"));
    };
    let (pipe_ms, pipe_kib) = pipeline(runs)?;
    println!(
        "tts, {}-character reply → {seconds:.1} s of speech, OGG/Opus {:.1} KiB: LurkBot {whole:.0} ms (the encoder {encode:.0} ms of it), peak RSS {:.1} MiB; espeak-ng | ffmpeg libopus {pipe_ms:.0} ms ({:.2}×), peak RSS {:.1} MiB ({:.2}×)",
        REPLY.chars().count(),
        bytes / 1024.0,
        kib / 1024.0,
        pipe_ms / whole.max(0.001),
        pipe_kib as f64 / 1024.0,
        pipe_kib as f64 / kib.max(1.0)
    );
    if let Some(path) = symbols {
        let (encoder, all) = encoder_bytes(path)?;
        println!(
            "the encoder in the binary ({}): opus-rs and ogg {:.0} KiB of {:.1} MiB of symbols ({:.1} %)",
            path.display(),
            encoder as f64 / 1024.0,
            all as f64 / 1048576.0,
            encoder as f64 * 100.0 / all.max(1) as f64
        );
    }
    Ok(())
}

/// The sizes of the symbols of `binary` (`nm -S`) that belong to the encoder's crates, and of
/// all its sized symbols (code and data).
fn encoder_bytes(binary: &std::path::Path) -> Result<(u64, u64), String> {
    let out = Command::new("nm")
        .args(["-S", "--size-sort"])
        .arg(binary)
        .output()
        .map_err(|e| format!("nm (binutils): {e}"))?;
    if !out.status.success() || out.stdout.is_empty() {
        return Err(format!(
            "{} has no symbols: build it with CARGO_PROFILE_RELEASE_STRIP=none",
            binary.display()
        ));
    }
    let (mut encoder, mut all) = (0, 0);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut fields = line.split_whitespace();
        let (Some(_), Some(size), Some(_), Some(name)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let size = u64::from_str_radix(size, 16).unwrap_or(0);
        all += size;
        // Legacy mangling names the crate with its length: `_ZN7opus_rs…`, `_ZN3ogg…`.
        if name.contains("7opus_rs") || name.starts_with("_ZN3ogg") {
            encoder += size;
        }
    }
    Ok((encoder, all))
}

/// espeak-ng piped into ffmpeg's libopus at the same bit rate: median milliseconds and the
/// largest peak RSS (KiB) of its processes.
fn pipeline(runs: usize) -> Result<(f64, i64), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = dir.path().join("out.ogg");
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        let mut espeak = Command::new("espeak-ng")
            .args(["-v", "en", "--stdout", REPLY])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("espeak-ng: {e}"))?;
        let stdout = espeak.stdout.take().ok_or("no espeak-ng output")?;
        let status = Command::new("ffmpeg")
            .args([
                "-loglevel",
                "error",
                "-y",
                "-i",
                "-",
                "-c:a",
                "libopus",
                "-b:a",
                "24k",
                "-ar",
                "16000",
            ])
            .arg(&out)
            .stdin(stdout)
            .status()
            .map_err(|e| format!("ffmpeg (apt-get install ffmpeg): {e}"))?;
        let _ = espeak.wait();
        if !status.success() {
            return Err("ffmpeg failed".into());
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map_err(|e| e.to_string())?;
    Ok((median(&mut times), usage.max_rss()))
}
