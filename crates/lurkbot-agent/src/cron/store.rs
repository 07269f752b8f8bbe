//! `cron/jobs.json` (`{"version": 1, "jobs": […]}`, written atomically) and one run log per job
//! (`cron/runs/<jobId>.jsonl`, append-only). Recording a run moves the job's state on
//! (`after_run.rs`). Every "now" is given by the caller.
//!
//! When the home's state is in PostgreSQL ([`crate::shared_state`]) the same file and logs are
//! the store's document `cron/jobs.json` and logs `cron/runs/<jobId>.jsonl`: every change is
//! one transaction ([`lurkbot_state::Store::edit_document`]) and a job's run lock is the lease
//! `cron:<jobId>`, so gateways on several machines share the jobs.

use std::path::PathBuf;

use lurkbot_core::{Home, layout};
use lurkbot_state::{Edit, Store};
use serde::{Deserialize, Serialize};

use super::after_run::{RunRecord, move_on, skip_missed};
use super::job::{CronJob, JobError};

/// The file's shape.
#[derive(Debug, Default, Serialize, Deserialize)]
struct JobsFile {
    version: u32,
    jobs: Vec<CronJob>,
}

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
    /// The state store (PostgreSQL) failed.
    #[error(transparent)]
    State(#[from] lurkbot_state::StateError),
}

/// The jobs' document in the store: the file's path in the home.
const JOBS_DOC: &str = "cron/jobs.json";

/// Job `id`'s run log in the store: its file's path in the home.
fn run_log(id: &str) -> String {
    format!("cron/runs/{id}.jsonl")
}

/// The jobs in `text` (none without a document); `path` names it in the error.
fn parse_jobs(text: Option<&str>, path: &str) -> Result<Vec<CronJob>, StoreError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    serde_json::from_str::<JobsFile>(text)
        .map(|f| f.jobs)
        .map_err(|e| StoreError::Corrupt {
            path: path.to_string(),
            reason: e.to_string(),
        })
}

fn jobs_json(jobs: Vec<CronJob>) -> Vec<u8> {
    serde_json::to_vec_pretty(&JobsFile { version: 1, jobs }).unwrap_or_default()
}

/// A change of the jobs: it may add runs to the logs (job id, run); what it answers and
/// whether the jobs are written back.
type Change<R> = Box<
    dyn FnOnce(&mut Vec<CronJob>, &mut Vec<(String, RunRecord)>) -> Result<(R, bool), StoreError>
        + Send,
>;

/// Held while one job runs (a lock on `cron/runs/<jobId>.lock`, or the lease `cron:<jobId>`
/// in PostgreSQL): no other process runs it.
#[derive(Debug)]
pub struct JobLock {
    _file: Option<std::fs::File>,
    lease: Option<(Store, String)>,
}

impl Drop for JobLock {
    fn drop(&mut self) {
        if let Some((store, name)) = self.lease.take()
            && let Err(e) = store.give_back_lease(&name)
        {
            tracing::warn!(lease = name, error = %e, "a cron job's lease was not given back");
        }
    }
}

/// The jobs of one home.
#[derive(Debug, Clone)]
pub struct CronStore {
    dir: PathBuf,
    home: Home,
    /// The PostgreSQL store the jobs are in, when the home's state is there.
    shared: Option<Store>,
}

impl CronStore {
    /// The store of `home`.
    pub fn open(home: &Home) -> Self {
        Self {
            dir: home.join(layout::CRON),
            home: home.clone(),
            shared: crate::shared_state::of(home),
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
        if let Some(store) = &self.shared {
            return parse_jobs(store.document(JOBS_DOC)?.as_deref(), JOBS_DOC);
        }
        let path = self.jobs_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(lurkbot_core::CoreError::io("read", &path, e).into()),
        };
        parse_jobs(Some(&text), &path.display().to_string())
    }

    /// Reads the jobs, lets `change` change them, and writes them back with the runs it logs —
    /// under the lock every process takes (or in one transaction of the shared store).
    fn modify<R: Send + 'static>(&self, change: Change<R>) -> Result<R, StoreError> {
        if let Some(store) = &self.shared {
            return store.edit_document(JOBS_DOC, move |text| {
                let mut jobs = parse_jobs(text.as_deref(), JOBS_DOC)?;
                let mut runs = Vec::new();
                let (value, save) = change(&mut jobs, &mut runs)?;
                let lines = runs
                    .iter()
                    .map(|(id, run)| (run_log(id), serde_json::to_string(run).unwrap_or_default()))
                    .collect();
                let body = save.then(|| String::from_utf8_lossy(&jobs_json(jobs)).into_owned());
                Ok(Edit { body, lines, value })
            })?;
        }
        let _lock = self.lock()?;
        let mut jobs = self.jobs()?;
        let mut runs = Vec::new();
        let (value, save) = change(&mut jobs, &mut runs)?;
        for (id, run) in &runs {
            self.append_run(id, run)?;
        }
        if save {
            self.save(jobs)?;
        }
        Ok(value)
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
        if let Some(store) = &self.shared {
            let name = format!("cron:{id}");
            if !store.take_lease(&name)? {
                return Err(StoreError::Busy(id.into()));
            }
            return Ok(JobLock {
                _file: None,
                lease: Some((store.clone(), name)),
            });
        }
        let dir = self.dir.join("runs");
        lurkbot_core::create_private_dir(&dir)?;
        let path = dir.join(format!("{id}.lock"));
        let file = lurkbot_core::open_private_append(&path)
            .map_err(|e| lurkbot_core::CoreError::io("open", &path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(JobLock {
                _file: Some(file),
                lease: None,
            }),
            Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Busy(id.into())),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(lurkbot_core::CoreError::io("lock", &path, e).into())
            }
        }
    }

    fn save(&self, jobs: Vec<CronJob>) -> Result<(), StoreError> {
        lurkbot_core::create_private_dir(&self.dir)?;
        lurkbot_core::write_atomic_with_mode(&self.jobs_path(), &jobs_json(jobs), 0o600)?;
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
        self.modify(Box::new(move |jobs, _| {
            jobs.push(job.clone());
            Ok((job, true))
        }))
    }

    /// Removes a job; its run log stays.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub fn remove(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        self.modify(Box::new(move |jobs, _| {
            let before = jobs.len();
            jobs.retain(|j| j.id != id);
            if jobs.len() == before {
                return Err(StoreError::NotFound(id));
            }
            Ok(((), true))
        }))
    }

    /// Enables (with a fresh next run and error count) or disables a job.
    ///
    /// # Errors
    /// [`StoreError::NotFound`].
    pub fn set_enabled(&self, id: &str, enabled: bool, now_ms: u64) -> Result<CronJob, StoreError> {
        self.update(id, move |job| {
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
        self.modify(Box::new(move |jobs, runs| {
            let skipped = skip_missed(jobs, runs, now_ms);
            let changed = !skipped.is_empty();
            Ok((skipped, changed))
        }))
    }

    /// Changes job `id` under the lock and stores it.
    ///
    /// # Errors
    /// [`StoreError::NotFound`], or the change breaking a rule (nothing is stored then).
    pub fn update(
        &self,
        id: &str,
        change: impl FnOnce(&mut CronJob) + Send + 'static,
    ) -> Result<CronJob, StoreError> {
        let id = id.to_string();
        self.modify(Box::new(move |jobs, _| {
            let job = jobs
                .iter_mut()
                .find(|j| j.id == id)
                .ok_or(StoreError::NotFound(id))?;
            change(job);
            job.validate()?;
            Ok((job.clone(), true))
        }))
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
        let (id, run) = (id.to_string(), run.clone());
        self.modify(Box::new(move |jobs, runs| {
            runs.push((id.clone(), run.clone()));
            let index = jobs
                .iter()
                .position(|j| j.id == id)
                .ok_or(StoreError::NotFound(id))?;
            Ok((move_on(jobs, index, &run, now_ms), true))
        }))
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
        if let Some(store) = &self.shared {
            return Ok(store
                .log(&run_log(id))?
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect());
        }
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
    use super::super::job::{Delivery, Payload, RunStatus, SessionTarget, WakeMode};
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
