//! The staged extractor shared by `zip extract` and `tar extract`.
//!
//! Entries are first written into a hidden staging directory inside `--dest`
//! (`.lurkbot-extract-*`), counting the bytes actually written against `--max-bytes` and the
//! entries against `--max-files`. Only when the whole archive has been read without error are the
//! staged files moved into place with `rename`. So a bomb, a corrupt archive, a timeout or a
//! crash never leaves a half-written file that looks complete: `--dest` keeps its previous state
//! (a crash can at most leave the hidden staging directory behind).
//!
//! Nothing is ever written through a symbolic link: links inside `--dest` met on the way are
//! refused (`skipped.unsafe_path`), and link entries are never created (`skipped.unsafe_link`).

use super::args::ExtractArgs;
use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::SystemTime;

use lurkbot_core::{Home, HomePath};
use tempfile::TempDir;

use super::entry_name::{UnsafeName, safe_segments};
pub(crate) use super::extract_report::{ExtractReport, SkipReason, SkippedEntry};
use super::work::{Limits, dest_dir, human_bytes, input_file};
use crate::blocking::cancelled;
use crate::{CancelFlag, CommandCtx, CommandError, ErrorCode, Progress};

/// How many skipped entries are named in the result (the counts are always complete).
const SKIPPED_NAMES_CAP: usize = 100;
/// Copy buffer size.
const CHUNK: usize = 256 * 1024;
/// Longest file name (one path segment) the common file systems accept.
const MAX_NAME_BYTES: usize = 255;

/// Settings of one extraction.
pub(crate) struct ExtractOptions {
    /// Where entries go (resolved inside the home).
    pub(crate) dest: HomePath,
    /// The home, whose protection model every entry is checked against.
    pub(crate) home: Home,
    /// `--overwrite --confirm` was given.
    pub(crate) overwrite: bool,
    /// Bomb limits.
    pub(crate) limits: Limits,
    /// The code for a failure to read the archive (`ZipError` or `TarError`).
    pub(crate) archive_error: ErrorCode,
    /// Set when the run times out.
    pub(crate) cancel: CancelFlag,
    /// Progress display.
    pub(crate) progress: Progress,
}

impl ExtractOptions {
    /// The options of `extract` from its flags, with the archive to read: resolves `--dest`
    /// and `--in`, in that order.
    ///
    /// # Errors
    /// Path refusals or `NotFound`.
    pub(crate) fn resolve(
        ctx: &CommandCtx<'_>,
        args: &ExtractArgs,
        archive_error: ErrorCode,
    ) -> Result<(HomePath, Self), CommandError> {
        let dest = dest_dir(ctx, &args.dest)?;
        let input = input_file(ctx, &args.input)?;
        let options = Self {
            dest,
            home: ctx.home.clone(),
            overwrite: args.overwrite,
            limits: args.limits,
            archive_error,
            cancel: ctx.cancel.clone(),
            progress: ctx.progress.clone(),
        };
        Ok((input, options))
    }
}

/// Metadata applied to an extracted entry.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EntryMeta {
    /// Modification time.
    pub(crate) mtime: Option<SystemTime>,
    /// Unix permission bits.
    pub(crate) mode: Option<u32>,
}

/// What a commit has put in place so far (for the roll-back).
#[derive(Default)]
struct Placed {
    /// Files that did not exist before.
    files: Vec<PathBuf>,
    /// Folders created.
    dirs: Vec<PathBuf>,
    /// Existing files replaced (`--overwrite`): these cannot be rolled back.
    replaced: u64,
}

enum Kind {
    File { staged: PathBuf, size: u64 },
    Dir,
}

struct Staged {
    segments: Vec<String>,
    kind: Kind,
    meta: EntryMeta,
    live: bool,
}

/// What is at an entry's target in `--dest`.
enum Target {
    Absent,
    /// A file or link that `rename` may replace.
    Replaceable,
    /// A directory.
    Directory,
    /// Cannot be written: a parent is a file, or a link.
    Blocked(SkipReason),
}

/// Extracts entries into staging, then commits them to `--dest`.
pub(crate) struct Extractor {
    opts: ExtractOptions,
    staging: TempDir,
    created_dest: Vec<PathBuf>,
    committed: bool,
    bytes_staged: u64,
    items: Vec<Staged>,
    index: HashMap<Vec<String>, usize>,
    report: ExtractReport,
    buf: Vec<u8>,
    /// Folders under `--dest` known to be real directories (not links), to skip repeated checks.
    known_dirs: HashSet<PathBuf>,
}

impl Extractor {
    /// Creates `--dest` if needed and the staging directory inside it.
    ///
    /// # Errors
    /// `IoError` when the directories cannot be created.
    pub(crate) fn new(opts: ExtractOptions) -> Result<Self, CommandError> {
        let dest = opts.dest.absolute().to_path_buf();
        let shown = opts.dest.relative().to_string();
        let mut created_dest = Vec::new();
        let mut missing = Some(dest.as_path());
        while let Some(dir) = missing.filter(|d| fs::symlink_metadata(d).is_err()) {
            created_dest.push(dir.to_path_buf());
            missing = dir.parent();
        }
        fs::create_dir_all(&dest).map_err(|e| CommandError::io("create", &shown, &e))?;
        if !dest.is_dir() {
            return Err(CommandError::new(
                ErrorCode::InvalidArgs,
                format!("--dest '{shown}' is not a directory"),
            ));
        }
        // Staging folders a killed run left here (older than an hour) go first.
        lurkbot_core::sweep_stale_temp_in(&dest);
        let staging = tempfile::Builder::new()
            .prefix(".lurkbot-extract-")
            .tempdir_in(&dest)
            .map_err(|e| CommandError::io("create a staging directory in", &shown, &e))?;
        let report = ExtractReport {
            dirs_created: created_dest.len() as u64,
            ..ExtractReport::default()
        };
        Ok(Self {
            opts,
            staging,
            created_dest,
            committed: false,
            bytes_staged: 0,
            items: Vec::new(),
            index: HashMap::new(),
            report,
            buf: vec![0; CHUNK],
            known_dirs: HashSet::new(),
        })
    }

    /// Counts an entry against `--max-files` and checks its name; `None` when it is skipped.
    fn admit(&mut self, name: &str) -> Result<Option<Vec<String>>, CommandError> {
        if self.opts.cancel.is_cancelled() {
            return Err(cancelled());
        }
        self.report.entries_total += 1;
        let max = self.opts.limits.max_files;
        if self.report.entries_total > max {
            return Err(CommandError::new(
                ErrorCode::ArchiveTooLarge,
                format!(
                    "the archive has more than {max} entries (--max-files); nothing was extracted"
                ),
            )
            .with_hint("if you trust the archive, raise --max-files")
            .with_detail("max_files", max));
        }
        match safe_segments(name) {
            Ok(segments) if segments.iter().any(|s| s.len() > MAX_NAME_BYTES) => {
                self.skip(
                    name,
                    SkipReason::UnsafePath("a part of the name is longer than 255 bytes"),
                );
                Ok(None)
            }
            Ok(segments) => {
                let target = self.opts.dest.absolute().join(segments.join("/"));
                // Outside the home means a link in --dest leads there: the link checks name it.
                if let Some(why) = self
                    .opts
                    .home
                    .protection_inside(&target)
                    .and_then(|p| p.reason())
                {
                    self.skip(name, SkipReason::Protected(why));
                    return Ok(None);
                }
                Ok(Some(segments))
            }
            Err(why) => {
                self.skip(name, SkipReason::UnsafePath(why.describe()));
                Ok(None)
            }
        }
    }

    /// Records a skipped entry.
    pub(crate) fn skip(&mut self, name: &str, reason: SkipReason) {
        let counts = &mut self.report.skipped;
        match reason {
            SkipReason::Existing => counts.existing += 1,
            SkipReason::UnsafePath(_) => counts.unsafe_path += 1,
            SkipReason::Protected(_) => counts.protected += 1,
            SkipReason::UnsafeLink => counts.unsafe_link += 1,
            SkipReason::TooLarge => counts.too_large += 1,
            SkipReason::Unsupported => counts.unsupported += 1,
        }
        if self.report.skipped_entries.len() < SKIPPED_NAMES_CAP {
            self.report.skipped_entries.push(SkippedEntry {
                name: name.chars().filter(|c| *c != '\0').collect(),
                reason: reason.describe(),
            });
        }
    }

    /// Counts and skips an entry that is never extracted (a link or a special file).
    ///
    /// # Errors
    /// `ArchiveTooLarge` past `--max-files`.
    pub(crate) fn skip_entry(
        &mut self,
        name: &str,
        reason: SkipReason,
    ) -> Result<(), CommandError> {
        if self.admit(name)?.is_some() {
            self.skip(name, reason);
        }
        Ok(())
    }

    /// What is at `segments` under `--dest`, never following links.
    fn target(&mut self, segments: &[String]) -> Target {
        let mut path = self.opts.dest.absolute().to_path_buf();
        for (i, segment) in segments.iter().enumerate() {
            path.push(segment);
            let last = i + 1 == segments.len();
            if !last && self.known_dirs.contains(&path) {
                continue;
            }
            match fs::symlink_metadata(&path) {
                Err(_) => return Target::Absent,
                Ok(meta) if meta.file_type().is_symlink() => {
                    return if last {
                        Target::Replaceable
                    } else {
                        Target::Blocked(SkipReason::UnsafePath(
                            "a parent in --dest is a symbolic link",
                        ))
                    };
                }
                Ok(meta) if meta.is_dir() => {
                    if last {
                        return Target::Directory;
                    }
                    self.known_dirs.insert(path.clone());
                }
                Ok(_) => {
                    return if last {
                        Target::Replaceable
                    } else {
                        Target::Blocked(SkipReason::Existing)
                    };
                }
            }
        }
        Target::Directory
    }

    /// Stages a regular file entry, reading its content from `reader`.
    ///
    /// # Errors
    /// `ArchiveTooLarge` past a limit, the archive's code when reading fails, `IoError` when
    /// writing fails, `Timeout` when cancelled.
    pub(crate) fn file(
        &mut self,
        name: &str,
        declared_size: u64,
        meta: EntryMeta,
        reader: &mut dyn Read,
    ) -> Result<(), CommandError> {
        let Some(segments) = self.admit(name)? else {
            return Ok(());
        };
        if segments.is_empty() {
            self.skip(name, SkipReason::UnsafePath(UnsafeName::Empty.describe()));
            return Ok(());
        }
        if declared_size > self.opts.limits.max_bytes {
            self.skip(name, SkipReason::TooLarge);
            return Ok(());
        }
        match self.target(&segments) {
            Target::Absent => {}
            Target::Replaceable if self.opts.overwrite => {}
            Target::Replaceable | Target::Directory => {
                self.skip(name, SkipReason::Existing);
                return Ok(());
            }
            Target::Blocked(reason) => {
                self.skip(name, reason);
                return Ok(());
            }
        }
        let staged = self.staging.path().join(self.items.len().to_string());
        let size = self.copy_into(&staged, name, reader, meta)?;
        self.push(segments, Kind::File { staged, size }, meta);
        Ok(())
    }

    fn copy_into(
        &mut self,
        staged: &PathBuf,
        name: &str,
        reader: &mut dyn Read,
        meta: EntryMeta,
    ) -> Result<u64, CommandError> {
        let mut out = File::create(staged).map_err(|e| CommandError::io("write", name, &e))?;
        let mut size = 0u64;
        loop {
            if self.opts.cancel.is_cancelled() {
                return Err(cancelled());
            }
            let n = match reader.read(&mut self.buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(CommandError::new(
                        self.opts.archive_error,
                        format!("cannot read entry '{name}': {e}; nothing was extracted"),
                    )
                    .with_hint("the archive is corrupt, truncated or not what its name says"));
                }
            };
            let max = self.opts.limits.max_bytes;
            let n64 = n as u64;
            if self.bytes_staged + n64 > max {
                return Err(CommandError::new(
                    ErrorCode::ArchiveTooLarge,
                    format!(
                        "extracting would write more than {} (--max-bytes {max}); nothing was extracted",
                        human_bytes(max)
                    ),
                )
                .with_hint("if you trust the archive, raise --max-bytes")
                .with_detail("max_bytes", max));
            }
            out.write_all(&self.buf[..n])
                .map_err(|e| CommandError::io("write", name, &e))?;
            self.bytes_staged += n64;
            size += n64;
            self.opts.progress.advance(n64);
        }
        // Set on the open file: `rename` keeps both, and no second open is needed.
        if let Some(mode) = meta.mode {
            // The owner's bits only: what LurkBot creates in the home is private (an
            // executable stays executable, for its owner).
            out.set_permissions(fs::Permissions::from_mode((mode & 0o700) | 0o600))
                .map_err(|e| CommandError::io("set permissions of", name, &e))?;
        }
        if let Some(time) = meta.mtime {
            out.set_modified(time)
                .map_err(|e| CommandError::io("set the time of", name, &e))?;
        }
        Ok(size)
    }

    /// Records a directory entry.
    ///
    /// # Errors
    /// `ArchiveTooLarge` past `--max-files`.
    pub(crate) fn dir(&mut self, name: &str, meta: EntryMeta) -> Result<(), CommandError> {
        let Some(segments) = self.admit(name)? else {
            return Ok(());
        };
        if segments.is_empty() {
            return Ok(());
        }
        match self.target(&segments) {
            Target::Absent | Target::Directory => self.push(segments, Kind::Dir, meta),
            Target::Replaceable => self.skip(name, SkipReason::Existing),
            Target::Blocked(reason) => self.skip(name, reason),
        }
        Ok(())
    }

    fn push(&mut self, segments: Vec<String>, kind: Kind, meta: EntryMeta) {
        if let Some(&earlier) = self.index.get(&segments) {
            // A later entry with the same name wins, as with the classic tools.
            self.items[earlier].live = false;
        }
        self.index.insert(segments.clone(), self.items.len());
        self.items.push(Staged {
            segments,
            kind,
            meta,
            live: true,
        });
    }

    /// Moves every staged entry into `--dest` and returns what was done.
    ///
    /// # Errors
    /// `IoError` when a move fails (entries already moved stay; the rest are removed).
    pub(crate) fn commit(mut self) -> Result<ExtractReport, CommandError> {
        self.committed = true;
        let mut placed = Placed::default();
        match self.commit_items(&mut placed) {
            Ok(()) => Ok(std::mem::take(&mut self.report)),
            Err(error) => {
                // All or nothing: what this run created goes again; a file it replaced cannot
                // come back, and the error says how many there were.
                let replaced = placed.replaced;
                for file in placed.files.iter().rev() {
                    let _ = fs::remove_file(file);
                }
                let _ = fs::remove_dir_all(self.staging.path());
                for dir in placed.dirs.iter().rev().chain(self.created_dest.iter()) {
                    let _ = fs::remove_dir(dir);
                }
                let mut message = format!(
                    "{}; the files this run had moved into place were removed",
                    error.message
                );
                if replaced > 0 {
                    message.push_str(&format!(
                        " ({replaced} existing files had already been replaced)"
                    ));
                }
                Err(CommandError { message, ..error }
                    .with_detail("replaced_before_failure", replaced))
            }
        }
    }

    fn commit_items(&mut self, placed: &mut Placed) -> Result<(), CommandError> {
        let items = std::mem::take(&mut self.items);
        let mut dir_times = Vec::new();
        for item in items.iter().filter(|i| i.live) {
            let shown = item.segments.join("/");
            match &item.kind {
                Kind::Dir => match self.ensure_dirs(&item.segments, placed)? {
                    Ok(path) => {
                        if let Some(t) = item.meta.mtime {
                            dir_times.push((path, t));
                        }
                    }
                    Err(reason) => self.skip(&shown, reason),
                },
                Kind::File { staged, size } => {
                    let parent = &item.segments[..item.segments.len() - 1];
                    if let Err(reason) = self.ensure_dirs(parent, placed)? {
                        self.skip(&shown, reason);
                        continue;
                    }
                    let replacing = match self.target(&item.segments) {
                        Target::Absent => false,
                        Target::Replaceable if self.opts.overwrite => true,
                        Target::Replaceable | Target::Directory => {
                            self.skip(&shown, SkipReason::Existing);
                            continue;
                        }
                        Target::Blocked(reason) => {
                            self.skip(&shown, reason);
                            continue;
                        }
                    };
                    let target = self.opts.dest.absolute().join(item.segments.join("/"));
                    fs::rename(staged, &target)
                        .map_err(|e| CommandError::io("move into place", &shown, &e))?;
                    if replacing {
                        placed.replaced += 1;
                    } else {
                        placed.files.push(target);
                    }
                    self.report.files_written += 1;
                    self.report.bytes_written += size;
                }
            }
        }
        // Deepest first, after every file is in place, so later writes do not bump them.
        for (path, time) in dir_times.iter().rev() {
            if let Ok(dir) = File::open(path) {
                let _ = dir.set_modified(*time);
            }
        }
        Ok(())
    }

    /// Creates the directories of `segments` under `--dest` as needed, never through a link.
    /// The outer error is an I/O failure; the inner one a reason to skip the entry.
    fn ensure_dirs(
        &mut self,
        segments: &[String],
        placed: &mut Placed,
    ) -> Result<Result<PathBuf, SkipReason>, CommandError> {
        let mut path = self.opts.dest.absolute().to_path_buf();
        for segment in segments {
            path.push(segment);
            if self.known_dirs.contains(&path) {
                continue;
            }
            match fs::symlink_metadata(&path) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Ok(Err(SkipReason::UnsafePath(
                        "a parent in --dest is a symbolic link",
                    )));
                }
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => return Ok(Err(SkipReason::Existing)),
                Err(_) => {
                    fs::create_dir(&path).map_err(|e| CommandError::io("create", segment, &e))?;
                    self.report.dirs_created += 1;
                    placed.dirs.push(path.clone());
                }
            }
            self.known_dirs.insert(path.clone());
        }
        Ok(Ok(path))
    }
}

impl Drop for Extractor {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // Roll back: the staging directory goes with `self.staging`; a `--dest` created for this
        // run goes too when it is still empty.
        let _ = fs::remove_dir_all(self.staging.path());
        for dir in &self.created_dest {
            if fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}
