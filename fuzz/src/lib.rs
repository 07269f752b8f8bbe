//! Shared harness of the archive fuzz targets: one home in a temporary folder and one executor,
//! reused across inputs; each input is written as the archive, listed and extracted through
//! `terminal_exec` exactly as a user or the model would, and checked for escapes.

use std::path::Path;

use lurkbot_core::Home;
use lurkbot_term::{ExecRequest, TerminalExec};

/// The home and executor shared by every input of one fuzzing process.
pub struct ArchiveHarness {
    dir: tempfile::TempDir,
    exec: TerminalExec,
    runtime: tokio::runtime::Runtime,
    runs: std::cell::Cell<u64>,
}

thread_local! {
    /// libFuzzer runs inputs one after another on one thread: one harness per thread.
    static HARNESS: ArchiveHarness = ArchiveHarness::new();
}

impl ArchiveHarness {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let home = Home::open(&dir.path().join("home")).expect("a home");
        std::fs::create_dir_all(home.join("workspace")).expect("workspace");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        Self {
            exec: TerminalExec::new(home, lurkbot_term::default_registry()),
            dir,
            runtime,
            runs: std::cell::Cell::new(0),
        }
    }

    /// Runs `f` with this thread's harness.
    pub fn with<R>(f: impl FnOnce(&Self) -> R) -> R {
        HARNESS.with(f)
    }

    /// Writes `bytes` to `workspace/<name>`, runs `<cmd> list` and `<cmd> extract` on it, and
    /// checks that every answer is a success or one of `allowed`, and that nothing was written
    /// outside `workspace/out` (and the audit log).
    pub fn run(&self, cmd: &str, name: &str, bytes: &[u8], allowed: &[&str]) {
        let home = self.exec.home().root().to_path_buf();
        let archive = home.join("workspace").join(name);
        std::fs::write(&archive, bytes).expect("write the input");
        for command in [
            format!("{cmd} list --in workspace/{name} --max 10000"),
            format!(
                "{cmd} extract --in workspace/{name} --dest workspace/out --confirm --overwrite --max-files 500 --max-bytes 8388608"
            ),
        ] {
            let env = self
                .runtime
                .block_on(self.exec.run(ExecRequest::new(&command)));
            if let Some(code) = env.error_code.as_deref() {
                assert!(
                    allowed.contains(&code),
                    "{command}: {code}: {:?}",
                    env.error_message
                );
            }
        }
        check_only(&home, &["artifacts", "workspace"]);
        check_only(&home.join("workspace"), &[name, "out"]);
        check_only(self.dir.path(), &["home"]);
        let _ = std::fs::remove_dir_all(home.join("workspace/out"));
        let runs = self.runs.get() + 1;
        self.runs.set(runs);
        if runs % 500 == 0 {
            let _ = std::fs::remove_dir_all(home.join("artifacts/terminal_exec/runs"));
        }
    }
}

/// Panics when `dir` holds anything but `names`.
fn check_only(dir: &Path, names: &[&str]) {
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        assert!(
            names.contains(&name.as_ref()),
            "unexpected {name} in {}",
            dir.display()
        );
    }
}
