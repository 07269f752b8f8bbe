//! Decoding zip entry names: `--encoding auto|utf-8|cp437|cp932|gbk`.
//!
//! A name flagged as UTF-8 (general purpose bit 11) is always UTF-8, and an Info-ZIP Unicode
//! Path extra field (0x7075) whose checksum matches the stored name is used as the name. Other
//! names are decoded with `--encoding`. `auto` keeps names that are valid UTF-8 (many tools write
//! UTF-8 without setting the flag); for the rest it guesses one encoding for the whole archive
//! with `chardetng` over all such names together, accepting Shift_JIS (cp932) or GBK only when
//! every name decodes cleanly in it, and otherwise falls back to cp437, the zip format's
//! original code page. Bytes that cannot be decoded become U+FFFD.

use chardetng::{EncodingDetector, Iso2022JpDetection, Utf8Detection};
use encoding_rs::{Encoding, GB18030, GBK, SHIFT_JIS};

use crate::{CommandError, ErrorCode};

/// An encoding for names not flagged as UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameEncoding {
    /// Guess per archive.
    Auto,
    /// UTF-8.
    Utf8,
    /// IBM PC code page 437 (the zip default).
    Cp437,
    /// Windows Japanese (Shift_JIS).
    Cp932,
    /// Simplified Chinese GBK.
    Gbk,
}

impl NameEncoding {
    /// Parses `--encoding`.
    ///
    /// # Errors
    /// `InvalidArgs` naming the accepted values.
    pub(crate) fn parse(raw: Option<&str>) -> Result<Self, CommandError> {
        match raw.map(str::to_ascii_lowercase).as_deref() {
            None | Some("auto") => Ok(Self::Auto),
            Some("utf-8" | "utf8") => Ok(Self::Utf8),
            Some("cp437" | "ibm437") => Ok(Self::Cp437),
            Some("cp932" | "shift_jis" | "sjis") => Ok(Self::Cp932),
            Some("gbk" | "cp936") => Ok(Self::Gbk),
            Some(other) => Err(CommandError::new(
                ErrorCode::InvalidArgs,
                format!("unknown --encoding '{other}'; use auto, utf-8, cp437, cp932 or gbk"),
            )),
        }
    }

    /// The name reported in `result.encoding`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::Utf8 => "utf-8",
            Self::Cp437 => "cp437",
            Self::Cp932 => "cp932",
            Self::Gbk => "gbk",
        }
    }

    fn decode(self, bytes: &[u8]) -> String {
        match self {
            Self::Auto | Self::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
            Self::Cp437 => oem_cp::decode_string_complete_table(
                bytes,
                &oem_cp::code_table::DECODING_TABLE_CP437,
            ),
            Self::Cp932 => SHIFT_JIS.decode_without_bom_handling(bytes).0.into_owned(),
            Self::Gbk => GBK.decode_without_bom_handling(bytes).0.into_owned(),
        }
    }
}

/// A name as stored in the archive.
#[derive(Debug, Clone)]
pub(crate) struct RawName {
    /// The stored bytes.
    pub(crate) bytes: Vec<u8>,
    /// General purpose bit 11 is set.
    pub(crate) utf8_flag: bool,
    /// A valid Info-ZIP Unicode Path field.
    pub(crate) unicode_path: Option<String>,
}

/// Decodes every name; returns the names and the encoding applied to the names that needed one
/// (`utf-8` when every name was UTF-8).
pub(crate) fn decode_names(
    raw: &[RawName],
    requested: NameEncoding,
) -> (Vec<String>, NameEncoding) {
    let mut chooser = NameChooser::new(requested);
    for r in raw {
        chooser.feed(r);
    }
    let chosen = chooser.chosen();
    let names = raw
        .iter()
        .map(|r| decode_name(r, requested, chosen))
        .collect();
    (names, chosen)
}

/// Whether `r`'s name is decoded with the chosen encoding (no UTF-8 flag, no Unicode Path
/// field, and — when the encoding is detected — not valid UTF-8 either).
fn needs_choice(r: &RawName, requested: NameEncoding) -> bool {
    !r.utf8_flag
        && r.unicode_path.is_none()
        && (requested != NameEncoding::Auto || std::str::from_utf8(&r.bytes).is_err())
}

/// One name, decoded as [`decode_names`] does once `chosen` is known.
pub(crate) fn decode_name(r: &RawName, requested: NameEncoding, chosen: NameEncoding) -> String {
    if let Some(name) = &r.unicode_path {
        name.clone()
    } else if needs_choice(r, requested) {
        chosen.decode(&r.bytes)
    } else {
        String::from_utf8_lossy(&r.bytes).into_owned()
    }
}

/// Chooses the one encoding of an archive's names from the names fed to it one at a time, in
/// constant memory (`zip list` streams a directory of any size through it).
pub(crate) struct NameChooser {
    requested: NameEncoding,
    detector: EncodingDetector,
    undecided: usize,
    sjis_clean: bool,
    gbk_clean: bool,
}

impl NameChooser {
    /// A chooser for `--encoding requested`.
    pub(crate) fn new(requested: NameEncoding) -> Self {
        Self {
            requested,
            detector: EncodingDetector::new(Iso2022JpDetection::Deny),
            undecided: 0,
            sjis_clean: true,
            gbk_clean: true,
        }
    }

    /// Takes one name into account.
    pub(crate) fn feed(&mut self, r: &RawName) {
        if self.requested != NameEncoding::Auto || !needs_choice(r, self.requested) {
            return;
        }
        self.undecided += 1;
        self.detector.feed(&r.bytes, false);
        self.detector.feed(b"\n", false);
        let clean = |enc: &'static Encoding| {
            enc.decode_without_bom_handling_and_without_replacement(&r.bytes)
                .is_some()
        };
        self.sjis_clean = self.sjis_clean && clean(SHIFT_JIS);
        self.gbk_clean = self.gbk_clean && clean(GBK);
    }

    /// The encoding for the names that need one.
    pub(crate) fn chosen(mut self) -> NameEncoding {
        if self.requested != NameEncoding::Auto {
            return self.requested;
        }
        if self.undecided == 0 {
            return NameEncoding::Utf8;
        }
        self.detector.feed(b"", true);
        let guess = self.detector.guess(None, Utf8Detection::Deny);
        let (sjis_clean, gbk_clean) = (self.sjis_clean, self.gbk_clean);
        if guess == SHIFT_JIS && sjis_clean {
            NameEncoding::Cp932
        } else if (guess == GBK || guess == GB18030) && gbk_clean {
            NameEncoding::Gbk
        } else if sjis_clean && !gbk_clean {
            NameEncoding::Cp932
        } else if gbk_clean && !sjis_clean {
            NameEncoding::Gbk
        } else {
            NameEncoding::Cp437
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(bytes: &[u8]) -> RawName {
        RawName {
            bytes: bytes.to_vec(),
            utf8_flag: false,
            unicode_path: None,
        }
    }

    fn encoded(enc: &'static Encoding, names: &[&str]) -> Vec<RawName> {
        names.iter().map(|n| raw(&enc.encode(n).0)).collect()
    }

    #[test]
    fn auto_detects_japanese_and_chinese_names() {
        let jp = ["日本語のファイル.txt", "資料/会議メモ.txt", "写真/旅行.jpg"];
        let (names, used) = decode_names(&encoded(SHIFT_JIS, &jp), NameEncoding::Auto);
        assert_eq!(used, NameEncoding::Cp932);
        assert_eq!(names, jp);
        let cn = ["中文文件.txt", "报告/第一季度总结.docx", "图片/风景.png"];
        let (names, used) = decode_names(&encoded(GBK, &cn), NameEncoding::Auto);
        assert_eq!(used, NameEncoding::Gbk);
        assert_eq!(names, cn);
    }

    #[test]
    fn auto_keeps_utf8_and_falls_back_to_cp437() {
        let (names, used) = decode_names(&[raw("plain/ü.txt".as_bytes())], NameEncoding::Auto);
        assert_eq!(
            (names[0].as_str(), used),
            ("plain/ü.txt", NameEncoding::Utf8)
        );
        // 0x81 0x94: "üö" in cp437, and not clean Shift_JIS/GBK text on its own.
        let (names, used) = decode_names(&[raw(b"\x81\x94\xff.txt")], NameEncoding::Auto);
        assert_eq!(used, NameEncoding::Cp437);
        assert_eq!(names[0], "üö\u{a0}.txt");
    }

    #[test]
    fn the_flag_and_unicode_path_win() {
        let mut flagged = raw("ü".as_bytes());
        flagged.utf8_flag = true;
        let mut with_path = raw(b"x");
        with_path.unicode_path = Some("名前".into());
        let (names, _) = decode_names(&[flagged, with_path], NameEncoding::Cp437);
        assert_eq!(names, ["ü", "名前"]);
        let (names, used) = decode_names(&[raw(b"\x82\xa0")], NameEncoding::Cp932);
        assert_eq!((names[0].as_str(), used), ("あ", NameEncoding::Cp932));
    }

    #[test]
    fn encoding_flag_values() {
        assert_eq!(NameEncoding::parse(Some("GBK")).unwrap(), NameEncoding::Gbk);
        assert_eq!(NameEncoding::parse(None).unwrap(), NameEncoding::Auto);
        assert_eq!(
            NameEncoding::parse(Some("latin1")).unwrap_err().code,
            ErrorCode::InvalidArgs
        );
    }
}
