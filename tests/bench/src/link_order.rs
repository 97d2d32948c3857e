//! `reins-bench link-order MAP OUT DIR…`: the list of functions that `server/cli/build.rs` links
//! first (see there for why), made from the linker's map of a binary and callgrind profiles of
//! its runs (`cg.*.out`), a directory of them for each kind of run, the most common first
//! (`scripts/link-order` takes them); and `reins-bench editor-day [--idle]`, an editor's short
//! day with `reins lsp` (or only its start) for a profile to see.
//!
//! Each instruction a profile saw run is looked up in the map's `.text` among the input sections
//! (one per function: Rust compiles with function sections), and each section that ran is listed
//! by its symbol: those of the first directory's runs first, then those the second's added, and
//! so on, each part in the order the binary had them, so that an idle server's code is packed
//! tightest. lld's map names a section `object:(.text.SYMBOL)`, or `(.text.unlikely.SYMBOL)` for
//! code LLVM thinks cold.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use scripted_llm::{Reply, ScriptedServer};
use serde_json::json;

use crate::lsp::Client;

/// One input section of the map's `.text`: where it starts, its size, and its symbol (none for a
/// section of an object compiled without function sections).
struct Section {
    start: u64,
    size: u64,
    symbol: Option<String>,
}

/// Writes the list to `out`, from the profiles in `dirs` (see the module's doc); an error says
/// what could not be read.
pub fn write(map: &Path, out: &Path, dirs: &[std::path::PathBuf]) -> Result<(), String> {
    let map_text = std::fs::read_to_string(map).map_err(|e| format!("{}: {e}", map.display()))?;
    let sections = text_sections(&map_text);
    if sections.is_empty() {
        return Err(format!("{} has no .text sections: is it lld's map (-Wl,-Map)?", map.display()));
    }
    let mut listed = BTreeSet::new();
    let mut order = Vec::new();
    let (mut addresses, mut profiles) = (0, 0);
    for dir in dirs {
        let mut ran = BTreeSet::new();
        for profile in callgrind_profiles(dir)? {
            profiles += 1;
            let text = std::fs::read_to_string(&profile).map_err(|e| format!("{}: {e}", profile.display()))?;
            for address in reins_instructions(&text) {
                addresses += 1;
                let at = sections.partition_point(|section| section.start <= address);
                if let Some(section) = at.checked_sub(1).map(|at| &sections[at])
                    && address < section.start + section.size.max(1)
                {
                    ran.insert(at - 1);
                }
            }
        }
        order.extend(ran.into_iter().filter(|&at| listed.insert(at)));
    }
    if order.is_empty() {
        return Err(format!(
            "none of {addresses} instructions in {profiles} profiles is in the map's code: \
             were they made with --dump-instr=yes --compress-pos=no, of the same binary?"
        ));
    }
    let symbols: Vec<&str> = order.iter().filter_map(|&at| sections[at].symbol.as_deref()).collect();
    let bytes: u64 = order.iter().map(|&at| sections[at].size).sum();
    let mut list = String::from(HEADER);
    for symbol in &symbols {
        list.push_str(symbol);
        list.push('\n');
    }
    std::fs::write(out, list).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("{} functions, {} KiB of code, listed in {}", symbols.len(), bytes / 1024, out.display());
    Ok(())
}

/// The callgrind profiles (`cg.*.out`) in `dir`, by name.
fn callgrind_profiles(dir: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut profiles: Vec<std::path::PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            name.starts_with("cg.") && name.ends_with(".out")
        })
        .collect();
    profiles.sort();
    Ok(profiles)
}

const HEADER: &str = "# The functions reins runs at start and in a turn, linked first (see build.rs).\n\
                      # Made by scripts/link-order; lld skips lines starting with #.\n";

/// The input sections of the output section `.text` in lld's map, by address. A line of the map
/// is `VMA LMA SIZE ALIGN` and then, indented by its level, an output section (one space), an
/// input section (`object:(section)`, nine) or a symbol (seventeen).
fn text_sections(map: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut in_text = false;
    for line in map.lines() {
        let Some((numbers, rest)) = split_after_fields(line, 4) else { continue };
        let mut numbers = numbers.split_whitespace().map(|field| u64::from_str_radix(field, 16));
        let (Some(Ok(start)), Some(Ok(_lma)), Some(Ok(size))) = (numbers.next(), numbers.next(), numbers.next()) else {
            continue;
        };
        let name = rest.trim_start();
        match rest.len() - name.len() {
            0 | 1 => in_text = name == ".text",
            2..=9 if in_text => {
                if let Some(section) = name.rsplit_once(":(").and_then(|(_, section)| section.strip_suffix(')')) {
                    sections.push(Section { start, size, symbol: section_symbol(section) });
                }
            }
            _ => {}
        }
    }
    sections.sort_by_key(|section| section.start);
    sections
}

/// `line` split after its first `count` whitespace-separated fields.
fn split_after_fields(line: &str, count: usize) -> Option<(&str, &str)> {
    let mut end = 0;
    for _ in 0..count {
        let start = end + line[end..].find(|c: char| !c.is_whitespace())?;
        end = start + line[start..].find(char::is_whitespace)?;
    }
    Some(line.split_at(end))
}

/// `.text.SYMBOL` (or `.text.unlikely.SYMBOL`, …) → `SYMBOL`.
fn section_symbol(section: &str) -> Option<String> {
    let name = section.strip_prefix(".text.")?;
    let name =
        ["unlikely.", "hot.", "startup.", "exit."].iter().find_map(|kind| name.strip_prefix(kind)).unwrap_or(name);
    (!name.is_empty()).then(|| name.to_string())
}

/// The instruction addresses a callgrind profile (`--dump-instr=yes --compress-pos=no
/// --compress-strings=no`) gives for the object `reins`.
fn reins_instructions(profile: &str) -> impl Iterator<Item = u64> + '_ {
    let mut ours = false;
    profile.lines().filter_map(move |line| {
        if let Some(object) = line.strip_prefix("ob=") {
            ours = object.trim_end().ends_with("/reins");
            return None;
        }
        let address = line.strip_prefix("0x").filter(|_| ours)?.split_whitespace().next()?;
        u64::from_str_radix(address, 16).ok()
    })
}

/// How long the server is left alone after each step: a profiled server runs some fifty times
/// slower, and its start-up work must end before it is told to exit.
const SETTLE: Duration = Duration::from_secs(5);

/// What an editor does with `reins lsp` in a short day, through to a clean exit (a profiler
/// writes its profile then): start, open a file, ask for its code actions, start a session, run a
/// turn that reads the file, list the sessions, shut down.
pub async fn editor_day(reins: &Path, idle: bool) -> Result<(), String> {
    let workspace = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = workspace.path().join("a.rs");
    std::fs::write(&file, "fn answer() -> u32 {\n    42\n}\n").map_err(|e| e.to_string())?;
    let server = ScriptedServer::start(vec![
        Reply::tool_call("c1", "read", json!({"path": "a.rs"})),
        Reply::text("It answers 42."),
    ])
    .await;
    let mut client = Client::spawn(reins, workspace.path(), &server.base_url())?;
    client.initialize(workspace.path()).await?;
    tokio::time::sleep(SETTLE).await;
    if idle {
        return shut_down(client).await;
    }
    let uri = format!("file://{}", file.display());
    let document = json!({"uri": uri, "languageId": "rust", "version": 1, "text": "fn answer() -> u32 {\n    42\n}\n"});
    client.notify("textDocument/didOpen", json!({"textDocument": document})).await?;
    let range = json!({"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}});
    let actions = json!({"textDocument": {"uri": uri}, "range": range, "context": {"diagnostics": []}});
    client.request("textDocument/codeAction", actions).await?;
    let command = |name: &str, argument: serde_json::Value| json!({"command": name, "arguments": [argument]});
    let created = client.request("workspace/executeCommand", command("reins.session.new", json!({}))).await?;
    let send = json!({"sessionId": created["sessionId"], "text": "what does a.rs answer?"});
    let started = client.request("workspace/executeCommand", command("reins.chat.send", send)).await?;
    let run_id = started["runId"].as_str().ok_or("reins.chat.send answered no runId")?.to_string();
    client.wait_for_end(&run_id).await?;
    client.request("workspace/executeCommand", command("reins.session.list", json!({"limit": 50}))).await?;
    tokio::time::sleep(SETTLE).await;
    shut_down(client).await
}

/// Asks the server to shut down and exit, and waits for its clean exit.
async fn shut_down(mut client: Client) -> Result<(), String> {
    client.request("shutdown", serde_json::Value::Null).await?;
    client.notify("exit", serde_json::Value::Null).await?;
    let status = tokio::time::timeout(Duration::from_secs(60), client.child.wait()).await;
    match status {
        Ok(Ok(status)) if status.success() => Ok(()),
        other => Err(format!("reins lsp did not exit cleanly: {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "\
             VMA              LMA     Size Align Out     In      Symbol
             2e0              2e0       1c     1 .interp
             2e0              2e0       1c     1         <internal>:(.interp)
          a0b380           a0b380     1000    64 .text
          a0b380           a0b380       22    16         /usr/lib/Scrt1.o:(.text)
          a0b380           a0b380       22     1                 _start
          a0b470           a0b470      261    16         /t/reins.o:(.text._ZN3one17h01E)
          a0b470           a0b470      261     1                 one::h01
          a0b6e0           a0b6e0      30e    16         /t/reins.o:(.text.unlikely._ZN3two17h02E)
          a0b6e0           a0b6e0      30e     1                 two::h02
          a0b9f0           a0b9f0      279    16         /t/reins.o:(.text._ZN5three17h03E)
          a0ca00           a0ca00       10     8 .rodata
          a0ca00           a0ca00       10     8         /t/reins.o:(.rodata._ZN4data17h04E)
";

    #[test]
    fn the_code_that_ran_is_listed_by_its_symbol_in_the_binarys_order() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("reins.map");
        std::fs::write(&map, MAP).unwrap();
        // Two processes: the second ran `two` and `one`; libc's and the data's addresses are not ours.
        let first =
            "ob=/usr/lib/libc.so.6\nfn=x\n0xa0b6e5 3\nob=/w/target/release/reins\nfn=0x1\n0xa0b380 1\n0xa0b9f0 2\n";
        let second =
            "ob=/w/target/release/reins\nfn=0x2\n0xa0b6e0 1\ncalls=1 0xa0b470\n0xa0b700 4\n0xa0b480 1\n0xa0ca04 1\n";
        let (idle, day) = (dir.path().join("idle"), dir.path().join("day"));
        std::fs::create_dir_all(&idle).unwrap();
        std::fs::create_dir_all(&day).unwrap();
        std::fs::write(idle.join("cg.1.out"), "ob=/w/target/release/reins\nfn=0x3\n0xa0b9f4 1\n").unwrap();
        // Not a profile: left alone.
        std::fs::write(idle.join("notes.txt"), "ob=/w/target/release/reins\n0xa0b480 1\n").unwrap();
        std::fs::write(day.join("cg.1.out"), first).unwrap();
        std::fs::write(day.join("cg.2.out"), second).unwrap();
        let out = dir.path().join("order.txt");
        write(&map, &out, &[idle, day]).unwrap();
        let list = std::fs::read_to_string(&out).unwrap();
        let symbols: Vec<&str> = list.lines().filter(|line| !line.starts_with('#')).collect();
        // The first kind of run's functions first, then what the next added, in the binary's order.
        assert_eq!(symbols, ["_ZN5three17h03E", "_ZN3one17h01E", "_ZN3two17h02E"]);
    }

    /// The committed list is one the build can take: a symbol a line, comments aside. lld skips
    /// names it does not have, so a well-formed list cannot fail a link (only release builds,
    /// which the tests do not make, read it).
    #[test]
    fn the_committed_list_is_a_list_of_symbols() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../server/cli/link-order.txt");
        let list = std::fs::read_to_string(&path).unwrap();
        let symbols: Vec<&str> = list.lines().filter(|line| !line.starts_with('#')).collect();
        assert!(symbols.len() > 1000, "{} symbols", symbols.len());
        for symbol in &symbols {
            let word = |c: char| c.is_ascii_alphanumeric() || "_.$".contains(c);
            assert!(!symbol.is_empty() && symbol.chars().all(word), "not a symbol: {symbol:?}");
        }
        assert!(symbols.iter().any(|symbol| symbol.contains("reins_lsp")), "the server's own code is listed");
    }

    #[test]
    fn profiles_of_another_binary_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let map = dir.path().join("reins.map");
        std::fs::write(&map, MAP).unwrap();
        std::fs::write(dir.path().join("cg.1.out"), "ob=/w/target/release/reins\n0x10 1\n").unwrap();
        let error = write(&map, &dir.path().join("order.txt"), &[dir.path().to_path_buf()]).unwrap_err();
        assert!(error.contains("same binary"), "{error}");
        std::fs::write(&map, "not a map\n").unwrap();
        assert!(write(&map, &dir.path().join("o"), &[]).unwrap_err().contains("lld's map"));
    }
}
