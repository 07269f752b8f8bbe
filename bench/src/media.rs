//! `lurkbot-bench media --python VENV/bin/python`: `web_fetch`'s article extraction on a 2 MiB
//! page, and the `image` tool's preparation of a 24-megapixel JPEG beside Pillow doing the same
//! resize and re-encode, in the same run. Each measurement runs in a child process (this binary
//! again, or Python) that reports its wall time and its own peak RSS (`VmHWM`), so neither
//! figure includes the harness.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Pillow's side: open, decode, resize to the same size, encode JPEG at the same quality.
const PILLOW: &str = r#"
import io, sys, time
from PIL import Image
path, runs = sys.argv[1], int(sys.argv[2])
times = []
for _ in range(runs):
    t = time.perf_counter()
    im = Image.open(path)
    im = im.convert("RGB")
    w, h = im.size
    s = 2048 / max(w, h)
    im = im.resize((round(w * s), round(h * s)), Image.BILINEAR)
    out = io.BytesIO()
    im.save(out, "JPEG", quality=85)
    times.append(time.perf_counter() - t)
times.sort()
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(times[len(times) // 2] * 1000, hwm)
"#;

/// Makes a 24-megapixel photo-like JPEG (gradients and noise, not a flat colour) with Pillow.
const MAKE_PHOTO: &str = r#"
import sys, random
from PIL import Image
w, h = 6000, 4000
im = Image.linear_gradient("L").resize((w, h)).convert("RGB")
noise = Image.effect_noise((w, h), 40).convert("RGB")
Image.blend(im, noise, 0.35).save(sys.argv[1], "JPEG", quality=90)
"#;

/// A child's run: `lurkbot-bench child-article|child-image PATH RUNS` prints the median
/// milliseconds and its peak RSS in KiB.
pub(crate) fn child(kind: &str, path: &Path, runs: usize) -> Result<(), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut times = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        match kind {
            "child-article" => {
                let html = String::from_utf8_lossy(&bytes);
                let article = lurkbot_agent::web::article::extract(
                    &html,
                    "https://news.example/story",
                    lurkbot_agent::web::article::ExtractMode::Markdown,
                );
                if article.body.len() < 1000 {
                    return Err("the article came out empty".into());
                }
            }
            "child-bomb" => {
                if !matches!(
                    lurkbot_media::prepare(&bytes),
                    Err(lurkbot_media::MediaError::TooManyPixels { .. })
                ) {
                    return Err("the decompression bomb was not refused".into());
                }
            }
            _ => {
                let prepared = lurkbot_media::prepare(&bytes).map_err(|e| e.to_string())?;
                if prepared.size.0.max(prepared.size.1) != lurkbot_media::MAX_EDGE {
                    return Err(format!("unexpected size {:?}", prepared.size));
                }
            }
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!("{} {}", times[times.len() / 2], peak_kib());
    Ok(())
}

pub(crate) fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// A 2 MiB news page: navigation, sidebars and a long article of real-looking paragraphs.
fn page() -> String {
    let mut html = String::from(
        "<!DOCTYPE html><html><head><title>Long read | Example News</title><script>var x = 1;</script></head><body><nav><ul>",
    );
    for i in 0..200 {
        html.push_str(&format!(
            "<li><a href=\"/section/{i}\">Section {i}</a></li>"
        ));
    }
    html.push_str("</ul></nav><main><article><h1>A long read</h1>");
    let mut i = 0;
    while html.len() < 2 * 1024 * 1024 - 20_000 {
        html.push_str(&format!(
            "<h2>Part {i}</h2><p>The harbour council met again on day {i} to talk about the ferry, the fees and the winter timetable, and the minutes record <a href=\"/notes/{i}\">every vote</a> taken that evening by the members present.</p><p>Residents of the outer islands said the crossing matters to schoolchildren, nurses and shop workers, and asked for the timetable to be posted at the quay before the first of the month.</p>"
        ));
        i += 1;
    }
    html.push_str("</article><aside><h3>Most read</h3><ol><li><a href=\"/a\">A</a></li></ol></aside></main><footer>© Example News</footer></body></html>");
    html
}

fn run_child(python_or_self: &Path, args: &[&str]) -> Result<(f64, u64), String> {
    let out = Command::new(python_or_self)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python_or_self.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            python_or_self.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.split_whitespace();
    match (
        parts.next().and_then(|p| p.parse().ok()),
        parts.next().and_then(|p| p.parse().ok()),
    ) {
        (Some(ms), Some(kib)) => Ok((ms, kib)),
        _ => Err(format!("unexpected output: {text}")),
    }
}

/// The benchmark.
pub(crate) fn media(python: &Path, runs: usize) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let page_path = dir.path().join("page.html");
    let page = page();
    std::fs::write(&page_path, &page).map_err(|e| e.to_string())?;
    let runs_text = runs.to_string();
    let (ms, kib) = run_child(
        &me,
        &[
            "child-article",
            page_path.to_str().unwrap_or(""),
            &runs_text,
        ],
    )?;
    println!(
        "web_fetch article extraction, {:.1} MiB page: {ms:.1} ms median, peak RSS {:.1} MiB",
        page.len() as f64 / 1048576.0,
        kib as f64 / 1024.0
    );
    let photo = dir.path().join("photo.jpg");
    let made = Command::new(python)
        .args(["-c", MAKE_PHOTO, photo.to_str().unwrap_or("")])
        .status()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !made.success() {
        return Err("Pillow could not make the test photo (pip install pillow)".into());
    }
    let size = std::fs::metadata(&photo).map(|m| m.len()).unwrap_or(0);
    let photo_text = photo.to_str().unwrap_or("");
    let (ours_ms, ours_kib) = run_child(&me, &["child-image", photo_text, &runs_text])?;
    let (pil_ms, pil_kib) = run_child(python, &["-c", PILLOW, photo_text, &runs_text])?;
    // A decompression bomb: 25,000 × 25,000 pixels (625 megapixels) in a small PNG.
    let bomb = dir.path().join("bomb.png");
    let made = Command::new(python)
        .args(["-c", "import sys; from PIL import Image; Image.new('1', (25000, 25000), 0).save(sys.argv[1])", bomb.to_str().unwrap_or("")])
        .status()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !made.success() {
        return Err("Pillow could not make the bomb".into());
    }
    let bomb_size = std::fs::metadata(&bomb).map(|m| m.len()).unwrap_or(0);
    let (bomb_ms, bomb_kib) = run_child(
        &me,
        &["child-bomb", bomb.to_str().unwrap_or(""), &runs_text],
    )?;
    println!(
        "image, decompression bomb (25000×25000 PNG, {} KiB): refused in {bomb_ms:.2} ms, peak RSS {:.1} MiB (decoding it would take 596 MiB as 8-bit grey)",
        bomb_size / 1024,
        bomb_kib as f64 / 1024.0
    );
    println!(
        "image, 6000×4000 JPEG ({:.1} MiB) → 2048 px JPEG q85: LurkBot {ours_ms:.0} ms, peak {:.1} MiB; Pillow {pil_ms:.0} ms ({:.2}×), peak {:.1} MiB ({:.2}×)",
        size as f64 / 1048576.0,
        ours_kib as f64 / 1024.0,
        pil_ms / ours_ms.max(0.001),
        pil_kib as f64 / 1024.0,
        pil_kib as f64 / (ours_kib.max(1)) as f64
    );
    Ok(())
}
