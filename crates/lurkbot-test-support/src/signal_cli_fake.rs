//! A `signal-cli` program for the tests of LurkBot's supervision of it (`[channels.signal]
//! cli`): a Python script that answers `--version` as signal-cli does, and run as `-a ACCOUNT
//! daemon --http HOST:PORT …` serves the HTTP daemon's three endpoints (events as server-sent
//! events with keep-alives, JSON-RPC `send`/`sendTyping`/`sendReceipt`/`getUserStatus`, and
//! `check`), writing its stderr as signal-cli logs. The test gives it messages by dropping
//! envelopes into its folder and reads the calls it answered; every start is recorded with
//! its arguments and pid. `link -n NAME` prints a `sgnl://linkdevice` URI, then the account it
//! joined, as signal-cli does when its output is not a terminal.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

const SCRIPT: &str = r#"
import json, os, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIR = os.path.dirname(os.path.abspath(__file__))
VERSION = open(os.path.join(DIR, "version")).read().strip()
if sys.argv[1:] == ["--version"]:
    print("signal-cli " + VERSION)
    sys.exit(0)
args = sys.argv[1:]
if args[:1] == ["link"]:
    # Provisioning: the URI to scan, then (once the phone accepted) the account joined.
    print("sgnl://linkdevice?uuid=Zm9vYmFy&pub_key=QmFzZTY0S2V5", flush=True)
    time.sleep(0.2)
    print("Associated with: " + open(os.path.join(DIR, "linked-to")).read().strip(), flush=True)
    sys.exit(0)
account = args[args.index("-a") + 1]
host, port = args[args.index("--http") + 1].rsplit(":", 1)
with open(os.path.join(DIR, "starts.jsonl"), "a") as f:
    f.write(json.dumps({"args": args, "pid": os.getpid()}) + "\n")
lock = threading.Lock()

def record(method, params):
    with lock, open(os.path.join(DIR, "calls.jsonl"), "a") as f:
        f.write(json.dumps({"method": method, "params": params}) + "\n")

def next_envelope():
    inbox = os.path.join(DIR, "inbox")
    with lock:
        names = sorted(os.listdir(inbox)) if os.path.isdir(inbox) else []
        if not names:
            return None
        path = os.path.join(inbox, names[0])
        envelope = json.load(open(path))
        os.remove(path)
        return envelope

class Daemon(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        if self.path == "/api/v1/check":
            self.send_response(200); self.end_headers(); return
        if not self.path.startswith("/api/v1/events"):
            self.send_response(404); self.end_headers(); return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.flush()
        last = time.time()
        try:
            while True:
                envelope = next_envelope()
                if envelope is not None:
                    data = json.dumps({"account": account, "envelope": envelope})
                    self.wfile.write(("event:receive\ndata:" + data + "\n\n").encode())
                    self.wfile.flush()
                elif time.time() - last > 1:
                    self.wfile.write(b":\n"); self.wfile.flush(); last = time.time()
                else:
                    time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, params = body.get("method"), body.get("params", {})
        if method == "send":
            result = {"timestamp": int(time.time() * 1000), "results": []}
        elif method == "getUserStatus":
            result = [{"recipient": account, "number": account,
                       "uuid": "4f1e2d3c-5b6a-4789-8abc-0123456789ab", "isRegistered": True}]
        elif method in ("sendTyping", "sendReceipt"):
            result = {}
        elif method == "version":
            result = {"version": VERSION}
        else:
            answer = {"jsonrpc": "2.0", "id": body.get("id"),
                      "error": {"code": -32601, "message": "Method not implemented"}}
            self.reply(answer); return
        record(method, params)
        self.reply({"jsonrpc": "2.0", "id": body.get("id"), "result": result})

    def reply(self, answer):
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

server = ThreadingHTTPServer((host, int(port)), Daemon)
print("INFO  DaemonCommand - Started HTTP server on /%s:%s" % (host, port), file=sys.stderr, flush=True)
server.serve_forever()
"#;

/// The installed program and the folder it works in.
pub struct FakeSignalCli {
    dir: PathBuf,
}

impl FakeSignalCli {
    /// Installs `signal-cli` (reporting `version`) into `dir`, run by the test venv's Python.
    pub fn install(dir: &Path, version: &str) -> Self {
        let python = crate::venv::test_python();
        let program = dir.join("signal-cli");
        std::fs::write(&program, format!("#!{}\n{SCRIPT}", python.display())).unwrap();
        std::fs::write(dir.join("version"), version).unwrap();
        std::fs::write(dir.join("linked-to"), "+15550001111").unwrap();
        std::fs::create_dir_all(dir.join("inbox")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// The program's path (`[channels.signal] cli`).
    pub fn program(&self) -> PathBuf {
        self.dir.join("signal-cli")
    }

    /// Signal delivers `envelope` (signal-cli's JSON) to the running daemon.
    pub fn deliver(&self, name: &str, envelope: &Value) {
        let spool = self.dir.join(format!("inbox/.{name}"));
        std::fs::write(&spool, envelope.to_string()).unwrap();
        std::fs::rename(&spool, self.dir.join(format!("inbox/{name}.json"))).unwrap();
    }

    fn lines(&self, file: &str) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join(file))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Each start: `{"args": [...], "pid": N}`.
    pub fn starts(&self) -> Vec<Value> {
        self.lines("starts.jsonl")
    }

    /// Waits (at most `limit`) until `n` calls of `method` were answered; those by then.
    pub fn wait_calls(&self, method: &str, n: usize, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let found: Vec<Value> = self
                .lines("calls.jsonl")
                .into_iter()
                .filter(|c| c["method"] == method)
                .collect();
            if found.len() >= n || Instant::now() >= deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (at most `limit`) until the program was started `n` times; the starts by then.
    pub fn wait_starts(&self, n: usize, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        loop {
            let starts = self.starts();
            if starts.len() >= n || Instant::now() >= deadline {
                return starts;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
