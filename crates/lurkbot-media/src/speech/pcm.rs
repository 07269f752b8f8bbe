//! Speech as samples: 16-bit mono PCM at a known rate, read from what speech providers return
//! (a WAV file, or raw little-endian PCM), and resampled for the encoder.
//!
//! The WAV reader is written here rather than taken from a crate because streamed WAV (espeak-ng
//! `--stdout`, OpenAI's `wav`) declares a length it does not know (`0xFFFFFFFF` or `0x7FFFF000`):
//! the data chunk is read to the end of what arrived, and a general reader refuses that.

use super::SpeechError;

/// Mono 16-bit speech at `rate` samples per second.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcm {
    /// Samples per second.
    pub rate: u32,
    /// The samples.
    pub samples: Vec<i16>,
}

impl Pcm {
    /// Its length in seconds.
    pub fn seconds(&self) -> f64 {
        if self.rate == 0 {
            return 0.0;
        }
        self.samples.len() as f64 / f64::from(self.rate)
    }

    /// Raw little-endian 16-bit mono PCM (ElevenLabs' `pcm_16000`, OpenAI's `pcm` at 24 kHz).
    pub fn from_le_bytes(bytes: &[u8], rate: u32) -> Self {
        let samples = bytes
            .chunks_exact(2)
            .map(|pair| i16::from_le_bytes([pair[0], pair[1]]))
            .collect();
        Self { rate, samples }
    }

    /// A RIFF/WAVE file of 16-bit integer PCM, mono or stereo (stereo is mixed down).
    ///
    /// # Errors
    /// [`SpeechError::Audio`] for anything else, saying what it is.
    pub fn from_wav(bytes: &[u8]) -> Result<Self, SpeechError> {
        let bad = |what: &str| SpeechError::Audio(format!("not a 16-bit PCM WAV file: {what}"));
        if bytes.len() < 12 || &bytes[..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
            return Err(bad("no RIFF/WAVE header"));
        }
        let mut at = 12;
        let mut format: Option<(u16, u16, u32, u16)> = None;
        while at + 8 <= bytes.len() {
            let id = &bytes[at..at + 4];
            let declared =
                u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]])
                    as usize;
            let body_start = at + 8;
            let body_end = body_start.saturating_add(declared).min(bytes.len());
            let body = &bytes[body_start..body_end];
            if id == b"fmt " {
                if body.len() < 16 {
                    return Err(bad("a short fmt chunk"));
                }
                let field = |i: usize| u16::from_le_bytes([body[i], body[i + 1]]);
                let rate = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
                format = Some((field(0), field(2), rate, field(14)));
            } else if id == b"data" {
                let (tag, channels, rate, bits) = format.ok_or_else(|| bad("data before fmt"))?;
                // 1 = PCM; 0xFFFE = WAVE_FORMAT_EXTENSIBLE (its sub-format is PCM for 16 bits).
                if !(tag == 1 || tag == 0xFFFE) || bits != 16 {
                    return Err(bad(&format!("format {tag:#x} with {bits} bits per sample")));
                }
                if !(1..=2).contains(&channels) || rate == 0 {
                    return Err(bad(&format!("{channels} channels at {rate} Hz")));
                }
                let mono = Self::from_le_bytes(body, rate);
                if channels == 1 {
                    return Ok(mono);
                }
                let samples = mono
                    .samples
                    .chunks_exact(2)
                    .map(|lr| ((i32::from(lr[0]) + i32::from(lr[1])) / 2) as i16)
                    .collect();
                return Ok(Self { rate, samples });
            }
            // Chunks are padded to an even length.
            at = body_start
                .saturating_add(declared)
                .saturating_add(declared & 1);
        }
        Err(bad("no data chunk"))
    }

    /// The same speech at `rate`: a windowed-sinc resampler, low-passed below the lower
    /// Nyquist frequency so going down does not fold high frequencies back as noise. The rates
    /// are in a fixed ratio, so an output sample's weights depend only on its phase: they are
    /// computed once per phase (320 phases for espeak-ng's 22,050 Hz to 16 kHz), not per sample.
    pub fn resampled(&self, rate: u32) -> Self {
        if self.rate == rate || self.rate == 0 || rate == 0 || self.samples.is_empty() {
            return Self {
                rate,
                samples: self.samples.clone(),
            };
        }
        let common = gcd(self.rate, rate);
        let (step_in, phases) = (u64::from(self.rate / common), u64::from(rate / common));
        let cutoff = (f64::from(rate) / f64::from(self.rate)).min(1.0) * 0.95;
        let weights_of = |phase: u64| -> [f32; TAPS] {
            let fraction = phase as f64 / phases as f64;
            let mut w = [0f32; TAPS];
            let mut total = 0.0;
            for (k, slot) in w.iter_mut().enumerate() {
                let distance = fraction - (k as f64 - HALF_TAPS as f64 + 1.0);
                let window = 0.5 + 0.5 * (std::f64::consts::PI * distance / HALF_TAPS as f64).cos();
                let x = std::f64::consts::PI * cutoff * distance;
                let sinc = if x.abs() < 1e-9 { 1.0 } else { x.sin() / x };
                let value = sinc * window;
                total += value;
                *slot = value as f32;
            }
            if total.abs() > 1e-9 {
                for slot in &mut w {
                    *slot = (f64::from(*slot) / total) as f32;
                }
            }
            w
        };
        // A table when it is small; weights made per sample for odd rate pairs.
        let table: Vec<[f32; TAPS]> = if phases <= 4096 {
            (0..phases).map(weights_of).collect()
        } else {
            Vec::new()
        };
        let out_len = (self.samples.len() as u64 * phases / step_in) as usize;
        let input = &self.samples;
        let mut samples = Vec::with_capacity(out_len);
        for n in 0..out_len as u64 {
            let position = n * step_in;
            let (centre, phase) = ((position / phases) as i64, position % phases);
            let computed;
            let weights = match table.get(phase as usize) {
                Some(w) => w,
                None => {
                    computed = weights_of(phase);
                    &computed
                }
            };
            let first = centre - HALF_TAPS as i64 + 1;
            let mut sum = 0f32;
            for (k, w) in weights.iter().enumerate() {
                let at = first + k as i64;
                if at >= 0
                    && let Some(x) = input.get(at as usize)
                {
                    sum += f32::from(*x) * w;
                }
            }
            samples.push(sum.round().clamp(-32768.0, 32767.0) as i16);
        }
        Self { rate, samples }
    }
}

/// Half the resampler's taps.
const HALF_TAPS: usize = 16;
/// The resampler's taps.
const TAPS: usize = 2 * HALF_TAPS;

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wav(channels: u16, rate: u32, samples: &[i16], declared: u32) -> Vec<u8> {
        let mut out = b"RIFF\xff\xff\xff\xffWAVEfmt ".to_vec();
        out.extend(16u32.to_le_bytes());
        out.extend(1u16.to_le_bytes());
        out.extend(channels.to_le_bytes());
        out.extend(rate.to_le_bytes());
        out.extend((rate * 2 * u32::from(channels)).to_le_bytes());
        out.extend((2 * channels).to_le_bytes());
        out.extend(16u16.to_le_bytes());
        out.extend(b"LIST");
        out.extend(3u32.to_le_bytes());
        out.extend(b"abc\0");
        out.extend(b"data");
        out.extend(declared.to_le_bytes());
        for s in samples {
            out.extend(s.to_le_bytes());
        }
        out
    }

    #[test]
    fn a_streamed_wav_is_read_to_its_end_and_odd_chunks_are_skipped() {
        let pcm = Pcm::from_wav(&wav(1, 22_050, &[1, -2, 3], u32::MAX)).unwrap();
        assert_eq!(
            pcm,
            Pcm {
                rate: 22_050,
                samples: vec![1, -2, 3]
            }
        );
        let stereo = Pcm::from_wav(&wav(2, 8_000, &[10, 20, -4, -8], 8)).unwrap();
        assert_eq!(stereo.samples, vec![15, -6]);
    }

    #[test]
    fn what_is_not_16_bit_pcm_is_refused_with_what_it_is() {
        for (bytes, says) in [
            (b"OggS....".to_vec(), "no RIFF/WAVE header"),
            (b"RIFF\0\0\0\0WAVEdata\0\0\0\0".to_vec(), "data before fmt"),
        ] {
            let error = Pcm::from_wav(&bytes).unwrap_err().to_string();
            assert!(error.contains(says), "{error}");
        }
        let mut float = wav(1, 8_000, &[0], 2);
        float[20] = 3; // WAVE_FORMAT_IEEE_FLOAT
        assert!(
            Pcm::from_wav(&float)
                .unwrap_err()
                .to_string()
                .contains("format 0x3")
        );
    }

    #[test]
    fn resampling_keeps_the_length_in_time_and_a_tone_below_nyquist() {
        let rate = 22_050;
        let tone: Vec<i16> = (0..rate)
            .map(|i| {
                ((i as f64 * 440.0 * 2.0 * std::f64::consts::PI / 22_050.0).sin() * 10_000.0) as i16
            })
            .collect();
        let pcm = Pcm {
            rate,
            samples: tone,
        };
        let down = pcm.resampled(16_000);
        assert_eq!(down.samples.len(), 16_000);
        assert!((down.seconds() - pcm.seconds()).abs() < 1e-3);
        let peak = down.samples[1000..15_000]
            .iter()
            .map(|s| s.unsigned_abs())
            .max()
            .unwrap();
        assert!((9_500..=10_500).contains(&peak), "{peak}");
        // A 10 kHz tone is above 16 kHz's Nyquist frequency: it must not come back as noise.
        let high: Vec<i16> = (0..rate)
            .map(|i| {
                ((i as f64 * 10_000.0 * 2.0 * std::f64::consts::PI / 22_050.0).sin() * 10_000.0)
                    as i16
            })
            .collect();
        let folded = Pcm {
            rate,
            samples: high,
        }
        .resampled(16_000);
        let peak = folded.samples[1000..15_000]
            .iter()
            .map(|s| s.unsigned_abs())
            .max()
            .unwrap();
        assert!(peak < 1_500, "{peak}");
    }
}
