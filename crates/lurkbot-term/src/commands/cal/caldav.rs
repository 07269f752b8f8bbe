//! The `caldav` backend: calendars on a CalDAV server (RFC 4791), e.g. Radicale, Nextcloud,
//! Fastmail, iCloud.
//!
//! - Discovery: `calendar.url` may be the server root, a principal, a calendar home or one
//!   calendar; `current-user-principal` → `calendar-home-set` → `PROPFIND Depth: 1`, keeping the
//!   collections that are calendars holding events.
//! - Listing: a `calendar-query` REPORT with the time range, asking the server to expand
//!   recurring events into their occurrences (each occurrence carries the series' id and
//!   `recurring: true`; a server that cannot expand sends the series once).
//! - Changes: create is `PUT` with `If-None-Match: *`; update, delete and add-reminder send the
//!   ETag seen when the event was last listed (or created here) as `If-Match`, so a change made
//!   elsewhere in between answers `Conflict` instead of being overwritten. Updates edit the
//!   server's own text line by line ([`super::edit`]), keeping what LurkBot does not show.
//! - Ids: integers from [`IdMap`]; nothing there changes unless the server accepted the change.

use std::collections::HashMap;

use reqwest::header::{IF_MATCH, IF_NONE_MATCH};
use reqwest::{StatusCode, Url};

use super::dav::{Answer, Body, CREDENTIALS_FILE, Dav, status_error};
use super::edit::{self, Changes};
use super::ical::{self, Instance, utc_stamp};
use super::idmap::IdMap;
use super::model::{Calendar, Event, NewEvent, Reminder};
use super::multistatus::{CALDAV, DAV, Resource};
use crate::net::host_of;
use crate::{CommandCtx, CommandError, ErrorCode};

/// An object read for a following change.
struct Fetched {
    url: Url,
    etag: Option<String>,
    ics: String,
    event: Event,
}

/// The open CalDAV account.
pub(super) struct CalDavStore {
    dav: Dav,
    base: Url,
    account: String,
    map: IdMap,
    fetched: HashMap<i64, Fetched>,
    /// Objects of the last listing that could not be read as iCalendar.
    pub(super) skipped: usize,
}

impl CalDavStore {
    /// Reads `calendar.url` and the credentials; no request is made yet.
    ///
    /// # Errors
    /// `ConfigInvalid` for a missing or unusable URL, `IoError` for the id map.
    pub(super) fn open(ctx: &CommandCtx<'_>) -> Result<Self, CommandError> {
        let config = ctx.config()?;
        let fix = "use: lurkbot config set calendar.url https://dav.example.com/";
        let raw = config.calendar.url.as_deref().unwrap_or_default().trim();
        if raw.is_empty() {
            return Err(CommandError::new(
                ErrorCode::ConfigInvalid,
                "calendar.backend is caldav but calendar.url is not set",
            )
            .with_hint(fix));
        }
        let base = Url::parse(raw)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
            .ok_or_else(|| {
                CommandError::new(
                    ErrorCode::ConfigInvalid,
                    "calendar.url is not an http:// or https:// URL",
                )
                .with_hint(fix)
            })?;
        if !base.username().is_empty() || base.password().is_some() {
            return Err(CommandError::new(
                ErrorCode::ConfigInvalid,
                "calendar.url carries credentials",
            )
            .with_hint(format!(
                "remove them from the URL and put CALDAV_USERNAME / CALDAV_PASSWORD in {CREDENTIALS_FILE}"
            )));
        }
        let secrets = lurkbot_core::Secrets::load(ctx.home);
        let vars = secrets.skill("calendar-cli");
        let var = |name: &str| {
            vars.and_then(|v| v.get(name))
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let user = var("CALDAV_USERNAME");
        let account = user.clone().unwrap_or_else(|| host_of(&base));
        Ok(Self {
            dav: Dav::new(user, var("CALDAV_PASSWORD"))?,
            base,
            account,
            map: IdMap::open(ctx.home)?,
            fetched: HashMap::new(),
            skipped: 0,
        })
    }

    /// The account's event calendars with their ids, by id; the first is the primary one.
    ///
    /// # Errors
    /// `NetworkError`, `AuthFailed`, `HttpError`, `ParseError`, `IoError`.
    pub(super) async fn calendars(&mut self) -> Result<Vec<Calendar>, CommandError> {
        let mut calendars = Vec::new();
        for (url, name) in self.discover().await? {
            calendars.push(Calendar {
                id: self.map.calendar_id(url.as_str())?,
                display_name: name,
                account_name: self.account.clone(),
                account_type: "caldav".into(),
                owner_account: self.account.clone(),
                visible: true,
                is_primary: false,
            });
        }
        calendars.sort_by_key(|c| c.id);
        if let Some(first) = calendars.first_mut() {
            first.is_primary = true;
        }
        Ok(calendars)
    }

    /// Whether a calendar id names one of the account's calendars now.
    ///
    /// # Errors
    /// As [`CalDavStore::calendars`].
    pub(super) async fn has_calendar(&mut self, id: i64) -> Result<bool, CommandError> {
        Ok(self.calendars().await?.iter().any(|c| c.id == id))
    }

    /// Events (and occurrences) overlapping `[from, to)`.
    ///
    /// # Errors
    /// As [`CalDavStore::calendars`].
    pub(super) async fn events(
        &mut self,
        from: i64,
        to: i64,
        calendar_id: Option<i64>,
    ) -> Result<Vec<Event>, CommandError> {
        let (start, end) = (utc_stamp(from), utc_stamp(to));
        let query = format!(
            r#"<?xml version="1.0" encoding="utf-8"?><C:calendar-query xmlns:D="DAV:" xmlns:C="{CALDAV}"><D:prop><D:getetag/><C:calendar-data><C:expand start="{start}" end="{end}"/></C:calendar-data></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"><C:time-range start="{start}" end="{end}"/></C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"#
        );
        let mut events = Vec::new();
        for calendar in self.calendars().await? {
            if calendar_id.is_some_and(|id| id != calendar.id) {
                continue;
            }
            for (id, instance) in self.query(calendar.id, &query).await? {
                let overlaps = instance.span.start_ms < to
                    && (instance.span.end_ms > from
                        || (instance.span.end_ms == instance.span.start_ms
                            && instance.span.start_ms >= from));
                if overlaps || (instance.rrule.is_some() && !instance.occurrence) {
                    events.push(to_event(id, calendar.id, instance));
                }
            }
        }
        events.sort_by_key(|e| (e.span.start_ms, e.id));
        Ok(events)
    }

    /// Every event of a calendar as stored (recurring ones once, with their RRULE). The
    /// caller has just listed the calendars, so the id is looked up in the map, not discovered
    /// again.
    ///
    /// # Errors
    /// As [`CalDavStore::calendars`]; `NotFound` for an id never seen.
    pub(super) async fn all_events(
        &mut self,
        calendar_id: i64,
    ) -> Result<Vec<Event>, CommandError> {
        let query = format!(
            r#"<?xml version="1.0" encoding="utf-8"?><C:calendar-query xmlns:D="DAV:" xmlns:C="{CALDAV}"><D:prop><D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"/></C:comp-filter></C:filter></C:calendar-query>"#
        );
        let mut events: Vec<Event> = self
            .query(calendar_id, &query)
            .await?
            .into_iter()
            .filter(|(_, i)| !i.occurrence)
            .map(|(id, i)| to_event(id, calendar_id, i))
            .collect();
        events.sort_by_key(|e| (e.span.start_ms, e.id));
        Ok(events)
    }

    /// One event as the server holds it now (kept for a following change).
    ///
    /// # Errors
    /// `NetworkError`, `AuthFailed`, `HttpError`, `ParseError`, `IoError`.
    pub(super) async fn event(&mut self, id: i64) -> Result<Option<Event>, CommandError> {
        let Some(row) = self.map.event(id)? else {
            return Ok(None);
        };
        let url = self.resolve(&row.url)?;
        let answer = self.dav.send("GET", &url, None, None, None).await?;
        if matches!(answer.status, StatusCode::NOT_FOUND | StatusCode::GONE) {
            self.map.forget_event(id)?;
            return Ok(None);
        }
        if !answer.status.is_success() {
            return Err(status_error(&url, answer.status));
        }
        let instance = ical::master(&answer.body).map_err(|e| unreadable(&url, &e))?;
        let event = to_event(id, row.calendar_id, instance);
        self.fetched.insert(
            id,
            Fetched {
                url,
                etag: answer.etag,
                ics: answer.body,
                event: event.clone(),
            },
        );
        Ok(Some(event))
    }

    /// Creates an event; returns its id and the reminder's.
    ///
    /// # Errors
    /// `NotFound` for an unknown calendar, `Conflict` when the UID is taken, plus transport
    /// errors.
    pub(super) async fn create(
        &mut self,
        new: &NewEvent,
        uid: &str,
    ) -> Result<(i64, Option<i64>), CommandError> {
        let calendar = self
            .map
            .calendar_url(new.calendar_id)?
            .ok_or_else(|| super::backend::not_found("calendar", new.calendar_id))?;
        let mut calendar_url = self.resolve(&calendar)?;
        if !calendar_url.path().ends_with('/') {
            calendar_url.set_path(&format!("{}/", calendar_url.path()));
        }
        let file = uid.split('@').next().unwrap_or(uid);
        let url = calendar_url
            .join(&format!("{file}.ics"))
            .map_err(|e| CommandError::new(ErrorCode::Internal, e.to_string()))?;
        let event = Event {
            id: 0,
            calendar_id: new.calendar_id,
            uid: uid.to_string(),
            title: new.title.clone(),
            span: new.span,
            location: new.location.clone(),
            reminders: new
                .remind_minutes
                .map(|minutes| Reminder { id: 0, minutes })
                .into_iter()
                .collect(),
            rrule: None,
            recurring: false,
        };
        let answer = self
            .put(&url, super::ics::object(&event), Some((IF_NONE_MATCH, "*")))
            .await?;
        if answer.status == StatusCode::PRECONDITION_FAILED {
            return Err(CommandError::new(
                ErrorCode::Conflict,
                "the server already holds an event at the new event's address; nothing was changed",
            )
            .with_hint("retry: a new address is chosen each time"));
        }
        if !answer.status.is_success() {
            return Err(status_error(&url, answer.status));
        }
        let id = self
            .map
            .saw_event(url.as_str(), new.calendar_id, answer.etag.as_deref())?;
        let reminder = new
            .remind_minutes
            .map(|minutes| self.map.add_reminder(id, minutes))
            .transpose()?;
        Ok((id, reminder))
    }

    /// Stores an event's changed title, location and times.
    ///
    /// # Errors
    /// `Conflict` when the event changed on the server since it was listed, plus transport
    /// errors.
    pub(super) async fn save(&mut self, event: &Event, now_ms: i64) -> Result<(), CommandError> {
        let fetched = self.fetched(event.id)?;
        let before = &fetched.event;
        let changes = Changes {
            title: (event.title != before.title).then_some(event.title.as_str()),
            location: (event.location != before.location).then_some(event.location.as_deref()),
            span: (event.span != before.span).then_some(event.span),
            alarm: None,
        };
        let ics = edit::apply(&fetched.ics, &changes, now_ms)
            .map_err(|e| unreadable(&fetched.url, &e))?;
        self.replace(event.id, ics).await
    }

    /// Adds a VALARM; returns the reminder's id.
    ///
    /// # Errors
    /// As [`CalDavStore::save`].
    pub(super) async fn add_reminder(
        &mut self,
        event_id: i64,
        minutes: i64,
        now_ms: i64,
    ) -> Result<i64, CommandError> {
        let fetched = self.fetched(event_id)?;
        let changes = Changes {
            alarm: Some((minutes, fetched.event.title.as_str())),
            ..Changes::default()
        };
        let ics = edit::apply(&fetched.ics, &changes, now_ms)
            .map_err(|e| unreadable(&fetched.url, &e))?;
        self.replace(event_id, ics).await?;
        self.map.add_reminder(event_id, minutes)
    }

    /// Deletes an event, if it has not changed since it was listed.
    ///
    /// # Errors
    /// `Conflict`, `NotFound`, plus transport errors.
    pub(super) async fn delete(&mut self, id: i64) -> Result<(), CommandError> {
        let (url, etag) = self.target(id)?;
        let precondition = etag.as_deref().map(|e| (IF_MATCH, e));
        let answer = self
            .dav
            .send("DELETE", &url, None, precondition, None)
            .await?;
        self.judge(id, &url, &answer)?;
        self.map.forget_event(id)
    }

    /// PUTs a changed object with `If-Match`, then records its new ETag.
    async fn replace(&mut self, id: i64, ics: String) -> Result<(), CommandError> {
        let (url, etag) = self.target(id)?;
        let precondition = etag.as_deref().map(|e| (IF_MATCH, e));
        let answer = self.put(&url, ics, precondition).await?;
        self.judge(id, &url, &answer)?;
        self.map.set_etag(id, answer.etag.as_deref())
    }

    /// The URL and the ETag to send as `If-Match`: the one seen when the event was last
    /// listed or changed here, else the one just read.
    fn target(&self, id: i64) -> Result<(Url, Option<String>), CommandError> {
        let fetched = self.fetched(id)?;
        let seen = self.map.event(id)?.and_then(|row| row.etag);
        Ok((fetched.url.clone(), seen.or_else(|| fetched.etag.clone())))
    }

    /// Maps the answer to a change: 412 → `Conflict`, 404 → `NotFound`.
    fn judge(&self, id: i64, url: &Url, answer: &Answer) -> Result<(), CommandError> {
        match answer.status {
            s if s.is_success() => Ok(()),
            StatusCode::PRECONDITION_FAILED => Err(CommandError::new(
                ErrorCode::Conflict,
                format!("event #{id} changed on the server since it was last listed; nothing was overwritten"),
            )
            .with_hint("run 'cal list-events …' to see the current version, then retry")
            .with_detail("event_id", id)),
            StatusCode::NOT_FOUND | StatusCode::GONE => {
                self.map.forget_event(id)?;
                Err(super::backend::not_found("event", id))
            }
            other => Err(status_error(url, other)),
        }
    }

    fn fetched(&self, id: i64) -> Result<&Fetched, CommandError> {
        self.fetched.get(&id).ok_or_else(|| {
            CommandError::new(
                ErrorCode::Internal,
                format!("event #{id} was not read before changing it"),
            )
        })
    }

    async fn put(
        &self,
        url: &Url,
        ics: String,
        precondition: super::dav::Precondition<'_>,
    ) -> Result<Answer, CommandError> {
        let body = Body {
            mime: "text/calendar; charset=utf-8",
            text: ics,
        };
        self.dav
            .send("PUT", url, None, precondition, Some(body))
            .await
    }

    /// Runs a calendar-query on one calendar: (event id, VEVENT) for every readable object.
    async fn query(
        &mut self,
        calendar_id: i64,
        query: &str,
    ) -> Result<Vec<(i64, Instance)>, CommandError> {
        let url = self.calendar_url(calendar_id)?;
        let resources = self
            .dav
            .multistatus("REPORT", &url, "1", query.to_string())
            .await?;
        let mut out = Vec::new();
        for resource in resources {
            let Some(data) = resource.prop(CALDAV, "calendar-data") else {
                continue;
            };
            let Ok(instances) = ical::instances(&data.text) else {
                self.skipped += 1;
                continue;
            };
            let href = self.resolve(&resource.href)?;
            let etag = resource
                .prop(DAV, "getetag")
                .map(|p| p.text.trim().to_string());
            let id = self
                .map
                .saw_event(href.as_str(), calendar_id, etag.as_deref())?;
            out.extend(instances.into_iter().map(|i| (id, i)));
        }
        Ok(out)
    }

    fn calendar_url(&self, id: i64) -> Result<Url, CommandError> {
        let url = self
            .map
            .calendar_url(id)?
            .ok_or_else(|| super::backend::not_found("calendar", id))?;
        self.resolve(&url)
    }

    /// An href (absolute path or URL) against the configured server.
    fn resolve(&self, href: &str) -> Result<Url, CommandError> {
        self.base.join(href).map_err(|e| {
            CommandError::new(
                ErrorCode::ParseError,
                format!("the server sent an unusable href '{href}': {e}"),
            )
        })
    }

    /// The account's event calendars: (URL, display name).
    async fn discover(&self) -> Result<Vec<(Url, String)>, CommandError> {
        let props = format!(
            r#"<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:" xmlns:C="{CALDAV}"><D:prop><D:resourcetype/><D:displayname/><D:current-user-principal/><C:calendar-home-set/><C:supported-calendar-component-set/></D:prop></D:propfind>"#
        );
        let here = self
            .dav
            .multistatus("PROPFIND", &self.base, "0", props.clone())
            .await?;
        let Some(first) = here.first() else {
            return Ok(Vec::new());
        };
        if let Some(calendar) = self.as_calendar(first)? {
            return Ok(vec![calendar]);
        }
        let mut home = first
            .prop(CALDAV, "calendar-home-set")
            .and_then(|p| p.hrefs.first().cloned());
        if home.is_none()
            && let Some(principal) = first
                .prop(DAV, "current-user-principal")
                .and_then(|p| p.hrefs.first())
        {
            let principal = self.resolve(principal)?;
            let found = self
                .dav
                .multistatus("PROPFIND", &principal, "0", props.clone())
                .await?;
            home = found
                .first()
                .and_then(|r| r.prop(CALDAV, "calendar-home-set"))
                .and_then(|p| p.hrefs.first().cloned())
                .or_else(|| Some(principal.to_string()));
        }
        let home = match home {
            Some(h) => self.resolve(&h)?,
            None => self.base.clone(),
        };
        let children = self.dav.multistatus("PROPFIND", &home, "1", props).await?;
        let mut calendars = Vec::new();
        for child in &children {
            if let Some(calendar) = self.as_calendar(child)? {
                calendars.push(calendar);
            }
        }
        Ok(calendars)
    }

    /// A resource that is a calendar holding events, as (URL, display name).
    fn as_calendar(&self, resource: &Resource) -> Result<Option<(Url, String)>, CommandError> {
        let is_calendar = resource.prop(DAV, "resourcetype").is_some_and(|p| {
            p.children
                .iter()
                .any(|(ns, name)| ns == CALDAV && name == "calendar")
        });
        let holds_events = resource
            .prop(CALDAV, "supported-calendar-component-set")
            .is_none_or(|p| {
                p.comps.is_empty() || p.comps.iter().any(|c| c.eq_ignore_ascii_case("VEVENT"))
            });
        if !is_calendar || !holds_events {
            return Ok(None);
        }
        let url = self.resolve(&resource.href)?;
        let name = resource
            .prop(DAV, "displayname")
            .map(|p| p.text.trim().to_string())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| {
                url.path_segments()
                    .and_then(|mut s| s.rfind(|s| !s.is_empty()))
                    .unwrap_or("calendar")
                    .to_string()
            });
        Ok(Some((url, name)))
    }
}

fn to_event(id: i64, calendar_id: i64, instance: Instance) -> Event {
    let recurring = instance.recurring();
    Event {
        id,
        calendar_id,
        uid: instance.uid,
        title: instance.title,
        span: instance.span,
        location: instance.location,
        reminders: instance
            .reminders
            .into_iter()
            .map(|minutes| Reminder { id: 0, minutes })
            .collect(),
        rrule: instance.rrule,
        recurring,
    }
}

fn unreadable(url: &Url, e: &str) -> CommandError {
    CommandError::new(
        ErrorCode::ParseError,
        format!(
            "the event at {} is not readable iCalendar: {e}",
            host_of(url)
        ),
    )
    .with_hint("open it in another calendar client; nothing was changed")
}
