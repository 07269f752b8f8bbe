//! `lurkbot exec cal …` through the binary: the grant set with `lurkbot config set`.

use crate::util::Test;

#[test]
fn grant_then_create_and_list() {
    let t = Test::init();
    let out = t.run(&["exec", "cal list-calendars"]);
    assert_eq!(out.status, 2);
    assert!(
        out.stderr
            .contains("lurkbot config set permissions.calendar read"),
        "{}",
        out.stderr
    );
    let out = t.run(&["config", "set", "permissions.calendar", "read-write"]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let out = t.run(&[
        "exec",
        "cal create-event --calendar-id 1 --title Standup --start 2026-11-23T09:00:00+01:00 --end 2026-11-23T09:15:00+01:00 --confirm",
    ]);
    assert_eq!(out.status, 0, "{}", out.stderr);
    let out = t.run(&[
        "exec",
        "--json",
        "cal list-events --from 2026-11-23T00:00:00+01:00 --to 2026-11-24T00:00:00+01:00",
    ]);
    let env = out.json();
    assert_eq!(env["result"]["events"][0]["title"], "Standup");
    assert!(t.path("skills/calendar-cli/SKILL.md").is_file());
}
