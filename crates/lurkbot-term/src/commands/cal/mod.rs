//! `cal list-calendars|list-events|create-event|update-event|delete-event|add-reminder|export`
//! (ARCHITECTURE.md §4.5): calendars behind an explicit grant. Android's runtime permissions become
//! `[permissions] calendar = "none" | "read" | "read-write"` in `config.toml` (default `none`);
//! writes also need `--confirm`. Output never contains descriptions, attendees or URLs.

mod backend;
mod caldav;
mod dav;
mod edit;
mod ical;
mod ics;
mod idmap;
mod local;
mod model;
mod multistatus;
mod read;
mod sqlite;
mod times;
mod write;

/// Reads hostile text as iCalendar (every event, and the series master), for the fuzz targets
/// under `fuzz/` (not an API).
#[doc(hidden)]
pub fn fuzz_read_ical(text: &str) -> bool {
    let listed = ical::instances(text).is_ok();
    ical::master(text).is_ok() || listed
}

use lurkbot_core::CalendarPermission;

use crate::listing_flags::{LIST_CONFIRM, LIST_OVERWRITE};
use crate::{Command, CommandCtx, CommandError, CommandSpec, ErrorCode, FlagSpec, SubcommandSpec};

const MAX_CALENDARS: FlagSpec = FlagSpec::value(
    "--max",
    "n",
    false,
    "calendars to include in stdout and result (default 50, 0-10000)",
);
const MAX_EVENTS: FlagSpec = FlagSpec::value(
    "--max",
    "n",
    false,
    "events to include in stdout and result (default 200, 0-10000)",
);
const OUT: FlagSpec = FlagSpec::value(
    "--out",
    "path",
    false,
    "write the full list as JSON to this home-relative file",
);
const CONFIRM: FlagSpec = FlagSpec::switch("--confirm", "required: allow changing the calendar");
const EVENT_ID: FlagSpec = FlagSpec::value("--event-id", "id", true, "the event's id");
const CALENDAR_ID: FlagSpec = FlagSpec::value("--calendar-id", "id", true, "the calendar's id");

/// The spec of `cal`.
pub(crate) static SPEC: CommandSpec = CommandSpec {
    name: "cal",
    summary: "read and change calendars, local or CalDAV (needs [permissions] calendar in config.toml)",
    usage: "cal <list-calendars|list-events|create-event|update-event|delete-event|add-reminder|export> [flags]",
    subcommands: &[
        SubcommandSpec {
            name: "list-calendars",
            summary: "list the calendars",
            usage: "cal list-calendars [--max <n>] [--out <path>]",
            flags: &[MAX_CALENDARS, OUT, LIST_CONFIRM, LIST_OVERWRITE],
            examples: &["cal list-calendars"],
            run: |ctx, parsed| {
                Box::pin(async move {
                    read::list_calendars(ctx, read::CalendarsArgs::from_args(&parsed)?).await
                })
            },
        },
        SubcommandSpec {
            name: "list-events",
            summary: "list the events overlapping a time range",
            usage: "cal list-events [--from <time>] [--to <time>] [--calendar-id <id>] [--max <n>] [--out <path>]",
            flags: &[
                FlagSpec::value(
                    "--from",
                    "time",
                    false,
                    "range start (default now): RFC 3339, a local time like 2026-11-21T09:00, or a date",
                ),
                FlagSpec::value(
                    "--to",
                    "time",
                    false,
                    "range end, exclusive (default 7 days after --from)",
                ),
                FlagSpec::value("--calendar-id", "id", false, "only this calendar"),
                MAX_EVENTS,
                OUT,
                LIST_CONFIRM,
                LIST_OVERWRITE,
            ],
            examples: &[
                "cal list-events",
                "cal list-events --from 2026-11-21 --to 2026-11-28",
                "cal list-events --from 2026-11-21T00:00:00+01:00 --to 2026-11-28T00:00:00+01:00",
            ],
            run: |ctx, parsed| {
                Box::pin(async move {
                    read::list_events(ctx, read::EventsArgs::from_args(ctx, &parsed)?).await
                })
            },
        },
        SubcommandSpec {
            name: "create-event",
            summary: "create an event (optionally with a reminder)",
            usage: "cal create-event [--calendar-id <id>] --title <text> --start <time> --end <time> [--all-day] [--location <text>] [--remind-minutes <n>] --confirm",
            flags: &[
                FlagSpec::value(
                    "--calendar-id",
                    "id",
                    false,
                    "the calendar's id (default the primary calendar)",
                ),
                FlagSpec::value("--title", "text", true, "the title"),
                FlagSpec::value(
                    "--start",
                    "time|date",
                    true,
                    "start: RFC 3339, a local time like 2026-11-24T09:00 (agent.timezone), or a date for --all-day",
                ),
                FlagSpec::value(
                    "--end",
                    "time|date",
                    true,
                    "end; for --all-day the day after the last (the same day = one day)",
                ),
                FlagSpec::switch("--all-day", "whole days (UTC dates)"),
                FlagSpec::value("--location", "text", false, "where"),
                FlagSpec::value(
                    "--remind-minutes",
                    "n",
                    false,
                    "add a reminder this many minutes before",
                ),
                CONFIRM,
            ],
            examples: &[
                "cal create-event --title \"Dentist\" --start 2026-11-24T09:00 --end 2026-11-24T09:30 --remind-minutes 30 --confirm",
                "cal create-event --calendar-id 1 --title \"Call\" --start 2026-11-24T09:00:00+01:00 --end 2026-11-24T09:30:00+01:00 --confirm",
                "cal create-event --calendar-id 1 --title Holiday --start 2026-12-24 --end 2026-12-27 --all-day --confirm",
            ],
            run: |ctx, parsed| {
                Box::pin(async move {
                    write::create(ctx, write::CreateArgs::from_args(ctx, &parsed)?).await
                })
            },
        },
        SubcommandSpec {
            name: "update-event",
            summary: "change an event's fields (the others stay)",
            usage: "cal update-event --event-id <id> [--title <text>] [--start <RFC3339>] [--end <RFC3339>] [--all-day true|false] [--location <text>] --confirm",
            flags: &[
                EVENT_ID,
                FlagSpec::value("--title", "text", false, "new title"),
                FlagSpec::value("--start", "RFC3339|date", false, "new start"),
                FlagSpec::value("--end", "RFC3339|date", false, "new end"),
                FlagSpec::value("--all-day", "true|false", false, "make it all-day or timed"),
                FlagSpec::value("--location", "text", false, "new location (\"\" clears it)"),
                CONFIRM,
            ],
            examples: &[
                "cal update-event --event-id 7 --title \"Dentist (moved)\" --start 2026-11-25T09:00:00+01:00 --end 2026-11-25T09:30:00+01:00 --confirm",
            ],
            run: |ctx, parsed| {
                Box::pin(async move {
                    write::update(ctx, write::UpdateArgs::from_args(ctx, &parsed)?).await
                })
            },
        },
        SubcommandSpec {
            name: "delete-event",
            summary: "delete an event",
            usage: "cal delete-event --event-id <id> --confirm",
            flags: &[EVENT_ID, CONFIRM],
            examples: &["cal delete-event --event-id 7 --confirm"],
            run: |ctx, parsed| {
                Box::pin(async move {
                    write::delete(ctx, write::DeleteArgs::from_args(ctx, &parsed)?).await
                })
            },
        },
        SubcommandSpec {
            name: "add-reminder",
            summary: "add a reminder to an event",
            usage: "cal add-reminder --event-id <id> --minutes <n> --confirm",
            flags: &[
                EVENT_ID,
                FlagSpec::value(
                    "--minutes",
                    "n",
                    true,
                    "minutes before the start (0-525600)",
                ),
                CONFIRM,
            ],
            examples: &["cal add-reminder --event-id 7 --minutes 15 --confirm"],
            run: |ctx, parsed| {
                Box::pin(async move {
                    write::add_reminder(ctx, write::ReminderArgs::from_args(ctx, &parsed)?).await
                })
            },
        },
        SubcommandSpec {
            name: "export",
            summary: "write a calendar as an iCalendar (.ics) file",
            usage: "cal export --calendar-id <id> --out <path.ics> [--overwrite --confirm]",
            flags: &[
                CALENDAR_ID,
                FlagSpec::value("--out", "path", true, "the .ics file to write"),
                LIST_CONFIRM,
                LIST_OVERWRITE,
            ],
            examples: &["cal export --calendar-id 1 --out artifacts/cal/personal.ics"],
            run: |ctx, parsed| {
                Box::pin(
                    async move { read::export(ctx, read::ExportArgs::from_args(&parsed)?).await },
                )
            },
        },
    ],
    flags: &[],
    examples: &[
        "cal list-calendars",
        "cal list-events --from 2026-11-21T00:00:00Z --to 2026-11-22T00:00:00Z",
    ],
    skill: "calendar-cli",
    credentials: &[
        (
            "CALDAV_USERNAME",
            "the CalDAV account's user name (backend caldav)",
        ),
        ("CALDAV_PASSWORD", "its password or app password"),
    ],
    needs_gateway: false,
};

/// The `cal` command.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CalCommand;

impl Command for CalCommand {
    fn spec(&self) -> &'static CommandSpec {
        &SPEC
    }
}

/// Checks the grant in `config.toml`: reads need `read`, writes `read-write`.
///
/// # Errors
/// `PermissionDenied` naming the exact command that grants access; `ConfigInvalid`.
/// The user's time zone (`agent.timezone`, else the system's).
///
/// # Errors
/// `ConfigInvalid` for an unknown `agent.timezone`.
fn user_zone(ctx: &CommandCtx<'_>) -> Result<times::Zone, CommandError> {
    times::Zone::of(ctx.config()?.agent.timezone.as_deref()).map_err(|e| {
        CommandError::new(
            ErrorCode::ConfigInvalid,
            format!(
                "agent.timezone '{}' is not a time zone this system knows",
                e.0
            ),
        )
        .with_hint("use an IANA name such as Europe/Berlin (the tzdata package provides them)")
    })
}

fn require_access(ctx: &CommandCtx<'_>, write: bool) -> Result<(), CommandError> {
    let granted = ctx.config()?.permissions.calendar;
    let ok = match granted {
        CalendarPermission::None => false,
        CalendarPermission::Read => !write,
        CalendarPermission::ReadWrite => true,
    };
    if ok {
        return Ok(());
    }
    let (needed, current) = (
        if write { "read-write" } else { "read" },
        match granted {
            CalendarPermission::None => "none",
            CalendarPermission::Read => "read",
            CalendarPermission::ReadWrite => "read-write",
        },
    );
    Err(CommandError::new(
        ErrorCode::PermissionDenied,
        format!(
            "calendar access is '{current}' in config.toml; {} needs '{needed}'",
            if write {
                "changing calendars"
            } else {
                "reading calendars"
            }
        ),
    )
    .with_hint(format!(
        "grant it with: lurkbot config set permissions.calendar {needed}"
    )))
}

/// Parses an integer id flag.
///
/// # Errors
/// `InvalidArgs`.
fn id_flag(flag: &str, raw: &str) -> Result<i64, CommandError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        CommandError::new(
            ErrorCode::InvalidArgs,
            format!("{flag} must be a positive whole number, got '{raw}'"),
        )
    })
}
