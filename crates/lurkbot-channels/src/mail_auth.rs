//! Whether a mail is from who its `From:` says (ARCHITECTURE.md §6.1). The `From:` header is
//! the sender's to write, so it counts only when the owner's own mail server vouches for it in
//! the topmost `Authentication-Results` header (RFC 8601) carrying the authserv-id the owner
//! named (`[channels.email] trusted_authserv_id`): `dmarc=pass` for the From domain, `dkim=pass`
//! with `header.d` aligned to the From domain, or `auth=pass` with `smtp.auth` the From address
//! itself (the owner's server took it by SMTP AUTH from that very account). Headers further
//! down, and any from another authserv-id, are the sender's own words and are ignored.

/// Whether `from` (the address, lower-case) is vouched for by the topmost of `results` (the
/// `Authentication-Results` values, top first) when it comes from `trusted`.
pub fn authenticated(results: &[String], from: &str, trusted: Option<&str>) -> bool {
    let (Some(trusted), Some(top)) = (trusted, results.first()) else {
        return false;
    };
    let text = without_comments(top);
    let mut parts = text.split(';');
    let authserv = parts
        .next()
        .and_then(|p| p.split_whitespace().next())
        .unwrap_or_default();
    if !authserv.eq_ignore_ascii_case(trusted.trim()) {
        return false;
    }
    let domain = from.rsplit_once('@').map_or("", |(_, d)| d);
    if domain.is_empty() {
        return false;
    }
    parts.any(|resinfo| {
        let mut words = resinfo.split_whitespace();
        let Some((method, result)) = words.next().and_then(|w| w.split_once('=')) else {
            return false;
        };
        if !result.eq_ignore_ascii_case("pass") {
            return false;
        }
        let props: Vec<(String, String)> = words
            .filter_map(|w| w.split_once('='))
            .map(|(k, v)| {
                (
                    k.to_ascii_lowercase(),
                    v.trim_matches('"').to_ascii_lowercase(),
                )
            })
            .collect();
        let prop = |name: &str| {
            props
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        match method.to_ascii_lowercase().as_str() {
            "dmarc" => prop("header.from").is_none_or(|d| d == domain),
            "dkim" => prop("header.d").is_some_and(|d| aligned(domain, d)),
            "auth" => prop("smtp.auth").is_some_and(|who| who == from),
            _ => false,
        }
    })
}

/// DKIM's relaxed alignment: the signing domain is the From domain or a parent of it.
fn aligned(from_domain: &str, signer: &str) -> bool {
    from_domain == signer || from_domain.ends_with(&format!(".{signer}"))
}

/// `text` without RFC 5322 comments (`(…)`, nested).
fn without_comments(text: &str) -> String {
    let mut depth = 0usize;
    text.chars()
        .filter(|c| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' => {
                depth = depth.saturating_sub(1);
                false
            }
            _ => depth == 0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(results: &[&str], from: &str) -> bool {
        let results: Vec<String> = results.iter().map(|r| r.to_string()).collect();
        authenticated(&results, from, Some("mx.home.test"))
    }

    #[test]
    fn only_the_trusted_topmost_header_vouches() {
        let ok = "mx.home.test; dkim=pass (good sig) header.d=home.test header.s=s1; dmarc=pass header.from=home.test";
        assert!(check(&[ok], "me@home.test"));
        assert!(check(
            &["mx.home.test 1; dkim=pass header.d=home.test"],
            "me@mail.home.test"
        ));
        assert!(check(
            &["mx.home.test; auth=pass smtp.auth=me@home.test"],
            "me@home.test"
        ));
        // Someone else's SMTP AUTH, another domain's signature, a failure, no header.
        assert!(!check(
            &["mx.home.test; auth=pass smtp.auth=eve@home.test"],
            "me@home.test"
        ));
        assert!(!check(
            &["mx.home.test; dkim=pass header.d=evil.test"],
            "me@home.test"
        ));
        assert!(!check(
            &["mx.home.test; dmarc=fail header.from=home.test"],
            "me@home.test"
        ));
        assert!(!check(
            &["mx.home.test; dmarc=pass header.from=evil.test"],
            "me@home.test"
        ));
        assert!(!check(&[], "me@home.test"));
        // A header another server (or the sender) wrote, on top or further down.
        assert!(!check(&["evil.test; dmarc=pass"], "me@home.test"));
        assert!(!check(&["mx.home.test; none", ok], "me@home.test"));
        // Nothing is trusted without a configured authserv-id.
        assert!(!authenticated(&[ok.to_string()], "me@home.test", None));
    }
}
