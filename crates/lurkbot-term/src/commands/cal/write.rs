//! `cal create-event`, `update-event`, `delete-event` and `add-reminder`: writes (need
//! `read-write` access and `--confirm`).

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use super::backend::Backend;
use super::model::{Event, NewEvent, Span};
use super::times::{Moment, Zone, parse_moment, show_in, span, to_all_day, utc_date};
use super::{id_flag, require_access, user_zone};
use crate::{CommandCtx, CommandError, ErrorCode, Outcome, ParsedArgs};

/// Longest title or location accepted.
const MAX_TEXT: usize = 1000;
/// Largest reminder offset: one year.
const MAX_REMIND_MINUTES: u64 = 525_600;

/// After the flags were parsed: access, then `--confirm`, then the values (in that order, so a
/// user without the grant learns that first).
fn gate(ctx: &CommandCtx<'_>, sub: &str, parsed: &ParsedArgs) -> Result<(), CommandError> {
    require_access(ctx, true)?;
    parsed.require_confirm(&format!("cal {sub}"))
}

/// `cal create-event`.
#[derive(Debug, Clone)]
pub(super) struct CreateArgs {
    /// `None`: the primary calendar.
    calendar_id: Option<i64>,
    title: String,
    when: Span,
    location: Option<String>,
    remind_minutes: Option<i64>,
    zone: Zone,
}

impl CreateArgs {
    pub(super) fn from_args(
        ctx: &CommandCtx<'_>,
        parsed: &ParsedArgs,
    ) -> Result<Self, CommandError> {
        gate(ctx, "create-event", parsed)?;
        let zone = user_zone(ctx)?;
        let calendar_id = parsed
            .get("--calendar-id")
            .map(|raw| id_flag("--calendar-id", raw))
            .transpose()?;
        let title = text_flag("--title", parsed.get("--title").unwrap_or_default())?;
        let when = span(
            parse_moment("--start", parsed.get("--start").unwrap_or_default(), &zone)?,
            parse_moment("--end", parsed.get("--end").unwrap_or_default(), &zone)?,
            parsed.has("--all-day"),
        )?;
        let location = parsed
            .get("--location")
            .map(|l| text_flag("--location", l))
            .transpose()?
            .filter(|l| !l.is_empty());
        let remind_minutes = parsed
            .get("--remind-minutes")
            .map(|_| parsed.number("--remind-minutes", 0, 0, MAX_REMIND_MINUTES))
            .transpose()?
            .map(|m| i64::try_from(m).unwrap_or(i64::MAX));
        Ok(Self {
            calendar_id,
            title,
            when,
            location,
            remind_minutes,
            zone,
        })
    }
}

pub(super) async fn create(
    ctx: &CommandCtx<'_>,
    args: CreateArgs,
) -> Result<Outcome, CommandError> {
    let CreateArgs {
        calendar_id,
        title,
        when,
        location,
        remind_minutes,
        zone,
    } = args;
    let mut backend = Backend::open(ctx)?;
    let calendar_id = match calendar_id {
        Some(id) => {
            backend.require_calendar(id).await?;
            id
        }
        None => primary_calendar(&mut backend).await?,
    };
    let new = NewEvent {
        calendar_id,
        title,
        span: when,
        location,
        remind_minutes,
    };
    let (event_id, reminder_id) = backend.create(&new).await?;
    let mut result = base("cal create-event", event_id);
    result.insert("calendar_id".into(), calendar_id.into());
    result.insert("reminder_added".into(), reminder_id.is_some().into());
    if let Some(id) = reminder_id {
        result.insert("reminder_id".into(), id.into());
    }
    result.insert("start_time_ms".into(), when.start_ms.into());
    result.insert("end_time_ms".into(), when.end_ms.into());
    result.insert("all_day".into(), when.all_day.into());
    Ok(Outcome {
        stdout: format!(
            "Created event #{event_id} '{}' ({} – {}) in calendar #{calendar_id}{}\n",
            new.title,
            show_in(&zone, when.start_ms, when.all_day, false),
            show_in(&zone, when.end_ms, when.all_day, true),
            remind_minutes
                .map(|m| format!(", reminder {m} min before"))
                .unwrap_or_default()
        ),
        result,
        ..Outcome::default()
    })
}

/// The calendar marked primary (or the only one there is).
///
/// # Errors
/// `InvalidArgs` naming `--calendar-id` when there is no single choice.
async fn primary_calendar(backend: &mut Backend) -> Result<i64, CommandError> {
    let calendars = backend.calendars().await?;
    let chosen = calendars
        .iter()
        .find(|c| c.is_primary)
        .or(match calendars.as_slice() {
            [only] => Some(only),
            _ => None,
        });
    chosen.map(|c| c.id).ok_or_else(|| {
        CommandError::new(
            ErrorCode::InvalidArgs,
            format!(
                "no primary calendar among {} calendar(s): say which with --calendar-id",
                calendars.len()
            ),
        )
        .with_hint("'cal list-calendars' shows the ids")
    })
}

/// `cal update-event`: at least one field to change.
#[derive(Debug, Clone)]
pub(super) struct UpdateArgs {
    event_id: i64,
    title: Option<String>,
    location: Option<String>,
    start: Option<Moment>,
    end: Option<Moment>,
    all_day: Option<bool>,
    zone: Zone,
}

impl UpdateArgs {
    pub(super) fn from_args(
        ctx: &CommandCtx<'_>,
        parsed: &ParsedArgs,
    ) -> Result<Self, CommandError> {
        gate(ctx, "update-event", parsed)?;
        let event_id = id_flag("--event-id", parsed.get("--event-id").unwrap_or_default())?;
        let title = parsed
            .get("--title")
            .map(|t| text_flag("--title", t))
            .transpose()?;
        let location = parsed
            .get("--location")
            .map(|l| text_flag("--location", l))
            .transpose()?;
        let zone = user_zone(ctx)?;
        let start = parsed
            .get("--start")
            .map(|s| parse_moment("--start", s, &zone))
            .transpose()?;
        let end = parsed
            .get("--end")
            .map(|s| parse_moment("--end", s, &zone))
            .transpose()?;
        let all_day = parsed.get("--all-day").map(bool_flag).transpose()?;
        if title.is_none()
            && location.is_none()
            && start.is_none()
            && end.is_none()
            && all_day.is_none()
        {
            return Err(CommandError::new(
                ErrorCode::InvalidArgs,
                "nothing to change: give at least one of --title --start --end --all-day --location",
            ));
        }
        Ok(Self {
            event_id,
            title,
            location,
            start,
            end,
            all_day,
            zone,
        })
    }
}

pub(super) async fn update(
    ctx: &CommandCtx<'_>,
    args: UpdateArgs,
) -> Result<Outcome, CommandError> {
    let UpdateArgs {
        event_id,
        title,
        location,
        start,
        end,
        all_day,
        zone,
    } = args;
    let changed = [
        ("start", start.is_some()),
        ("end", end.is_some()),
        ("all_day", all_day.is_some()),
    ];
    let mut backend = Backend::open(ctx)?;
    let mut event = backend.event(event_id).await?;
    let mut updated = Vec::new();
    if let Some(title) = title {
        event.title = title;
        updated.push("title");
    }
    if let Some(location) = location {
        event.location = Some(location).filter(|l| !l.is_empty());
        updated.push("location");
    }
    let new_all_day = all_day.unwrap_or(event.span.all_day);
    if start.is_some() || end.is_some() {
        let start = start.unwrap_or_else(|| existing(&event, false));
        let end = end.unwrap_or_else(|| existing(&event, true));
        event.span = span(start, end, new_all_day)?;
    } else if new_all_day && !event.span.all_day {
        event.span = to_all_day(event.span);
    } else {
        // Leaving all-day keeps the same instants (UTC midnights) as timed bounds.
        event.span.all_day = new_all_day;
    }
    for (name, given) in changed {
        if given {
            updated.push(name);
        }
    }
    backend.save(&event).await?;
    let mut result = base("cal update-event", event_id);
    result.insert("updated_fields".into(), updated.clone().into());
    result.insert("event".into(), event.to_json(&zone));
    Ok(Outcome {
        stdout: format!("Updated event #{event_id}: {}\n", updated.join(", ")),
        result,
        ..Outcome::default()
    })
}

/// `cal delete-event`.
#[derive(Debug, Clone, Copy)]
pub(super) struct DeleteArgs {
    event_id: i64,
}

impl DeleteArgs {
    pub(super) fn from_args(
        ctx: &CommandCtx<'_>,
        parsed: &ParsedArgs,
    ) -> Result<Self, CommandError> {
        gate(ctx, "delete-event", parsed)?;
        Ok(Self {
            event_id: id_flag("--event-id", parsed.get("--event-id").unwrap_or_default())?,
        })
    }
}

pub(super) async fn delete(
    ctx: &CommandCtx<'_>,
    args: DeleteArgs,
) -> Result<Outcome, CommandError> {
    let event_id = args.event_id;
    let mut backend = Backend::open(ctx)?;
    let event = backend.event(event_id).await?;
    backend.delete(event_id).await?;
    Ok(Outcome {
        stdout: format!("Deleted event #{event_id} '{}'\n", event.title),
        result: base("cal delete-event", event_id),
        ..Outcome::default()
    })
}

/// `cal add-reminder`.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReminderArgs {
    event_id: i64,
    minutes: i64,
}

impl ReminderArgs {
    pub(super) fn from_args(
        ctx: &CommandCtx<'_>,
        parsed: &ParsedArgs,
    ) -> Result<Self, CommandError> {
        gate(ctx, "add-reminder", parsed)?;
        let event_id = id_flag("--event-id", parsed.get("--event-id").unwrap_or_default())?;
        let minutes = parsed.number("--minutes", 0, 0, MAX_REMIND_MINUTES)?;
        Ok(Self {
            event_id,
            minutes: i64::try_from(minutes).unwrap_or(i64::MAX),
        })
    }
}

pub(super) async fn add_reminder(
    ctx: &CommandCtx<'_>,
    args: ReminderArgs,
) -> Result<Outcome, CommandError> {
    let ReminderArgs { event_id, minutes } = args;
    let mut backend = Backend::open(ctx)?;
    backend.event(event_id).await?;
    let reminder_id = backend.add_reminder(event_id, minutes).await?;
    let mut result = base("cal add-reminder", event_id);
    result.insert("minutes".into(), minutes.into());
    result.insert("reminder_id".into(), reminder_id.into());
    Ok(Outcome {
        stdout: format!("Reminder #{reminder_id}: {minutes} min before event #{event_id}\n"),
        result,
        ..Outcome::default()
    })
}

/// The event's current start or end as a command-line moment.
fn existing(event: &Event, is_end: bool) -> Moment {
    let ms = if is_end {
        event.span.end_ms
    } else {
        event.span.start_ms
    };
    if event.span.all_day {
        Moment::Date(utc_date(ms))
    } else {
        Moment::Instant(
            DateTime::<Utc>::from_timestamp_millis(ms)
                .unwrap_or_default()
                .fixed_offset(),
        )
    }
}

fn base(command: &str, event_id: i64) -> Map<String, Value> {
    let mut result = Map::new();
    result.insert("ok".into(), true.into());
    result.insert("command".into(), command.into());
    result.insert("event_id".into(), event_id.into());
    result
}

fn text_flag(flag: &str, raw: &str) -> Result<String, CommandError> {
    let text = raw.trim();
    if text.chars().count() > MAX_TEXT || text.chars().any(char::is_control) {
        return Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("{flag} must be at most {MAX_TEXT} characters without control characters"),
        ));
    }
    if flag == "--title" && text.is_empty() {
        return Err(CommandError::new(
            ErrorCode::InvalidArgs,
            "--title must not be empty",
        ));
    }
    Ok(text.to_string())
}

fn bool_flag(raw: &str) -> Result<bool, CommandError> {
    match raw {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(CommandError::new(
            ErrorCode::InvalidArgs,
            format!("--all-day takes true or false, not '{raw}'"),
        )),
    }
}
