//! Speech encoded as an OGG/Opus file (RFC 6716 in RFC 7845's encapsulation) in-process: the
//! format of Telegram's and WhatsApp's voice notes, played by every browser. `opus-rs` is a
//! pure-Rust port of libopus, so no ffmpeg or C library is needed at run time.

use std::borrow::Cow;

use ogg::writing::{PacketWriteEndInfo, PacketWriter};
use opus_rs::{Application, OpusEncoder};

use super::{Pcm, SpeechError};

/// The rate speech is encoded at: SILK's wideband, what voice notes use.
const ENCODE_RATE: u32 = 16_000;
/// 20 ms frames.
const FRAME: usize = (ENCODE_RATE / 50) as usize;
/// Bits per second: clear speech at about 3 KB a second.
const BITRATE: i32 = 24_000;
/// The encoder's look-ahead in 48 kHz samples (libopus `OPUS_GET_LOOKAHEAD` for VoIP at
/// 16 kHz is 104 samples): players skip it.
const PRE_SKIP: u16 = 312;
/// Decoded samples per encoded sample (granule positions count at 48 kHz).
const TO_48K: u64 = (48_000 / ENCODE_RATE) as u64;
/// The logical stream's serial number (one stream per file).
const SERIAL: u32 = 0x4c75_726b;

/// An OGG/Opus file of `pcm`.
///
/// # Errors
/// [`SpeechError::Audio`] when there is nothing to encode or the encoder refuses a frame.
pub fn encode_ogg_opus(pcm: &Pcm) -> Result<Vec<u8>, SpeechError> {
    if pcm.samples.is_empty() {
        return Err(SpeechError::Audio("no speech to encode".into()));
    }
    let speech = pcm.resampled(ENCODE_RATE);
    let mut encoder = OpusEncoder::new(ENCODE_RATE as i32, 1, Application::Voip)
        .map_err(|e| SpeechError::Audio(format!("cannot start the Opus encoder: {e}")))?;
    encoder.bitrate_bps = BITRATE;
    encoder.complexity = 5;
    let mut out = PacketWriter::new(Vec::new());
    let write =
        |out: &mut PacketWriter<Vec<u8>>, data: Vec<u8>, end: PacketWriteEndInfo, at: u64| {
            out.write_packet(Cow::Owned(data), SERIAL, end, at)
                .map_err(|e| SpeechError::Audio(format!("cannot write the OGG stream: {e}")))
        };
    write(&mut out, head(pcm.rate), PacketWriteEndInfo::EndPage, 0)?;
    write(&mut out, tags(), PacketWriteEndInfo::EndPage, 0)?;
    // The look-ahead is flushed with silence so the end of the speech is heard.
    let lookahead = usize::from(PRE_SKIP) / TO_48K as usize;
    let mut samples = speech.samples;
    let spoken = samples.len() as u64;
    samples.resize((samples.len() + lookahead).div_ceil(FRAME) * FRAME, 0);
    let frames = samples.len() / FRAME;
    let mut packet = [0u8; 1500];
    for (index, frame) in samples.chunks_exact(FRAME).enumerate() {
        let size = encoder
            .encode_i16(frame, FRAME, &mut packet)
            .map_err(|e| SpeechError::Audio(format!("the Opus encoder refused a frame: {e}")))?;
        let last = index + 1 == frames;
        let granule = if last {
            // The last page's position trims the padding (RFC 7845 §4).
            u64::from(PRE_SKIP) + spoken * TO_48K
        } else {
            u64::from(PRE_SKIP) + ((index + 1) * FRAME) as u64 * TO_48K
        };
        // A page a second keeps pages small and seeking cheap.
        let end = if last {
            PacketWriteEndInfo::EndStream
        } else if (index + 1) % 50 == 0 {
            PacketWriteEndInfo::EndPage
        } else {
            PacketWriteEndInfo::NormalPacket
        };
        write(&mut out, packet[..size].to_vec(), end, granule)?;
    }
    Ok(out.into_inner())
}

/// The length in seconds of an OGG/Opus file: its last page's granule position less the
/// pre-skip its `OpusHead` declares, at 48 kHz. `None` when it is not one.
pub fn ogg_opus_seconds(file: &[u8]) -> Option<f64> {
    if file.len() < 47 || &file[..4] != b"OggS" || &file[28..36] != b"OpusHead" {
        return None;
    }
    let pre_skip = u16::from_le_bytes([file[38], file[39]]);
    let last = file.windows(4).rposition(|w| w == b"OggS")?;
    let granule = u64::from_le_bytes(file.get(last + 6..last + 14)?.try_into().ok()?);
    Some(granule.saturating_sub(u64::from(pre_skip)) as f64 / 48_000.0)
}

/// The identification header (RFC 7845 §5.1).
fn head(input_rate: u32) -> Vec<u8> {
    let mut head = b"OpusHead".to_vec();
    head.push(1); // version
    head.push(1); // channels
    head.extend(PRE_SKIP.to_le_bytes());
    head.extend(input_rate.to_le_bytes());
    head.extend(0i16.to_le_bytes()); // output gain
    head.push(0); // mapping family: mono/stereo
    head
}

/// The comment header (RFC 7845 §5.2): the vendor, no comments.
fn tags() -> Vec<u8> {
    let vendor = concat!("LurkBot ", env!("CARGO_PKG_VERSION"));
    let mut tags = b"OpusTags".to_vec();
    tags.extend((vendor.len() as u32).to_le_bytes());
    tags.extend(vendor.as_bytes());
    tags.extend(0u32.to_le_bytes());
    tags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_starts_with_its_headers_and_ends_at_the_speech() {
        let tone: Vec<i16> = (0..22_050)
            .map(|i| {
                ((f64::from(i) * 300.0 * 2.0 * std::f64::consts::PI / 22_050.0).sin() * 8_000.0)
                    as i16
            })
            .collect();
        let file = encode_ogg_opus(&Pcm {
            rate: 22_050,
            samples: tone,
        })
        .unwrap();
        assert_eq!(&file[..4], b"OggS");
        assert_eq!(&file[28..36], b"OpusHead");
        // A second at 24 kbit/s, with headers and page overhead.
        assert!((1_000..6_000).contains(&file.len()), "{}", file.len());
        // The last page's granule position: pre-skip plus one second at 48 kHz.
        let last = file.windows(4).rposition(|w| w == b"OggS").unwrap();
        let granule = u64::from_le_bytes(file[last + 6..last + 14].try_into().unwrap());
        assert_eq!(granule, 312 + 48_000);
        assert_eq!(file[last + 5] & 4, 4, "the last page ends the stream");
        assert_eq!(ogg_opus_seconds(&file), Some(1.0));
        assert_eq!(ogg_opus_seconds(b"RIFF...."), None);
    }

    #[test]
    fn nothing_to_say_is_an_error() {
        let empty = Pcm {
            rate: 16_000,
            samples: Vec::new(),
        };
        assert!(encode_ogg_opus(&empty).is_err());
    }
}
