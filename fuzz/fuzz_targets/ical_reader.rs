//! The iCalendar reader (events, recurrence expansion, alarms) on arbitrary text.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = lurkbot_term::fuzz_read_ical(text);
});
