//! Every fuzz target on its seeds and on every input that once failed (`regressions/`, where
//! `scripts/fuzz` puts what AFL++ finds), then on random inputs for a few seconds: the quick
//! version of `scripts/fuzz` that the test suite runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use reins_fuzz::{TARGETS, Target};

/// How long each target runs on random inputs (`REINS_FUZZ_SECONDS` to change).
const DEFAULT_SECONDS: u64 = 3;

fn inputs(folder: &str, target: &Target) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(folder).join(target.name);
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).map(|dir| dir.flatten().map(|entry| entry.path()).collect()).unwrap_or_default();
    files.sort();
    files
}

#[test]
fn every_target_has_seeds_and_passes_them_and_every_regression() {
    for target in TARGETS {
        let seeds = inputs("seeds", target);
        assert!(!seeds.is_empty(), "{} has no seeds", target.name);
        for file in seeds.iter().chain(&inputs("regressions", target)) {
            let data = std::fs::read(file).unwrap();
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            assert!(outcome.is_ok(), "{} fails on {}", target.name, file.display());
        }
    }
}

/// Random inputs for each target, for a few seconds each: bytes from an alphabet that makes
/// each format interesting, mixed with seeds cut and spliced, and plain random bytes.
#[test]
fn every_target_survives_random_inputs() {
    let seconds = std::env::var("REINS_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(DEFAULT_SECONDS);
    for target in TARGETS {
        let seeds: Vec<Vec<u8>> = inputs("seeds", target).iter().map(|file| std::fs::read(file).unwrap()).collect();
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut runner = TestRunner::new(Config { cases: u32::MAX, failure_persistence: None, ..Config::default() });
        let strategy = input(seeds);
        let mut runs = 0u64;
        while Instant::now() < deadline {
            let data = strategy.new_tree(&mut runner).unwrap().current();
            let outcome = std::panic::catch_unwind(|| (target.run)(&data));
            assert!(outcome.is_ok(), "{} fails on {:?}", target.name, String::from_utf8_lossy(&data));
            runs += 1;
        }
        eprintln!("{}: {runs} random inputs in {seconds} s", target.name);
    }
}

/// A seed with a few of its bytes changed, two seeds spliced, or random bytes.
fn input(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let noise = prop::collection::vec(
        prop_oneof![
            any::<u8>(),
            prop::sample::select(b"{}[]\":,\\\r\n :data event Content-Length 0123456789 \xff\xc3\xa9".to_vec())
        ],
        0..256,
    );
    let seeds_a = prop::sample::select(seeds.clone());
    let seeds_b = prop::sample::select(seeds);
    let mutations = prop::collection::vec((any::<usize>(), any::<u8>()), 0..8);
    let splice = (any::<usize>(), any::<usize>());
    prop_oneof![
        noise,
        (seeds_a.clone(), mutations).prop_map(|(mut seed, changes)| {
            for (at, byte) in changes {
                if !seed.is_empty() {
                    let at = at % seed.len();
                    seed[at] = byte;
                }
            }
            seed
        }),
        (seeds_a, seeds_b, splice).prop_map(|(a, b, (cut_a, cut_b))| {
            let cut_a = cut_a % (a.len() + 1);
            let cut_b = cut_b % (b.len() + 1);
            [&a[..cut_a], &b[cut_b..]].concat()
        }),
    ]
}

/// Found by AFL++ (`regressions/session_line`): without serde_json's `float_roundtrip`, a float
/// read from a session line came back one bit off when the entry was written again.
#[test]
fn a_float_in_a_session_line_survives_a_round_trip() {
    let line = r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1.63912105e+66}}"#;
    // The target checks the round trip only of lines that parse: this one must.
    let entry = reins_session::Entry::parse(line).unwrap();
    assert!(entry.to_line().contains(r#""timestamp":1.63912105e+66}"#), "{}", entry.to_line());
    reins_fuzz::session_line(line.as_bytes());
}
