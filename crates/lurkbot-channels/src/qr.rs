//! A device-linking QR code (WhatsApp's pairing code, Signal's `sgnl://linkdevice` URI) drawn
//! for a terminal (two rows of modules per line, in half blocks) and as SVG for the web UI.

use qrcode::{Color, EcLevel, QrCode};

/// The code's modules with a quiet zone of four around them (`true`: dark).
fn modules(payload: &str) -> Option<(usize, Vec<bool>)> {
    let code = QrCode::with_error_correction_level(payload, EcLevel::L).ok()?;
    let width = code.width();
    let size = width + 8;
    let mut dark = vec![false; size * size];
    for (i, color) in code.to_colors().into_iter().enumerate() {
        let (x, y) = (i % width + 4, i / width + 4);
        dark[y * size + x] = color == Color::Dark;
    }
    Some((size, dark))
}

/// The code as terminal text, dark on light whatever the terminal's colours (`None` when the
/// payload does not fit a QR code).
pub fn terminal(payload: &str) -> Option<String> {
    let (size, dark) = modules(payload)?;
    let at = |x: usize, y: usize| y < size && dark[y * size + x];
    let mut text = String::new();
    for y in (0..size).step_by(2) {
        for x in 0..size {
            // Light modules are drawn, dark ones left blank: scanners read it on dark
            // terminals, and inverted (`\x1b[7m`) it reads on light ones too.
            text.push(match (at(x, y), at(x, y + 1)) {
                (false, false) => '█',
                (false, true) => '▀',
                (true, false) => '▄',
                (true, true) => ' ',
            });
        }
        text.push('\n');
    }
    Some(text)
}

/// The code as an SVG image (one path of unit squares).
pub fn svg(payload: &str) -> Option<String> {
    let (size, dark) = modules(payload)?;
    let mut path = String::new();
    for (i, _) in dark.iter().enumerate().filter(|(_, d)| **d) {
        path.push_str(&format!("M{} {}h1v1h-1z", i % size, i / size));
    }
    Some(format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {size} {size}\" \
         shape-rendering=\"crispEdges\"><rect width=\"{size}\" height=\"{size}\" fill=\"#fff\"/>\
         <path fill=\"#000\" d=\"{path}\"/></svg>"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_is_drawn_both_ways() {
        let payload = "2@abc,def,ghi,jkl";
        let text = terminal(payload).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        // A version-1 or -2 code plus the quiet zone, two rows per line.
        let width = lines[0].chars().count();
        assert!(width >= 29, "{width}");
        assert_eq!(lines.len(), width.div_ceil(2));
        // The quiet zone is light all round.
        assert!(lines[0].chars().all(|c| c == '█'));
        let image = svg(payload).unwrap_or_default();
        assert!(
            image.starts_with("<svg") && image.contains("h1v1h-1z"),
            "{image}"
        );
        assert_eq!(terminal(&"x".repeat(5000)), None);
    }
}
