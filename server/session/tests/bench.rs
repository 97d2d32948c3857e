//! The large-session benchmark, run by hand: `cargo test -p reins-session --release --test bench
//! -- --ignored --nocapture`. The `bench` command calls the same function.

#[test]
#[ignore = "a benchmark; run it in release mode"]
fn large_session_figures() {
    let dir = tempfile::tempdir().unwrap();
    let figures = reins_session::bench_large_session(dir.path()).unwrap();
    eprintln!("{figures:#?}");
    assert!(figures.context_messages > 1000 && figures.context_messages < 10_000, "{figures:?}");
}

#[test]
#[ignore = "a benchmark; run it in release mode"]
fn large_session_parts() {
    use std::time::Instant;
    let dir = tempfile::tempdir().unwrap();
    let path = reins_session::write_large_session(dir.path(), 100_000, None).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let bytes = std::fs::read(&path).unwrap();
        let read = t.elapsed();
        let t = Instant::now();
        let tree = reins_session::SessionTree::from_bytes(&path, bytes).unwrap();
        let index = t.elapsed();
        let t = Instant::now();
        let context = tree.context().unwrap();
        let ctx = t.elapsed();
        eprintln!("read {read:?} index {index:?} context {ctx:?} ({})", context.messages.len());
    }
}
