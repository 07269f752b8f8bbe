//! The terminal_exec command parser, secret-flag detection and masking on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lurkbot_term::{MASK, mask_argv, split_sensitive};

fuzz_target!(|raw: &str| {
    let _ = lurkbot_term::mask_command_text(raw);
    let Ok(argv) = lurkbot_term::parse_command(raw) else {
        return;
    };
    assert!(!argv.is_empty() && argv.len() <= lurkbot_term::MAX_TOKENS);
    for banned in lurkbot_term::BANNED_TOKENS {
        assert!(!raw.contains(banned), "accepted {raw:?} with {banned:?}");
    }
    assert!(!raw.contains(['\n', '\r', '\0']));
    // Every secret flag's value is masked: attached (`--token=v`) or in the next token.
    let masked = mask_argv(&argv);
    assert_eq!(masked.len(), argv.len());
    let mut i = 0;
    while i < argv.len() {
        match split_sensitive(&argv[i]) {
            Some((prefix, true)) => assert_eq!(masked[i], format!("{prefix}{MASK}")),
            Some((_, false)) if i + 1 < argv.len() => {
                assert_eq!(masked[i + 1], MASK);
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
});
