//! `cal` on the local backend (embedded SQLite): CRUD, reminders, range edges, all-day and DST
//! days, the permission and confirm gates, unknown ids, privacy and export.

use serde_json::Value;

use crate::fixtures::Harness;

pub use crate::test_venv::test_python;

/// Runs a Python `script` (with vobject) on `ics` and returns its stdout; fails on an error.
pub fn vobject(script: &str, ics: &std::path::Path) -> String {
    let code =
        format!("import sys, vobject\ncal = vobject.readOne(open(sys.argv[1]).read())\n{script}");
    crate::test_venv::run_python([std::ffi::OsStr::new("-c"), code.as_ref(), ics.as_os_str()])
}

fn granted(access: &str) -> Harness {
    let h = Harness::builtin();
    h.write(
        "config.toml",
        format!("[permissions]\ncalendar = \"{access}\"\n").as_bytes(),
    );
    h
}

async fn create(h: &Harness, args: &str) -> i64 {
    let env = h
        .run(&format!(
            "cal create-event --calendar-id 1 {args} --confirm"
        ))
        .await;
    assert_eq!(env.exit_code, 0, "{args}: {}", env.stderr);
    env.result["event_id"].as_i64().unwrap()
}

async fn ids_between(h: &Harness, from: &str, to: &str) -> Vec<i64> {
    let env = h
        .run(&format!("cal list-events --from {from} --to {to}"))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    env.result["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn personal_calendar_exists_on_first_use() {
    let h = granted("read");
    let env = h.run("cal list-calendars").await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["count_total"], 1);
    let cal = &env.result["calendars"][0];
    for key in [
        "id",
        "display_name",
        "account_name",
        "account_type",
        "owner_account",
        "visible",
        "is_primary",
    ] {
        assert!(cal.get(key).is_some(), "{key}");
    }
    assert_eq!(cal["display_name"], "Personal");
    assert_eq!(cal["is_primary"], true);
    assert!(h.path("workspace/cal/calendar.db").is_file());
    let env = h
        .run("cal list-calendars --max 0 --out artifacts/cal/calendars.json")
        .await;
    assert_eq!(env.result["count_emitted"], 0);
    assert_eq!(env.result["truncated"], true);
    assert_eq!(env.artifacts[0].path, "artifacts/cal/calendars.json");
}

#[tokio::test]
async fn create_list_update_delete() {
    let h = granted("read-write");
    let env = h
        .run("cal create-event --calendar-id 1 --title Dentist --start 2026-11-24T09:00:00+01:00 --end 2026-11-24T09:30:00+01:00 --location \"Main St 5\" --remind-minutes 30 --confirm")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.result["command"], "cal create-event");
    assert_eq!(env.result["calendar_id"], 1);
    assert_eq!(env.result["reminder_added"], true);
    let id = env.result["event_id"].as_i64().unwrap();

    let env = h
        .run("cal list-events --from 2026-11-24T00:00:00+01:00 --to 2026-11-25T00:00:00+01:00 --calendar-id 1")
        .await;
    assert_eq!(env.result["count_total"], 1);
    assert_eq!(env.result["calendar_id"], 1);
    assert_eq!(env.result["from"], "2026-11-24T00:00:00+01:00");
    let e = &env.result["events"][0];
    assert_eq!(e["id"], id);
    assert_eq!(e["title"], "Dentist");
    assert_eq!(e["start_time_ms"], 1_795_507_200_000i64);
    assert_eq!(e["end_time_ms"], 1_795_509_000_000i64);
    assert_eq!(e["all_day"], false);
    assert_eq!(e["location"], "Main St 5");
    assert_eq!(e["start"], "2026-11-24T08:00:00Z");
    assert_eq!(e["reminder_minutes"], serde_json::json!([30]));

    let env = h
        .run(&format!("cal update-event --event-id {id} --title \"Dentist (moved)\" --start 2026-11-25T10:00:00+01:00 --end 2026-11-25T10:30:00+01:00 --confirm"))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(
        env.result["updated_fields"],
        serde_json::json!(["title", "start", "end"])
    );
    assert_eq!(
        env.result["event"]["location"], "Main St 5",
        "untouched fields stay"
    );
    assert!(
        ids_between(&h, "2026-11-24T00:00:00+01:00", "2026-11-25T00:00:00+01:00")
            .await
            .is_empty()
    );
    assert_eq!(
        ids_between(&h, "2026-11-25T00:00:00+01:00", "2026-11-26T00:00:00+01:00").await,
        [id]
    );

    let env = h
        .run(&format!(
            "cal update-event --event-id {id} --location \"\" --confirm"
        ))
        .await;
    assert_eq!(env.result["event"]["location"], Value::Null);

    let env = h
        .run(&format!(
            "cal add-reminder --event-id {id} --minutes 10 --confirm"
        ))
        .await;
    assert_eq!(env.exit_code, 0);
    assert_eq!(env.result["minutes"], 10);
    assert!(env.result["reminder_id"].as_i64().unwrap() > 0);

    let env = h
        .run(&format!("cal delete-event --event-id {id} --confirm"))
        .await;
    assert_eq!(env.exit_code, 0);
    assert_eq!(env.result["event_id"], id);
    assert!(
        ids_between(&h, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")
            .await
            .is_empty()
    );
    for command in [
        format!("cal delete-event --event-id {id} --confirm"),
        format!("cal update-event --event-id {id} --title x --confirm"),
        format!("cal add-reminder --event-id {id} --minutes 5 --confirm"),
        "cal create-event --calendar-id 99 --title x --start 2026-11-24T09:00:00Z --end 2026-11-24T10:00:00Z --confirm".to_string(),
        "cal list-events --from 2026-11-24T00:00:00Z --to 2026-11-25T00:00:00Z --calendar-id 99".to_string(),
        "cal export --calendar-id 99 --out artifacts/cal/x.ics".to_string(),
    ] {
        let env = h.run(&command).await;
        assert_eq!(env.error_code.as_deref(), Some("NotFound"), "{command}");
        assert_eq!(env.exit_code, 1);
    }
    // Ids are never reused.
    let next = create(
        &h,
        "--title n --start 2026-11-24T09:00:00Z --end 2026-11-24T10:00:00Z",
    )
    .await;
    assert!(next > id);
}

#[tokio::test]
async fn range_edges() {
    let h = granted("read-write");
    let before = create(
        &h,
        "--title before --start 2026-11-21T08:00:00Z --end 2026-11-21T09:00:00Z",
    )
    .await;
    let spanning_start = create(
        &h,
        "--title over-start --start 2026-11-21T09:30:00Z --end 2026-11-21T10:30:00Z",
    )
    .await;
    let inside = create(
        &h,
        "--title inside --start 2026-11-21T11:00:00Z --end 2026-11-21T11:30:00Z",
    )
    .await;
    let spanning_end = create(
        &h,
        "--title over-end --start 2026-11-21T11:45:00Z --end 2026-11-21T13:00:00Z",
    )
    .await;
    let around = create(
        &h,
        "--title around --start 2026-11-20T00:00:00Z --end 2026-11-23T00:00:00Z",
    )
    .await;
    let instant = create(
        &h,
        "--title instant --start 2026-11-21T10:00:00Z --end 2026-11-21T10:00:00Z",
    )
    .await;
    let at_end = create(
        &h,
        "--title at-end --start 2026-11-21T12:00:00Z --end 2026-11-21T12:30:00Z",
    )
    .await;
    let mut got = ids_between(&h, "2026-11-21T10:00:00Z", "2026-11-21T12:00:00Z").await;
    got.sort_unstable();
    let mut want = vec![spanning_start, inside, spanning_end, around, instant];
    want.sort_unstable();
    assert_eq!(got, want);
    assert!(
        !got.contains(&before) && !got.contains(&at_end),
        "end-exclusive edges"
    );
    // Offsets are honoured: the same range written in +02:00.
    let mut got = ids_between(&h, "2026-11-21T12:00:00+02:00", "2026-11-21T14:00:00+02:00").await;
    got.sort_unstable();
    assert_eq!(got, want);
    let env = h
        .run("cal list-events --from 2026-11-22T00:00:00Z --to 2026-11-21T00:00:00Z")
        .await;
    assert_eq!(env.error_code.as_deref(), Some("InvalidArgs"));
    let env = h
        .run("cal list-events --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z --max 2 --out artifacts/cal/all.json")
        .await;
    assert_eq!(env.result["count_total"], 7);
    assert_eq!(env.result["count_emitted"], 2);
    assert_eq!(env.result["truncated"], true);
    let all: Value =
        serde_json::from_slice(&std::fs::read(h.path("artifacts/cal/all.json")).unwrap()).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 7);
}

#[tokio::test]
async fn all_day_events_and_dst_days() {
    let h = granted("read-write");
    // New York springs forward on 2026-03-08 and falls back on 2026-11-01.
    let timed = create(
        &h,
        "--title night --start 2026-03-08T01:30:00-05:00 --end 2026-03-08T03:30:00-04:00",
    )
    .await;
    let day = create(
        &h,
        "--title holiday --start 2026-03-08 --end 2026-03-08 --all-day",
    )
    .await;
    let env = h
        .run("cal list-events --from 2026-03-08T00:00:00-05:00 --to 2026-03-09T00:00:00-04:00")
        .await;
    let events = env.result["events"].as_array().unwrap();
    let night = events.iter().find(|e| e["id"] == timed).unwrap();
    assert_eq!(
        night["end_time_ms"].as_i64().unwrap() - night["start_time_ms"].as_i64().unwrap(),
        3_600_000,
        "01:30 EST to 03:30 EDT is one hour"
    );
    let holiday = events.iter().find(|e| e["id"] == day).unwrap();
    assert_eq!(holiday["all_day"], true);
    assert_eq!(holiday["start"], "2026-03-08");
    assert_eq!(holiday["end"], "2026-03-08");
    assert_eq!(
        holiday["end_time_ms"].as_i64().unwrap() - holiday["start_time_ms"].as_i64().unwrap(),
        86_400_000
    );
    let fall = create(
        &h,
        "--title fallback --start 2026-11-01T01:30:00-04:00 --end 2026-11-01T01:30:00-05:00",
    )
    .await;
    let env = h
        .run("cal list-events --from 2026-11-01T00:00:00-04:00 --to 2026-11-02T00:00:00-05:00")
        .await;
    let e = &env.result["events"][0];
    assert_eq!(e["id"], fall);
    assert_eq!(
        e["end_time_ms"].as_i64().unwrap() - e["start_time_ms"].as_i64().unwrap(),
        3_600_000
    );
    // Three days (end exclusive), then turned into a timed event and back.
    let trip = create(
        &h,
        "--title trip --start 2026-12-24 --end 2026-12-27 --all-day",
    )
    .await;
    let env = h
        .run(&format!(
            "cal update-event --event-id {trip} --all-day false --confirm"
        ))
        .await;
    assert_eq!(env.result["event"]["all_day"], false);
    assert_eq!(env.result["event"]["start"], "2026-12-24T00:00:00Z");
    assert_eq!(env.result["event"]["end"], "2026-12-27T00:00:00Z");
    let env = h
        .run(&format!("cal update-event --event-id {trip} --start 2026-12-24T15:00:00Z --end 2026-12-24T18:00:00Z --confirm"))
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    let env = h
        .run(&format!(
            "cal update-event --event-id {trip} --all-day true --confirm"
        ))
        .await;
    assert_eq!(env.result["event"]["start"], "2026-12-24");
    assert_eq!(env.result["event"]["end"], "2026-12-24");
    for bad in [
        "--title x --start 2026-12-24 --end 2026-12-25",
        "--title x --start 2026-12-25 --end 2026-12-24 --all-day",
        "--title x --start 2026-12-24T10:00:00Z --end 2026-12-24T09:00:00Z",
        "--title x --start 2026-12-24T25:00 --end 2026-12-24T26:00",
        "--title \"\" --start 2026-12-24T10:00:00Z --end 2026-12-24T11:00:00Z",
        "--title x --start 2026-12-24T10:00:00Z --end 2026-12-24T11:00:00Z --remind-minutes -5",
    ] {
        let env = h
            .run(&format!("cal create-event --calendar-id 1 {bad} --confirm"))
            .await;
        assert_eq!(env.error_code.as_deref(), Some("InvalidArgs"), "{bad}");
    }
}

#[tokio::test]
async fn permission_and_confirm_gates() {
    let create_cmd = "cal create-event --calendar-id 1 --title x --start 2026-11-24T09:00:00Z --end 2026-11-24T10:00:00Z";
    // Default (no config, or calendar = "none"): everything is refused and nothing is created.
    for h in [Harness::builtin(), granted("none")] {
        for command in [
            "cal list-calendars",
            "cal list-events --from 2026-11-24T00:00:00Z --to 2026-11-25T00:00:00Z",
        ] {
            let env = h.run(command).await;
            assert_eq!(
                env.error_code.as_deref(),
                Some("PermissionDenied"),
                "{command}"
            );
            assert_eq!(env.exit_code, 2);
            assert!(
                env.stderr
                    .contains("lurkbot config set permissions.calendar read"),
                "{}",
                env.stderr
            );
        }
        let env = h.run(&format!("{create_cmd} --confirm")).await;
        assert_eq!(env.error_code.as_deref(), Some("PermissionDenied"));
        assert!(env.stderr.contains("permissions.calendar read-write"));
        assert!(!h.path("workspace/cal/calendar.db").exists());
    }
    // read: lists work, writes do not.
    let h = granted("read");
    assert_eq!(h.run("cal list-calendars").await.exit_code, 0);
    for command in [
        format!("{create_cmd} --confirm"),
        "cal delete-event --event-id 1 --confirm".into(),
        "cal update-event --event-id 1 --title y --confirm".into(),
        "cal add-reminder --event-id 1 --minutes 5 --confirm".into(),
    ] {
        let env = h.run(&command).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("PermissionDenied"),
            "{command}"
        );
    }
    // read-write: writes need --confirm.
    let h = granted("read-write");
    for command in [
        create_cmd.to_string(),
        "cal delete-event --event-id 1".into(),
        "cal update-event --event-id 1 --title y".into(),
        "cal add-reminder --event-id 1 --minutes 5".into(),
    ] {
        let env = h.run(&command).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("ConfirmRequired"),
            "{command}"
        );
        assert_eq!(env.exit_code, 2);
    }
    assert!(
        ids_between(&h, "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z")
            .await
            .is_empty()
    );
    // A malformed grant is a config error, not a silent "none".
    h.write("config.toml", b"[permissions]\ncalendar = \"write\"\n");
    assert_eq!(
        h.run("cal list-calendars").await.error_code.as_deref(),
        Some("ConfigInvalid")
    );
}

#[tokio::test]
async fn export_is_standard_icalendar() {
    let h = granted("read-write");
    let id = create(&h, "--title \"Team sync, weekly\" --start 2026-11-24T09:00:00+01:00 --end 2026-11-24T10:00:00+01:00 --location Room\\ 4 --remind-minutes 15").await;
    create(
        &h,
        "--title Holiday --start 2026-12-24 --end 2026-12-26 --all-day",
    )
    .await;
    let env = h
        .run("cal export --calendar-id 1 --out artifacts/cal/personal.ics")
        .await;
    assert_eq!(env.exit_code, 0, "{}", env.stderr);
    assert_eq!(env.artifacts[0].mime, "text/calendar");
    assert_eq!(env.result["count_total"], 2);
    let text = std::fs::read_to_string(h.path("artifacts/cal/personal.ics")).unwrap();
    assert!(text.starts_with("BEGIN:VCALENDAR\r\n"), "{text}");
    assert!(text.contains("VERSION:2.0"));
    assert!(text.contains("SUMMARY:Team sync\\, weekly"), "{text}");
    assert!(text.contains("DTSTART:20261124T080000Z"), "{text}");
    assert!(text.contains("DTSTART;VALUE=DATE:20261224"), "{text}");
    assert!(text.contains("DTEND;VALUE=DATE:20261226"), "{text}");
    assert!(text.contains("TRIGGER"), "{text}");
    assert!(text.contains("TRIGGER;RELATED=START:-PT900S"), "{text}");
    assert!(id > 0);
    // An independent parser (Python vobject, from the test venv) reads it back.
    let script = r#"
for ev in sorted(cal.vevent_list, key=lambda e: str(e.dtstart.value)):
    alarms = [str(a.trigger.value) for a in getattr(ev, 'valarm_list', [])]
    print(ev.summary.value, '|', ev.dtstart.value.isoformat(), '|', ev.dtend.value.isoformat(), '|', getattr(ev, 'location', None) and ev.location.value, '|', alarms)
"#;
    assert_eq!(
        vobject(script, &h.path("artifacts/cal/personal.ics")),
        "Team sync, weekly | 2026-11-24T08:00:00+00:00 | 2026-11-24T09:00:00+00:00 | Room 4 | ['-1 day, 23:45:00']\n\
         Holiday | 2026-12-24 | 2026-12-26 | None | []\n"
    );
    // Read access is enough; a bad --out is refused.
    h.write("config.toml", b"[permissions]\ncalendar = \"read\"\n");
    let env = h.run("cal export --calendar-id 1 --out ../x.ics").await;
    assert_eq!(env.error_code.as_deref(), Some("PathEscapesAgentsRoot"));
}

#[tokio::test]
async fn update_and_id_refusals() {
    let h = granted("read-write");
    let id = create(
        &h,
        "--title x --start 2026-11-24T09:00:00Z --end 2026-11-24T10:00:00Z",
    )
    .await;
    let long = "a".repeat(1001);
    for args in [
        format!("cal update-event --event-id {id} --confirm"),
        format!("cal update-event --event-id {id} --all-day maybe --confirm"),
        format!("cal update-event --event-id {id} --title {long} --confirm"),
        format!("cal update-event --event-id {id} --start 2026-11-24T11:00:00Z --confirm"),
        "cal update-event --event-id 0 --title y --confirm".to_string(),
        "cal update-event --event-id abc --title y --confirm".to_string(),
        "cal list-events --from 2026-11-24T00:00:00Z --to 2026-11-25T00:00:00Z --calendar-id -1"
            .to_string(),
        "cal add-reminder --event-id 1 --minutes 600000 --confirm".to_string(),
    ] {
        let env = h.run(&args).await;
        assert_eq!(
            env.error_code.as_deref(),
            Some("InvalidArgs"),
            "{args}: {}",
            env.stderr
        );
    }
    // Nothing changed.
    let env = h
        .run("cal list-events --from 2026-11-24T00:00:00Z --to 2026-11-25T00:00:00Z")
        .await;
    assert_eq!(env.result["events"][0]["title"], "x");
    assert_eq!(env.result["events"][0]["end"], "2026-11-24T10:00:00Z");
    assert_eq!(
        env.result["events"][0]["reminder_minutes"],
        serde_json::json!([])
    );
}

#[tokio::test]
async fn an_unknown_backend_is_a_config_error() {
    let h = Harness::builtin();
    h.write(
        "config.toml",
        b"[permissions]\ncalendar = \"read\"\n[calendar]\nbackend = \"exchange\"\n",
    );
    let env = h.run("cal list-calendars").await;
    assert_eq!(env.error_code.as_deref(), Some("ConfigInvalid"));
    assert!(env.stderr.contains("calendar.backend"), "{}", env.stderr);
    assert!(!h.path("workspace/cal/calendar.db").exists());
}
