//! Links the functions that `reins` runs at start and in a turn next to each other, at the head
//! of its code, in a release build.
//!
//! Why: the kernel maps a program's code 64 KiB at a time around each page it first touches, so
//! what stays resident is every 64 KiB window the program has run code in, not the code it ran.
//! An idle `reins lsp` runs about 1.1 MB of code spread over 31 MB, which touched some 180
//! windows: 11–15 MB of resident code. Gathered at the head, the same code takes 2 MB.
//!
//! How: `link-order.txt` names those functions, as their symbols; lld (the linker Rust uses on
//! x86-64 Linux since 1.90) puts them first in that order (`--symbol-ordering-file`) and everything
//! else after, as before. A name the build does not have (the code changed since the list was
//! made) is skipped without a word, so a stale list costs memory, never a failed build.
//! `scripts/link-order` makes the list again from a profile of the bench's runs.
//!
//! Only where lld is the linker for sure: a release build for x86_64-unknown-linux-gnu by rustc
//! 1.90 or later, with no linker of the user's own; elsewhere the link is as it was.

use std::process::Command;

const LIST: &str = "link-order.txt";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={LIST}");
    let list = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join(LIST);
    if !list.is_file() || !links_with_rust_lld() {
        return;
    }
    println!("cargo:rustc-link-arg-bin=reins=-Wl,--symbol-ordering-file={}", list.display());
    println!("cargo:rustc-link-arg-bin=reins=-Wl,--no-warn-symbol-ordering");
}

/// Whether the final link is rustc's own lld, which knows `--symbol-ordering-file`: a release
/// build for x86-64 Linux (glibc) by rustc 1.90 or later, with no linker set in Cargo's
/// configuration or in the flags.
fn links_with_rust_lld() -> bool {
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || ["linker", "link-self-contained", "fuse-ld"].iter().any(|word| flags.contains(word));
    var("TARGET") == "x86_64-unknown-linux-gnu" && var("PROFILE") == "release" && !own_linker && rustc_minor() >= 90
}

/// The minor version of the rustc that builds (`rustc 1.95.0 (…)` → 95); 0 when it cannot say.
fn rustc_minor() -> u32 {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(output) = Command::new(rustc).arg("-V").output() else { return 0 };
    let text = String::from_utf8_lossy(&output.stdout);
    let version = text.split_whitespace().nth(1).unwrap_or_default();
    version.split('.').nth(1).and_then(|minor| minor.parse().ok()).unwrap_or(0)
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}
