//! `reins mcp logout NAME`: forgets the OAuth login to a streamable HTTP server.

use std::path::PathBuf;
use std::process::ExitCode;

use reins_ai::visible_line;
use reins_harness::Settings;
use reins_mcp::{ServerConfig, TokenFile, Transport};

/// Forgets the login of server `name`.
pub fn logout(cwd: Option<PathBuf>, name: &str) -> ExitCode {
    let (settings, url) = match http_server(cwd, name) {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    match TokenFile::new(&settings.mcp_token_dir(), name, &url).remove() {
        Ok(true) => {
            eprintln!("reins: logged out of `{}`", visible_line(name));
            ExitCode::SUCCESS
        }
        Ok(false) => {
            eprintln!("reins: `{}` had no login", visible_line(name));
            ExitCode::SUCCESS
        }
        Err(err) => fail(&err),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("reins: {}", visible_line(message));
    ExitCode::FAILURE
}

/// The settings of the workspace and the URL of its streamable HTTP server `name`, or why there
/// is nothing to log in to.
fn http_server(cwd: Option<PathBuf>, name: &str) -> Result<(Settings, String), String> {
    let root = cwd
        .map(Ok)
        .unwrap_or_else(std::env::current_dir)
        .map_err(|err| format!("cannot read the current directory: {err}"))?;
    let settings = crate::run::load_settings(&root);
    let server: Option<&ServerConfig> = settings.mcp_servers.iter().find(|server| server.name == name);
    let url = match server.map(|server| &server.transport) {
        None => {
            let known: Vec<&str> = settings.mcp_servers.iter().map(|server| server.name.as_str()).collect();
            let known = if known.is_empty() {
                "none is configured".to_string()
            } else {
                format!("known: {}", known.join(", "))
            };
            return Err(format!("no MCP server is named `{name}` ({known})"));
        }
        Some(Transport::Stdio { .. }) => {
            return Err(format!("`{name}` is a stdio server; only streamable HTTP servers log in"));
        }
        Some(Transport::Http { bearer_token: Some(_), .. }) => {
            return Err(format!(
                "`{name}` is given a fixed token (bearer_token_env_var); remove it from its config to log in with OAuth"
            ));
        }
        Some(Transport::Http { url, .. }) => url.clone(),
    };
    Ok((settings, url))
}
