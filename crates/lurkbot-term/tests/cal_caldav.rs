//! `cal` on the CalDAV backend against a real Radicale server started by each test:
//! discovery, CRUD, reminders as VALARMs, range edges, all-day events, events written by another
//! client (time zones, recurrence, private fields), conflicting edits, a server that is down,
//! wrong credentials, and export read back by an independent parser.

use serde_json::{Value, json};

use crate::cal_local::vobject;
use crate::fixtures::Harness;
use crate::radicale::{Auth, OtherClient, Radicale};

/// A home whose calendar is the `alice` account on `server`, with `access`.
fn home_for(server: &Radicale, access: &str, password: &str) -> Harness {
    let h = Harness::builtin();
    h.write(
        "config.toml",
        format!(
            "[permissions]\ncalendar = \"{access}\"\n[calendar]\nbackend = \"caldav\"\nurl = \"{}\"\n",
            server.url()
        )
        .as_bytes(),
    );
    h.write(
        "skills/calendar-cli/secrets/.env",
        format!("CALDAV_USERNAME=alice\nCALDAV_PASSWORD={password}\n").as_bytes(),
    );
    h
}

/// A server with alice's "Work" calendar (events) and "Tasks" list (to-dos only).
async fn server_with_work() -> (Radicale, OtherClient) {
    let server = Radicale::start(Auth::Anyone);
    let other = OtherClient::new(&server, "alice");
    other
        .make_calendar("/alice/work/", "Work", &["VEVENT"])
        .await;
    other
        .make_calendar("/alice/tasks/", "Tasks", &["VTODO"])
        .await;
    (server, other)
}

async fn ok(h: &Harness, command: &str) -> Value {
    let env = h.run(command).await;
    assert_eq!(env.exit_code, 0, "{command}: {}", env.stderr);
    env.result
}

async fn events(h: &Harness, from: &str, to: &str) -> Vec<Value> {
    ok(h, &format!("cal list-events --from {from} --to {to}")).await["events"]
        .as_array()
        .unwrap()
        .clone()
}

fn titles(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn discovery_and_full_crud() {
    let (server, other) = server_with_work().await;
    let h = home_for(&server, "read-write", "pw-alice");
    let listed = ok(&h, "cal list-calendars").await;
    assert_eq!(
        listed["count_total"], 1,
        "the to-do list is not a calendar of events"
    );
    let work = &listed["calendars"][0];
    assert_eq!(work["display_name"], "Work");
    assert_eq!(work["account_name"], "alice");
    assert_eq!(work["account_type"], "caldav");
    assert_eq!(work["is_primary"], true);
    let cal = work["id"].as_i64().unwrap();

    let created = ok(&h, &format!("cal create-event --calendar-id {cal} --title \"Dentist, Dr. B\" --start 2026-11-24T09:00:00+01:00 --end 2026-11-24T09:30:00+01:00 --location \"Main St 5\" --remind-minutes 30 --confirm")).await;
    assert_eq!(created["reminder_added"], true);
    assert!(created["reminder_id"].as_i64().unwrap() > 0);
    let id = created["event_id"].as_i64().unwrap();
    // The server holds a real object with a VALARM.
    let paths = other.objects("/alice/work/").await;
    assert_eq!(paths.len(), 1);
    let stored = other.get(&paths[0]).await.body;
    assert!(stored.contains("SUMMARY:Dentist\\, Dr. B"), "{stored}");
    assert!(stored.contains("BEGIN:VALARM"), "{stored}");
    assert!(stored.contains("TRIGGER"), "{stored}");

    let listed = events(&h, "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z").await;
    assert_eq!(listed.len(), 1);
    let e = &listed[0];
    assert_eq!(e["id"], id);
    assert_eq!(e["calendar_id"], cal);
    assert_eq!(e["title"], "Dentist, Dr. B");
    assert_eq!(e["start_time_ms"], 1_795_507_200_000i64);
    assert_eq!(e["end_time_ms"], 1_795_509_000_000i64);
    assert_eq!(e["all_day"], false);
    assert_eq!(e["location"], "Main St 5");
    assert_eq!(e["reminder_minutes"], json!([30]));

    let updated = ok(&h, &format!("cal update-event --event-id {id} --title Dentist --start 2026-11-25T10:00:00+01:00 --end 2026-11-25T10:45:00+01:00 --location \"\" --confirm")).await;
    assert_eq!(
        updated["updated_fields"],
        json!(["title", "location", "start", "end"])
    );
    let added = ok(
        &h,
        &format!("cal add-reminder --event-id {id} --minutes 10 --confirm"),
    )
    .await;
    assert!(added["reminder_id"].as_i64().unwrap() > created["reminder_id"].as_i64().unwrap());
    let listed = events(&h, "2026-11-25T00:00:00Z", "2026-11-26T00:00:00Z").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id, "ids are stable across changes");
    assert_eq!(listed[0]["title"], "Dentist");
    assert_eq!(listed[0]["start"], "2026-11-25T09:00:00Z");
    assert_eq!(listed[0]["end"], "2026-11-25T09:45:00Z");
    assert_eq!(listed[0]["location"], Value::Null);
    assert_eq!(listed[0]["reminder_minutes"], json!([30, 10]));
    assert!(
        events(&h, "2026-11-24T00:00:00Z", "2026-11-25T00:00:00Z")
            .await
            .is_empty()
    );

    // Refusals before anything reaches the server.
    let env = h.run(&format!("cal delete-event --event-id {id}")).await;
    assert_eq!(env.error_code.as_deref(), Some("ConfirmRequired"));
    let env = h
        .run("cal create-event --calendar-id 999 --title x --start 2026-11-24T09:00:00Z --end 2026-11-24T10:00:00Z --confirm")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("NotFound"));
    let env = h
        .run("cal update-event --event-id 999 --title y --confirm")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("NotFound"));

    let deleted = ok(&h, &format!("cal delete-event --event-id {id} --confirm")).await;
    assert_eq!(deleted["event_id"], id);
    assert!(other.objects("/alice/work/").await.is_empty());
    let env = h
        .run(&format!("cal delete-event --event-id {id} --confirm"))
        .await;
    assert_eq!(env.error_code.as_deref(), Some("NotFound"));
    assert_eq!(env.exit_code, 1);

    // Deleted by another client: NotFound, not a crash.
    let other_id = ok(&h, &format!("cal create-event --calendar-id {cal} --title Gone --start 2026-11-27T09:00:00Z --end 2026-11-27T10:00:00Z --confirm")).await["event_id"].as_i64().unwrap();
    let path = other.objects("/alice/work/").await.remove(0);
    assert_eq!(other.send("DELETE", &path, &[], "").await.status, 200);
    let env = h
        .run(&format!(
            "cal update-event --event-id {other_id} --title x --confirm"
        ))
        .await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("NotFound"),
        "{}",
        env.stderr
    );
}

#[tokio::test]
async fn range_edges_and_all_day_events() {
    let (server, _other) = server_with_work().await;
    let h = home_for(&server, "read-write", "pw");
    let cal = ok(&h, "cal list-calendars").await["calendars"][0]["id"]
        .as_i64()
        .unwrap();
    for (title, start, end) in [
        ("before", "2026-11-21T08:00:00Z", "2026-11-21T09:00:00Z"),
        ("over-start", "2026-11-21T09:30:00Z", "2026-11-21T10:30:00Z"),
        ("inside", "2026-11-21T11:00:00Z", "2026-11-21T11:30:00Z"),
        ("over-end", "2026-11-21T11:45:00Z", "2026-11-21T13:00:00Z"),
        ("around", "2026-11-20T00:00:00Z", "2026-11-23T00:00:00Z"),
        ("at-end", "2026-11-21T12:00:00Z", "2026-11-21T12:30:00Z"),
    ] {
        ok(&h, &format!("cal create-event --calendar-id {cal} --title {title} --start {start} --end {end} --confirm")).await;
    }
    ok(&h, &format!("cal create-event --calendar-id {cal} --title Holiday --start 2026-12-24 --end 2026-12-25 --all-day --confirm")).await;
    // New York springs forward at 02:00 on 2026-03-08: 01:30 EST to 03:30 EDT is one hour.
    ok(&h, &format!("cal create-event --calendar-id {cal} --title Shift --start 2026-03-08T01:30:00-05:00 --end 2026-03-08T03:30:00-04:00 --confirm")).await;
    let shift = events(&h, "2026-03-08T00:00:00-05:00", "2026-03-09T00:00:00-04:00").await;
    assert_eq!(titles(&shift), ["Shift"]);
    assert_eq!(shift[0]["start"], "2026-03-08T06:30:00Z");
    assert_eq!(
        shift[0]["end_time_ms"].as_i64().unwrap() - shift[0]["start_time_ms"].as_i64().unwrap(),
        3_600_000
    );
    let mut got = titles(&events(&h, "2026-11-21T10:00:00Z", "2026-11-21T12:00:00Z").await)
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    got.sort();
    assert_eq!(got, ["around", "inside", "over-end", "over-start"]);
    // The same range in +02:00.
    assert_eq!(
        events(&h, "2026-11-21T12:00:00+02:00", "2026-11-21T14:00:00+02:00")
            .await
            .len(),
        4
    );
    let holiday = events(&h, "2026-12-24T12:00:00Z", "2026-12-24T13:00:00Z").await;
    assert_eq!(titles(&holiday), ["Holiday"]);
    assert_eq!(holiday[0]["all_day"], true);
    assert_eq!(holiday[0]["start"], "2026-12-24");
    assert_eq!(holiday[0]["end"], "2026-12-24");
    assert!(
        events(&h, "2026-12-25T00:00:00Z", "2026-12-26T00:00:00Z")
            .await
            .is_empty()
    );
    let env = h
        .run("cal list-events --from 2026-11-22T00:00:00Z --to 2026-11-21T00:00:00Z")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("InvalidArgs"));
    let env = h
        .run("cal list-events --from 2026-11-20T00:00:00Z --to 2026-11-23T00:00:00Z --max 2 --out artifacts/cal/all.json")
        .await;
    assert_eq!(env.result["count_total"], 6);
    assert_eq!(env.result["count_emitted"], 2);
    assert_eq!(env.result["truncated"], true);
    assert_eq!(env.result["untrusted"], true);
    assert!(env.stdout.starts_with("[untrusted]"), "{}", env.stdout);
}

const FROM_PHONE: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Phone//EN\r\nBEGIN:VEVENT\r\nUID:phone-1\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20261123T090000\r\nDTEND;TZID=Europe/Berlin:20261123T100000\r\nSUMMARY:Lunch with Bob\r\nLOCATION:Cafe\r\nDESCRIPTION:door code 4711-secret\r\nATTENDEE;CN=\"Doe, Bob\";PARTSTAT=ACCEPTED:mailto:bob@private.example\r\nURL:https://private.example/meeting/xyz\r\nX-PHONE-COLOR:teal\r\nBEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:door code 4711-secret\r\nTRIGGER:-PT15M\r\nEND:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

const WEEKLY: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Phone//EN\r\nBEGIN:VEVENT\r\nUID:phone-standup\r\nDTSTAMP:20261101T000000Z\r\nDTSTART;TZID=America/New_York:20261102T090000\r\nDTEND;TZID=America/New_York:20261102T091500\r\nRRULE:FREQ=WEEKLY;COUNT=10\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

#[tokio::test]
async fn events_from_another_client_keep_their_private_fields_private() {
    let (server, other) = server_with_work().await;
    other.put("/alice/work/phone-1.ics", FROM_PHONE).await;
    other.put("/alice/work/standup.ics", WEEKLY).await;
    let h = home_for(&server, "read-write", "pw");
    let env = h
        .run("cal list-events --from 2026-11-16T00:00:00Z --to 2026-11-30T00:00:00Z")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    let listed = env.result["events"].as_array().unwrap();
    // Mondays 16 and 23 (the 30th starts after the range).
    assert_eq!(titles(listed), ["Standup", "Lunch with Bob", "Standup"]);
    let lunch = &listed[1];
    assert_eq!(
        lunch["start"], "2026-11-23T08:00:00Z",
        "Berlin is UTC+1 in November"
    );
    assert_eq!(lunch["end"], "2026-11-23T09:00:00Z");
    assert_eq!(lunch["location"], "Cafe");
    assert_eq!(lunch["reminder_minutes"], json!([15]));
    assert_eq!(lunch["recurring"], false);
    // Occurrences of the series share one id; New York is UTC-5 after Nov 1.
    assert_eq!(listed[0]["id"], listed[2]["id"]);
    assert_eq!(listed[0]["recurring"], true);
    assert_eq!(listed[0]["start"], "2026-11-16T14:00:00Z");
    let lunch_id = lunch["id"].as_i64().unwrap();

    // Change the title: everything else goes back to the server untouched.
    ok(
        &h,
        &format!(
            "cal update-event --event-id {lunch_id} --title \"Lunch with Bob & Ann\" --confirm"
        ),
    )
    .await;
    ok(
        &h,
        &format!("cal add-reminder --event-id {lunch_id} --minutes 60 --confirm"),
    )
    .await;
    let stored = other.get("/alice/work/phone-1.ics").await.body;
    for kept in [
        "DESCRIPTION:door code 4711-secret",
        "ATTENDEE;CN=\"Doe, Bob\";PARTSTAT=ACCEPTED:mailto:bob@private.example",
        "URL:https://private.example/meeting/xyz",
        "X-PHONE-COLOR:teal",
        "DTSTART;TZID=Europe/Berlin:20261123T090000",
        "SUMMARY:Lunch with Bob & Ann",
    ] {
        assert!(
            stored.replace("\r\n ", "").contains(kept),
            "{kept} lost:\n{stored}"
        );
    }
    let lunch = events(&h, "2026-11-23T00:00:00Z", "2026-11-24T00:00:00Z").await;
    let lunch = lunch.iter().find(|e| e["id"] == lunch_id).unwrap();
    assert_eq!(lunch["reminder_minutes"], json!([15, 60]));

    // Export: standard iCalendar without the private fields, read by vobject.
    let cal = ok(&h, "cal list-calendars").await["calendars"][0]["id"]
        .as_i64()
        .unwrap();
    ok(
        &h,
        &format!("cal export --calendar-id {cal} --out artifacts/cal/work.ics"),
    )
    .await;
    let text = std::fs::read_to_string(h.path("artifacts/cal/work.ics")).unwrap();
    assert!(text.contains("RRULE:FREQ=WEEKLY;COUNT=10"), "{text}");
    let script = r#"
for ev in sorted(cal.vevent_list, key=lambda e: str(e.dtstart.value)):
    rule = getattr(ev, 'rrule', None)
    print(ev.summary.value, '|', ev.dtstart.value.isoformat(), '|', rule and rule.value, '|', len(getattr(ev, 'valarm_list', [])))
"#;
    assert_eq!(
        vobject(script, &h.path("artifacts/cal/work.ics")),
        "Standup | 2026-11-02T14:00:00+00:00 | FREQ=WEEKLY;COUNT=10 | 0\n\
         Lunch with Bob & Ann | 2026-11-23T08:00:00+00:00 | None | 2\n"
    );

    // Nothing private in any answer or audit record.
    let audit = h.all_audit_text();
    for secret in [
        "4711-secret",
        "bob@private.example",
        "private.example/meeting",
    ] {
        assert!(!audit.contains(secret), "{secret} reached the audit log");
        assert!(!text.contains(secret), "{secret} was exported");
    }
    let env = h
        .run("cal list-events --from 2026-11-16T00:00:00Z --to 2026-11-30T00:00:00Z --out artifacts/cal/full.json")
        .await;
    let full = std::fs::read_to_string(h.path("artifacts/cal/full.json")).unwrap();
    let answer = serde_json::to_string(&env).unwrap();
    for secret in [
        "4711-secret",
        "bob@private.example",
        "private.example/meeting",
    ] {
        assert!(
            !answer.contains(secret) && !full.contains(secret),
            "{secret} leaked"
        );
    }
}

#[tokio::test]
async fn a_change_made_elsewhere_is_a_conflict_not_an_overwrite() {
    let (server, other) = server_with_work().await;
    let h = home_for(&server, "read-write", "pw");
    let cal = ok(&h, "cal list-calendars").await["calendars"][0]["id"]
        .as_i64()
        .unwrap();
    let id = ok(&h, &format!("cal create-event --calendar-id {cal} --title Plan --start 2026-11-26T09:00:00Z --end 2026-11-26T10:00:00Z --confirm")).await["event_id"].as_i64().unwrap();
    assert_eq!(
        events(&h, "2026-11-26T00:00:00Z", "2026-11-27T00:00:00Z")
            .await
            .len(),
        1
    );

    // Someone edits it on their phone.
    let path = other.objects("/alice/work/").await.remove(0);
    let theirs = other
        .get(&path)
        .await
        .body
        .replace("SUMMARY:Plan", "SUMMARY:Their plan");
    other.put(&path, &theirs).await;

    for command in [
        format!("cal update-event --event-id {id} --title Mine --confirm"),
        format!("cal add-reminder --event-id {id} --minutes 5 --confirm"),
        format!("cal delete-event --event-id {id} --confirm"),
    ] {
        let env = h.run(&command).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("Conflict"),
            "{command}: {}",
            env.stderr
        );
        assert_eq!(env.exit_code, 1);
        assert!(env.stderr.contains("list-events"), "{}", env.stderr);
    }
    let stored = other.get(&path).await.body;
    assert!(
        stored.contains("SUMMARY:Their plan") && !stored.contains("TRIGGER"),
        "{stored}"
    );

    // After looking again, the change goes through.
    let seen = events(&h, "2026-11-26T00:00:00Z", "2026-11-27T00:00:00Z").await;
    assert_eq!(seen[0]["title"], "Their plan");
    ok(
        &h,
        &format!("cal update-event --event-id {id} --title Mine --confirm"),
    )
    .await;
    assert!(other.get(&path).await.body.contains("SUMMARY:Mine"));
}

#[tokio::test]
async fn a_server_that_is_down_loses_nothing() {
    let (mut server, _other) = server_with_work().await;
    let h = home_for(&server, "read-write", "pw");
    let cal = ok(&h, "cal list-calendars").await["calendars"][0]["id"]
        .as_i64()
        .unwrap();
    let id = ok(&h, &format!("cal create-event --calendar-id {cal} --title Keep --start 2026-11-26T09:00:00Z --end 2026-11-26T10:00:00Z --confirm")).await["event_id"].as_i64().unwrap();
    let map_before = std::fs::read(h.path("workspace/cal/caldav.db")).unwrap();

    server.stop();
    for command in [
        "cal list-calendars".to_string(),
        "cal list-events --from 2026-11-26T00:00:00Z --to 2026-11-27T00:00:00Z".to_string(),
        format!("cal update-event --event-id {id} --title Lost --confirm"),
        format!("cal delete-event --event-id {id} --confirm"),
        format!(
            "cal create-event --calendar-id {cal} --title New --start 2026-11-26T09:00:00Z --end 2026-11-26T10:00:00Z --confirm"
        ),
    ] {
        let env = h.run(&command).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("NetworkError"),
            "{command}: {}",
            env.stderr
        );
        assert_eq!(env.exit_code, 1);
        assert!(env.stderr.contains("127.0.0.1"), "{}", env.stderr);
    }
    assert_eq!(
        std::fs::read(h.path("workspace/cal/caldav.db")).unwrap(),
        map_before
    );

    server.restart();
    let listed = events(&h, "2026-11-26T00:00:00Z", "2026-11-27T00:00:00Z").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], id);
    assert_eq!(listed[0]["title"], "Keep");
}

#[tokio::test]
async fn wrong_credentials_are_auth_failed() {
    let server = Radicale::start(Auth::Only("alice", "right-horse-battery"));
    let h = home_for(&server, "read", "wrong-staple-42");
    let env = h.run("cal list-calendars").await;
    assert_eq!(
        env.error_code.as_deref(),
        Some("AuthFailed"),
        "{}",
        env.stderr
    );
    assert_eq!(env.exit_code, 1);
    assert!(
        env.stderr.contains("skills/calendar-cli/secrets/.env"),
        "{}",
        env.stderr
    );
    let answer = serde_json::to_string(&env).unwrap();
    assert!(!answer.contains("wrong-staple-42"));
    assert!(!h.all_audit_text().contains("wrong-staple-42"));

    let h = home_for(&server, "read", "right-horse-battery");
    let listed = ok(&h, "cal list-calendars").await;
    assert_eq!(listed["count_total"], 0, "alice has no calendars yet");
    assert!(!h.all_audit_text().contains("right-horse-battery"));
}

#[tokio::test]
async fn caldav_configuration_refusals() {
    let h = Harness::builtin();
    for (calendar, wanted) in [
        ("backend = \"caldav\"\n", "calendar.url"),
        (
            "backend = \"caldav\"\nurl = \"ftp://dav.example/\"\n",
            "calendar.url",
        ),
        (
            "backend = \"caldav\"\nurl = \"https://alice:hunter22@dav.example/\"\n",
            "CALDAV_PASSWORD",
        ),
    ] {
        h.write(
            "config.toml",
            format!("[permissions]\ncalendar = \"read\"\n[calendar]\n{calendar}").as_bytes(),
        );
        let env = h.run("cal list-calendars").await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("ConfigInvalid"),
            "{calendar}"
        );
        assert!(env.stderr.contains(wanted), "{calendar}: {}", env.stderr);
        assert!(!env.stderr.contains("hunter22"));
    }
    // Nothing listens here: the permission gate still comes first.
    h.write(
        "config.toml",
        b"[calendar]\nbackend = \"caldav\"\nurl = \"http://127.0.0.1:9/\"\n",
    );
    let env = h.run("cal list-calendars").await;
    assert_eq!(env.error_code.as_deref(), Some("PermissionDenied"));
}
