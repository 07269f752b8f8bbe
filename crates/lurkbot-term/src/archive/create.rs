//! The steps `zip create` and `tar create` share: resolve `--src` and `--out`, walk the
//! source, write the archive into a temporary file with the format's writer, publish it.

use crate::archive::args::CreateArgs;
use std::fs::File;

use lurkbot_core::HomePath;

use super::publish::NewArchive;
use super::source::{self, SourceItem, SourceTree};
use crate::blocking::run_blocking;
use crate::{CancelFlag, CommandCtx, CommandError, Progress};

/// What a format's writer counted.
#[derive(Debug, Default)]
pub(crate) struct CreateStats {
    /// Files stored.
    pub(crate) files: u64,
    /// Folders stored.
    pub(crate) dirs: u64,
    /// Bytes read from the files.
    pub(crate) bytes_in: u64,
}

/// What a format's writer works with.
pub(crate) struct WriteJob<'a> {
    /// The temporary file to write the archive into.
    pub(crate) file: &'a mut File,
    /// What to store, parents first.
    pub(crate) items: &'a [SourceItem],
    /// The archive's name for messages.
    pub(crate) shown: &'a str,
    /// Set when the run times out.
    pub(crate) cancel: &'a CancelFlag,
    /// Progress display.
    pub(crate) progress: &'a Progress,
}

/// A published archive.
pub(crate) struct Created {
    /// `--src`.
    pub(crate) src: HomePath,
    /// `--out`.
    pub(crate) out: HomePath,
    /// The archive's size.
    pub(crate) bytes_written: u64,
    /// The writer's counts.
    pub(crate) stats: CreateStats,
    /// The walk, with what it left out.
    pub(crate) tree: SourceTree,
}

/// Checks `--src` and `--out`, then writes and publishes the archive.
///
/// # Errors
/// Path refusals, `RefuseOverwrite`, and the writer's errors.
pub(crate) async fn create_archive<F>(
    ctx: &CommandCtx<'_>,
    args: &CreateArgs,
    write: F,
) -> Result<Created, CommandError>
where
    F: FnOnce(WriteJob<'_>) -> Result<CreateStats, CommandError> + Send + 'static,
{
    let src = ctx.home.resolve(&args.src)?;
    source::check_source(ctx, &src)?;
    let target = crate::output::strict_target(ctx, &args.out)?;
    let overwrite = args.out.overwrite && args.out.confirm;
    let home = ctx.home.clone();
    let session = ctx.session.clone();
    let cancel = ctx.cancel.clone();
    let progress = ctx.progress.clone();
    run_blocking(move || {
        let mut archive = NewArchive::create(target, overwrite)?;
        let exclude = [
            archive.temp_path().to_path_buf(),
            archive.target().absolute().to_path_buf(),
        ];
        let exclude: Vec<&std::path::Path> = exclude.iter().map(|p| p.as_path()).collect();
        let tree = source::collect(&home, &session, &src, &exclude, &cancel)?;
        let shown = archive.target().relative().to_string();
        progress.begin(&format!("creating {shown}"), Some(tree.total_bytes()));
        let written = write(WriteJob {
            file: archive.file(),
            items: &tree.items,
            shown: &shown,
            cancel: &cancel,
            progress: &progress,
        });
        progress.end();
        let stats = written?;
        let out = archive.target().clone();
        let bytes_written = archive.publish()?;
        Ok(Created {
            src,
            out,
            bytes_written,
            stats,
            tree,
        })
    })
    .await
}
