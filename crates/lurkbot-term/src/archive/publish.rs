//! A new archive file: written to a hidden temporary file beside the target, synced, then
//! renamed into place, so readers never see a half-written archive and a failure leaves the
//! previous file (if any) untouched.

use std::fs::File;
use std::path::Path;

use lurkbot_core::HomePath;
use tempfile::NamedTempFile;

use crate::{CommandError, ErrorCode};

/// An archive being written.
pub(crate) struct NewArchive {
    temp: NamedTempFile,
    target: HomePath,
    overwrite: bool,
}

impl NewArchive {
    /// Starts a new archive for `target` (already checked with
    /// [`crate::output::strict_target`]); creates its parent directories.
    ///
    /// # Errors
    /// `IoError` when the directory or the temporary file cannot be created.
    pub(crate) fn create(target: HomePath, overwrite: bool) -> Result<Self, CommandError> {
        let shown = target.relative().to_string();
        let parent = target.absolute().parent().ok_or_else(|| {
            CommandError::new(
                ErrorCode::InvalidArgs,
                format!("'{shown}' has no parent directory"),
            )
        })?;
        std::fs::create_dir_all(parent)
            .map_err(|e| CommandError::io("create the folder of", &shown, &e))?;
        // Partial archives a killed run left here (older than an hour) go first.
        lurkbot_core::sweep_stale_temp_in(parent);
        let temp = tempfile::Builder::new()
            .prefix(".lurkbot-new-")
            .tempfile_in(parent)
            .map_err(|e| CommandError::io("create a temporary file for", &shown, &e))?;
        Ok(Self {
            temp,
            target,
            overwrite,
        })
    }

    /// The temporary file to write into.
    pub(crate) fn file(&mut self) -> &mut File {
        self.temp.as_file_mut()
    }

    /// Where the temporary file is (a walk over the sources skips it).
    pub(crate) fn temp_path(&self) -> &Path {
        self.temp.path()
    }

    /// The final location.
    pub(crate) fn target(&self) -> &HomePath {
        &self.target
    }

    /// Syncs the file and renames it into place; returns its size.
    ///
    /// # Errors
    /// `IoError`, or `RefuseOverwrite` if the target appeared meanwhile and may not be replaced.
    pub(crate) fn publish(self) -> Result<u64, CommandError> {
        let shown = self.target.relative().to_string();
        let file = self.temp.as_file();
        file.sync_all()
            .map_err(|e| CommandError::io("write", &shown, &e))?;
        let size = file
            .metadata()
            .map_err(|e| CommandError::io("read", &shown, &e))?
            .len();
        let persisted = if self.overwrite {
            self.temp.persist(self.target.absolute())
        } else {
            self.temp.persist_noclobber(self.target.absolute())
        };
        persisted.map_err(|e| {
            if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                CommandError::new(
                    ErrorCode::RefuseOverwrite,
                    format!("'{shown}' exists and was kept"),
                )
                .with_hint("add --overwrite --confirm to replace it, or choose another path")
            } else {
                CommandError::io("move into place", &shown, &e.error)
            }
        })?;
        Ok(size)
    }
}
