//! `scripted-llm --script FILE.json [--port P] [--prefix-cache]`: serves a JSON array of replies
//! until killed and prints the base URL as the first line of stdout (for demos and benchmarks).
//! `--prefix-cache` plays Anthropic's prompt cache for Messages API requests.

use std::io::Write;
use std::process::ExitCode;

use scripted_llm::{Reply, ScriptedServer};

const USAGE: &str = "usage: scripted-llm --script FILE.json [--port P] [--prefix-cache]";

struct Args {
    script: String,
    port: u16,
    prefix_cache: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("scripted-llm: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let args = parse_args(std::env::args().skip(1))?;
    let text =
        std::fs::read_to_string(&args.script).map_err(|error| format!("cannot read {}: {error}", args.script))?;
    let replies: Vec<Reply> = serde_json::from_str(&text)
        .map_err(|error| format!("{} is not a JSON array of replies: {error}", args.script))?;
    let server = ScriptedServer::start_on(args.port, replies)
        .await
        .map_err(|error| format!("cannot bind 127.0.0.1:{}: {error}", args.port))?;
    if args.prefix_cache {
        server.simulate_prefix_cache();
    }
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", server.base_url()).and_then(|()| stdout.flush()).map_err(|error| error.to_string())?;
    tokio::signal::ctrl_c().await.map_err(|error| error.to_string())?;
    Ok(())
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut script, mut port, mut prefix_cache) = (None, 0, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--script" => script = Some(args.next().ok_or(USAGE)?),
            "--port" => {
                let value = args.next().ok_or(USAGE)?;
                port = value.parse().map_err(|_| format!("--port {value:?} is not a port number"))?;
            }
            "--prefix-cache" => prefix_cache = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Args { script: script.ok_or(USAGE)?, port, prefix_cache })
}
