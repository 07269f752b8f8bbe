//! A mail's text and attachments, from its MIME tree: the first `text/plain` part wherever it
//! stands (a `multipart/alternative` may put the HTML first), else the visible text of the
//! first `text/html` part (no markup, comments or hidden elements reach the model), else any
//! text part; attachments are collected as media, never opened.

/// A mail's text and its attachments: the first `text/plain` part wherever it stands (a
/// `multipart/alternative` may put the HTML first), else the visible text of the first
/// `text/html` part (no markup, comments or hidden elements reach the model), else any text.
pub(crate) fn collect(
    part: &mailparse::ParsedMail<'_>,
    body: &mut String,
    attachments: &mut Vec<crate::Media>,
) {
    let mut leaves = Vec::new();
    leaves_of(part, &mut leaves, attachments);
    let pick = |wanted: &str| {
        leaves
            .iter()
            .find(|p| p.ctype.mimetype.eq_ignore_ascii_case(wanted))
            .and_then(|p| p.get_body().ok())
    };
    let text = pick("text/plain")
        .or_else(|| pick("text/html").map(|html| lurkbot_core::html_to_text(&html)))
        .or_else(|| {
            leaves
                .iter()
                .find(|p| p.ctype.mimetype.starts_with("text/"))
                .and_then(|p| p.get_body().ok())
        });
    if let Some(text) = text {
        body.push_str(&text);
    }
}

/// The body parts of `part` that are not attachments (attachments are collected).
fn leaves_of<'a>(
    part: &'a mailparse::ParsedMail<'a>,
    leaves: &mut Vec<&'a mailparse::ParsedMail<'a>>,
    attachments: &mut Vec<crate::Media>,
) {
    let disposition = part.get_content_disposition();
    if disposition.disposition == mailparse::DispositionType::Attachment {
        let name = disposition
            .params
            .get("filename")
            .cloned()
            .unwrap_or_else(|| "unnamed".into());
        let bytes = part.get_body_raw().unwrap_or_default();
        attachments.push(crate::Media {
            name,
            source: crate::MediaSource::Bytes(bytes),
            voice: false,
        });
        return;
    }
    if part.subparts.is_empty() {
        leaves.push(part);
        return;
    }
    for sub in &part.subparts {
        leaves_of(sub, leaves, attachments);
    }
}
