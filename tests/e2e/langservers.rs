//! End-to-end tests of the `lsp` and `rename` tools in `reins run`, over language servers reins
//! starts itself: pyright and typescript-language-server from npm, clangd from Debian (installed
//! by tests/langservers/install.sh when missing), on small multi-file projects in temp dirs, with
//! the scripted model calling the tools.

mod support;

use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::{Value, json};

use support::processes::{child_of, wait_for, wait_until_gone};
use support::{CANARY_KEY, reins, reins_command, reins_home, reins_in_terminal, workspace};

/// Where tests/langservers/install.sh put the npm servers (installed on first use).
fn servers_bin() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/langservers/install.sh");
        let output = std::process::Command::new("bash").arg(script).output().expect("run tests/langservers/install.sh");
        assert!(output.status.success(), "install.sh failed: {}", String::from_utf8_lossy(&output.stderr));
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim()).join("node_modules/.bin")
    })
}

/// Runs `reins run --yes` in `dir` with the language servers on `PATH`, the model making
/// `calls` one turn each, then answering; the tool results, in order.
async fn run_calls(dir: &Path, calls: &[(&str, Value)]) -> Vec<String> {
    let mut replies: Vec<Reply> = calls
        .iter()
        .enumerate()
        .map(|(index, (tool, arguments))| Reply::tool_call(format!("call_{index}"), *tool, arguments.clone()))
        .collect();
    replies.push(Reply::text("Done."));
    let server = ScriptedServer::start(replies).await;
    let path = format!("{}:{}", servers_bin().display(), std::env::var("PATH").unwrap_or_default());
    let output = reins_command(Some(&server.base_url()), dir, &["run", "--yes", "--json", "go"])
        .env("PATH", path)
        // The key under a name that does not look like one: only its value gives it away.
        .env("REINS_TEST_NOTE", CANARY_KEY)
        .output()
        .await
        .expect("run reins");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    let requests = server.chat_requests();
    let last = requests.last().expect("a request");
    last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn check(results: &[String], expected: Expect) {
    expected.assert_eq(&results.join("\n---\n"));
}

const SHAPES_PY: &str = r#"class Greeter:
    def greet(self, name):
        """Says hello to someone."""
        return "Hello, " + name


class Robot:
    def greet(self, name):
        return "BEEP " + name
"#;

const APP_PY: &str = r#"from shapes import Greeter, Robot


def main():
    g = Greeter()
    r = Robot()
    print(g.greet("a"))
    print(r.greet("b"))
    print(g.greet("c"))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pyright_answers_definition_references_hover_and_symbols() {
    let dir = workspace(&[("shapes.py", SHAPES_PY), ("app.py", APP_PY)]);
    let results = run_calls(
        dir.path(),
        &[
            ("lsp", json!({"operation": "definition", "path": "app.py", "line": 7, "symbol": "greet"})),
            ("lsp", json!({"operation": "references", "path": "shapes.py", "line": 2, "symbol": "greet"})),
            ("lsp", json!({"operation": "hover", "path": "app.py", "line": 7, "symbol": "greet"})),
            ("lsp", json!({"operation": "workspace_symbols", "path": "app.py", "query": "Robot"})),
            ("lsp", json!({"operation": "document_symbols", "path": "shapes.py"})),
            ("lsp", json!({"operation": "references", "path": "app.py", "line": 7, "symbol": "nothing"})),
        ],
    )
    .await;
    check(
        &results,
        expect![[r#"
            shapes.py:
              2:9: def greet(self, name):
            ---
            app.py:
              7:13: print(g.greet("a"))
              9:13: print(g.greet("c"))
            shapes.py:
              2:9: def greet(self, name):
            ---
            (method) def greet(name: Unknown) -> Unknown

            Says hello to someone.
            ---
            shapes.py:
              7:7: class Robot
            ---
            1:7: class Greeter
              2:9: method greet
                2:21: variable name
            7:7: class Robot
              8:9: method greet
                8:21: variable name
            ---
            `nothing` is not on line 7 of app.py, which is: print(g.greet("a"))"#]],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_changes_exactly_the_true_references() {
    let dir = workspace(&[("shapes.py", SHAPES_PY), ("app.py", APP_PY)]);
    let results = run_calls(
        dir.path(),
        &[("rename", json!({"path": "shapes.py", "line": 2, "symbol": "greet", "newName": "welcome"}))],
    )
    .await;
    check(&results, expect!["Renamed `greet` to `welcome` in 2 files: shapes.py, app.py"]);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("shapes.py"), SHAPES_PY.replacen("def greet", "def welcome", 1));
    assert_eq!(read("app.py"), APP_PY.replace("g.greet", "g.welcome"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_or_crashing_server_is_a_tool_error_and_the_run_goes_on() {
    let dir = workspace(&[("a.zz", "x\n"), ("b.yy", "y\n")]);
    std::fs::create_dir_all(reins_home(dir.path())).unwrap();
    std::fs::write(
        reins_home(dir.path()).join("config.toml"),
        "[lsp_servers.missing]\ncommand = \"no-such-language-server\"\nfile_patterns = [\"*.zz\"]\n\n\
         [lsp_servers.crashing]\ncommand = \"sh\"\nargs = [\"-c\", \"env > seen-env.txt; echo cannot go on >&2; exit 3\"]\n\
         file_patterns = [\"*.yy\"]\n",
    )
    .unwrap();
    let results = run_calls(
        dir.path(),
        &[
            ("lsp", json!({"operation": "hover", "path": "a.zz", "line": 1, "symbol": "x"})),
            ("lsp", json!({"operation": "hover", "path": "b.yy", "line": 1, "symbol": "y"})),
            ("lsp", json!({"operation": "hover", "path": "b.yy", "line": 3, "symbol": "y"})),
        ],
    )
    .await;
    check(
        &results,
        expect![[r#"
        the language server missing (`no-such-language-server`) is not installed or not on PATH
        ---
        the language server crashing exited with status 3; it said: cannot go on
        ---
        b.yy has 1 line; line 3 is not one of them"#]],
    );
    // A server gets the tools' environment: no provider key, by name or by value.
    let seen = std::fs::read_to_string(dir.path().join("seen-env.txt")).expect("the server wrote its environment");
    assert!(seen.contains("PATH="), "{seen}");
    assert!(!seen.contains(CANARY_KEY) && !seen.contains("OPENAI_API_KEY"), "{seen}");
}

/// app.py with the two calls of `Greeter.greet` far apart: two hunks of a rename.
const APP_FAR_PY: &str = r#"from shapes import Greeter, Robot


def main():
    g = Greeter()
    r = Robot()
    print(g.greet("a"))
    print(r.greet("b"))
    # one
    # two
    # three
    # four
    # five
    # six
    # seven
    print(g.greet("c"))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_is_reviewed_hunk_by_hunk_at_the_terminal_and_a_checkout_undoes_it() {
    let dir = workspace(&[("shapes.py", SHAPES_PY), ("app.py", APP_FAR_PY)]);
    let root = dir.path();
    std::fs::create_dir_all(reins_home(root)).unwrap();
    // The terminal's PATH is the test's: pyright is named by its full path.
    let config = format!(
        "[lsp_servers.pyright]\ncommand = \"{}\"\nargs = [\"--stdio\"]\nfile_patterns = [\"*.py\"]\n",
        servers_bin().join("pyright-langserver").display()
    );
    std::fs::write(reins_home(root).join("config.toml"), config).unwrap();
    let server = ScriptedServer::start(vec![
        Reply::tool_call(
            "call_0",
            "rename",
            json!({"path": "shapes.py", "line": 2, "symbol": "greet", "newName": "welcome"}),
        ),
        Reply::text("Done."),
    ])
    .await;
    // shapes.py's one hunk: yes; app.py's first: yes, its second: no, for a reason.
    let (screen, code) =
        reins_in_terminal(Some(&server.base_url()), root, &["run", "rename greet"], &["y", "y", "n", "not that one"])
            .await;
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("hunk 1 of 2:") && screen.contains("hunk 2 of 2:"), "{screen}");
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap();
    assert_eq!(read("shapes.py"), SHAPES_PY.replacen("def greet", "def welcome", 1));
    assert_eq!(read("app.py"), APP_FAR_PY.replacen("g.greet(\"a\")", "g.welcome(\"a\")", 1));
    let requests = server.chat_requests();
    let result = requests[1].body["messages"][3]["content"].to_string();
    assert!(result.contains("not that one"), "{result}");

    // Back to before the prompt: both files as they were.
    let tree = reins(None, root, &["sessions", "tree", "--json"]).await;
    let tree: Value = serde_json::from_str(&tree.stdout).unwrap();
    let asked = tree["nodes"].as_array().unwrap().iter().find(|node| node["role"] == "user").unwrap()["id"].clone();
    let back = reins(None, root, &["sessions", "checkout", asked.as_str().unwrap(), "--yes"]).await;
    assert_eq!(back.code, Some(0), "stderr: {}", back.stderr);
    assert_eq!(read("shapes.py"), SHAPES_PY);
    assert_eq!(read("app.py"), APP_FAR_PY);
}

/// A language server that answers `initialize` (offering hover) and then nothing, ever.
const HANGING_SERVER: &str = r#"
import json, sys
def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line.strip() == b"":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))
while True:
    message = read()
    if message.get("method") == "initialize":
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {"hoverProvider": True}}})
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body.encode()))
        sys.stdout.buffer.flush()
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_server_is_a_tool_error_within_bounds_and_the_run_goes_on() {
    let dir = workspace(&[("a.hang", "x = y\n"), ("notes.txt", "still here\n")]);
    std::fs::create_dir_all(reins_home(dir.path())).unwrap();
    let config = format!(
        "[lsp_servers.hanging]\ncommand = \"python3\"\nargs = [\"-c\", {}]\nfile_patterns = [\"*.hang\"]\n",
        toml_string(HANGING_SERVER)
    );
    std::fs::write(reins_home(dir.path()).join("config.toml"), config).unwrap();
    let started = std::time::Instant::now();
    let results = run_calls(
        dir.path(),
        &[
            ("lsp", json!({"operation": "hover", "path": "a.hang", "line": 1, "symbol": "x"})),
            ("lsp", json!({"operation": "hover", "path": "a.hang", "line": 1, "symbol": "y"})),
            ("read", json!({"path": "notes.txt"})),
        ],
    )
    .await;
    check(
        &results,
        expect![[r#"
            the language server hanging has not answered textDocument/hover, asked more than 30 s ago: it hangs, and is not asked again until it answers
            ---
            the language server hanging has not answered textDocument/hover, asked more than 30 s ago: it hangs, and is not asked again until it answers
            ---
            still here
        "#]],
    );
    // One wait of the request timeout, not one per attempt or per call.
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(50), "the run took {took:?}");
}

/// `text` as a TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_server_is_confined_like_bash() {
    let dir = workspace(&[("a.zz", "x\n"), (".git/HEAD", "ref: refs/heads/main\n")]);
    let root = dir.path();
    std::fs::create_dir_all(reins_home(root)).unwrap();
    let config_file = reins_home(root).join("config.toml");
    // The server tries the workspace (allowed), `.git` and reins's own config (both refused).
    let script =
        format!("echo in > inside.txt; echo evil > .git/evil; echo evil >> '{}'; exit 3", config_file.display());
    let config = format!(
        "[lsp_servers.nosy]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nfile_patterns = [\"*.zz\"]\n",
        toml_string(&script)
    );
    std::fs::write(&config_file, &config).unwrap();
    let results =
        run_calls(root, &[("lsp", json!({"operation": "hover", "path": "a.zz", "line": 1, "symbol": "x"}))]).await;
    assert!(results[0].starts_with("the language server nosy exited with status 3"), "{results:?}");
    assert_eq!(std::fs::read_to_string(root.join("inside.txt")).unwrap(), "in\n");
    assert!(!root.join(".git/evil").exists(), "the server wrote in .git");
    assert_eq!(std::fs::read_to_string(&config_file).unwrap(), config, "the server changed reins's config");
}

const GREETER_TS: &str = r#"export class Greeter {
  /** Says hello to someone. */
  greet(name: string): string {
    return "Hello, " + name;
  }
}

export class Robot {
  greet(name: string): string {
    return "BEEP " + name;
  }
}
"#;

const APP_TS: &str = r#"import { Greeter, Robot } from "./greeter";

const g = new Greeter();
const r = new Robot();
console.log(g.greet("a"));
console.log(r.greet("b"));
console.log(g.greet("c"));
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_language_server_answers_and_renames() {
    let dir = workspace(&[("greeter.ts", GREETER_TS), ("app.ts", APP_TS), ("tsconfig.json", "{}\n")]);
    let results = run_calls(
        dir.path(),
        &[
            ("lsp", json!({"operation": "definition", "path": "app.ts", "line": 5, "symbol": "greet"})),
            ("lsp", json!({"operation": "references", "path": "greeter.ts", "line": 3, "symbol": "greet"})),
            ("lsp", json!({"operation": "hover", "path": "app.ts", "line": 5, "symbol": "greet"})),
            ("lsp", json!({"operation": "workspace_symbols", "path": "app.ts", "query": "Robot"})),
            ("rename", json!({"path": "greeter.ts", "line": 3, "symbol": "greet", "newName": "welcome"})),
        ],
    )
    .await;
    check(
        &results,
        expect![[r#"
        greeter.ts:
          3:3: greet(name: string): string {
        ---
        app.ts:
          5:15: console.log(g.greet("a"));
          7:15: console.log(g.greet("c"));
        greeter.ts:
          3:3: greet(name: string): string {
        ---
        ```typescript
        (method) Greeter.greet(name: string): string
        ```
        Says hello to someone.
        ---
        greeter.ts:
          8:1: class Robot
        ---
        Renamed `greet` to `welcome` in 2 files: app.ts, greeter.ts"#]],
    );
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("greeter.ts"), GREETER_TS.replacen("  greet(", "  welcome(", 1));
    assert_eq!(read("app.ts"), APP_TS.replace("g.greet", "g.welcome"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clangd_answers_across_files() {
    let dir = workspace(&[
        (
            "shapes.h",
            "struct square {\n    int side;\n};\n\n/* The area of a square. */\nint area(const struct square *s);\n",
        ),
        ("shapes.c", "#include \"shapes.h\"\n\nint area(const struct square *s) {\n    return s->side * s->side;\n}\n"),
        (
            "main.c",
            "#include \"shapes.h\"\n\nint main(void) {\n    struct square s = {3};\n    return area(&s) - area(&s);\n}\n",
        ),
    ]);
    let root = dir.path().canonicalize().unwrap();
    let entries: Vec<Value> = ["shapes.c", "main.c"]
        .iter()
        .map(|file| json!({"directory": root, "file": file, "arguments": ["cc", "-c", file]}))
        .collect();
    std::fs::write(root.join("compile_commands.json"), serde_json::to_string(&entries).unwrap()).unwrap();
    let results = run_calls(
        dir.path(),
        &[
            ("lsp", json!({"operation": "hover", "path": "main.c", "line": 5, "symbol": "area"})),
            ("lsp", json!({"operation": "definition", "path": "main.c", "line": 5, "symbol": "area"})),
            ("lsp", json!({"operation": "references", "path": "shapes.h", "line": 6, "symbol": "area"})),
            ("lsp", json!({"operation": "workspace_symbols", "path": "main.c", "query": "square"})),
        ],
    )
    .await;
    check(
        &results,
        expect![[r#"
        function area

        → int
        Parameters:
        - const struct square * s
        The area of a square.

        int area(const struct square *s)
        ---
        shapes.c:
          3:5: int area(const struct square *s) {
        ---
        main.c:
          5:12: return area(&s) - area(&s);
          5:23: return area(&s) - area(&s);
        shapes.c:
          3:5: int area(const struct square *s) {
        shapes.h:
          6:5: int area(const struct square *s);
        ---
        shapes.h:
          1:8: class square"#]],
    );
}

/// A language server (here one that never answers, and starts a process of its own) ends with
/// reins however reins ends: its whole process group, even when reins is killed.
async fn check_server_ends_with_reins(signal: nix::sys::signal::Signal, mark: u32) {
    let dir = workspace(&[("a.zz", "x\n")]);
    let (server_line, child_line) = (format!("sleep 500.{mark}1"), format!("sleep 500.{mark}2"));
    std::fs::create_dir_all(reins_home(dir.path())).unwrap();
    std::fs::write(
        reins_home(dir.path()).join("config.toml"),
        format!(
            "[lsp_servers.sleepy]\ncommand = \"sh\"\nargs = [\"-c\", \"{child_line} & exec {server_line}\"]\n\
             file_patterns = [\"*.zz\"]\n"
        ),
    )
    .unwrap();
    let calls = vec![
        Reply::tool_call("c1", "lsp", json!({"operation": "hover", "path": "a.zz", "line": 1, "symbol": "x"})),
        Reply::text("never"),
    ];
    let server = ScriptedServer::start(calls).await;
    let mut child = reins_command(Some(&server.base_url()), dir.path(), &["run", "--yes", "go"]).spawn().unwrap();
    let pids = wait_for(&[server_line.clone(), child_line.clone()]).await;
    // `setsid` execs reins when it may start a session itself, else runs it as its child.
    let id = child.id().unwrap() as i32;
    let comm = std::fs::read_to_string(format!("/proc/{id}/comm")).unwrap_or_default();
    let reins = if comm.trim() == "setsid" { child_of(id).expect("reins runs under setsid") } else { id };
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(reins), signal).unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(10), child.wait()).await.expect("reins ended").unwrap();
    for (pid, line) in pids.iter().zip([server_line, child_line]) {
        assert!(wait_until_gone(*pid).await, "{line} outlived reins after {signal}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_language_server_ends_when_reins_is_killed() {
    check_server_ends_with_reins(nix::sys::signal::Signal::SIGKILL, 7).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_language_server_ends_when_reins_is_told_to_stop() {
    check_server_ends_with_reins(nix::sys::signal::Signal::SIGTERM, 8).await;
}
