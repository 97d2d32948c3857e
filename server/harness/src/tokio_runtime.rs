//! The one async runtime set-up of the long-running surfaces (`reins lsp`, `reins acp`): two
//! worker threads, which keep a run, the protocol's reader and writer and a tool's command going
//! at once without a thread per core on a large machine.

/// Worker threads of the runtime.
const WORKER_THREADS: usize = 2;

/// Starts the runtime, or says why it could not (in a sentence for stderr).
pub fn start_runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKER_THREADS)
        .enable_all()
        .build()
        .map_err(|err| format!("cannot start the async runtime: {err}"))
}
