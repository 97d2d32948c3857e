//! The `reins` binary; everything it does is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    // Before any thread starts: it rewrites the environment.
    reins_harness::protect_process();
    reins_harness::raise_open_files_limit();
    reins::main()
}
