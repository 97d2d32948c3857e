//! Checkouts as tables: a session's recorded changes, the files as the user left them, the entry
//! to check out, and what each file is to hold.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use expect_test::{Expect, expect};
use reins_ai::Message;
use reins_session::{EntryKind, SessionFile, SessionStore, SessionTree};

use super::*;

/// A change as a test writes it: path, content before, content after (`None`: no file).
type Change<'a> = (&'a str, Option<&'a [u8]>, Option<&'a [u8]>);

/// A session in a temp workspace whose entries record file changes.
struct Scenario {
    dir: tempfile::TempDir,
    file: SessionFile,
}

impl Scenario {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("w")).unwrap();
        let store = SessionStore::new(dir.path().join("sessions"));
        let mut file = store.create(&dir.path().join("w"), None).unwrap();
        file.append_message(&Message::user("go")).unwrap();
        Scenario { dir, file }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("w")
    }

    fn store(&self) -> SideStore {
        SideStore::of_session(self.file.path())
    }

    /// Records one tool call's changes (`(path, before, after)`, `None` for absent) as the
    /// agent makes them on disk, and returns the entry's id.
    fn change(&mut self, files: &[Change<'_>]) -> String {
        let landed: Vec<Landed> = files
            .iter()
            .map(|(path, before, after)| Landed {
                path: path.to_string(),
                moved_to: None,
                before: before.map(<[u8]>::to_vec),
                after: after.map(<[u8]>::to_vec),
            })
            .collect();
        self.land(&landed)
    }

    fn land(&mut self, landed: &[Landed]) -> String {
        for change in landed {
            let at = self.root().join(change.moved_to.as_deref().unwrap_or(&change.path));
            match &change.after {
                Some(bytes) => {
                    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                    std::fs::write(&at, bytes).unwrap();
                }
                None => std::fs::remove_file(&at).unwrap(),
            }
            if change.moved_to.is_some() {
                std::fs::remove_file(self.root().join(&change.path)).unwrap();
            }
        }
        let record = FileChangeRecord::new("call", "edit", landed, &self.store()).unwrap();
        let data = Some(record.to_value());
        let id = self.file.append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data }).unwrap();
        self.file.flush().unwrap();
        id
    }

    fn command(&mut self, command: &str) -> String {
        let data = Some(CommandRecord::new("call", "bash", Some(command)).to_value());
        let id = self.file.append(EntryKind::Custom { custom_type: COMMAND.into(), data }).unwrap();
        self.file.flush().unwrap();
        id
    }

    fn write(&self, path: &str, bytes: &[u8]) {
        std::fs::write(self.root().join(path), bytes).unwrap();
    }

    fn read(&self, path: &str) -> Option<Vec<u8>> {
        read(&self.root().join(path)).unwrap()
    }

    /// The plan from the leaf to `target`, replayed on the files as they are. The session is
    /// read again from its file, as a checkout in a new process reads it (its texts in place).
    fn outcomes(&self, target: &str) -> (Plan, Vec<FileOutcome>) {
        let tree = &SessionTree::load(self.file.path()).unwrap();
        let plan = Plan::between(tree, self.file.tree().leaf(), target).unwrap();
        let root = self.root();
        let resolved: HashMap<String, Result<PathBuf, String>> = plan
            .recorded_paths()
            .into_iter()
            .map(|recorded| {
                let path = if recorded.contains("..") {
                    Err("it is outside the workspace".to_string())
                } else {
                    Ok(root.join(recorded))
                };
                (recorded.to_string(), path)
            })
            .collect();
        let current = resolved
            .values()
            .filter_map(|path| path.as_ref().ok())
            .map(|path| (path.clone(), read(path).unwrap()))
            .collect();
        let store = self.store();
        let outcomes = replay(&plan, Files { resolved, current, store: &store });
        // The hashes the replay hands the journal are those of the contents, wherever known,
        // and a file that is there always has its own.
        for outcome in &outcomes {
            assert_eq!(outcome.current.is_some(), outcome.current_sha256.is_some(), "{}", outcome.shown);
            for (bytes, known) in
                [(&outcome.current, &outcome.current_sha256), (&outcome.result, &outcome.result_sha256)]
            {
                if let Some(known) = known {
                    assert_eq!(Some(known.as_str()), bytes.as_deref().map(sha256_hex).as_deref(), "{}", outcome.shown);
                }
            }
        }
        (plan, outcomes)
    }

    /// Checks out `target` on disk (the leaf stays: these tests look at files).
    fn checkout(&self, target: &str) -> Vec<FileOutcome> {
        let (_, outcomes) = self.outcomes(target);
        let root = self.root();
        let inside = |path: &Path| path.starts_with(&root);
        let journal = Journal::write(self.file.path(), target, &outcomes, &inside).unwrap();
        assert!(journal.apply(&inside).iter().all(|w| *w == Written::Done));
        journal.finish(self.file.path()).unwrap();
        outcomes
    }
}

/// One line per file: its action, and what it is to hold or why not.
fn render(outcomes: &[FileOutcome]) -> String {
    let text = |bytes: &Option<Vec<u8>>| match bytes {
        Some(bytes) => format!("{:?}", String::from_utf8_lossy(bytes)),
        None => "(none)".to_string(),
    };
    outcomes
        .iter()
        .map(|outcome| match &outcome.status {
            Status::Conflict(info) => {
                format!("{} conflict at {:?} ({}): {}", outcome.shown, info.lines, info.entry_id.len(), info.reason)
            }
            Status::Refused(reason) => format!("{} refused: {reason}", outcome.shown),
            _ => format!(
                "{} {} {} ({} changes)",
                outcome.shown,
                outcome.action(),
                text(&outcome.result),
                outcome.changes
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn check(scenario: &Scenario, target: &str, expected: Expect) {
    expected.assert_eq(&render(&scenario.outcomes(target).1));
}

#[test]
fn undo_goes_back_in_reverse_and_redo_comes_forward_again() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    let created = s.change(&[("a.txt", None, Some(b"one\n"))]);
    let edited = s.change(&[("a.txt", Some(b"one\n"), Some(b"two\n")), ("b.txt", None, Some(b"b\n"))]);
    check(
        &s,
        &created,
        expect![[r#"
        a.txt restore "one\n" (1 changes)
        b.txt delete (none) (1 changes)"#]],
    );
    check(
        &s,
        &start,
        expect![[r#"
        a.txt delete (none) (2 changes)
        b.txt delete (none) (1 changes)"#]],
    );
    s.checkout(&start);
    assert_eq!((s.read("a.txt"), s.read("b.txt")), (None, None));
    s.file.navigate(&start, None).unwrap();
    check(
        &s,
        &edited,
        expect![[r#"
        a.txt create "two\n" (2 changes)
        b.txt create "b\n" (1 changes)"#]],
    );
    s.checkout(&edited);
    assert_eq!((s.read("a.txt").unwrap(), s.read("b.txt").unwrap()), (b"two\n".to_vec(), b"b\n".to_vec()));
    // Files already where the target has them are kept as they are.
    s.file.navigate(&created, None).unwrap();
    check(
        &s,
        &edited,
        expect![[r#"
        a.txt keep "two\n" (1 changes)
        b.txt keep "b\n" (1 changes)"#]],
    );
}

#[test]
fn a_branch_is_undone_to_the_common_ancestor_and_the_other_redone() {
    let mut s = Scenario::new();
    let base = s.change(&[("a.txt", None, Some(b"base\n"))]);
    let left = s.change(&[("a.txt", Some(b"base\n"), Some(b"left\n"))]);
    s.checkout(&base);
    s.file.navigate(&base, None).unwrap();
    let right = s.change(&[("a.txt", Some(b"base\n"), Some(b"right\n")), ("r.txt", None, Some(b"r\n"))]);
    let (plan, _) = s.outcomes(&left);
    let steps: Vec<String> =
        plan.steps.iter().map(|step| format!("{:?} {}", step.direction, step.file.describe())).collect();
    assert_eq!(steps, ["Undo create r.txt", "Undo edit a.txt", "Redo edit a.txt"]);
    assert_eq!(plan.ancestor.as_deref(), Some(base.as_str()));
    check(
        &s,
        &left,
        expect![[r#"
        a.txt restore "left\n" (2 changes)
        r.txt delete (none) (1 changes)"#]],
    );
    let _ = right;
}

#[test]
fn the_users_edits_elsewhere_in_the_file_survive() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    s.change(&[("a.txt", None, Some(b"one\n"))]);
    let created = s.file.leaf().unwrap().to_string();
    s.change(&[("a.txt", Some(b"one\n"), Some(b"one\ntwo\nthree\nfour\n"))]);
    s.change(&[("a.txt", Some(b"one\ntwo\nthree\nfour\n"), Some(b"one\ntwo\nTHREE\nfour\n"))]);
    s.write("a.txt", b"ONE (mine)\ntwo\nTHREE\nfour\n");
    check(&s, &created, expect![[r#"a.txt merge "ONE (mine)\n" (2 changes)"#]]);
    s.write("a.txt", b"one\ntwo\nTHREE\nfour\nfive (mine)\n");
    check(&s, &created, expect![[r#"a.txt merge "one\nfive (mine)\n" (2 changes)"#]]);
    // Undoing the creation too leaves the user's own line.
    check(&s, &start, expect![[r#"a.txt merge "five (mine)\n" (3 changes)"#]]);
}

#[test]
fn an_overlapping_edit_leaves_the_file_alone_and_names_the_lines() {
    let mut s = Scenario::new();
    let before = s.change(&[("a.txt", None, Some(b"a\nb\nc\nd\n")), ("other.txt", None, Some(b"x\n"))]);
    s.change(&[("a.txt", Some(b"a\nb\nc\nd\n"), Some(b"a\nB\nc\nd\n")), ("other.txt", Some(b"x\n"), Some(b"X\n"))]);
    s.write("a.txt", b"a\nbee\nc\nd\n");
    check(
        &s,
        &before,
        expect![[r#"
        a.txt conflict at Some(1..2) (8): your edits overlap the agent's change (the user changed line 2 of the current text, where the edit changes line 2 of the text it was made from)
        other.txt restore "x\n" (1 changes)"#]],
    );
    let outcomes = s.checkout(&before);
    // What the user would make by hand for the file to follow: the agent's change, undone.
    let Status::Conflict(info) = &outcomes[0].status else { panic!("{outcomes:?}") };
    expect![[r#"
        --- a/a.txt
        +++ b/a.txt
        @@ -1,4 +1,4 @@
         a
        -B
        +b
         c
         d
    "#]]
    .assert_eq(info.change.as_deref().unwrap_or("(none)"));
    assert_eq!(s.read("a.txt").unwrap(), b"a\nbee\nc\nd\n", "the conflicting file is untouched");
    assert_eq!(s.read("other.txt").unwrap(), b"x\n");
    assert!(!outcomes[0].writes());
}

#[test]
fn a_file_deleted_or_recreated_by_the_user_is_a_conflict() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    let created = s.change(&[("a.txt", None, Some(b"a\n"))]);
    s.change(&[("a.txt", Some(b"a\n"), Some(b"A\n"))]);
    std::fs::remove_file(s.root().join("a.txt")).unwrap();
    check(
        &s,
        &created,
        expect!["a.txt conflict at None (8): it was deleted since, so the change cannot be replayed on it"],
    );
    s.checkout(&start);
    s.file.navigate(&start, None).unwrap();
    s.write("a.txt", b"mine\n");
    check(
        &s,
        &created,
        expect!["a.txt conflict at None (8): a file with other content is there now, and it is left as it is"],
    );
}

#[test]
fn a_rename_is_undone_whole_or_not_at_all() {
    let mut s = Scenario::new();
    let created = s.change(&[("old.txt", None, Some(b"1\n2\n3\n")), ("b.txt", None, Some(b"b\n"))]);
    let moved = Landed {
        path: "old.txt".into(),
        moved_to: Some("new.txt".into()),
        before: Some(b"1\n2\n3\n".to_vec()),
        after: Some(b"1\n2\nthree\n".to_vec()),
    };
    s.land(&[moved]);
    check(
        &s,
        &created,
        expect![[r#"
        new.txt delete (none) (1 changes)
        old.txt create "1\n2\n3\n" (1 changes)"#]],
    );
    s.write("new.txt", b"one\n2\nthree\n");
    check(
        &s,
        &created,
        expect![[r#"
        new.txt delete (none) (1 changes)
        old.txt create "one\n2\n3\n" (1 changes)"#]],
    );
    s.write("new.txt", b"1\n2\nTHREE\n");
    check(
        &s,
        &created,
        expect![[r#"
        new.txt conflict at Some(2..3) (8): your edits overlap the agent's change (the user changed line 3 of the current text, where the edit changes line 3 of the text it was made from)
        old.txt conflict at None (8): left as it is with new.txt, which a recorded rename links it to: your edits overlap the agent's change (the user changed line 3 of the current text, where the edit changes line 3 of the text it was made from)"#]],
    );
}

#[test]
fn a_record_whose_text_does_not_match_its_hash_is_refused() {
    let mut s = Scenario::new();
    let created = s.change(&[("a.txt", None, Some(b"one\n"))]);
    let landed = Landed {
        path: "a.txt".into(),
        moved_to: None,
        before: Some(b"one\n".to_vec()),
        after: Some(b"two\n".to_vec()),
    };
    let mut record = FileChangeRecord::new("call", "edit", &[landed], &s.store()).unwrap();
    // A crafted session: the text says one thing, the hash (and size) another.
    record.files[0].after.as_mut().unwrap().text = Some(Text::new("rm -rf\n"));
    let data = Some(record.to_value());
    let crafted = s.file.append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data }).unwrap();
    s.file.navigate(&created, None).unwrap();
    check(
        &s,
        &crafted,
        expect!["a.txt refused: its recorded content cannot be read: the recorded text does not match its sha256"],
    );
    assert_eq!(s.read("a.txt").unwrap(), b"one\n");
}

#[test]
fn only_the_side_a_file_ends_with_is_read() {
    let mut s = Scenario::new();
    let created = s.change(&[("a.txt", None, Some(b"one\n"))]);
    let second = s.change(&[("a.txt", Some(b"one\n"), Some(b"two\n"))]);
    let landed = Landed {
        path: "a.txt".into(),
        moved_to: None,
        before: Some(b"two\n".to_vec()),
        after: Some(b"three\n".to_vec()),
    };
    let mut record = FileChangeRecord::new("call", "edit", &[landed], &s.store()).unwrap();
    // A crafted side on the way: its hash says "two", its text something else.
    record.files[0].before.as_mut().unwrap().text = Some(Text::new("rm -rf\n"));
    let data = Some(record.to_value());
    s.file.append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data }).unwrap();
    s.file.flush().unwrap();
    s.write("a.txt", b"three\n");
    // Going back past it compares the file with its hash only; what is written is read and checked.
    s.checkout(&created);
    assert_eq!(s.read("a.txt").unwrap(), b"one\n");
    // Ending at it reads it, and it is refused.
    s.write("a.txt", b"three\n");
    check(
        &s,
        &second,
        expect!["a.txt refused: its recorded content cannot be read: the recorded text does not match its sha256"],
    );
}

#[test]
fn a_checkout_killed_before_its_journal_was_committed_leaves_no_temporary_file() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    s.change(&[("a.txt", None, Some(b"a\n")), ("b.txt", None, Some(b"b\n"))]);
    let end = s.file.leaf().unwrap().to_string();
    s.checkout(&start);
    s.file.navigate(&start, None).unwrap();
    let (_, outcomes) = s.outcomes(&end);
    Journal::write(s.file.path(), &end, &outcomes, &|_: &Path| true).unwrap();
    // Killed before the rename that commits it: its temporary files are there, in staging.
    std::fs::rename(journal_dir(s.file.path()), s.file.path().with_extension("checkout-new")).unwrap();
    let temporary = |s: &Scenario| {
        let names = std::fs::read_dir(s.root()).unwrap().flatten().map(|entry| entry.file_name());
        names.filter(|name| name.to_string_lossy().starts_with(".reins-checkout-")).count()
    };
    assert_eq!((temporary(&s), s.read("a.txt")), (2, None), "nothing changed yet");
    assert!(Journal::pending(s.file.path()).unwrap().is_none(), "it never committed");
    // The next checkout removes them, and leaves none of its own.
    s.checkout(&end);
    assert_eq!((s.read("a.txt").unwrap(), s.read("b.txt").unwrap()), (b"a\n".to_vec(), b"b\n".to_vec()));
    assert_eq!(temporary(&s), 0);
    assert!(!s.file.path().with_extension("checkout-new").exists());
}

#[test]
fn binary_files_come_back_from_the_side_store_and_are_never_merged() {
    let mut s = Scenario::new();
    let created = s.change(&[("logo.png", None, Some(&[0x89, b'P', 0, 0xff]))]);
    let changed = s.change(&[("logo.png", Some(&[0x89, b'P', 0, 0xff]), Some(&[0x89, b'P', 1, 0xfe]))]);
    s.checkout(&created);
    assert_eq!(s.read("logo.png").unwrap(), [0x89, b'P', 0, 0xff]);
    s.file.navigate(&created, None).unwrap();
    s.checkout(&changed);
    assert_eq!(s.read("logo.png").unwrap(), [0x89, b'P', 1, 0xfe]);
    s.write("logo.png", &[0xff, 0xfe]);
    check(&s, &created, expect![""]);
}

#[test]
fn a_large_file_is_undone_by_its_patch_around_the_users_edits() {
    let mut s = Scenario::new();
    let old: String = (0..10_000).map(|n| format!("line {n}\n")).collect();
    let new = old.replace("line 5000\n", "the agent's line\n");
    let created = s.change(&[("big.txt", None, Some(old.as_bytes()))]);
    s.change(&[("big.txt", Some(old.as_bytes()), Some(new.as_bytes()))]);
    let mine = format!("my header\n{}", new.replace("line 9000\n", "my line\n"));
    s.write("big.txt", mine.as_bytes());
    let (_, outcomes) = s.outcomes(&created);
    assert_eq!(outcomes[0].action(), "merge");
    let expected = format!("my header\n{}", old.replace("line 9000\n", "my line\n"));
    assert!(outcomes[0].result.as_deref() == Some(expected.as_bytes()));
    s.write("big.txt", new.replace("line 4999\n", "mine\n").as_bytes());
    check(
        &s,
        &created,
        expect![
            "big.txt conflict at Some(4997..5004) (8): your edits overlap the agent's change (the lines the change was made at (lines 4998-5004) are no longer in the file as they were)"
        ],
    );
}

#[test]
fn paths_outside_the_workspace_and_commands_are_reported() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    s.change(&[("in.txt", None, Some(b"in\n"))]);
    let record = FileChangeRecord::new(
        "call",
        "edit",
        &[Landed { path: "../out.txt".into(), moved_to: None, before: None, after: Some(b"x\n".to_vec()) }],
        &s.store(),
    )
    .unwrap();
    s.file.append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data: Some(record.to_value()) }).unwrap();
    s.command("cargo fmt");
    s.file
        .append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data: Some(serde_json::json!({"files": 5})) })
        .unwrap();
    s.file.flush().unwrap();
    let (plan, outcomes) = s.outcomes(&start);
    expect![[r#"
        ../out.txt refused: it is outside the workspace
        in.txt delete (none) (1 changes)"#]]
    .assert_eq(&render(&outcomes));
    assert_eq!(plan.commands.iter().map(|c| c.command.as_deref().unwrap_or("")).collect::<Vec<_>>(), ["cargo fmt"]);
    assert_eq!(plan.unreadable.len(), 1, "{:?}", plan.unreadable);
}

/// Enough files that threads share them: each file's result is reported in its own place, and
/// a file the user changed meanwhile is left as the user left it.
#[test]
fn a_checkout_of_many_files_reports_each_in_its_place() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    let names: Vec<String> = (0..40).map(|n| format!("f{n:02}.txt")).collect();
    let created: Vec<Change<'_>> = names.iter().map(|name| (name.as_str(), None, Some(name.as_bytes()))).collect();
    s.change(&created);
    let (_, outcomes) = s.outcomes(&start);
    let root = s.root();
    let inside = |path: &Path| path.starts_with(&root);
    let journal = Journal::write(s.file.path(), &start, &outcomes, &inside).unwrap();
    let mine = [3, 17, 38];
    for &n in &mine {
        s.write(&names[n], b"mine\n");
    }
    let written = journal.apply(&inside);
    assert_eq!(written.len(), names.len());
    for (file, written) in journal.files.iter().zip(&written) {
        let name = file.path.file_name().unwrap().to_str().unwrap();
        let n = names.iter().position(|known| known == name).unwrap();
        if mine.contains(&n) {
            assert_eq!(*written, Written::ChangedMeanwhile, "{name}");
            assert_eq!(s.read(name).unwrap(), b"mine\n", "{name}");
        } else {
            assert_eq!(*written, Written::Done, "{name}");
            assert_eq!(s.read(name), None, "{name}");
        }
    }
    journal.finish(s.file.path()).unwrap();
}

#[test]
fn an_interrupted_checkout_finishes_when_run_again() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    s.change(&[("a.txt", None, Some(b"a\n")), ("b.txt", None, Some(b"b\n")), ("c.txt", None, Some(b"c\n"))]);
    s.change(&[
        ("a.txt", Some(b"a\n"), Some(b"A\n")),
        ("b.txt", Some(b"b\n"), Some(b"B\n")),
        ("c.txt", Some(b"c\n"), Some(b"C\n")),
    ]);
    let created = s.file.path_to_ancestors();
    let (_, outcomes) = s.outcomes(&created);
    let journal = Journal::write(s.file.path(), &created, &outcomes, &|_: &Path| true).unwrap();
    // Killed after the first file: a.txt is written, the others are not.
    std::fs::write(s.root().join("a.txt"), b"a\n").unwrap();
    // Meanwhile the user edits c.txt.
    s.write("c.txt", b"C mine\n");
    drop(journal);
    let pending = Journal::pending(s.file.path()).unwrap().expect("the journal survived");
    assert_eq!(pending.target, created);
    let written = pending.apply(&|_: &Path| true);
    assert_eq!(written, [Written::AlreadyDone, Written::Done, Written::ChangedMeanwhile]);
    assert_eq!((s.read("b.txt").unwrap(), s.read("c.txt").unwrap()), (b"b\n".to_vec(), b"C mine\n".to_vec()));
    pending.finish(s.file.path()).unwrap();
    assert!(Journal::pending(s.file.path()).unwrap().is_none());
    let _ = start;
}

#[test]
fn an_interrupted_checkout_puts_only_its_own_plain_temporary_files_in_place() {
    let mut s = Scenario::new();
    s.change(&[("a.txt", None, Some(b"a\n")), ("b.txt", None, Some(b"b\n"))]);
    s.change(&[("a.txt", Some(b"a\n"), Some(b"A\n")), ("b.txt", Some(b"b\n"), Some(b"B\n"))]);
    let created = s.file.path_to_ancestors();
    let (_, outcomes) = s.outcomes(&created);
    let journal = Journal::write(s.file.path(), &created, &outcomes, &|_: &Path| true).unwrap();
    let temps: Vec<PathBuf> = journal.files.iter().filter_map(|file| file.temp.clone()).collect();
    // After the kill, a.txt's copy is swapped for a link to a file with the same content, and
    // b.txt's copy is cut short.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("same.txt"), b"a\n").unwrap();
    std::fs::remove_file(&temps[0]).unwrap();
    std::os::unix::fs::symlink(outside.path().join("same.txt"), &temps[0]).unwrap();
    std::fs::write(&temps[1], b"").unwrap();
    drop(journal);
    let pending = Journal::pending(s.file.path()).unwrap().expect("the journal survived");
    let damaged = Written::Failed("the journal's copy of its new content is damaged".to_string());
    assert_eq!(pending.apply(&|_: &Path| true), [damaged.clone(), damaged]);
    assert!(!s.root().join("a.txt").is_symlink());
    assert_eq!((s.read("a.txt").unwrap(), s.read("b.txt").unwrap()), (b"A\n".to_vec(), b"B\n".to_vec()));
    assert!(temps.iter().all(|temp| !temp.exists() && !temp.is_symlink()), "no copy is left behind");
}

#[test]
fn a_journal_whose_last_sync_fails_stays_and_the_next_checkout_finishes_it() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    s.change(&[("a.txt", None, Some(b"a\n"))]);
    let (_, outcomes) = s.outcomes(&start);
    let journal = Journal::write(s.file.path(), &start, &outcomes, &|_: &Path| true).unwrap();
    assert_eq!(journal.apply(&|_: &Path| true), [Written::Done]);
    // The session to sync with the files cannot be opened: the checkout is not complete.
    assert!(journal.finish(&s.root().join("gone.jsonl")).is_err());
    let pending = Journal::pending(s.file.path()).unwrap().expect("the journal stays");
    assert_eq!(pending.apply(&|_: &Path| true), [Written::AlreadyDone]);
    pending.finish(s.file.path()).unwrap();
    assert!(Journal::pending(s.file.path()).unwrap().is_none());
}

#[test]
fn an_uncommitted_journal_is_thrown_away() {
    let s = Scenario::new();
    std::fs::create_dir_all(journal_dir(s.file.path())).unwrap();
    assert!(Journal::pending(s.file.path()).unwrap().is_none());
    assert!(!journal_dir(s.file.path()).exists());
}

/// The entry before the leaf's: what the last change was made on.
trait Ancestors {
    fn path_to_ancestors(&self) -> String;
}

impl Ancestors for SessionFile {
    fn path_to_ancestors(&self) -> String {
        let path = self.tree().path_to_root(self.leaf().unwrap()).unwrap();
        path[1].to_string()
    }
}

#[test]
fn directories_a_deleted_file_leaves_empty_go_too_never_a_root_or_one_in_use() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    std::fs::create_dir_all(s.root().join("kept/dir")).unwrap();
    s.write("kept/dir/mine.txt", b"mine\n");
    s.change(&[
        ("new/deep/er.txt", None, Some(b"deep\n")),
        ("kept/dir/agent.txt", None, Some(b"agent\n")),
        ("top.txt", None, Some(b"top\n")),
    ]);
    s.checkout(&start);
    assert!(!s.root().join("new").exists(), "the directories the file was alone in are gone");
    assert!(s.root().join("kept/dir/mine.txt").exists(), "a directory still in use stays");
    assert!(s.root().is_dir(), "the workspace root stays, empty or not");
    let names: Vec<String> =
        std::fs::read_dir(s.root()).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["kept"]);
}

/// A 400-line file and its three edits of one line each, far apart: each edit is kept as a patch.
fn patched_edits() -> [String; 4] {
    let text: String = (0..400).map(|n| format!("line {n}: some content\n")).collect();
    let first = text.replace("line 100: some", "line 100: edited");
    let second = first.replace("line 200: some", "line 200: edited");
    let third = second.replace("line 300: some", "line 300: edited");
    [text, first, second, third]
}

#[test]
fn a_chain_of_patched_edits_is_undone_and_redone_exactly() {
    let mut s = Scenario::new();
    let texts = patched_edits();
    let created = s.change(&[("f.rs", None, Some(texts[0].as_bytes()))]);
    let mut last = created.clone();
    for pair in texts.windows(2) {
        last = s.change(&[("f.rs", Some(pair[0].as_bytes()), Some(pair[1].as_bytes()))]);
    }
    let size = std::fs::metadata(s.file.path()).unwrap().len() as usize;
    assert!(size < texts[0].len() + 4_000, "the created file once, then a patch for each edit of one line: {size}");
    s.checkout(&created);
    assert_eq!(s.read("f.rs").unwrap(), texts[0].as_bytes());
    s.file.navigate(&created, None).unwrap();
    s.checkout(&last);
    assert_eq!(s.read("f.rs").unwrap(), texts[3].as_bytes());
}

#[test]
fn a_patch_that_does_not_give_its_recorded_side_is_found_at_the_end_of_the_chain() {
    let mut s = Scenario::new();
    let texts = patched_edits();
    let created = s.change(&[("f.rs", None, Some(texts[0].as_bytes()))]);
    s.change(&[("f.rs", Some(texts[0].as_bytes()), Some(texts[1].as_bytes()))]);
    // The second edit's patch, changed: it still applies, but gives other text than its side.
    let landed = Landed {
        path: "f.rs".into(),
        moved_to: None,
        before: Some(texts[1].clone().into_bytes()),
        after: Some(texts[2].clone().into_bytes()),
    };
    let mut record = FileChangeRecord::new("call", "edit", &[landed], &s.store()).unwrap();
    let hunk = &mut record.files[0].patch.as_mut().unwrap()[0];
    hunk.new = hunk.new.replace("line 200: edited", "line 200: EDITED");
    s.file.append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data: Some(record.to_value()) }).unwrap();
    let last = s.change(&[("f.rs", Some(texts[2].as_bytes()), Some(texts[3].as_bytes()))]);
    s.file.navigate(&created, None).unwrap();
    s.write("f.rs", texts[0].as_bytes());
    check(&s, &last, expect!["f.rs refused: its recorded patch does not give the content its record names"]);
    assert_eq!(s.read("f.rs").unwrap(), texts[0].as_bytes(), "nothing was written");
}

#[test]
fn a_conflict_on_a_patched_edit_shows_the_change_to_make_by_hand() {
    let mut s = Scenario::new();
    let texts = patched_edits();
    s.change(&[("f.rs", None, Some(texts[0].as_bytes()))]);
    let first = s.change(&[("f.rs", Some(texts[0].as_bytes()), Some(texts[1].as_bytes()))]);
    s.change(&[("f.rs", Some(texts[1].as_bytes()), Some(texts[2].as_bytes()))]);
    s.write("f.rs", texts[2].replace("line 201: some", "line 201: mine").as_bytes());
    let (_, outcomes) = s.outcomes(&first);
    let Status::Conflict(info) = &outcomes[0].status else { panic!("{:?}", outcomes[0].status) };
    expect![[r#"
        --- a/f.rs
        +++ b/f.rs
        @@ -198,7 +198,7 @@
         line 197: some content
         line 198: some content
         line 199: some content
        -line 200: edited content
        +line 200: some content
         line 201: some content
         line 202: some content
         line 203: some content
    "#]]
    .assert_eq(info.change.as_deref().unwrap());
}

/// Records texts[1] → texts[2] with a patch whose new side is no longer the record's: undone,
/// it cannot be found in the file.
fn land_a_damaged_patch(s: &mut Scenario, texts: &[String; 4]) {
    let landed = Landed {
        path: "f.rs".into(),
        moved_to: None,
        before: Some(texts[1].clone().into_bytes()),
        after: Some(texts[2].clone().into_bytes()),
    };
    std::fs::write(s.root().join("f.rs"), &texts[2]).unwrap();
    let mut record = FileChangeRecord::new("call", "edit", &[landed], &s.store()).unwrap();
    let hunk = &mut record.files[0].patch.as_mut().unwrap()[0];
    hunk.new = hunk.new.replace("line 200: edited", "line 200: not what was written");
    s.file.append(EntryKind::Custom { custom_type: FILE_CHANGE.into(), data: Some(record.to_value()) }).unwrap();
}

#[test]
fn an_undo_that_ends_by_deleting_a_file_applies_none_of_its_patches() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    let texts = patched_edits();
    s.change(&[("f.rs", None, Some(texts[0].as_bytes()))]);
    let first = s.change(&[("f.rs", Some(texts[0].as_bytes()), Some(texts[1].as_bytes()))]);
    land_a_damaged_patch(&mut s, &texts);
    s.change(&[("f.rs", Some(texts[2].as_bytes()), Some(texts[3].as_bytes()))]);
    // Each side is compared by its hash on the way, and the file goes: no patch is needed.
    check(&s, &start, expect![[r#"f.rs delete (none) (4 changes)"#]]);
    // Undone only to the first edit, the damaged patch is applied, and refused by name.
    let (_, outcomes) = s.outcomes(&first);
    let Status::Refused(reason) = &outcomes[0].status else { panic!("{:?}", outcomes[0].status) };
    assert!(reason.starts_with("its recorded patch does not apply: the lines the change was made at"), "{reason}");
    s.checkout(&start);
    assert_eq!(s.read("f.rs"), None);
}

#[test]
fn a_fifo_put_in_a_files_place_after_the_plan_fails_its_file_and_is_never_waited_on() {
    let mut s = Scenario::new();
    let start = s.file.leaf().unwrap().to_string();
    s.change(&[("a.txt", None, Some(b"a\n")), ("b.txt", None, Some(b"b\n"))]);
    let (_, outcomes) = s.outcomes(&start);
    let journal = Journal::write(s.file.path(), &start, &outcomes, &|_: &Path| true).unwrap();
    let fifo = s.root().join("a.txt");
    std::fs::remove_file(&fifo).unwrap();
    let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: `name` is a NUL-terminated path that lives for the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    let written = journal.apply(&|_: &Path| true);
    assert_eq!(written, [Written::Failed("it is not a regular file".to_string()), Written::Done]);
    assert!(std::fs::symlink_metadata(&fifo).is_ok(), "what is not the agent's file is left alone");
    assert_eq!(s.read("b.txt"), None);
}
