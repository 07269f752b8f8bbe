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

/// Times for people: the zone from `agent.timezone` or the system's `TZ`, local times
/// accepted, the next 7 days by default, the primary calendar by default.
#[test]
fn local_times_default_range_and_primary_calendar() {
    let t = Test::init();
    assert_eq!(
        t.run(&["config", "set", "permissions.calendar", "read-write"])
            .status,
        0
    );
    let berlin = [("TZ", "Europe/Berlin")];
    // No --calendar-id (the primary one), a start without an offset (Berlin time).
    let out = t.run_env(
        &[
            "exec",
            "--json",
            "cal create-event --title Dentist --start 2026-11-24T09:00 --end 2026-11-24T09:30 --confirm",
        ],
        &berlin,
    );
    assert_eq!(out.status, 0, "{}", out.stdout);
    let created = out.json();
    assert_eq!(created["result"]["calendar_id"], 1);
    assert_eq!(created["result"]["start_time_ms"], 1_795_507_200_000_i64);
    assert!(
        created["stdout"]
            .as_str()
            .unwrap()
            .contains("2026-11-24T09:00:00+01:00"),
        "{created}"
    );
    let out = t.run_env(
        &[
            "exec",
            "--json",
            "cal list-events --from 2026-11-24 --to 2026-11-25",
        ],
        &berlin,
    );
    let listed = out.json();
    let event = &listed["result"]["events"][0];
    assert_eq!(event["start"], "2026-11-24T08:00:00Z", "{listed}");
    assert_eq!(event["start_local"], "2026-11-24T09:00:00+01:00");
    assert_eq!(listed["result"]["timezone"], "Europe/Berlin");
    // agent.timezone wins over TZ.
    assert_eq!(
        t.run(&["config", "set", "agent.timezone", "America/New_York"])
            .status,
        0
    );
    let out = t.run_env(
        &[
            "exec",
            "--json",
            "cal list-events --from 2026-11-24 --to 2026-11-25",
        ],
        &berlin,
    );
    let listed = out.json();
    assert_eq!(
        listed["result"]["events"][0]["start_local"], "2026-11-24T03:00:00-05:00",
        "{listed}"
    );
    // Without --from/--to: from now, 7 days (in a home of its own, whatever today is).
    let fresh = Test::init();
    assert_eq!(
        fresh
            .run(&["config", "set", "permissions.calendar", "read-write"])
            .status,
        0
    );
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let stamp = |s: u64| {
        let out = std::process::Command::new("date")
            .args(["-u", "-d", &format!("@{s}"), "+%Y-%m-%dT%H:%M:%SZ"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    for (title, from_now) in [("Soon", 86_400), ("Later", 10 * 86_400)] {
        let command = format!(
            "cal create-event --title {title} --start {} --end {} --confirm",
            stamp(now_s + from_now),
            stamp(now_s + from_now + 1800)
        );
        assert_eq!(fresh.run(&["exec", &command]).status, 0);
    }
    let listed = fresh.run(&["exec", "--json", "cal list-events"]).json();
    let titles: Vec<&str> = listed["result"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Soon"], "{listed}");
    let span =
        listed["result"]["to_ms"].as_i64().unwrap() - listed["result"]["from_ms"].as_i64().unwrap();
    assert_eq!(span, 7 * 86_400_000);
    // A time the clocks skip, and an unknown zone.
    let out = t.run(&[
        "exec",
        "--json",
        "cal create-event --title x --start 2026-03-08T02:30 --end 2026-03-08T03:30 --confirm",
    ]);
    assert_eq!(out.json()["error_code"], "InvalidArgs");
    assert!(
        out.stdout.contains("does not exist in America/New_York"),
        "{}",
        out.stdout
    );
    // An unknown zone: `config set` refuses it; written by hand, cal says so.
    let refused = t.run(&["config", "set", "agent.timezone", "Mars/Olympus"]);
    assert_eq!(refused.status, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("not a time zone"),
        "{}",
        refused.stderr
    );
    let text = std::fs::read_to_string(t.path("config.toml"))
        .unwrap()
        .replace("America/New_York", "Mars/Olympus");
    std::fs::write(t.path("config.toml"), text).unwrap();
    let out = t.run(&["exec", "--json", "cal list-events"]);
    assert_eq!(out.json()["error_code"], "ConfigInvalid");
}
