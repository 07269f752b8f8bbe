//! The PostgreSQL backend: the journal, inbound records, outbox and leases in a database
//! several gateways share (ARCHITECTURE.md §6.3).
//!
//! One connection per store, owned by a thread of its own (`lurkbot-state-pg`): the synchronous
//! client runs its own small runtime and must not be driven from inside the gateway's, and the
//! store's calls are synchronous on both backends. A call sends its work to the thread and
//! waits for the answer; a loopback round trip costs about what SQLite's commit does.
//!
//! - The connection holds a session-level advisory lock on its gateway's id while it lives
//!   (see [`crate::leases`]): a second gateway with the same id is refused, and a lease whose
//!   holder's lock is gone is free.
//! - Durable transactions take one transaction-level advisory lock first, so no two gateways'
//!   admissions, claims and lease takes interleave (what SQLite's `BEGIN IMMEDIATE` gives the
//!   embedded store); PostgreSQL commits synchronously by default.
//! - The schema is created and migrated at connect, under a lock, in one transaction.
//! - A lost connection is made again at the next call (and the id's lock taken again).
//! - TLS is rustls, verified (`pg_tls.rs`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::mpsc;

use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{GenericClient, Statement};

use crate::StateError;
use crate::location::{StateUrl, Tls};
use crate::sql::{Row, Sql, Val, dollar_params};

/// The schema version this build writes (the `lurkbot_schema` table), the embedded store's.
const SCHEMA_VERSION: i64 = crate::embedded::SCHEMA_VERSION;

/// Every table, as the embedded store has them (integers as `BIGINT`; `seq` keeps the order
/// rows came in, which SQLite's `rowid` gives the other), and the events other gateways follow.
fn tables() -> String {
    let mut tables = crate::sql::tables_v1("BIGINT", "seq BIGSERIAL,");
    tables.push_str(&crate::sql::tables_v2("BIGINT"));
    tables.push_str(&crate::sql::tables_v3("BIGINT", "seq BIGSERIAL,"));
    tables.push_str(crate::pg_logs::APPEND_LOG_FUNCTION);
    tables.push_str(
        "CREATE TABLE IF NOT EXISTS events (
    id          BIGSERIAL PRIMARY KEY,
    origin      TEXT NOT NULL,
    payload     TEXT NOT NULL,
    created_ms  BIGINT NOT NULL
);
",
    );
    tables
}

/// Work for the connection's thread.
type Job = Box<dyn FnOnce(&mut Conn) + Send>;

/// A store's PostgreSQL connection, driven by its own thread.
pub(crate) struct Pg {
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    target: String,
    /// What another connection of this store (the events' follower) needs.
    pub(crate) url: StateUrl,
    pub(crate) schema: Option<String>,
    /// A second connection for work off the turns' path (publishing events), made at first use.
    aside: std::sync::OnceLock<Box<Pg>>,
}

impl Drop for Pg {
    /// Closes the connection before returning: its gateway's id (its advisory lock) is free
    /// once a store is gone.
    fn drop(&mut self) {
        let jobs = match self.jobs.get_mut() {
            Ok(jobs) => jobs.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        drop(jobs);
        let thread = match self.thread.get_mut() {
            Ok(thread) => thread.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Pg {
    /// Connects as gateway `owner` (taking its id's lock) and brings the schema up to date;
    /// the state of user `user` on a shared gateway lives in a PostgreSQL schema of its own
    /// (`lurkbot_u_<name>`, see [`crate::user_schema::schema_for`]), so no query of one user's store sees another's rows.
    pub(crate) fn connect(
        url: &StateUrl,
        owner: &str,
        user: Option<&str>,
    ) -> Result<Self, StateError> {
        let schema = user.map(crate::user_schema::schema_for).transpose()?;
        let legacy = user.map(crate::user_schema::legacy_schema_for);
        let conn = Conn {
            client: None,
            statements: HashMap::new(),
            url: url.clone(),
            owner_key: Some(advisory_key(&format!("gateway:{owner}"))),
            // The gateway's own home's connection holds its id's lock (its liveness, which
            // every lease and hold of its users' homes goes by too); a user's connection of
            // the same gateway finds it held by that one, and goes on.
            owner_required: user.is_none(),
            owner: owner.to_string(),
            write_key: advisory_key(&format!("write:{}", schema.as_deref().unwrap_or(""))),
            schema,
        };
        Self::spawn(conn, Some(legacy))
    }

    /// Runs `conn` on a thread of its own; `migrate` (with a user's legacy schema name, if
    /// any): the schema is brought up to date at the first connection.
    fn spawn(mut conn: Conn, migrate_from: Option<Option<String>>) -> Result<Self, StateError> {
        let (url, kept_schema) = (conn.url.clone(), conn.schema.clone());
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("lurkbot-state-pg".into())
            .spawn(move || {
                let schema = conn.schema.clone();
                let first = conn.client().and_then(|client| match &migrate_from {
                    Some(legacy) => migrate(client, schema.as_deref(), legacy.as_deref()),
                    None => Ok(()),
                });
                let failed = first.is_err();
                let _ = ready_tx.send(first);
                if failed {
                    return;
                }
                while let Ok(job) = inbox.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| StateError::Postgres(format!("cannot start its thread: {e}")))?;
        ready_rx.recv().map_err(|_| gone())??;
        Ok(Self {
            jobs: Mutex::new(Some(jobs)),
            thread: Mutex::new(Some(thread)),
            target: url.to_string(),
            url,
            schema: kept_schema,
            aside: std::sync::OnceLock::new(),
        })
    }

    /// The second connection, for work that must not wait behind (nor delay) a turn's
    /// statements: the same database and schema, no lock of its own.
    ///
    /// # Errors
    /// It cannot connect.
    pub(crate) fn aside(&self) -> Result<&Pg, StateError> {
        if let Some(aside) = self.aside.get() {
            return Ok(aside);
        }
        let conn = Conn {
            client: None,
            statements: HashMap::new(),
            url: self.url.clone(),
            owner_key: None,
            owner_required: false,
            owner: String::new(),
            write_key: advisory_key(&format!("write:{}", self.schema.as_deref().unwrap_or(""))),
            schema: self.schema.clone(),
        };
        let made = Self::spawn(conn, None)?;
        // Two callers at once: one connection is kept, the other closed.
        let _ = self.aside.set(Box::new(made));
        self.aside.get().map(AsRef::as_ref).ok_or_else(gone)
    }

    /// The database, without its password.
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// Runs `job` on the connection's thread and waits for its answer.
    pub(crate) fn call<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Conn) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        let (answer_tx, answer_rx) = mpsc::sync_channel(1);
        let sent = {
            let jobs = match self.jobs.lock() {
                Ok(jobs) => jobs,
                Err(poisoned) => poisoned.into_inner(),
            };
            jobs.as_ref().map(|jobs| {
                jobs.send(Box::new(move |conn: &mut Conn| {
                    let _ = answer_tx.send(job(conn));
                }))
            })
        };
        sent.ok_or_else(gone)?.map_err(|_| gone())?;
        answer_rx.recv().map_err(|_| gone())?
    }

    /// Runs `f` with statements committed one by one.
    pub(crate) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        self.call(move |conn| {
            let Ready { client, statements } = conn.ready()?;
            f(&mut PgSql { client, statements })
        })
    }

    /// Runs `f` in one transaction — under the store's write lock when `locked` — committed
    /// durably (the commit waits for the WAL to reach the disk) when `synced`, else as the
    /// session's statements are, with `synchronous_commit` off: the commit returns before the
    /// flush, which follows within a few hundred milliseconds (a crash of the database's host
    /// may lose such a commit, never tear one; a killed gateway loses nothing).
    pub(crate) fn transaction<T: Send + 'static>(
        &self,
        synced: bool,
        locked: bool,
        f: impl FnOnce(&mut dyn Sql) -> Result<T, StateError> + Send + 'static,
    ) -> Result<T, StateError> {
        self.call(move |conn| {
            let write_key = conn.write_key;
            let Ready { client, statements } = conn.ready()?;
            // BEGIN and the transaction's settings in one round trip (the session's default is
            // `synchronous_commit` off; the key is a number this process made).
            let mut begin = String::from("BEGIN;");
            if synced {
                begin.push_str(" SET LOCAL synchronous_commit TO on;");
            }
            if locked {
                begin.push_str(&format!(" SELECT pg_advisory_xact_lock({write_key});"));
            }
            client.batch_execute(&begin).map_err(db)?;
            let mut open = Open {
                client,
                ended: false,
            };
            let value = f(&mut PgSql {
                client: &mut *open.client,
                statements,
            })?;
            open.ended = true;
            open.client.batch_execute("COMMIT").map_err(db)?;
            Ok(value)
        })
    }

    /// The schema version the database holds.
    pub(crate) fn schema_version(&self) -> Result<i64, StateError> {
        self.call(|conn| version(conn.ready()?.client))
    }

    /// Whether the database answers with a schema this build can use.
    pub(crate) fn check(&self) -> Result<(), StateError> {
        self.call(|conn| {
            let found = version(conn.ready()?.client)?;
            if found > SCHEMA_VERSION {
                return Err(StateError::Newer {
                    found,
                    supported: SCHEMA_VERSION,
                });
            }
            Ok(())
        })
    }
}

/// A transaction begun on a connection: rolled back unless it was ended (a closure that
/// failed or panicked leaves the connection ready for the next).
struct Open<'a> {
    client: &'a mut postgres::Client,
    ended: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.client.batch_execute("ROLLBACK");
        }
    }
}

/// The connection's thread ended (it failed to start, or panicked).
fn gone() -> StateError {
    StateError::Postgres("its connection thread stopped: restart the gateway".into())
}

pub(crate) fn db(e: postgres::Error) -> StateError {
    StateError::Postgres(connect_reason(&e))
}

/// The connection as its thread keeps it.
pub(crate) struct Conn {
    client: Option<postgres::Client>,
    /// Statements prepared on this connection, by their SQL.
    statements: HashMap<String, Statement>,
    url: StateUrl,
    /// The lock naming this gateway as running (`None`: a connection aside, which takes none).
    owner_key: Option<i64>,
    /// Whether this connection must hold it (a user's may find its gateway's holding it).
    owner_required: bool,
    owner: String,
    /// The lock durable transactions take (one per schema).
    pub(crate) write_key: i64,
    /// A user's schema, if this store is a user's.
    schema: Option<String>,
}

/// A connection known to be open.
pub(crate) struct Ready<'a> {
    pub(crate) client: &'a mut postgres::Client,
    statements: &'a mut HashMap<String, Statement>,
}

impl Conn {
    /// The client, connecting first (again) when there is none or it was closed.
    fn client(&mut self) -> Result<&mut postgres::Client, StateError> {
        Ok(self.ready()?.client)
    }

    pub(crate) fn ready(&mut self) -> Result<Ready<'_>, StateError> {
        if self.client.as_ref().is_none_or(postgres::Client::is_closed) {
            self.client = None;
            self.statements.clear();
            let mut client = connect(&self.url)?;
            if let Some(owner_key) = self.owner_key {
                let held: bool = client
                    .query_one("SELECT pg_try_advisory_lock($1)", &[&owner_key])
                    .map_err(db)?
                    .get(0);
                if !held && self.owner_required {
                    return Err(StateError::OwnerTaken(self.owner.clone()));
                }
            }
            // A statement on its own commits without waiting for the disk, as the embedded
            // store's do; durable transactions ask for the flush (`transaction`).
            let mut setup = String::from("SET synchronous_commit TO off;");
            if let Some(schema) = &self.schema {
                setup.push_str(&format!(" SET search_path TO \"{schema}\";"));
            }
            client.batch_execute(&setup).map_err(db)?;
            self.client = Some(client);
        }
        match self.client.as_mut() {
            Some(client) => Ok(Ready {
                client,
                statements: &mut self.statements,
            }),
            None => Err(gone()),
        }
    }
}

/// Opens a connection, over verified TLS when the URL asks for it.
pub(crate) fn connect(url: &StateUrl) -> Result<postgres::Client, StateError> {
    let failed = |e: postgres::Error| {
        StateError::Postgres(format!("cannot connect to {url}: {}", connect_reason(&e)))
    };
    match &url.tls {
        Tls::Off => url.config.connect(postgres::NoTls).map_err(failed),
        Tls::Verified { roots } => {
            let config = match roots {
                None => rustls::ClientConfig::clone(&lurkbot_core::tls::client_config()),
                Some(path) => pinned_roots(path)?,
            };
            let tls = crate::pg_tls::RustlsTls(std::sync::Arc::new(config));
            url.config.connect(tls).map_err(failed)
        }
    }
}

/// What to tell the owner about a failed connection: the server's message, or the error and
/// its cause; a server certificate this machine does not trust (a self-signed one, or one of a
/// private CA) is named as such, with the fix.
fn connect_reason(e: &postgres::Error) -> String {
    use std::error::Error;
    let reason = match e.source() {
        Some(cause) if !e.to_string().contains(&cause.to_string()) => format!("{e}: {cause}"),
        _ => e.to_string(),
    };
    if reason.contains("invalid peer certificate") {
        return format!(
            "{reason}. The server's TLS certificate is not signed by a CA this machine trusts \
             (self-signed, or a private CA's): add sslrootcert=/path/to/ca.pem to the URL, naming \
             the certificate of the CA that signed it"
        );
    }
    reason
}

/// A TLS client set-up trusting only the CA certificates in the PEM file at `path`.
fn pinned_roots(path: &std::path::Path) -> Result<rustls::ClientConfig, StateError> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let unreadable = |why: String| {
        StateError::Url(format!(
            "sslrootcert {}: {why} (name a PEM file of the CA that signed the server's certificate)",
            path.display()
        ))
    };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(e.to_string()))? {
        let cert = cert.map_err(|e| unreadable(e.to_string()))?;
        roots.add(cert).map_err(|e| unreadable(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(unreadable("no certificate in it".into()));
    }
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| std::sync::Arc::new(rustls::crypto::ring::default_provider()));
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StateError::Postgres(format!("TLS set-up: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Creates the schema, or brings it up to date, under a lock no other gateway passes at the
/// same time.
fn migrate(
    client: &mut postgres::Client,
    schema: Option<&str>,
    legacy: Option<&str>,
) -> Result<(), StateError> {
    let mut tx = client.transaction().map_err(db)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&advisory_key("migrate")],
    )
    .map_err(db)?;
    if let Some(schema) = schema {
        if let Some(legacy) = legacy {
            crate::user_schema::adopt_legacy(&mut tx, schema, legacy)?;
        }
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .map_err(db)?;
    }
    tx.batch_execute("CREATE TABLE IF NOT EXISTS lurkbot_schema (version BIGINT NOT NULL)")
        .map_err(db)?;
    let found = version(&mut tx)?;
    if found > SCHEMA_VERSION {
        return Err(StateError::Newer {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    // Every table is made if missing (they all say IF NOT EXISTS): a database made by an
    // earlier build of this version gains the ones added since.
    tx.batch_execute(&tables()).map_err(db)?;
    if found < SCHEMA_VERSION {
        tx.execute("DELETE FROM lurkbot_schema", &[]).map_err(db)?;
        tx.execute(
            "INSERT INTO lurkbot_schema (version) VALUES ($1)",
            &[&SCHEMA_VERSION],
        )
        .map_err(db)?;
    }
    tx.commit().map_err(db)
}

fn version(client: &mut impl GenericClient) -> Result<i64, StateError> {
    let row = client
        .query_opt("SELECT version FROM lurkbot_schema LIMIT 1", &[])
        .map_err(db)?;
    Ok(row.map_or(0, |r| r.get(0)))
}

/// A 64-bit advisory lock key for `name` (FNV-1a: stable across builds and machines).
pub(crate) fn advisory_key(name: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "lurkbot:".bytes().chain(name.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// Statements on a connection or inside a transaction.
struct PgSql<'a, C: GenericClient> {
    client: &'a mut C,
    statements: &'a mut HashMap<String, Statement>,
}

impl<C: GenericClient> PgSql<'_, C> {
    /// `sql` prepared once per connection.
    fn prepared(&mut self, sql: &str) -> Result<Statement, StateError> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(&dollar_params(sql)).map_err(db)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }
}

impl<C: GenericClient> Sql for PgSql<'_, C> {
    fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, StateError> {
        let statement = self.prepared(sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|v| v as _).collect();
        self.client.execute(&statement, &refs).map_err(db)
    }

    fn rows(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StateError> {
        let statement = self.prepared(sql)?;
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|v| v as _).collect();
        let rows = self.client.query(&statement, &refs).map_err(db)?;
        rows.iter().map(read_row).collect()
    }

    fn seq(&self) -> &'static str {
        "seq"
    }

    fn owner_session_alive(&mut self, owner: &str) -> Result<bool, StateError> {
        let key = advisory_key(&format!("gateway:{owner}"));
        let bits = u64::from_ne_bytes(key.to_ne_bytes());
        // pg_locks shows a bigint key as its high half in `classid`, its low half in `objid`.
        let rows = self.rows(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 \
             AND classid::bigint = ?1 AND objid::bigint = ?2 \
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            &[
                Val::Int((bits >> 32) as i64),
                Val::Int((bits & 0xffff_ffff) as i64),
            ],
        )?;
        Ok(!rows.is_empty())
    }
}

/// A row as [`Val`]s: the store's columns are integers and text.
fn read_row(row: &postgres::Row) -> Result<Row, StateError> {
    let bad = |e: postgres::Error| StateError::Postgres(format!("reading a row: {e}"));
    let mut values = Vec::with_capacity(row.len());
    for (i, column) in row.columns().iter().enumerate() {
        let value = match *column.type_() {
            Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(bad)?.map(Val::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map_err(bad)?
                .map(|n| Val::Int(n.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map_err(bad)?
                .map(|n| Val::Int(n.into())),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map_err(bad)?
                .map(|b| Val::Int(b.into())),
            _ => row
                .try_get::<_, Option<String>>(i)
                .map_err(bad)?
                .map(Val::Text),
        };
        values.push(value.unwrap_or(Val::Null));
    }
    Ok(Row(values))
}

impl ToSql for Val {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Self::Null => Ok(IsNull::Yes),
            Self::Int(n) => match *ty {
                Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
                _ => n.to_sql(ty, out),
            },
            Self::Text(t) => t.as_str().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2 | Type::INT4 | Type::INT8 | Type::TEXT | Type::VARCHAR | Type::BPCHAR
        )
    }

    to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_stable_and_distinct() {
        assert_eq!(advisory_key("write"), advisory_key("write"));
        assert_ne!(advisory_key("write"), advisory_key("migrate"));
        assert_ne!(advisory_key("gateway:gw-a"), advisory_key("gateway:gw-b"));
    }
}
