//! The files `zip create` / `tar create` put in an archive: a sorted walk of `--src`.
//!
//! Entry names start with the last segment of `--src` (like `zip -r out.zip dir` and
//! `tar -C parent -cf out.tar dir`), or have no prefix when `--src` is the home itself.
//! Symbolic links are followed only when they resolve inside the home; a link that leads
//! outside, dangles or loops back to a parent folder is skipped (`skipped.unsafe_link`).
//! Secrets of the protection model (`config.toml` and its temporary copies, every `.env`, skill
//! secrets, hard links to them) are never archived (`skipped.secret`); sockets, FIFOs and
//! devices are skipped (`skipped.unsupported`). The archive being written is left out.

use std::fs::{self, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use lurkbot_core::{Home, HomePath, SessionKey};
use serde::Serialize;

use super::extractor::SkippedEntry;
use crate::blocking::cancelled;
use crate::{CancelFlag, CommandCtx, CommandError, ErrorCode};

/// How many skipped sources are named in the result.
const SKIPPED_NAMES_CAP: usize = 100;

/// One file or directory to archive.
pub(crate) struct SourceItem {
    /// The entry name, `/`-separated, as raw bytes (no trailing `/`).
    pub(crate) name: Vec<u8>,
    /// Where to read it (link targets resolved).
    pub(crate) path: PathBuf,
    /// Its metadata (links followed).
    pub(crate) meta: Metadata,
}

impl SourceItem {
    /// The name for messages.
    pub(crate) fn display(&self) -> String {
        String::from_utf8_lossy(&self.name).into_owned()
    }
}

/// Counts of sources left out, by reason.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub(crate) struct SourceSkips {
    /// A secret of the protection model.
    pub(crate) secret: u64,
    /// A link leading outside the home, dangling, or looping.
    pub(crate) unsafe_link: u64,
    /// A socket, FIFO or device.
    pub(crate) unsupported: u64,
}

/// The walk's result.
#[derive(Default)]
pub(crate) struct SourceTree {
    /// What to archive, parents before children, names sorted.
    pub(crate) items: Vec<SourceItem>,
    /// What was left out.
    pub(crate) skipped: SourceSkips,
    /// The first sources left out, with reasons.
    pub(crate) skipped_entries: Vec<SkippedEntry>,
}

impl SourceTree {
    /// Bytes of all files.
    pub(crate) fn total_bytes(&self) -> u64 {
        self.items
            .iter()
            .filter(|i| i.meta.is_file())
            .map(|i| i.meta.len())
            .sum()
    }

    fn skip(&mut self, name: &[u8], reason: &str, counter: fn(&mut SourceSkips) -> &mut u64) {
        *counter(&mut self.skipped) += 1;
        if self.skipped_entries.len() < SKIPPED_NAMES_CAP {
            self.skipped_entries.push(SkippedEntry {
                name: String::from_utf8_lossy(name).into_owned(),
                reason: reason.into(),
            });
        }
    }
}

/// Refuses a `--src` that is a secret or does not exist.
pub(crate) fn check_source(ctx: &CommandCtx<'_>, src: &HomePath) -> Result<(), CommandError> {
    let protection = ctx.home.protection_for(src.absolute(), ctx.session);
    if !protection.readable() {
        return Err(CommandError::new(
            ErrorCode::PermissionDenied,
            format!(
                "cannot archive '{}': {}",
                src.relative(),
                protection.reason().unwrap_or("it is a secret")
            ),
        ));
    }
    if !src.absolute().exists() {
        return Err(CommandError::new(
            ErrorCode::NotFound,
            format!("no file or folder at '{}'", src.relative()),
        )
        .with_hint("paths are relative to the LurkBot home; check the name"));
    }
    Ok(())
}

/// Walks `src`, leaving out the paths in `exclude` (the archive being written).
///
/// # Errors
/// `IoError` when a folder cannot be read, `Timeout` when cancelled.
pub(crate) fn collect(
    home: &Home,
    session: &SessionKey,
    src: &HomePath,
    exclude: &[&Path],
    cancel: &CancelFlag,
) -> Result<SourceTree, CommandError> {
    let mut tree = SourceTree::default();
    let root = src.absolute().to_path_buf();
    let meta = fs::metadata(&root).map_err(|e| CommandError::io("read", src.relative(), &e))?;
    let base: Vec<u8> = src
        .relative()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .as_bytes()
        .to_vec();
    let walker = Walker {
        home,
        session,
        exclude,
        cancel,
    };
    if meta.is_dir() {
        let mut ancestors = vec![root.clone()];
        if !base.is_empty() {
            tree.items.push(SourceItem {
                name: base.clone(),
                path: root.clone(),
                meta,
            });
        }
        walker.walk_dir(&root, &base, &mut ancestors, &mut tree)?;
    } else {
        tree.items.push(SourceItem {
            name: base,
            path: root,
            meta,
        });
    }
    Ok(tree)
}

struct Walker<'a> {
    home: &'a Home,
    session: &'a SessionKey,
    exclude: &'a [&'a Path],
    cancel: &'a CancelFlag,
}

impl Walker<'_> {
    fn walk_dir(
        &self,
        dir: &Path,
        prefix: &[u8],
        ancestors: &mut Vec<PathBuf>,
        tree: &mut SourceTree,
    ) -> Result<(), CommandError> {
        let shown = String::from_utf8_lossy(prefix).into_owned();
        let mut children: Vec<_> = fs::read_dir(dir)
            .and_then(|rd| rd.map(|e| e.map(|e| e.file_name())).collect())
            .map_err(|e| CommandError::io("read the folder", &shown, &e))?;
        children.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        for child in children {
            if self.cancel.is_cancelled() {
                return Err(cancelled());
            }
            let mut name = prefix.to_vec();
            if !name.is_empty() {
                name.push(b'/');
            }
            name.extend_from_slice(child.as_bytes());
            let path = dir.join(&child);
            let Ok(link_meta) = fs::symlink_metadata(&path) else {
                continue; // vanished meanwhile
            };
            let (real, meta) = if link_meta.file_type().is_symlink() {
                match path.canonicalize() {
                    Ok(target) if target.starts_with(self.home.root()) => {
                        match fs::metadata(&target) {
                            Ok(meta) => (target, meta),
                            Err(_) => {
                                tree.skip(&name, "the link dangles", |s| &mut s.unsafe_link);
                                continue;
                            }
                        }
                    }
                    Ok(_) => {
                        tree.skip(&name, "the link leads outside the home", |s| {
                            &mut s.unsafe_link
                        });
                        continue;
                    }
                    Err(_) => {
                        tree.skip(&name, "the link dangles", |s| &mut s.unsafe_link);
                        continue;
                    }
                }
            } else {
                (path, link_meta)
            };
            if self.exclude.iter().any(|x| *x == real) {
                continue;
            }
            let protection = self.home.protection_for(&real, self.session);
            if !protection.readable() {
                let why = protection.reason().unwrap_or("it is a secret");
                tree.skip(&name, why, |s| &mut s.secret);
                continue;
            }
            if meta.is_dir() {
                if ancestors.contains(&real) {
                    tree.skip(&name, "the link loops back to a parent folder", |s| {
                        &mut s.unsafe_link
                    });
                    continue;
                }
                tree.items.push(SourceItem {
                    name: name.clone(),
                    path: real.clone(),
                    meta,
                });
                ancestors.push(real.clone());
                self.walk_dir(&real, &name, ancestors, tree)?;
                ancestors.pop();
            } else if meta.is_file() {
                tree.items.push(SourceItem {
                    name,
                    path: real,
                    meta,
                });
            } else {
                tree.skip(&name, "sockets, FIFOs and devices are not archived", |s| {
                    &mut s.unsupported
                });
            }
        }
        Ok(())
    }
}
