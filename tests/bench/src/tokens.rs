//! The token figures: what the first request for "hi" weighs — reins with its default tools and
//! with the read-only set, and pi on the same prompt in the same workspace, both against the scripted server — and what share
//! of a 50-turn session's input tokens a server with Anthropic's prompt cache (scripted-llm's
//! [`scripted_llm::PrefixCache`]) reads from its cache, for reins and for pi 1.6; and what 20
//! skills add to reins's first request (their names, descriptions and paths, never a body).

use std::path::Path;
use std::process::Stdio;

use scripted_llm::{CacheUsage, RecordedRequest, Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::peer::{Pi, print_args, run_timed};

/// reins's first request may weigh this much times pi 1.6's.
const MAX_BYTES_RATIO: f64 = 1.25;
/// Model calls in the cached session: one `read` per turn, then an answer.
const CACHED_TURNS: usize = 50;
/// The share of input tokens the cached session must read from the cache.
const MIN_CACHE_SHARE: f64 = 0.9;
/// Skills installed for the skills figure, and the body each one has (never sent unless used).
const SKILLS: usize = 20;
const SKILL_BODY: &str = "Follow these steps carefully. ";
const SKILL_BODY_REPEAT: usize = 200;
/// Claude Sonnet 4.5's prices ($ per million tokens), to say what the cache saves.
const PRICES: [f64; 3] = [3.0, 0.3, 3.75];

/// Prints the figures; true when a target is missed.
pub async fn measure(reins: &Path, pis: &[Result<Pi, String>]) -> bool {
    let mut missed = first_request(reins, pis).await;
    missed |= skills_growth(reins).await;
    missed |= cache_share(reins, pis).await;
    missed
}

async fn first_request(reins: &Path, pis: &[Result<Pi, String>]) -> bool {
    println!("\nfirst request for \"hi\" (bytes of the body, same workspace)");
    let workspace = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            println!("  not measured: cannot make a workspace: {err}");
            return true;
        }
    };
    // reins with its default tools (what the target is about), and with the read-only set.
    let mut measured = Vec::new();
    for (name, args) in [("reins", &[][..]), ("reins read-only", &["--tools", "read-only"][..])] {
        let Some(request) = reins_first_request(reins, workspace.path(), args).await else {
            println!("  {name} not measured: the run failed");
            return true;
        };
        let (system, tools) = parts(&request.body);
        let bytes = request.raw_body.len();
        println!("  {name:<16} {bytes:>7}  (system prompt {system}, {} tools {})", tools.0, tools.1);
        measured.push((name, bytes));
    }
    let reins_bytes = measured[0].1;
    let mut missed = false;
    for pi in pis {
        let Ok(pi) = pi else { continue };
        let server = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
        let bytes = match pi.configure(&server) {
            Ok(()) => run_timed("pi", pi.command(workspace.path(), &print_args("hi")))
                .await
                .map(|_| server.chat_requests().into_iter().next().map(|request| request.raw_body.len())),
            Err(why) => Err(why),
        };
        match bytes {
            Ok(Some(bytes)) => {
                let ratios: Vec<String> = measured
                    .iter()
                    .map(|(name, reins)| format!("{name} / pi {:.2}x", *reins as f64 / bytes as f64))
                    .collect();
                println!("  {:<16} {bytes:>7}  {}", format!("pi {}", pi.version), ratios.join(", "));
                if pi.version == crate::peer::PI_VERSIONS[0] {
                    let ok = reins_bytes as f64 / bytes as f64 <= MAX_BYTES_RATIO;
                    println!(
                        "  [{}] reins at most {MAX_BYTES_RATIO}x pi {}'s bytes",
                        if ok { "ok" } else { "MISSED" },
                        pi.version
                    );
                    missed |= !ok;
                }
            }
            Ok(None) => println!("  pi {} not measured: it sent no request", pi.version),
            Err(why) => println!("  pi {} not measured: {why}", pi.version),
        }
    }
    missed
}

/// The first request for "hi" with no skills and with [`SKILLS`] in reins's config folder: what
/// the skills add (names, descriptions and paths, as the Agent Skills format's progressive
/// disclosure asks) and that no body is sent. True when a body was sent or a run failed.
async fn skills_growth(reins: &Path) -> bool {
    println!("\nfirst request for \"hi\" with {SKILLS} skills (bytes of the body; each skill's body is never sent)");
    let workspace = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            println!("  not measured: cannot make a workspace: {err}");
            return true;
        }
    };
    let Some(without) = reins_first_request(reins, workspace.path(), &[]).await else {
        println!("  not measured: the run without skills failed");
        return true;
    };
    let body = SKILL_BODY.repeat(SKILL_BODY_REPEAT);
    let mut listed = 0;
    for n in 0..SKILLS {
        let (name, description) = (format!("skill-{n:02}"), format!("Does task number {n}. Use when asked for {n}."));
        // `REINS_HOME/skills`, the config folder's own (`crate::reins_command` sets REINS_HOME).
        let path = workspace.path().join(format!(".reins-home/skills/{name}/SKILL.md"));
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
            std::fs::write(&path, format!("---\nname: {name}\ndescription: {description}\n---\n{body}"))
        });
        if let Err(err) = written {
            println!("  not measured: cannot write {}: {err}", path.display());
            return true;
        }
        listed += name.len() + description.len() + path.display().to_string().len();
    }
    let Some(with) = reins_first_request(reins, workspace.path(), &[]).await else {
        println!("  not measured: the run with {SKILLS} skills failed");
        return true;
    };
    let (before, after) = (without.raw_body.len(), with.raw_body.len());
    let (system_before, system_after) = (parts(&without.body).0, parts(&with.body).0);
    println!("  0 skills         {before:>7}  (system prompt {system_before})");
    println!(
        "  {SKILLS} skills        {after:>7}  (system prompt {system_after}): +{} bytes, of which names, descriptions \
         and paths {listed}; {} bytes of skill bodies on disk",
        after.saturating_sub(before),
        SKILLS * body.len()
    );
    let sent = String::from_utf8_lossy(&with.raw_body).contains(SKILL_BODY.trim());
    println!("  [{}] no skill body in the first request", if sent { "MISSED" } else { "ok" });
    sent
}

/// The first model request of `reins run ARGS hi` in `workspace`; `None` when the run failed.
async fn reins_first_request(reins: &Path, workspace: &Path, args: &[&str]) -> Option<RecordedRequest> {
    let server = ScriptedServer::start(vec![Reply::text("Hello.")]).await;
    let mut command = reins_command(reins, workspace, &server, "hi");
    command.args(args);
    let status = tokio::process::Command::from(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    server.chat_requests().into_iter().next().filter(|_| matches!(status, Ok(s) if s.success()))
}

/// The system prompt's bytes, and the number and bytes of the tool definitions.
fn parts(body: &Value) -> (usize, (usize, usize)) {
    let system = body["messages"][0]["content"].as_str().map_or(0, str::len);
    let tools = body["tools"].as_array().map_or((0, 0), |tools| {
        (tools.len(), tools.iter().map(|tool| tool.to_string().len()).sum::<usize>() + tools.len().saturating_sub(1))
    });
    (system, tools)
}

async fn cache_share(reins: &Path, pis: &[Result<Pi, String>]) -> bool {
    println!(
        "\nprompt cache over a {CACHED_TURNS}-turn session (a read per turn) against a scripted Anthropic server \
         with a prefix cache"
    );
    let workspace = match crate::prepare_workspace() {
        Ok(dir) => dir,
        Err(err) => {
            println!("  not measured: cannot prepare the workspace: {err}");
            return true;
        }
    };
    let server = ScriptedServer::start(cached_script()).await;
    server.simulate_prefix_cache();
    let mut command = reins_command(reins, workspace.path(), &server, "read the file line by line");
    command
        .args(["--model", "anthropic/claude-sonnet-4-5"])
        .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
        .env("ANTHROPIC_API_KEY", "bench");
    let status = tokio::process::Command::from(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    let usage = server.cache_usage();
    if !matches!(status, Ok(s) if s.success()) || usage.len() != CACHED_TURNS {
        println!("  reins not measured: the run failed ({status:?}) after {} calls", usage.len());
        return true;
    }
    let share = report("reins", &usage);
    let ok = share >= MIN_CACHE_SHARE;
    println!(
        "  [{}] at least {:.0} % of input tokens read from the cache",
        if ok { "ok" } else { "MISSED" },
        MIN_CACHE_SHARE * 100.0
    );
    for pi in pis.iter().flatten().filter(|pi| pi.version == crate::peer::PI_VERSIONS[0]) {
        let server = ScriptedServer::start(cached_script()).await;
        server.simulate_prefix_cache();
        let configured = pi.configure_api(server.anthropic_base_url(), "anthropic-messages", "claude-sonnet-4-5", true);
        let run = match configured {
            Ok(()) => {
                run_timed("pi", pi.command(workspace.path(), &print_args("read the file line by line"))).await.map(drop)
            }
            Err(why) => Err(why),
        };
        let usage = server.cache_usage();
        match run {
            Ok(()) if usage.len() == CACHED_TURNS => {
                report(&format!("pi {}", pi.version), &usage);
            }
            Ok(()) => println!("  pi {} not measured: it made {} calls", pi.version, usage.len()),
            Err(why) => println!("  pi {} not measured: {why}", pi.version),
        }
    }
    !ok
}

/// Prints one agent's cache figures; answers the share read from the cache.
fn report(name: &str, usage: &[CacheUsage]) -> f64 {
    let read: u64 = usage.iter().map(|call| call.cache_read).sum();
    let written: u64 = usage.iter().map(|call| call.cache_write).sum();
    let prompt: u64 = usage.iter().map(|call| call.prompt_tokens()).sum();
    let share = read as f64 / prompt.max(1) as f64;
    let [input, cache_read, cache_write] = PRICES.map(|price| price / 1_000_000.0);
    let cost = (prompt - read - written) as f64 * input + read as f64 * cache_read + written as f64 * cache_write;
    println!(
        "  {name:<12} {:>5.1} % of {prompt} input tokens read from the cache ({written} written); input ${cost:.4} \
         at Sonnet's prices, ${:.4} without a cache",
        share * 100.0,
        prompt as f64 * input
    );
    share
}

/// `CACHED_TURNS - 1` reads of successive lines of `lines.txt`, then an answer.
fn cached_script() -> Vec<Reply> {
    let mut script: Vec<Reply> = (1..CACHED_TURNS)
        .map(|line| {
            Reply::tool_call(format!("call_{line}"), "read", json!({"path": "lines.txt", "offset": line, "limit": 1}))
        })
        .collect();
    script.push(Reply::text("Done."));
    script
}

fn reins_command(reins: &Path, workspace: &Path, server: &ScriptedServer, prompt: &str) -> std::process::Command {
    crate::reins_command(reins, workspace, server, prompt)
}
