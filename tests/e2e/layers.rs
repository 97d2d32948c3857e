//! The crates keep their floors: a surface (the LSP server, the ACP agent) depends on no other
//! surface and not on the binary in front of them, and nothing below the surfaces depends on one,
//! as `cargo metadata` reads the manifests; the settings sit below the harness.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

/// The surface crates: each translates one protocol, and none may reach into another.
const SURFACES: &[&str] = &["reins-lsp", "reins-acp"];
/// The binary in front of the surfaces.
const FRONT_DOOR: &str = "reins";
/// The config files, layers, registry, keys and trust.
const SETTINGS: &str = "reins-settings";

/// Each workspace crate's normal and build dependencies among the workspace crates.
fn workspace_dependencies() -> BTreeMap<String, Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
    let metadata: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages.iter().filter_map(|package| package["name"].as_str()).collect();
    packages
        .iter()
        .map(|package| {
            let dependencies = package["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|dependency| dependency["kind"].as_str() != Some("dev"))
                .filter_map(|dependency| dependency["name"].as_str())
                .filter(|name| names.contains(name))
                .map(str::to_string)
                .collect();
            (package["name"].as_str().unwrap_or_default().to_string(), dependencies)
        })
        .collect()
}

/// Every dependency on a floor it must not reach, as `crate -> dependency` lines.
fn crossings(graph: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    let upper: Vec<&str> = SURFACES.iter().copied().chain([FRONT_DOOR]).collect();
    let mut crossings = Vec::new();
    for (name, dependencies) in graph {
        // Only the front door may use a surface; the bench measures the LSP server's own code.
        if name == FRONT_DOOR || name == "reins-bench" {
            continue;
        }
        for dependency in dependencies.iter().filter(|dependency| upper.contains(&dependency.as_str())) {
            crossings.push(format!("{name} -> {dependency}"));
        }
    }
    crossings
}

#[test]
fn no_surface_depends_on_another_and_nothing_below_on_a_surface() {
    let graph = workspace_dependencies();
    for crate_name in SURFACES.iter().chain([&FRONT_DOOR]) {
        assert!(graph.contains_key(*crate_name), "{crate_name} is not in the workspace: {:?}", graph.keys());
    }
    assert_eq!(crossings(&graph), Vec::<String>::new());
    assert!(graph[FRONT_DOOR].iter().any(|dependency| dependency == "reins-lsp"));
}

/// The settings crate's place: below the harness, which alone uses it and re-exports what the
/// surfaces need (one way to reach a setting, not two).
#[test]
fn the_settings_are_read_below_the_harness_and_reached_through_it() {
    let graph = workspace_dependencies();
    let settings = &graph[SETTINGS];
    for upper in ["reins-harness", "reins-wire"].iter().chain(SURFACES).chain([&FRONT_DOOR]) {
        assert!(!settings.contains(&upper.to_string()), "{SETTINGS} depends on {upper}");
    }
    let users: Vec<&String> = graph
        .iter()
        .filter(|(_, dependencies)| dependencies.contains(&SETTINGS.to_string()))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(users, ["reins-harness"]);
}

#[test]
fn a_surface_that_depends_on_another_is_named() {
    let graph = BTreeMap::from([
        ("reins-acp".to_string(), vec!["reins-lsp".to_string(), "reins-harness".to_string()]),
        ("reins-harness".to_string(), vec!["reins".to_string()]),
        ("reins".to_string(), vec!["reins-acp".to_string()]),
    ]);
    assert_eq!(crossings(&graph), ["reins-acp -> reins-lsp", "reins-harness -> reins"]);
}
