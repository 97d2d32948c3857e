//! `reins.worktree.list` as protocol-docs/agents.md documents it: a worktree agent made in the
//! workspace's repository is listed with its status and the files it changed.

use reins_harness::Worktree;
use serde_json::json;

use super::start;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reins_worktree_list_shows_each_agent_with_what_it_changed() {
    let lsp = start(&[("a.txt", "one\n"), (".gitignore", ".reins-home-for-test\n")], Vec::new(), json!({})).await;
    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();
    assert_eq!(listed, json!({"agents": []}), "not a git repository yet");
    let git = |script: &str| {
        let status = std::process::Command::new("sh").arg("-c").arg(script).current_dir(lsp.root()).status().unwrap();
        assert!(status.success(), "{script}");
    };
    git("git init -q && git add . && git -c user.name=t -c user.email=t@t commit -qm init");
    // This test's process makes the worktree, as `reins run --worktree` would, and stays alive.
    let worktree = Worktree::create(lsp.root(), &lsp.root().join(".reins-home-for-test"), "w1").unwrap();
    std::fs::write(worktree.dir.join("a.txt"), "ONE\n").unwrap();
    std::fs::write(worktree.dir.join("b.txt"), "b\n").unwrap();

    let listed = lsp.client.command("reins.worktree.list", json!({})).await.unwrap();

    let agent = &listed["agents"][0];
    assert_eq!((agent["id"].as_str(), agent["status"].as_str()), (Some("w1"), Some("running")));
    assert_eq!(agent["changed"], json!(["a.txt", "b.txt"]));
    let documented = super::docs::example("result", "reins.worktree.list");
    super::docs::same_shape(&documented, &listed, "reins.worktree.list").unwrap();
    worktree.remove().unwrap();
}
