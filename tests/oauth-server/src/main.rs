//! `oauth-server [--port P] [--lifetime SECS]`: serves until killed and prints the protected MCP
//! URL as the first line of stdout. `oauth-server browse URL`: plays the user's browser (fetches
//! URL, follows redirects), for `$BROWSER` in tests of `reins mcp login`.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use oauth_server::{AuthServer, browse};

const USAGE: &str = "usage: oauth-server [--port P] [--lifetime SECS] | oauth-server browse URL";

#[tokio::main]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("oauth-server: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Vec<String>) -> Result<(), String> {
    if let [command, url] = args.as_slice()
        && command == "browse"
    {
        return browse(url).await.map(drop);
    }
    let (mut port, mut lifetime) = (0u16, 3600u64);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(USAGE);
        match arg.as_str() {
            "--port" => port = value()?.parse().map_err(|_| USAGE)?,
            "--lifetime" => lifetime = value()?.parse().map_err(|_| USAGE)?,
            _ => return Err(USAGE.to_string()),
        }
    }
    let server = AuthServer::start_on(port, Duration::from_secs(lifetime))
        .await
        .map_err(|err| format!("cannot bind 127.0.0.1:{port}: {err}"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.mcp_url()).and_then(|()| stdout.flush()).map_err(|err| err.to_string())?;
    tokio::signal::ctrl_c().await.map_err(|err| err.to_string())
}
