//! `reins mcp login NAME` and `reins mcp logout NAME`: the terminal's side of an OAuth login to a
//! streamable HTTP server (reins-mcp runs the flow). This side finds the server in the config,
//! shows the authorization URL and opens it in the user's browser.

use std::path::PathBuf;
use std::process::{ExitCode, Stdio};

use reins_ai::visible_line;
use reins_harness::Settings;
use reins_mcp::{LOGIN_WAIT, ServerConfig, TokenFile, Transport};

/// Logs in to server `name` of the workspace at `cwd` (default: the current directory).
pub fn login(cwd: Option<PathBuf>, name: &str) -> ExitCode {
    let (settings, url) = match http_server(cwd, name) {
        Ok(found) => found,
        Err(message) => return fail(&message),
    };
    let file = TokenFile::new(&settings.mcp_token_dir(), name, &url);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return fail(&format!("cannot start the async runtime: {err}")),
    };
    let path = file.path().to_path_buf();
    let open = |address: &str| {
        eprintln!(
            "reins: to log in to `{}`, approve reins at this address (opening it in your browser):\n\n  {}\n",
            visible_line(name),
            visible_line(address)
        );
        if let Err(err) = open_browser(address) {
            eprintln!("reins: {err}; open the address yourself");
        }
    };
    match runtime.block_on(reins_mcp::login(&url, file, open, LOGIN_WAIT)) {
        Ok(()) => {
            eprintln!("reins: logged in to `{}`; the login is kept in {}", visible_line(name), path.display());
            ExitCode::SUCCESS
        }
        Err(err) => fail(&format!("cannot log in to `{name}`: {err}")),
    }
}

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

/// Opens `address` in the browser `$BROWSER` names (a command, with arguments, given the
/// address last), else the system's opener. Does not wait for it.
fn open_browser(address: &str) -> Result<(), String> {
    let browser = std::env::var("BROWSER").ok().filter(|browser| !browser.trim().is_empty());
    let words: Vec<String> = match &browser {
        Some(browser) => browser.split_whitespace().map(str::to_string).collect(),
        None if cfg!(target_os = "macos") => vec!["open".into()],
        None => vec!["xdg-open".into()],
    };
    let (program, args) = words.split_first().ok_or("no browser to open")?;
    std::process::Command::new(program)
        .args(args)
        .arg(address)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(drop)
        .map_err(|err| format!("cannot start the browser `{program}`: {err}"))
}
