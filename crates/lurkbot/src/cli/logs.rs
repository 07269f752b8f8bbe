//! `lurkbot logs [-f] [--since WHEN] [--json] [-n N] [--gateway URL]`: the gateway's log.
//!
//! Reads `logs/gateway.log` (and its rotated copies) in the home, or — with `--gateway` — asks
//! a running gateway with `logs.tail`, like OpenClaw's `openclaw logs`. Lines print readably
//! (`time LEVEL message key=value …`, the level coloured on a terminal) or, with `--json`, as
//! the JSON objects the file holds. `-f` keeps printing new lines until interrupted.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use clap::Args;
use lurkbot_core::{GATEWAY_LOG, Home};
use serde_json::{Value, json};

use crate::error::{CliError, CliResult};

/// Flags of `lurkbot logs`.
#[derive(Debug, Args)]
#[command(
    after_help = "WHEN is a duration back from now (30s, 10m, 2h, 1d) or a time (2026-11-24T08:00:00Z, 2026-11-24).\n\nExamples:\n  lurkbot logs -n 50\n  lurkbot logs -f\n  lurkbot logs --since 1h --json | jq .message\n  lurkbot logs --gateway http://127.0.0.1:18789"
)]
pub(crate) struct LogsArgs {
    /// Keep printing lines as they are written (Ctrl-C stops).
    #[arg(short, long)]
    follow: bool,
    /// Only lines from WHEN on.
    #[arg(long, value_name = "WHEN")]
    since: Option<String>,
    /// Print each line as its JSON object.
    #[arg(long)]
    json: bool,
    /// The last N lines (default 200; with --since, every line since).
    #[arg(short = 'n', long = "lines", value_name = "N")]
    lines: Option<usize>,
    /// Ask a running gateway (logs.tail) instead of reading the home's files.
    #[arg(long, value_name = "URL")]
    gateway: Option<String>,
}

/// Lines shown without `-n` or `--since`.
const DEFAULT_LINES: usize = 200;
/// How often `-f` looks for new lines.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

pub(crate) fn run(home_path: &Path, args: &LogsArgs) -> CliResult {
    let since = args.since.as_deref().map(parse_since).transpose()?;
    let limit = match (args.lines, since) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_LINES),
    };
    let printer = Printer {
        json: args.json,
        colour: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        since,
    };
    match crate::cli::remote::gateway_url(args.gateway.as_deref()) {
        Some(url) => remote(home_path, &url, limit, args.follow, &printer),
        None => local(home_path, limit, args.follow, &printer),
    }
}

/// Parses `--since`: a duration back from now, an RFC 3339 time or a date (UTC midnight).
fn parse_since(raw: &str) -> Result<DateTime<Utc>, CliError> {
    let raw = raw.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(raw) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        && let Some(t) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(t.and_utc());
    }
    let split = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (number, unit) = raw.split_at(split);
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => 0,
    };
    match number.parse::<i64>() {
        Ok(n) if seconds > 0 => {
            Ok(Utc::now() - chrono::Duration::seconds(n.saturating_mul(seconds)))
        }
        _ => Err(CliError::usage(
            "logs",
            format!(
                "--since '{raw}' is neither a duration (30s, 10m, 2h, 1d, 1w) nor a time (2026-11-24T08:00:00Z, 2026-11-24)"
            ),
        )),
    }
}

/// How lines are shown.
struct Printer {
    json: bool,
    colour: bool,
    since: Option<DateTime<Utc>>,
}

impl Printer {
    /// The line as shown, or `None` when it is older than `--since`.
    fn render(&self, line: &str) -> Option<String> {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(line) else {
            // Not one of our JSON lines: shown as it is, never filtered away.
            return Some(line.to_string());
        };
        let time = map.get("timestamp").and_then(Value::as_str).unwrap_or("");
        if let Some(since) = self.since
            && DateTime::parse_from_rfc3339(time).is_ok_and(|t| t.with_timezone(&Utc) < since)
        {
            return None;
        }
        if self.json {
            return Some(line.to_string());
        }
        let level = map.get("level").and_then(Value::as_str).unwrap_or("");
        let message = map.get("message").and_then(Value::as_str).unwrap_or("");
        let mut text = format!("{time} {} {message}", self.level(level));
        for (key, value) in &map {
            if ["timestamp", "level", "message", "target"].contains(&key.as_str()) {
                continue;
            }
            match value {
                Value::String(s) if !s.contains(' ') && !s.is_empty() => {
                    text.push_str(&format!(" {key}={s}"));
                }
                other => text.push_str(&format!(" {key}={other}")),
            }
        }
        Some(text)
    }

    fn level(&self, level: &str) -> String {
        let colour = match level {
            "ERROR" => "31",
            "WARN" => "33",
            "INFO" => "32",
            _ => "2",
        };
        if self.colour {
            format!("\x1b[{colour}m{level:>5}\x1b[0m")
        } else {
            format!("{level:>5}")
        }
    }

    fn print(&self, lines: impl IntoIterator<Item = String>) -> CliResult {
        let mut text = String::new();
        for line in lines {
            if let Some(shown) = self.render(&line) {
                text.push_str(&shown);
                text.push('\n');
            }
        }
        if !text.is_empty() {
            crate::run::print_stdout(&text)?;
        }
        Ok(())
    }
}

/// Keeps the last `limit` lines (every line when `None`).
struct Keep {
    limit: Option<usize>,
    lines: VecDeque<String>,
}

impl Keep {
    fn push(&mut self, line: String) {
        if self.limit == Some(0) {
            return;
        }
        self.lines.push_back(line);
        if self.limit.is_some_and(|n| self.lines.len() > n) {
            self.lines.pop_front();
        }
    }
}

fn local(home_path: &Path, limit: Option<usize>, follow: bool, printer: &Printer) -> CliResult {
    let home = Home::open(home_path)?;
    let current = home.join(GATEWAY_LOG);
    let mut files = rotated(&current);
    if printer.since.is_none() {
        // The last lines are in the current file, or just rotated into the first copy.
        files.truncate(1);
    }
    files.reverse();
    let mut keep = Keep {
        limit,
        lines: VecDeque::new(),
    };
    let mut keep_if_recent = |line: String| {
        if printer.since.is_none() || printer.render(&line).is_some() {
            keep.push(line);
        }
    };
    for file in &files {
        read_lines(file, &mut keep_if_recent)?;
    }
    let mut cursor = read_lines(&current, &mut keep_if_recent)?;
    printer.print(keep.lines.drain(..))?;
    if !follow {
        if !current.exists() {
            eprintln!(
                "lurkbot logs: no log yet at {} (the gateway writes it; start one with `lurkbot gateway`)",
                current.display()
            );
        }
        return Ok(());
    }
    loop {
        std::thread::sleep(FOLLOW_EVERY);
        let window = lurkbot_core::tail(&current, Some(cursor), 5000, 1_000_000)?;
        cursor = window.cursor;
        printer.print(window.lines)?;
    }
}

/// The rotated copies of `current`, newest first.
fn rotated(current: &Path) -> Vec<PathBuf> {
    (1..=100)
        .map(|n| PathBuf::from(format!("{}.{n}", current.display())))
        .take_while(|p| p.exists())
        .collect()
}

/// Calls `each` with every whole line of `path`; the byte offset after the last whole line (a
/// missing file reads as empty).
fn read_lines(path: &Path, each: &mut dyn FnMut(String)) -> Result<u64, CliError> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(CliError::failed("logs", format!("{}: {e}", path.display()))),
    };
    let mut reader = BufReader::new(file);
    let mut offset = 0u64;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| CliError::failed("logs", format!("{}: {e}", path.display())))?;
        if n == 0 || buf.last() != Some(&b'\n') {
            return Ok(offset);
        }
        offset += n as u64;
        let line = String::from_utf8_lossy(&buf[..n - 1]).into_owned();
        if !line.is_empty() {
            each(line);
        }
    }
}

fn remote(
    home_path: &Path,
    url: &str,
    limit: Option<usize>,
    follow: bool,
    printer: &Printer,
) -> CliResult {
    let token = Home::open(home_path)
        .ok()
        .and_then(|h| crate::cli::remote::gateway_token(&h));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut client = crate::cli::remote::Remote::connect(url, token.as_deref())
            .await
            .map_err(|e| CliError::failed("logs", format!("{e:#}")))?;
        let mut params =
            json!({"limit": limit.unwrap_or(5000).clamp(1, 5000), "maxBytes": 1_000_000});
        loop {
            let window = match client
                .call(lurkbot_gateway::protocol::method::LOGS_TAIL, params)
                .await
            {
                Ok(Ok(w)) => w,
                Ok(Err((code, message))) => {
                    return Err(CliError::failed(
                        "logs",
                        format!("logs.tail refused ({code}): {message}"),
                    ));
                }
                Err(e) => return Err(CliError::failed("logs", format!("{e:#}"))),
            };
            let lines = window
                .get("lines")
                .and_then(Value::as_array)
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default();
            printer.print(lines)?;
            if !follow {
                return Ok(());
            }
            let cursor = window.get("cursor").and_then(Value::as_u64).unwrap_or(0);
            params = json!({"cursor": cursor, "maxBytes": 1_000_000});
            tokio::time::sleep(FOLLOW_EVERY).await;
        }
    })
}
