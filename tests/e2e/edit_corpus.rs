//! The edit corpus (server/tools/tests/edit_corpus) through the real binary: each case is one
//! `reins run --json --yes` whose scripted model makes the case's `edit` or `apply_patch` call in
//! a temp workspace (apply_patch offered through `[tools] edit_format`); the files on disk
//! afterwards (or the refusal the model read) must be what the pure function gives, and the
//! corpus figures must hold end to end, in both dialects.

#[path = "../../server/tools/tests/edit_corpus/corpus.rs"]
mod corpus;

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use std::collections::BTreeMap;

use corpus::{Case, Dialect, Figures, Grade, Outcome};
use scripted_llm::{Reply, ScriptedServer};
use serde_json::Value;
use tokio::sync::Semaphore;

/// Runs at once: enough to hide process start-up, few enough for a shared two-core machine.
const PARALLEL_RUNS: usize = 6;

/// Runs `case` through `reins run`: the outcome as the model saw it and the file as left on disk.
async fn run_case(case: &Case) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in &case.files {
        let file = dir.path().join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
    }
    let home = dir.path().join(".reins-home-for-test");
    std::fs::create_dir_all(&home).unwrap();
    if case.dialect == Dialect::ApplyPatch {
        std::fs::write(home.join("config.toml"), "[tools]\nedit_format = \"apply_patch\"\n").unwrap();
    }
    let server =
        ScriptedServer::start(vec![Reply::tool_call("call_1", case.tool(), case.args.clone()), Reply::text("Done.")])
            .await;
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_reins"))
        .args(["run", "--json", "--yes", "make the edit"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("REINS_HOME", &home)
        .env("OPENAI_API_KEY", "test-key")
        .env("OPENAI_BASE_URL", server.base_url())
        .env("REINS_MODEL", "scripted-model")
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}: {}", case.name, String::from_utf8_lossy(&output.stderr));
    let end = tool_end(&stdout).unwrap_or_else(|| panic!("{}: no tool_execution_end in {stdout}", case.name));
    let on_disk: BTreeMap<String, Option<String>> = case
        .judged_paths()
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(dir.path().join(&path)).ok();
            (path, text)
        })
        .collect();
    if end["isError"].as_bool() == Some(true) {
        let before: BTreeMap<String, Option<String>> =
            on_disk.keys().map(|path| (path.clone(), case.files.get(path).cloned())).collect();
        assert_eq!(on_disk, before, "{}: a refused call changed the files", case.name);
        Outcome::Refused(end["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string())
    } else {
        Outcome::Landed(on_disk)
    }
}

fn tool_end(stdout: &str) -> Option<Value> {
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "tool_execution_end")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_lands_the_same_through_reins_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/tests/edit_corpus");
    let cases = corpus::load(&dir).unwrap();
    let slots = Arc::new(Semaphore::new(PARALLEL_RUNS));
    let runs: Vec<_> = cases
        .iter()
        .cloned()
        .map(|case| {
            let slots = slots.clone();
            tokio::spawn(async move {
                let _slot = slots.acquire_owned().await.unwrap();
                run_case(&case).await
            })
        })
        .collect();
    let mut judged: Vec<(&Case, Grade)> = Vec::new();
    for (case, run) in cases.iter().zip(runs) {
        let through_binary = run.await.unwrap();
        match (corpus::run_pure(case), &through_binary) {
            (Outcome::Landed(pure), Outcome::Landed(real)) => assert_eq!(&pure, real, "{}", case.name),
            (Outcome::Refused(pure), Outcome::Refused(real)) => {
                assert!(real.contains(pure.lines().next().unwrap_or_default()), "{}: {real}", case.name)
            }
            (pure, real) => panic!("{}: the pure function gives {pure:?}, reins run {real:?}", case.name),
        }
        judged.push((case, corpus::judge(case, &through_binary)));
    }
    for dialect in [Dialect::Edit, Dialect::ApplyPatch] {
        let figures = Figures::of(judged.iter().filter(|(case, _)| case.dialect == dialect).copied());
        assert!(figures.cases >= 70, "{dialect:?}: {figures}");
        assert_eq!(figures.wrong, 0, "{dialect:?}: {figures}");
        assert_eq!(figures.refused_as_expected, figures.refusals_expected, "{dialect:?}: {figures}");
        assert!(figures.landed_percent() >= 95.0, "{dialect:?}: {figures}");
    }
}
