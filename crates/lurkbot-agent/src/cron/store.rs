//! `cron/jobs.json` (`{"version": 1, "jobs": […]}`, written atomically) and one run log per job
//! (`cron/runs/<jobId>.jsonl`, append-only). Recording a run keeps the job's state: the next run
//! from its schedule, or after a failure a retry back-off from 30 s doubling to 60 min; after 10
//! failures in a row the job is disabled with the reason; a `deleteAfterRun` job goes after its
//! first success, an `at` job is disabled once it ran. Every "now" is given by the caller.

use std::path::PathBuf;

use lurkbot_core::{Home, layout};
use serde::{Deserialize, Serialize};

use super::job::{CronJob, JobError, RunStatus};

/// Failures in a row after which a job is disabled.
pub const MAX_CONSECUTIVE_ERRORS: u32 = 10;
/// The first retry delay after a failure, and the longest.
const FIRST_RETRY_MS: u64 = 30_000;
const MAX_RETRY_MS: u64 = 3_600_000;

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
struct JobsFile {
    version: u32,
    jobs: Vec<CronJob>,
}

/// One line of a run log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    /// When the run started (ms since the epoch).
    pub ts: u64,
    /// How it ended.
    pub status: RunStatus,
    /// Why it failed or was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: u64,
    /// The session it ran on.
    pub session_key: String,
}

/// The reason a run missed while the gateway was down is logged as skipped.
pub const MISSED: &str =
    "missed while the gateway was down; not run because [cron] catch_up = \"none\"";

/// Why the store could not do it.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The job breaks a rule (nothing was stored).
    #[error(transparent)]
    Job(#[from] JobError),
    /// No job has this id.
    #[error("no cron job '{0}'; `lurkbot cron list` shows the ids")]
    NotFound(String),
    /// `jobs.json` is not readable JSON.
    #[error("{path}: {reason}; fix or remove the file (a backup of it is your jobs)")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The job is running now (in this or another process).
    #[error(
        "cron job '{0}' is running now; wait for it (`lurkbot cron runs {0}` shows when it ended)"
    )]
    Busy(String),
    /// Reading or writing failed.
    #[error(transparent)]
    Io(#[from] lurkbot_core::CoreError),
}

/// Held while one job runs (a lock on `cron/runs/<jobId>.lock`): no other process runs it.
#[derive(Debug)]
pub struct JobLock {
    _file: std::fs::File,
}

/// The jobs of one home.
#[derive(Debug, Clone)]
pub struct CronStore {
    dir: PathBuf,
    home: Home,
}

impl CronStore {
    /// The store of `home`.
    pub fn open(home: &Home) -> Self {
        Self {
            dir: home.join(layout::CRON),
            home: home.clone(),
        }
    }

    /// The home the store belongs to.
    pub fn home(&self) -> &Home {
        &self.home
    }

    fn jobs_path(&self) -> PathBuf {
        self.dir.join("jobs.json")
    }

    /// Every job (none when the file does not exist).
    ///
    /// # Errors
    /// [`StoreError::Corrupt`] for a file that does not parse.
    pub fn jobs(&self) -> Result<Vec<CronJob>, StoreError> {
        let path = self.jobs_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(lurkbot_core::CoreError::io("read", &path, e).into()),
        };
        serde_json::from_str::<JobsFile>(&text)
            .map(|f| f.jobs)
            .map_err(|e| StoreError::Corrupt {
                path: path.display().to_string(),
                reason: e.to_string(),
            })
    }

    /// Takes the lock that orders every change of `jobs.json` between processes (the CLI and
    /// a gateway): a read-modify-write never loses another's change.
    fn lock(&self) -> Result<std::fs::File, StoreError> {
        lurkbot_core::create_private_dir(&self.dir)?;
        let path = self.dir.join("jobs.lock");
        let file = lurkbot_core::open_private_append(&path)
            .map_err(|e| lurkbot_core::CoreError::io("open", &path, e))?;
        file.lock()
            .map_err(|e| lurkbot_core::CoreError::io("lock", &path, e))?;
        Ok(file)
    }

    /// The run lock of job `id`, or [`StoreError::Busy`] when it runs elsewhere.
    ///
    /// # Errors
    /// [`StoreError::Busy`], or the lock file failing.
    pub fn lock_job(&self, id: &str) -> Result<JobLock, StoreError> {
        let dir = self.dir.join("runs");
        lurkbot_core::create_private_dir(&dir)?;
        let path = dir.join(format!("{id}.lock"));
        let file = lurkbot_core::open_private_append(&path)
            .map_err(|e| lurkbot_core::CoreError::io("open", &path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(JobLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy(id.into())),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(lurkbot_core::CoreError::io("lock", &path, e).into())
            }
        }
    }

    fn save(&self, jobs: Vec<CronJob>) -> Result<(), StoreError> {
        lurkbot_core::create_private_dir(&self.dir)?;
        let text = serde_json::to_vec_pretty(&JobsFile { version: 1, jobs }).unwrap_or_default();
        lurkbot_core::write_atomic_with_mode(&self.jobs_path(), &text, 0o600)?;
        Ok(())
    }

    /// Checks `job`, gives it an id and its first run, and stores it.
    ///
    /// # Errors
    /// [`StoreError::Job`] when it breaks a rule; nothing is stored then.
    pub fn add(&self, mut job: CronJob, now_ms: u64) -> Result<CronJob, StoreError> {
        job.validate()?;
        job.id = format!("cron_{}", lurkbot_core::random_hex(8));
        job.created_at_ms = now_ms;
        job.updated_at_ms = now_ms;
        job.state = Default::default();
        job.state.next_run_at_ms = job.schedule.next_after(now_ms).map_err(JobError::from)?;
        if job.state.next_run_at_ms.is_none() {
            return Err(JobError::from(super::ScheduleError::PastAt(super::rfc3339(
                match job.schedule {
                    super::Schedule::At { at_ms } => at_ms,
                    _ => now_ms,
                },
            )))
            .into());
        }
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        jobs.push(job.clone());
        self.save(jobs)?;
        Ok(job)
    }

    /// Removes a job; its run log stays.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        let before = jobs.len();
        jobs.retain(|j| j.id != id);
        if jobs.len() == before {
            return Err(StoreError::NotFound(id.into()));
        }
        self.save(jobs)
    }

    /// Enables (with a fresh next run and error count) or disables a job.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub fn set_enabled(&self, id: &str, enabled: bool, now_ms: u64) -> Result<CronJob, StoreError> {
        self.update(id, |job| {
            job.enabled = enabled;
            job.updated_at_ms = now_ms;
            if enabled {
                job.state.consecutive_errors = 0;
                job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
            } else {
                job.state.next_run_at_ms = None;
            }
        })
    }

    /// `[cron] catch_up = "none"`: every enabled job due at `now_ms` (it fell due while no
    /// gateway ran the scheduler) is not run; a skipped run is logged and the job waits for
    /// its next time after `now_ms` (a one-shot `at` job has none and is disabled). Returns the
    /// ids skipped.
    ///
    /// # Errors
    /// The files failing.
    pub fn skip_missed(&self, now_ms: u64) -> Result<Vec<String>, StoreError> {
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        let mut skipped = Vec::new();
        for job in jobs
            .iter_mut()
            .filter(|j| j.enabled && j.state.next_run_at_ms.is_some_and(|t| t <= now_ms))
        {
            let run = RunRecord {
                ts: now_ms,
                status: RunStatus::Skipped,
                error: Some(MISSED.into()),
                duration_ms: 0,
                session_key: job.session_key(),
            };
            self.append_run(&job.id, &run)?;
            job.state.last_status = Some(RunStatus::Skipped);
            job.state.last_error = run.error;
            job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
            job.enabled = job.state.next_run_at_ms.is_some();
            job.updated_at_ms = now_ms;
            skipped.push(job.id.clone());
        }
        if !skipped.is_empty() {
            self.save(jobs)?;
        }
        Ok(skipped)
    }

    /// Changes job `id` under the lock and stores it.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], or the change breaking a rule (nothing is stored then).
    pub fn update(
        &self,
        id: &str,
        change: impl FnOnce(&mut CronJob),
    ) -> Result<CronJob, StoreError> {
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        let job = jobs
            .iter_mut()
            .find(|j| j.id == id)
            .ok_or_else(|| StoreError::NotFound(id.into()))?;
        change(job);
        job.validate()?;
        let changed = job.clone();
        self.save(jobs)?;
        Ok(changed)
    }

    /// Enabled jobs whose next run is at or before `now_ms`.
    ///
    /// # Errors
    /// As [`CronStore::jobs`].
    pub fn due(&self, now_ms: u64) -> Result<Vec<CronJob>, StoreError> {
        Ok(self
            .jobs()?
            .into_iter()
            .filter(|j| j.enabled && j.state.next_run_at_ms.is_some_and(|t| t <= now_ms))
            .collect())
    }

    /// Logs a run and moves the job's state on (see the module documentation). Returns the job
    /// as it is now, `None` when it was deleted after its run.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], or the files failing.
    pub fn record(
        &self,
        id: &str,
        run: &RunRecord,
        now_ms: u64,
    ) -> Result<Option<CronJob>, StoreError> {
        self.append_run(id, run)?;
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        let index = jobs
            .iter()
            .position(|j| j.id == id)
            .ok_or_else(|| StoreError::NotFound(id.into()))?;
        let job = &mut jobs[index];
        job.state.last_run_at_ms = Some(run.ts);
        job.state.last_status = Some(run.status);
        job.updated_at_ms = now_ms;
        match run.status {
            RunStatus::Ok => {
                job.state.consecutive_errors = 0;
                job.state.last_error = None;
                if job.delete_after_run {
                    jobs.remove(index);
                    self.save(jobs)?;
                    return Ok(None);
                }
                job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
            }
            RunStatus::Skipped => {
                // Not run (e.g. the session was busy): the next run, or soon for an `at`.
                job.state.last_error.clone_from(&run.error);
                job.state.next_run_at_ms = job
                    .schedule
                    .next_after(now_ms)
                    .ok()
                    .flatten()
                    .or(Some(now_ms.saturating_add(FIRST_RETRY_MS)));
            }
            RunStatus::Error
                if run
                    .error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(crate::usage::BUDGET_EXCEEDED)) =>
            {
                // A cap reached is not the job's fault: it keeps its schedule, and the failures
                // in a row that disable a job do not count it.
                job.state.last_error.clone_from(&run.error);
                job.state.next_run_at_ms = job.schedule.next_after(now_ms).ok().flatten();
            }
            RunStatus::Error => {
                job.state.consecutive_errors += 1;
                let errors = job.state.consecutive_errors;
                let reason = run.error.clone().unwrap_or_else(|| "the run failed".into());
                if errors >= MAX_CONSECUTIVE_ERRORS {
                    job.enabled = false;
                    job.state.next_run_at_ms = None;
                    job.state.last_error = Some(format!(
                        "disabled after {errors} failures in a row; the last: {reason}"
                    ));
                } else {
                    job.state.last_error = Some(reason);
                    let retry = FIRST_RETRY_MS
                        .saturating_mul(1 << (errors - 1).min(20))
                        .min(MAX_RETRY_MS);
                    job.state.next_run_at_ms = Some(now_ms.saturating_add(retry));
                }
            }
        }
        // An `at` job that has run has no next run.
        if job.state.next_run_at_ms.is_none() && job.enabled && run.status != RunStatus::Error {
            job.enabled = false;
        }
        let now = job.clone();
        self.save(jobs)?;
        Ok(Some(now))
    }

    fn append_run(&self, id: &str, run: &RunRecord) -> Result<(), StoreError> {
        let path = self.dir.join("runs").join(format!("{id}.jsonl"));
        let line = serde_json::to_string(run).unwrap_or_default();
        Ok(lurkbot_core::append_private_line(&path, &line)?)
    }

    /// A job's run log, oldest first.
    ///
    /// # Errors
    /// Reading failed.
    pub fn runs(&self, id: &str) -> Result<Vec<RunRecord>, StoreError> {
        let path = self.dir.join("runs").join(format!("{id}.jsonl"));
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(lurkbot_core::CoreError::io("read", &path, e).into()),
        };
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::job::{Delivery, Payload, SessionTarget, WakeMode};
    use super::super::schedule::Schedule;
    use super::*;

    fn new_job(schedule: Schedule) -> CronJob {
        CronJob {
            id: String::new(),
            name: "report".into(),
            enabled: true,
            created_at_ms: 0,
            updated_at_ms: 0,
            schedule,
            session_target: SessionTarget::Isolated,
            wake_mode: WakeMode::Now,
            payload: Payload::AgentTurn {
                message: "write the report".into(),
                model: None,
                thinking: None,
                timeout_seconds: None,
                budget_tokens: None,
            },
            delete_after_run: false,
            created_by: crate::gate::Asker::Model,
            delivery: Delivery::None,
            state: Default::default(),
        }
    }

    fn run(ts: u64, status: RunStatus) -> RunRecord {
        RunRecord {
            ts,
            status,
            error: (status == RunStatus::Error).then(|| "model down".into()),
            duration_ms: 5,
            session_key: "cron:x".into(),
        }
    }

    fn store() -> (tempfile::TempDir, CronStore) {
        let dir = tempfile::tempdir().unwrap();
        let home = Home::open(&dir.path().join("home")).unwrap();
        let store = CronStore::open(&home);
        (dir, store)
    }

    const HOUR: u64 = 3_600_000;

    #[test]
    fn failures_back_off_then_disable_and_success_resets() {
        let (_d, store) = store();
        let job = store
            .add(
                new_job(Schedule::Every {
                    every_ms: HOUR,
                    anchor_ms: 0,
                }),
                10,
            )
            .unwrap();
        assert_eq!(job.state.next_run_at_ms, Some(HOUR));
        assert_eq!(store.due(HOUR - 1).unwrap().len(), 0);
        assert_eq!(store.due(HOUR).unwrap().len(), 1);
        let mut now = HOUR;
        let mut delays = Vec::new();
        for _ in 0..9 {
            let j = store
                .record(&job.id, &run(now, RunStatus::Error), now)
                .unwrap()
                .unwrap();
            delays.push(j.state.next_run_at_ms.unwrap() - now);
            now += 1;
        }
        assert_eq!(&delays[..4], [30_000, 60_000, 120_000, 240_000]);
        assert_eq!(*delays.last().unwrap(), HOUR, "capped at 60 min");
        let j = store
            .record(&job.id, &run(now, RunStatus::Error), now)
            .unwrap()
            .unwrap();
        assert!(!j.enabled);
        assert!(
            j.state
                .last_error
                .as_deref()
                .unwrap()
                .contains("disabled after 10")
        );
        assert_eq!(store.due(u64::MAX).unwrap().len(), 0);
        let j = store.set_enabled(&job.id, true, now).unwrap();
        assert_eq!(j.state.consecutive_errors, 0);
        let j = store
            .record(&job.id, &run(now, RunStatus::Ok), now)
            .unwrap()
            .unwrap();
        assert_eq!(j.state.last_error, None);
        assert_eq!(store.runs(&job.id).unwrap().len(), 11);
    }

    #[test]
    fn at_jobs_end_and_delete_after_run_goes() {
        let (_d, store) = store();
        let at = store.add(new_job(Schedule::At { at_ms: 100 }), 10).unwrap();
        let skipped = store
            .record(&at.id, &run(100, RunStatus::Skipped), 100)
            .unwrap()
            .unwrap();
        assert!(skipped.enabled, "a skipped at job is retried");
        assert_eq!(skipped.state.next_run_at_ms, Some(30_100));
        let done = store
            .record(&at.id, &run(100, RunStatus::Ok), 101)
            .unwrap()
            .unwrap();
        assert!(!done.enabled && done.state.next_run_at_ms.is_none());
        let mut once = new_job(Schedule::Every {
            every_ms: HOUR,
            anchor_ms: 0,
        });
        once.delete_after_run = true;
        let once = store.add(once, 10).unwrap();
        assert_eq!(
            store
                .record(&once.id, &run(HOUR, RunStatus::Ok), HOUR)
                .unwrap(),
            None
        );
        assert_eq!(store.jobs().unwrap().len(), 1);
        assert!(matches!(
            store.remove("cron_nope"),
            Err(StoreError::NotFound(_))
        ));
    }

    #[test]
    fn a_refused_job_stores_nothing() {
        let (_d, store) = store();
        let mut bad = new_job(Schedule::At { at_ms: 100 });
        bad.session_target = SessionTarget::Main;
        assert!(matches!(store.add(bad, 10), Err(StoreError::Job(_))));
        assert!(!store.jobs_path().exists());
        std::fs::create_dir_all(&store.dir).unwrap();
        std::fs::write(store.jobs_path(), "{not json").unwrap();
        assert!(matches!(store.jobs(), Err(StoreError::Corrupt { .. })));
    }
}
