//! API keys: from the environment, a keyring-free auth file that only its owner may read, or a
//! command the user configured (a password manager, a cloud CLI). Never from a project's config.
//!
//! Keys stay inside [`ApiKey`], whose `Debug` and `Display` hide them; what is shown to people is
//! [`mask`]ed.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reins_ai::ApiKey;

/// How long an `api_key_command` may take.
pub const KEY_COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys of an auth file, by provider name.
pub type AuthKeys = BTreeMap<String, ApiKey>;

/// `auth.json` or `auth.toml` in `dir`, if there is one: `{"anthropic": {"key": "…"}}`,
/// `{"anthropic": "…"}`, or the TOML equivalents. Refused unless only its owner can read it.
pub fn read_auth_file(dir: &Path) -> Result<Option<(PathBuf, AuthKeys)>, String> {
    for name in ["auth.json", "auth.toml"] {
        let path = dir.join(name);
        if !path.exists() {
            continue;
        }
        check_private(&path)?;
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        let value: serde_json::Value = if name.ends_with(".json") {
            serde_json::from_str(&text).map_err(|e| format!("{}:{}: not valid JSON: {e}", path.display(), e.line()))?
        } else {
            let table: toml::Table =
                toml::from_str(&text).map_err(|e| format!("{}: not valid TOML: {}", path.display(), e.message()))?;
            serde_json::to_value(table).map_err(|e| format!("{}: {e}", path.display()))?
        };
        let keys = parse_keys(&value).map_err(|reason| format!("{}: {reason}", path.display()))?;
        return Ok(Some((path, keys)));
    }
    Ok(None)
}

fn parse_keys(value: &serde_json::Value) -> Result<AuthKeys, String> {
    let Some(object) = value.as_object() else {
        return Err("expected a table of providers, such as {\"anthropic\": {\"key\": \"…\"}}".into());
    };
    let mut keys = AuthKeys::new();
    for (provider, entry) in object {
        let key = match entry {
            serde_json::Value::String(key) => Some(key.as_str()),
            serde_json::Value::Object(fields) => fields
                .get("key")
                .or_else(|| fields.get("api_key"))
                .or_else(|| fields.get("apiKey"))
                .and_then(|v| v.as_str()),
            _ => None,
        };
        match key {
            Some(key) if !key.trim().is_empty() => {
                keys.insert(provider.clone(), ApiKey::new(key.trim()));
            }
            _ => return Err(format!("{provider}: expected a key string, or a table with `key`")),
        }
    }
    Ok(keys)
}

/// Refuses a file that others may read or write: it holds secrets.
#[cfg(unix)]
fn check_private(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} holds API keys but others may read it (mode {:o}); run `chmod 600 {}` — it was not read",
            path.display(),
            mode & 0o777,
            path.display()
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_: &Path) -> Result<(), String> {
    Ok(())
}

/// Runs `command` with `sh -c` and takes the first line of its output as the key. The error
/// never holds the output, which may be the key itself.
pub fn run_key_command(command: &str, timeout: Duration) -> Result<ApiKey, String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Its own process group, so a timeout stops whatever the command started too.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("api_key_command could not start: {e}"))?;
    // Read while it runs: a command that prints more than a pipe holds would otherwise block.
    let reader = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut output = String::new();
            stdout.read_to_string(&mut output).map(|_| output)
        })
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let group = nix::unistd::Pid::from_raw(child.id() as i32);
                let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
                let _ = child.wait();
                return Err(format!("api_key_command took longer than {}s and was stopped", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("api_key_command: {e}")),
        }
    };
    let output = match reader.map(|reader| reader.join()) {
        Some(Ok(Ok(output))) => output,
        Some(Ok(Err(e))) => return Err(format!("api_key_command output: {e}")),
        _ => String::new(),
    };
    if !status.success() {
        return Err(format!("api_key_command failed ({status})"));
    }
    match output.lines().next().map(str::trim).filter(|line| !line.is_empty()) {
        Some(key) => Ok(ApiKey::new(key)),
        None => Err("api_key_command printed nothing".into()),
    }
}

/// A key as people may see it: `sk-…abcd` for long keys, `<set>` for short ones.
pub fn mask(key: &ApiKey) -> String {
    let key = key.expose();
    let chars: Vec<char> = key.chars().collect();
    if key.is_empty() {
        "<none>".into()
    } else if chars.len() < 16 {
        "<set>".into()
    } else {
        let head: String = key.split_once('-').map(|(head, _)| format!("{head}-")).unwrap_or_default();
        let head = if head.len() <= 4 { head } else { String::new() };
        let tail: String = chars[chars.len() - 4..].iter().collect();
        format!("{head}…{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    fn write_mode(path: &Path, text: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn auth_file_must_be_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.json");
        write_mode(&path, r#"{"anthropic": {"key": "sk-ant-secret-1234"}, "deepseek": "sk-ds"}"#, 0o644);
        let err = read_auth_file(dir.path()).unwrap_err();
        assert!(err.contains("mode 644") && err.contains("chmod 600") && !err.contains("secret"), "{err}");
        write_mode(&path, r#"{"anthropic": {"key": "sk-ant-secret-1234"}, "deepseek": "sk-ds"}"#, 0o600);
        let (_, keys) = read_auth_file(dir.path()).unwrap().unwrap();
        let shown: Vec<(&str, &str)> = keys.iter().map(|(name, key)| (name.as_str(), key.expose())).collect();
        assert_eq!(shown, [("anthropic", "sk-ant-secret-1234"), ("deepseek", "sk-ds")]);
    }

    #[cfg(unix)]
    #[test]
    fn auth_toml_and_bad_entries() {
        let dir = tempfile::tempdir().unwrap();
        write_mode(&dir.path().join("auth.toml"), "[openai]\nkey = \"sk-o\"\n", 0o600);
        let (_, keys) = read_auth_file(dir.path()).unwrap().unwrap();
        assert_eq!(keys["openai"].expose(), "sk-o");
        write_mode(&dir.path().join("auth.toml"), "openai = 3\n", 0o600);
        assert!(
            read_auth_file(dir.path()).unwrap_err().ends_with("openai: expected a key string, or a table with `key`")
        );
    }

    #[test]
    fn key_command_takes_the_first_line_and_times_out() {
        assert_eq!(
            run_key_command("printf 'sk-from-cmd\\nmore\\n'", KEY_COMMAND_TIMEOUT).unwrap().expose(),
            "sk-from-cmd"
        );
        assert_eq!(
            run_key_command("echo sk-x; exit 3", KEY_COMMAND_TIMEOUT).unwrap_err(),
            "api_key_command failed (exit status: 3)"
        );
        let err = run_key_command("sleep 5", Duration::from_millis(100)).unwrap_err();
        assert_eq!(err, "api_key_command took longer than 0s and was stopped");
    }

    #[test]
    fn key_command_output_larger_than_a_pipe_does_not_stall() {
        let started = Instant::now();
        let key = run_key_command("echo sk-big; head -c 300000 /dev/zero | tr '\\0' x", KEY_COMMAND_TIMEOUT);
        assert_eq!(key.unwrap().expose(), "sk-big");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_timed_out_key_command_takes_its_children_along() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 1; touch {}) & sleep 5", marker.display());
        assert!(run_key_command(&command, Duration::from_millis(200)).is_err());
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "the background child outlived the timeout");
    }

    #[test]
    fn masks() {
        let masked = ["", "short", "sk-canary-7f3a9c1e55d04b2b", "abcdefghijklmnopqrstuvwxyz"]
            .map(|key| mask(&ApiKey::new(key)));
        assert_eq!(masked, ["<none>", "<set>", "sk-…4b2b", "…wxyz"]);
    }
}
