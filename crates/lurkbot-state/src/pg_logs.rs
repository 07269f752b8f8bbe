//! Appending to a log (a transcript, a cron job's runs) on PostgreSQL in one round trip: a
//! function of the schema takes the store's write lock, reads the log's end after it (each
//! statement of a volatile function sees what committed before it), inserts the lines and
//! returns the log's length before and after — the same rows and offsets as the generic
//! transaction (`documents.rs::append`), which took three round trips (`BEGIN` with the lock,
//! the insert, `COMMIT`).

use crate::StateError;
use crate::postgres::{Pg, Ready, db};

/// The function, made (or replaced) in every schema at connect (`postgres.rs::tables`).
pub(crate) const APPEND_LOG_FUNCTION: &str = r#"
CREATE OR REPLACE FUNCTION lurkbot_append_log(p_log TEXT, p_lines TEXT[], p_lock BIGINT,
    p_durable BOOLEAN, p_now BIGINT) RETURNS TABLE (before_end BIGINT, after_end BIGINT)
LANGUAGE plpgsql AS $fn$
DECLARE
    e BIGINT;
    b BIGINT;
    l TEXT;
BEGIN
    IF p_durable THEN
        PERFORM set_config('synchronous_commit', 'on', true);
    END IF;
    PERFORM pg_advisory_xact_lock(p_lock);
    SELECT COALESCE(MAX(end_offset), 0) INTO e FROM log_lines WHERE log = p_log;
    b := e;
    FOREACH l IN ARRAY p_lines LOOP
        e := e + octet_length(l) + 1;
        INSERT INTO log_lines (log, line, end_offset, created_ms) VALUES (p_log, l, e, p_now);
    END LOOP;
    RETURN QUERY SELECT b, e;
END
$fn$;
"#;

impl Pg {
    /// Appends `lines` to `log` in one statement (its own transaction), waiting for the disk
    /// when `durable`: the log's length before and after.
    pub(crate) fn append_log(
        &self,
        log: String,
        lines: Vec<String>,
        durable: bool,
    ) -> Result<(u64, u64), StateError> {
        self.call(move |conn| {
            let lock = conn.write_key;
            let now = i64::try_from(lurkbot_core::now_ms()).unwrap_or(i64::MAX);
            let Ready { client, .. } = conn.ready()?;
            let row = client
                .query_one(
                    "SELECT before_end, after_end FROM lurkbot_append_log($1, $2, $3, $4, $5)",
                    &[&log, &lines, &lock, &durable, &now],
                )
                .map_err(db)?;
            let (before, after): (i64, i64) = (row.get(0), row.get(1));
            Ok((
                u64::try_from(before).unwrap_or_default(),
                u64::try_from(after).unwrap_or_default(),
            ))
        })
    }
}
