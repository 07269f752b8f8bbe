//! A real PostgreSQL server on loopback for the tests of several gateways: Debian's
//! `postgresql` package (15), a cluster made by `initdb` in a temporary folder, started with
//! `pg_ctl` on a free port and stopped (`-m immediate`) when dropped. As root (CI), the
//! cluster's programs run as the `postgres` user, which `initdb` insists on.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ports::free_port;

/// A running cluster; its superuser is `lurk`, trusted on loopback.
pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
    /// The server's settings (`-o` of `pg_ctl start`), for [`Postgres::start_again`].
    options: String,
}

impl Postgres {
    /// Makes and starts a cluster (a second or two).
    ///
    /// # Panics
    /// When PostgreSQL is not installed (`apt-get install postgresql`; `scripts/test.sh`
    /// installs it) or will not start.
    pub fn start() -> Self {
        Self::start_with(false)
    }

    /// [`Postgres::start`] with PostgreSQL's defaults kept — every commit synced to disk — for
    /// measurements (the tests' clusters run with `fsync = off`).
    pub fn start_synced() -> Self {
        Self::start_inner(false, true)
    }

    /// [`Postgres::start`] with TLS on (`ssl = on`), its server certificate for 127.0.0.1
    /// signed by a test CA; the CA's certificate (for `sslrootcert`).
    ///
    /// # Panics
    /// As [`Postgres::start`]; `openssl` missing.
    pub fn start_tls() -> (Self, PathBuf) {
        let pg = Self::start_with(true);
        let ca = pg.dir.path().join("ca.pem");
        (pg, ca)
    }

    fn start_with(tls: bool) -> Self {
        Self::start_inner(tls, false)
    }

    fn start_inner(tls: bool, synced: bool) -> Self {
        let bin = server_bin();
        let dir = tempfile::Builder::new()
            .prefix("lurkbot-pg")
            .tempdir()
            .unwrap();
        let as_postgres = is_root();
        let mut ssl = String::new();
        if tls {
            let pki = crate::tls::issue(dir.path(), "lurkbot test CA");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&pki.key, std::fs::Permissions::from_mode(0o600)).unwrap();
            ssl = format!(
                " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
                pki.cert.display(),
                pki.key.display()
            );
        }
        if as_postgres {
            let owned = Command::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(owned.success(), "chown postgres {}", dir.path().display());
        }
        let port = free_port();
        let fsync = if synced { "" } else { " -c fsync=off" };
        let options = format!(
            "-k {} -p {port} -c listen_addresses=127.0.0.1{fsync}{ssl}",
            dir.path().display()
        );
        let pg = Self {
            dir,
            bin,
            port,
            as_postgres,
            options,
        };
        let data = pg.dir.path().join("data");
        pg.run(&format!(
            "{} -D {} -A trust -U lurk --no-sync",
            pg.bin.join("initdb").display(),
            data.display()
        ));
        pg.start_again();
        pg
    }

    /// Starts the server (again, after [`Postgres::stop`]: the same data on the same port).
    pub fn start_again(&self) {
        self.run(&format!(
            "{} -D {} -l {} -w -o '{}' start",
            self.bin.join("pg_ctl").display(),
            self.dir.path().join("data").display(),
            self.dir.path().join("pg.log").display(),
            self.options
        ));
    }

    /// A new, empty database on the cluster; its URL (`postgres://lurk@127.0.0.1:<port>/<name>`).
    pub fn database(&self, name: &str) -> String {
        self.run(&format!(
            "{} -h 127.0.0.1 -p {} -U lurk {name}",
            self.bin.join("createdb").display(),
            self.port
        ));
        self.url(name)
    }

    /// The URL of database `name` on the cluster.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://lurk@127.0.0.1:{}/{name}", self.port)
    }

    /// Runs `sql` with `psql` on database `name`; what it printed (unaligned, tuples only).
    pub fn psql(&self, name: &str, sql: &str) -> String {
        let out = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-U",
                "lurk",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
            ])
            .args(["-p", &self.port.to_string(), "-d", name, "-c", sql])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "psql: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's main process (the postmaster; its backends are its children), for
    /// measuring the cluster's CPU.
    pub fn postmaster_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.dir.path().join("data/postmaster.pid"))
            .ok()?
            .lines()
            .next()?
            .trim()
            .parse()
            .ok()
    }

    /// The cluster's log so far (for a failing assertion's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pg.log")).unwrap_or_default()
    }

    /// Runs one of the cluster's commands, as `postgres` when this is root.
    fn run(&self, command: &str) {
        let out = if self.as_postgres {
            Command::new("su")
                .args(["postgres", "-s", "/bin/sh", "-c", command])
                .output()
        } else {
            Command::new("sh").args(["-c", command]).output()
        }
        .unwrap();
        assert!(
            out.status.success(),
            "{command}: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
    }
}

impl Postgres {
    /// Stops the server at once (a database that went away under its clients).
    pub fn stop(&self) {
        let command = format!(
            "{} -D {} -m immediate stop",
            self.bin.join("pg_ctl").display(),
            self.dir.path().join("data").display()
        );
        let _ = if self.as_postgres {
            Command::new("su")
                .args(["postgres", "-s", "/bin/sh", "-c", &command])
                .output()
        } else {
            Command::new("sh").args(["-c", &command]).output()
        };
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin`.
fn server_bin() -> PathBuf {
    let root = Path::new("/usr/lib/postgresql");
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let version = e.file_name().to_string_lossy().parse().ok()?;
                    let bin = e.path().join("bin");
                    bin.join("initdb").is_file().then_some((version, bin))
                })
                .collect()
        })
        .unwrap_or_default();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).unwrap_or_else(|| {
        panic!(
            "PostgreSQL is not installed (apt-get install postgresql; scripts/test.sh installs it)"
        )
    })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}
