//! Part of `lurkbot-bench archive`: `zip list --out` of an archive with 100,000 entries (made by
//! Info-ZIP `zip`, which writes zip64 records past 65,535), beside one of 25,000 — the listing
//! is streamed, so its peak RSS must not grow with the entry count — and beside Info-ZIP's
//! `unzip -Z1` listing the same archive.

use std::path::Path;
use std::process::Command;

use crate::archive::timed;
use crate::startup::ms;

/// Entries of the large archive; the small one has a quarter.
const ENTRIES: usize = 100_000;

/// Builds the two archives in `ws` and prints the figures.
pub(crate) fn zip_listing(bin: &Path, home: &Path, ws: &Path) -> Result<(), String> {
    let mut figures = Vec::new();
    for count in [ENTRIES / 4, ENTRIES] {
        let dir = ws.join(format!("names-{count}"));
        for i in 0..count {
            // 100 folders of files with ordinary names, as an exported photo library has.
            let folder = dir.join(format!("album-{:03}", i % 100));
            if i < 100 {
                std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
            }
            std::fs::write(folder.join(format!("IMG_{i:06}.jpg")), b"")
                .map_err(|e| e.to_string())?;
        }
        let archive = format!("names-{count}.zip");
        let mut zip = Command::new("zip");
        zip.args(["-qr0", &archive, &format!("names-{count}")])
            .current_dir(ws);
        timed(&mut zip)?;
        let _ = std::fs::remove_dir_all(&dir);
        let mut ours = Command::new(bin);
        ours.arg("--home").arg(home).arg("exec").arg(format!(
            "zip list --in workspace/{archive} --out artifacts/{archive}.json --overwrite --confirm"
        ));
        let (our_time, our_peak) = timed(&mut ours)?;
        let listed = std::fs::metadata(home.join(format!("artifacts/{archive}.json")))
            .map_err(|e| format!("no listing written: {e}"))?
            .len();
        let mut peer = Command::new("unzip");
        peer.args(["-Z1", &archive]).current_dir(ws);
        let (peer_time, peer_peak) = timed(&mut peer)?;
        figures.push((count, our_time, our_peak, peer_time, peer_peak, listed));
    }
    println!("zip list --out (streamed), archives of empty files made by Info-ZIP zip:");
    for (count, our_time, our_peak, peer_time, peer_peak, listed) in &figures {
        println!(
            "  {count:>7} entries: lurkbot {:>6.0} ms, peak RSS {:>5.1} MiB ({:.1} MiB of JSON written) | unzip -Z1 {:>5.0} ms, {:>5.1} MiB",
            ms(*our_time),
            *our_peak as f64 / 1024.0,
            *listed as f64 / 1048576.0,
            ms(*peer_time),
            *peer_peak as f64 / 1024.0,
        );
    }
    Ok(())
}
