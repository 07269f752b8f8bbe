//! Where `lurkbot chat` (and the approval prompts of `chat` and `agent`) read the human's
//! lines. On a terminal: a line editor (rustyline) with arrow keys, Emacs bindings, history
//! kept in the home (`history/chat.txt`, 0600) and multi-line input — a line ending in `\`
//! continues on the next, and a paste keeps its newlines. Otherwise: plain lines from stdin
//! (that is how the chat is scripted and tested).
//!
//! A line is read only when asked for, with that request's prompt, on a thread of its own, so
//! a turn can wait for an approval without blocking and no prompt is drawn while a reply
//! streams.

use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Config, Editor, Helper};
use tokio::sync::oneshot;

/// The history file inside the home.
pub(crate) const CHAT_HISTORY: &str = "history/chat.txt";
/// Lines of history kept.
const HISTORY_SIZE: usize = 1000;

/// One request: the prompt, and where the line (or `None` at end of input / Ctrl-C / Ctrl-D)
/// goes.
type Request = (String, oneshot::Sender<Option<String>>);

/// Reads lines on request (cheap to clone).
#[derive(Clone)]
pub(crate) struct LineReader {
    requests: std_mpsc::Sender<Request>,
}

impl LineReader {
    /// A line editor with `history` on a terminal, plain stdin lines otherwise.
    pub(crate) fn start(terminal: bool, history: Option<PathBuf>) -> Self {
        let (requests, incoming) = std_mpsc::channel::<Request>();
        std::thread::spawn(move || {
            if terminal && let Some(editor) = editor(history.as_ref()) {
                edit_lines(editor, history, incoming);
            } else {
                plain_lines(incoming);
            }
        });
        Self { requests }
    }

    /// The next line, read after showing `prompt` (on a terminal); `None` at end of input.
    pub(crate) async fn read(&self, prompt: &str) -> Option<String> {
        let (tx, rx) = oneshot::channel();
        self.requests.send((prompt.to_string(), tx)).ok()?;
        rx.await.ok().flatten()
    }
}

fn plain_lines(incoming: std_mpsc::Receiver<Request>) {
    let stdin = std::io::stdin();
    let mut buffer = String::new();
    while let Ok((_, reply)) = incoming.recv() {
        buffer.clear();
        let line = match stdin.read_line(&mut buffer) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(buffer.trim_end_matches(['\n', '\r']).to_string()),
        };
        let ended = line.is_none();
        let _ = reply.send(line);
        if ended {
            break;
        }
    }
}

type ChatEditor = Editor<ChatHelper, rustyline::history::FileHistory>;

fn editor(history: Option<&PathBuf>) -> Option<ChatEditor> {
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)
        .ok()?
        .auto_add_history(false)
        .build();
    let mut editor = ChatEditor::with_config(config).ok()?;
    editor.set_helper(Some(ChatHelper));
    if let Some(path) = history {
        // A missing or unreadable history starts empty.
        let _ = editor.load_history(path);
    }
    Some(editor)
}

fn edit_lines(
    mut editor: ChatEditor,
    history: Option<PathBuf>,
    incoming: std_mpsc::Receiver<Request>,
) {
    while let Ok((prompt, reply)) = incoming.recv() {
        let line = match editor.readline(&prompt) {
            Ok(line) => {
                let text = join_continued(&line);
                if !text.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    if let Some(path) = &history {
                        save_history(&mut editor, path);
                    }
                }
                Some(text)
            }
            Err(ReadlineError::Interrupted | ReadlineError::Eof) | Err(_) => None,
        };
        let ended = line.is_none();
        let _ = reply.send(line);
        if ended {
            break;
        }
    }
}

/// Saves the history privately (its folder 0700, the file 0600).
fn save_history(editor: &mut ChatEditor, path: &PathBuf) {
    if let Some(dir) = path.parent() {
        let _ = lurkbot_core::create_private_dir(dir);
    }
    if editor.save_history(path).is_ok() {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
        }
    }
}

/// The text a (possibly multi-line) input stands for: a `\` at the end of a line joins it to
/// the next with a newline.
pub(crate) fn join_continued(input: &str) -> String {
    input.replace("\\\n", "\n")
}

/// Continues the input on the next line while it ends in `\`.
struct ChatHelper;

impl Validator for ChatHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if ctx.input().ends_with('\\') {
            Ok(ValidationResult::Incomplete)
        } else {
            Ok(ValidationResult::Valid(None))
        }
    }
}

impl Completer for ChatHelper {
    type Candidate = String;
}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {}

impl Helper for ChatHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_backslash_continues_the_line() {
        assert_eq!(join_continued("one\\\ntwo"), "one\ntwo");
        assert_eq!(join_continued("plain"), "plain");
    }
}
