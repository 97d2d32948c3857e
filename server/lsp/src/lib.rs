//! `reins lsp`: the language server, on stdio or one client of a socket (`--listen`, [`listen`]).
//!
//! stdout carries LSP frames and nothing else; logs go to the client as `window/logMessage`
//! ([`client_log`]), and to stderr before it is connected or when `REINS_LOG` is set.

mod ask;
mod checkout;
mod client_log;
mod code_actions;
mod commands;
mod config;
mod diagnostics;
mod dispatch;
pub(crate) mod documents;
mod editor_language;
mod events;
mod from_proto;
mod handshake;
mod listen;
mod review;
mod server;
pub(crate) mod to_proto;
mod token;
mod transport;
mod workspace;
mod worktree;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use reins_tools::FsWorkspace;
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server as Transport};

pub use self::client_log::{ClientLog, to_client as logs_to_client};
pub use self::documents::PositionEncoding;
use self::server::Server;
pub use self::to_proto::text_edits;
use self::transport::Lifecycle;

/// Buffer of the in-memory pipes between the wire and the framework.
const PIPE_BYTES: usize = 256 * 1024;

/// The arguments of `reins lsp` (see the `reins` binary's `cli::Command`).
#[derive(Debug, Default, PartialEq, clap::Args)]
pub struct LspArgs {
    /// Serve stdin/stdout (the default; some clients pass it)
    #[arg(long)]
    pub stdio: bool,
    /// Serve one client of a socket instead: 127.0.0.1:PORT (it must send the token, see
    /// below) or unix:PATH (a private socket, no token); wins over a --stdio that a client appends
    ///
    /// On TCP the client sends a token as initializationOptions.token: REINS_LISTEN_TOKEN, else
    /// one made at start and written (mode 0600) to the file named on stderr. Other clients are
    /// refused while reins waits for the right one. For another machine, listen on 127.0.0.1
    /// and connect through an SSH tunnel (ssh -L 9257:127.0.0.1:9257 HOST).
    #[arg(long, value_name = "ADDR:PORT|unix:PATH", value_parser = listen::address)]
    pub listen: Option<listen::Address>,
    /// Allow --listen on an address other machines can reach (the token crosses the network
    /// unencrypted: prefer an SSH tunnel)
    #[arg(long, requires = "listen")]
    pub allow_remote: bool,
}

pub fn main(args: LspArgs) -> ExitCode {
    let runtime = match reins_harness::start_runtime() {
        Ok(runtime) => runtime,
        Err(message) => {
            eprintln!("reins: {message}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(address) = &args.listen
        && let Err(refused) = listen::check_reach(address, args.allow_remote)
    {
        eprintln!("reins: {refused}");
        return ExitCode::from(2);
    }
    let served = runtime.block_on(async move {
        match args.listen {
            None => serve(tokio::io::stdin(), tokio::io::stdout()).await,
            Some(address) => {
                let data_dir = reins_harness::Settings::from_env(|name| std::env::var(name).ok()).data_dir;
                let (read, write) = listen::accept(&address, &data_dir).await?;
                serve(read, write).await
            }
        }
    });
    // Runs and progress tasks may still hold the runtime; the client is gone, so they go too.
    runtime.shutdown_background();
    match served {
        Ok(code) => code,
        Err(message) => {
            eprintln!("reins: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Serves one client, and says how to exit. The framework reads and writes through in-memory
/// pipes, with [`transport`] in front of it on the real streams.
async fn serve(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> Result<ExitCode, String> {
    // The current directory until the client names its workspace folders.
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let fallback = FsWorkspace::new(vec![cwd])
        .or_else(|_| FsWorkspace::new(vec![PathBuf::from("/")]))
        .map_err(|err| format!("cannot open the workspace: {err}"))?;
    let (service, socket) = LspService::build(move |client| {
        client_log::connect(client.clone());
        Server::new(client, fallback)
    })
    .custom_method("reins/debug/documentText", Server::document_text)
    .finish();
    let (to_framework, framework_input) = tokio::io::duplex(PIPE_BYTES);
    let (framework_output, from_framework) = tokio::io::duplex(PIPE_BYTES);
    let (errors_tx, errors_rx) = tokio::sync::mpsc::unbounded_channel();
    let lifecycle = Arc::new(Lifecycle::default());
    let reading = lifecycle.clone();
    tokio::spawn(async move { transport::filter_input(input, to_framework, errors_tx, &reading).await });
    let writing = lifecycle.clone();
    let writer =
        tokio::spawn(async move { transport::merge_output(from_framework, errors_rx, output, &writing).await });
    Transport::new(framework_input, framework_output, socket).serve(service).await;
    // The framework dropped its end of the output pipe; let the last frames reach the client.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), writer).await;
    Ok(lifecycle.exit_code())
}

/// The one lock helper, below every surface.
pub(crate) use reins_agent::lock;

#[cfg(test)]
mod tests {
    use super::*;

    /// `reins lsp`'s command line alone, as the binary's `cli::Command::Lsp` flattens it.
    #[derive(clap::Parser)]
    struct Lsp {
        #[command(flatten)]
        args: LspArgs,
    }

    fn parse(args: &[&str]) -> Result<LspArgs, String> {
        use clap::Parser;

        let args = ["reins lsp"].into_iter().chain(args.iter().copied());
        Lsp::try_parse_from(args).map(|lsp| lsp.args).map_err(|error| error.to_string())
    }

    #[test]
    fn stdio_is_accepted_and_listen_takes_an_address() {
        assert_eq!(parse(&[]).unwrap(), LspArgs::default());
        assert_eq!(parse(&["--stdio"]).unwrap().listen, None);
        let tcp = Some(listen::Address::Tcp("127.0.0.1:9257".parse().unwrap()));
        assert_eq!(parse(&["--listen", "127.0.0.1:9257"]).unwrap().listen, tcp);
        assert!(parse(&["--listen", "nine"]).unwrap_err().contains("not an address"));
        // As before clap: a client that appends --stdio to a --listen command line still listens.
        let both = parse(&["--listen", "127.0.0.1:9257", "--stdio"]).unwrap();
        assert_eq!(both.listen, tcp);
        assert!(parse(&["--listen", "0.0.0.0:9257", "--allow-remote"]).unwrap().allow_remote);
        assert!(parse(&["--allow-remote"]).unwrap_err().contains("--listen"));
        assert!(parse(&["--bogus"]).is_err());
    }
}
