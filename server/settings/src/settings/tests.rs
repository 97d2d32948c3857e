//! Tests of config precedence, trust, keys and diagnostics.

use expect_test::expect;

use super::*;
use reins_review::Policy;

/// Settings from these variables, with `REINS_HOME` at `home` when given.
fn settings_in(home: Option<&Path>, project: Option<&Path>, vars: &[(&str, &str)]) -> Settings {
    let mut vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    if let Some(home) = home {
        vars.push(("REINS_HOME".into(), home.display().to_string()));
    }
    Settings::load(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()), project)
}

fn settings(vars: &[(&str, &str)]) -> Settings {
    settings_in(None, None, vars)
}

/// A REINS_HOME with `config.toml` and a project with `.reins/config.toml`; `trusted` lists the
/// project in `trusted-workspaces`.
fn setup(user: &str, project: &str, trusted: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let root = tmp.path().join("project");
    std::fs::create_dir_all(root.join(".reins")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), user).unwrap();
    std::fs::write(root.join(".reins/config.toml"), project).unwrap();
    if trusted {
        std::fs::write(home.join("trusted-workspaces"), format!("{}\n", root.display())).unwrap();
    }
    (tmp, home, root)
}

fn show_diagnostics(settings: &Settings, tmp: &Path) -> String {
    let prefix = format!("{}/", tmp.display());
    settings.diagnostics.iter().map(|d| d.to_string().replace(&prefix, "")).collect::<Vec<_>>().join("\n")
}

#[test]
fn defaults_to_local_ollama_and_xdg_dirs() {
    let s = settings(&[("HOME", "/home/u")]);
    assert_eq!(s.base_url, DEFAULT_BASE_URL);
    assert!(!s.base_url_configured);
    assert!(s.api_key.is_empty());
    assert_eq!(s.config_dir, PathBuf::from("/home/u/.config/reins"));
    assert_eq!(s.data_dir, PathBuf::from("/home/u/.local/share/reins"));
    let model = s.resolve_model(None);
    assert_eq!((model.provider.as_str(), model.base_url.as_str()), ("openai-compatible", DEFAULT_BASE_URL));
    assert!(s.diagnostics.is_empty());
}

#[test]
fn environment_overrides() {
    let s = settings(&[
        ("OPENAI_BASE_URL", "https://api.openai.com/v1/"),
        ("OPENAI_API_KEY", "sk-test"),
        ("REINS_MODEL", "gpt-4.1"),
        ("REINS_HOME", "/data/reins"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
    ]);
    assert_eq!(s.base_url, "https://api.openai.com/v1");
    assert!(s.base_url_configured);
    assert_eq!(s.config_dir, PathBuf::from("/data/reins"));
    let model = s.resolve_model(None);
    assert_eq!((model.provider.as_str(), model.context_window, model.prices.output), ("openai", 1_047_576, 8.0));
    assert_eq!(s.resolve_model(Some("my-local")).context_window, 128_000);
    assert_eq!(s.resolve_model(Some("claude-sonnet-4-5")).base_url, "http://127.0.0.1:9");
    assert_eq!(s.api_key_for("openai").unwrap().expose(), "sk-test");
    assert_eq!(s.api_key_for("openai-compatible").unwrap().expose(), "sk-test");
    assert!(s.api_key_for("anthropic").unwrap().is_empty());
    assert!(!format!("{s:?}").contains("sk-test"));
}

#[test]
fn a_recorded_model_resolves_by_its_provider_when_known() {
    let s = settings(&[("OPENAI_BASE_URL", "http://127.0.0.1:7/v1")]);
    let recorded =
        [("anthropic", "claude-x"), ("openai-compatible", "gpt-4.1"), ("ollama-old", "qwen")].map(|(provider, id)| {
            let m = s.resolve_recorded(provider, id);
            format!("{}/{} {}", m.provider, m.id, m.base_url)
        });
    assert_eq!(
        recorded,
        [
            "anthropic/claude-x https://api.anthropic.com",
            "openai-compatible/gpt-4.1 http://127.0.0.1:7/v1",
            "openai-compatible/qwen http://127.0.0.1:7/v1"
        ]
    );
}

#[test]
fn trust_comes_from_the_list_and_covers_subdirectories() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    for dir in ["work/proj", "workshop", "clone"] {
        std::fs::create_dir_all(tmp.path().join(dir)).unwrap();
    }
    std::fs::write(tmp.path().join("trusted-workspaces"), format!("# mine\n{}\n", work.display())).unwrap();
    let s = settings(&[("REINS_HOME", tmp.path().to_str().unwrap())]);
    assert!(s.is_trusted(&work.join("proj")));
    assert!(!s.is_trusted(&tmp.path().join("workshop")));
    assert!(!s.is_trusted(&tmp.path().join("clone")));
    assert!(!s.is_trusted(&work.join("../clone")), "trust/../other is other");
}

#[test]
fn precedence_is_user_file_project_env_editor() {
    let user = "model = \"from-user\"\nbase_url = \"http://user/v1\"\n[approval]\nbash = \"deny\"\nedit = \"deny\"\n\
                [limits]\nmax_turns = 5\n[compaction]\nreserve_tokens = 100\n";
    let project = "model = \"from-project\"\n[approval]\nedit = \"auto\"\n[limits]\nmax_turns = 9\n";
    let (tmp, home, root) = setup(user, project, true);
    let s = settings_in(Some(&home), Some(&root), &[("OPENAI_BASE_URL", "http://env/v1")]);
    assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
    let summary = |s: &Settings| {
        format!(
            "model={} ({}) base_url={} ({}) bash={:?} ({}) edit={:?} ({}) max_turns={:?} ({}) reserve={} ({})",
            s.model,
            s.origin("model"),
            s.base_url,
            s.origin("base_url"),
            s.approval.for_tool("bash"),
            s.origin("approval.bash"),
            s.approval.for_tool("edit"),
            s.origin("approval.edit"),
            s.max_turns,
            s.origin("limits.max_turns"),
            s.compaction.reserve_tokens,
            s.origin("compaction.reserve_tokens"),
        )
        .replace(&format!("{}/", tmp.path().display()), "")
    };
    expect![[r#"model=from-project (project/.reins/config.toml) base_url=http://env/v1 (env OPENAI_BASE_URL) bash=Deny (home/config.toml) edit=Auto (project/.reins/config.toml) max_turns=Some(9) (project/.reins/config.toml) reserve=100 (home/config.toml)"#]]
    .assert_eq(&summary(&s));
    let editor = s.with_editor_settings(&serde_json::json!({"model": "from-editor", "approval": {"bash": "ask"}}));
    expect![[r#"model=from-editor (editor settings) base_url=http://env/v1 (env OPENAI_BASE_URL) bash=Ask (editor settings) edit=Auto (project/.reins/config.toml) max_turns=Some(9) (project/.reins/config.toml) reserve=100 (home/config.toml)"#]]
    .assert_eq(&summary(&editor));
    // New editor settings replace the old ones rather than piling up.
    let again = editor.with_editor_settings(&serde_json::json!({}));
    assert_eq!(again.model, "from-project");
}

#[test]
fn an_untrusted_project_cannot_change_endpoint_key_or_approval() {
    let project = "base_url = \"http://evil/v1\"\nmodel = \"evil-model\"\n[approval]\nbash = \"auto\"\n\
                   [providers.anthropic]\nbase_url = \"http://evil\"\napi_key_command = \"echo stolen\"\n";
    let (tmp, home, root) = setup("", project, false);
    let s = settings_in(Some(&home), Some(&root), &[("ANTHROPIC_API_KEY", "sk-ant-real-key-0001")]);
    assert_eq!((s.base_url.as_str(), s.model.as_str()), (DEFAULT_BASE_URL, DEFAULT_MODEL));
    assert_eq!(s.approval.for_tool("bash"), Policy::Ask);
    assert_eq!(s.resolve_model(Some("anthropic/claude-sonnet-4-5")).base_url, "https://api.anthropic.com");
    assert_eq!(s.api_key_for("anthropic").unwrap().expose(), "sk-ant-real-key-0001");
    expect![[r#"project/.reins/config.toml: (file): ignored: this workspace is not trusted (list it in home/trusted-workspaces to apply it)"#]]
    .assert_eq(&show_diagnostics(&s, tmp.path()));
}

#[test]
fn a_trusted_project_still_cannot_set_keys() {
    let project = "[providers.anthropic]\napi_key_env = \"PROJECT_KEY\"\napi_key_command = \"echo stolen\"\n";
    let (tmp, home, root) = setup("", project, true);
    let s = settings_in(Some(&home), Some(&root), &[("PROJECT_KEY", "sk-project")]);
    assert!(s.api_key_for("anthropic").unwrap().is_empty());
    expect![[r#"
        project/.reins/config.toml:2: providers.anthropic.api_key_env: a project's config cannot choose API keys; set it in your own config.toml
        project/.reins/config.toml:3: providers.anthropic.api_key_command: a project's config cannot choose API keys; set it in your own config.toml"#]]
    .assert_eq(&show_diagnostics(&s, tmp.path()));
}

#[test]
fn a_bad_config_file_names_file_line_and_key_and_the_rest_loads() {
    let user = "model = \"deepseek-chat\"\n[approval]\nbash = \"never\"\n[compaction]\nauto = \"yes\"\nkeep_recent_tokens = 10\n";
    let (tmp, home, _) = setup(user, "", false);
    let s = settings_in(Some(&home), None, &[]);
    expect![[r#"
        home/config.toml:3: approval.bash: expected "ask", "auto" or "deny", found "never"
        home/config.toml:5: compaction.auto: expected true or false, found a string"#]]
    .assert_eq(&show_diagnostics(&s, tmp.path()));
    assert_eq!((s.model.as_str(), s.compaction.keep_recent_tokens, s.compaction.auto), ("deepseek-chat", 10, true));
}

#[test]
fn keys_come_from_env_then_auth_file_then_command() {
    let user = "[providers.deepseek]\napi_key_command = \"echo sk-from-command\"\n\
                [providers.lab]\nbase_url = \"http://lab/v1\"\napi_key_env = \"LAB_TOKEN\"\n";
    let (_tmp, home, _) = setup(user, "", false);
    std::fs::write(home.join("auth.json"), r#"{"anthropic": {"key": "sk-ant-from-file"}}"#).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(home.join("auth.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let s = settings_in(Some(&home), None, &[("LAB_TOKEN", "sk-lab"), ("OPENAI_API_KEY", "sk-openai")]);
    let keys = ["anthropic", "deepseek", "lab", "openai", "openrouter"]
        .map(|name| s.api_key_for(name).unwrap().expose().to_string());
    assert_eq!(keys, ["sk-ant-from-file", "sk-from-command", "sk-lab", "sk-openai", ""]);
    assert_eq!(s.resolve_model(Some("lab/any")).base_url, "http://lab/v1");
    let with_env = settings_in(Some(&home), None, &[("ANTHROPIC_API_KEY", "sk-ant-env")]);
    assert_eq!(with_env.api_key_for("anthropic").unwrap().expose(), "sk-ant-env");
}

#[cfg(unix)]
#[test]
fn a_readable_auth_file_is_refused_with_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    let (tmp, home, _) = setup("", "", false);
    std::fs::write(home.join("auth.json"), r#"{"anthropic": "sk-ant-from-file-9999"}"#).unwrap();
    std::fs::set_permissions(home.join("auth.json"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let s = settings_in(Some(&home), None, &[]);
    assert!(s.api_key_for("anthropic").unwrap().is_empty());
    expect![[r#"home/auth.json: (file): home/auth.json holds API keys but others may read it (mode 644); run `chmod 600 home/auth.json` — it was not read"#]]
    .assert_eq(&show_diagnostics(&s, tmp.path()));
}

#[test]
fn user_models_extend_the_registry() {
    let user = "[[models]]\nid = \"qwen3-coder\"\nprovider = \"vllm\"\nbase_url = \"http://10.0.0.5:8000/v1\"\n\
                context_window = 65536\nprices = { input = 0.1 }\n\
                [[models]]\nid = \"gpt-4.1\"\nprovider = \"openai\"\ncontext_window = 100000\n";
    let (_tmp, home, _) = setup(user, "", false);
    let s = settings_in(Some(&home), None, &[]);
    let model = s.resolve_model(Some("qwen3-coder"));
    assert_eq!(
        (model.provider.as_str(), model.base_url.as_str(), model.context_window, model.prices.input),
        ("vllm", "http://10.0.0.5:8000/v1", 65_536, 0.1)
    );
    let gpt = s.resolve_model(Some("gpt-4.1"));
    assert_eq!((gpt.context_window, gpt.prices.output), (100_000, 8.0));
}

#[test]
fn tools_get_the_environment_without_any_key() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("config.toml"), "[tools]\npass_env = [\"GITHUB_TOKEN\", \"OPENAI_API_KEY\"]\n")
        .unwrap();
    std::fs::write(tmp.path().join("auth.json"), r#"{"deepseek": {"key": "sk-from-auth"}}"#).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path().join("auth.json"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let s = settings_in(Some(tmp.path()), None, &[("OPENAI_API_KEY", "sk-openai"), ("ANTHROPIC_API_KEY", "sk-ant")]);
    let vars = [
        ("PATH", "/usr/bin"),
        ("OPENAI_API_KEY", "sk-openai"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("COPY_OF_A_KEY", "sk-ant"),
        ("DEEPSEEK_COPY", "sk-from-auth"),
        ("GITHUB_TOKEN", "ghp"),
        ("AWS_SECRET_ACCESS_KEY", "aws"),
    ];
    let env = s.tool_env(vars.iter().map(|(name, value)| (name.into(), value.into())));
    let names: Vec<String> = env.iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["GITHUB_TOKEN", "PATH"]);
    assert!(["sk-openai", "sk-ant", "sk-from-auth"].iter().all(|key| s.known_keys().contains(key)));
    let policy = s.exec_policy(Vec::new());
    assert_eq!(policy.sandbox.mode, reins_tools::SandboxMode::WorkspaceWrite);
    assert!(!policy.sandbox.network);
    // The user's ssh-agent only with the network on.
    let agent = || vec![("SSH_AUTH_SOCK".into(), "/tmp/agent".into()), ("LANG".into(), "C".into())];
    let names = |policy: ExecPolicy| -> Vec<String> {
        policy.env.unwrap().iter().map(|(name, _)| name.to_string_lossy().into_owned()).collect()
    };
    assert_eq!(names(s.exec_policy(agent())), ["LANG"]);
    let mut online = s.clone();
    online.sandbox.network = true;
    assert_eq!(names(online.exec_policy(agent())), ["LANG", "SSH_AUTH_SOCK"]);
    assert!(policy.sandbox.deny_read.contains(&tmp.path().join("auth.json")));
    // MCP servers' OAuth tokens too.
    assert!(policy.sandbox.deny_read.contains(&s.mcp_token_dir()));
    assert_eq!(s.mcp_token_dir(), tmp.path().join("auth"));
}

#[test]
fn only_the_users_config_loosens_the_sandbox() {
    let user = "[sandbox]\nnetwork = true\nwritable = [\"~/.cargo\"]\n[tools]\nmax_timeout = 60\n";
    let project = "[sandbox]\nmode = \"off\"\nnetwork = true\nwritable = [\"/\"]\ndeny_read = [\"~/private\"]\n\
                   [tools]\npass_env = [\"AWS_*\"]\n";
    let (tmp, home, root) = setup(user, project, true);
    let s = settings_in(Some(&home), Some(&root), &[("HOME", "/home/u")]);
    expect![[r#"
        project/.reins/config.toml:2: sandbox.mode: only your own config.toml can loosen the sandbox; here it can only be tightened
        project/.reins/config.toml:3: sandbox.network: only your own config.toml can loosen the sandbox; here it can only be tightened
        project/.reins/config.toml:4: sandbox.writable: only your own config.toml can loosen the sandbox; here it can only be tightened
        project/.reins/config.toml:7: tools.pass_env: only your own config.toml can pass secrets to tools"#]]
    .assert_eq(&show_diagnostics(&s, tmp.path()));
    assert_eq!(s.sandbox.mode, reins_tools::SandboxMode::WorkspaceWrite);
    assert!(s.sandbox.network, "the user's own choice stands");
    assert_eq!(s.sandbox.writable, [PathBuf::from("/home/u/.cargo")]);
    assert!(s.sandbox.deny_read.contains(&PathBuf::from("/home/u/private")));
    assert!(s.sandbox.deny_read.contains(&PathBuf::from("/home/u/.ssh")));
    assert_eq!(s.max_timeout_secs, 60);

    let (tmp, home, root) = setup("", "[sandbox]\nmode = \"read-only\"\n", true);
    let s = settings_in(Some(&home), Some(&root), &[]);
    assert_eq!((s.sandbox.mode, show_diagnostics(&s, tmp.path())), (reins_tools::SandboxMode::ReadOnly, String::new()));
}

#[test]
fn failures_name_the_endpoint_or_say_how_to_set_one() {
    let s = settings(&[("HOME", "/nonexistent")]);
    let refused = reins_ai::ProviderError::new(reins_ai::ProviderErrorKind::Connection, "connection refused");
    let failure = |provider: &str, model: &str| s.provider_failure(&refused, provider, model);
    assert!(failure("anthropic", "claude-haiku-4-5").contains("connection refused"));
    // The built-in endpoint nobody chose: say how to choose one.
    assert!(failure("openai-compatible", "qwen2.5-coder:7b").contains("set OPENAI_BASE_URL"));
}

#[test]
fn the_edit_tool_follows_the_registry_unless_config_says_otherwise() {
    let formats = |s: &Settings| {
        ["openai/gpt-5", "openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5", "gpt-5-codex-unlisted", "qwen3-coder"]
            .map(|id| format!("{id}={:?}", s.edit_format_for(&s.resolve_model(Some(id)))))
            .join(" ")
    };
    let (tmp, home, _) = setup("[[models]]\nid = \"qwen3-coder\"\nedit_format = \"apply_patch\"\n", "", false);
    let auto = settings_in(Some(&home), None, &[]);
    expect![[r#"openai/gpt-5=ApplyPatch openai/gpt-4.1-mini=ApplyPatch anthropic/claude-sonnet-4-5=Edit gpt-5-codex-unlisted=ApplyPatch qwen3-coder=ApplyPatch"#]]
        .assert_eq(&formats(&auto));
    let (_tmp, home, _) = setup("[tools]\nedit_format = \"edit\"\n", "", false);
    let edit = settings_in(Some(&home), None, &[]);
    assert!(formats(&edit).split(' ').all(|pair| pair.ends_with("=Edit")), "{}", formats(&edit));
    let editor = edit.with_editor_settings(&serde_json::json!({"tools": {"editFormat": "apply_patch"}}));
    assert!(formats(&editor).split(' ').all(|pair| pair.ends_with("=ApplyPatch")), "{}", formats(&editor));
    assert_eq!(editor.origin("tools.edit_format").to_string(), "editor settings");
    let (tmp2, home, _) =
        setup("[tools]\nedit_format = \"patch\"\n[[models]]\nid = \"m\"\nedit_format = \"auto\"\n", "", false);
    let bad = settings_in(Some(&home), None, &[]);
    expect![[r#"
        home/config.toml:2: tools.edit_format: expected "auto", "edit" or "apply_patch", found "patch"
        home/config.toml:5: models[0].edit_format: expected "edit" or "apply_patch", found "auto""#]]
    .assert_eq(&show_diagnostics(&bad, tmp2.path()));
    drop(tmp);
}

#[test]
fn an_offline_load_looks_for_no_language_server_on_path() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("clangd"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(bin.join("clangd"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let vars = [("PATH".to_string(), bin.display().to_string())];
    let var = |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let names = |settings: &Settings| settings.lsp_servers.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&Settings::load(var, None)), ["clangd"]);
    let offline = Settings::load_offline(var, None);
    assert!(names(&offline).is_empty());
    // Laying the editor's settings over them keeps them offline.
    assert!(names(&offline.with_editor_settings(&serde_json::json!({}))).is_empty());
}
