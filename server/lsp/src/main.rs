//! The `reins` binary; everything it does is in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    reins::main()
}
