//! Links `reins` with packed relative relocations (`DT_RELR`) where the toolchain and the C
//! library take them: the binary's tables of pointers (vtables, strings, panic locations) need
//! some 60,000 relocations at every start, which the dynamic loader reads from 1.4 MB of
//! `.rela.dyn`; packed, they take a few kilobytes, and every command starts sooner (`reins
//! --version` is the bench's startup figure). The executable stays position-independent, so its
//! address is still randomised.
//!
//! Packed relocations need GNU ld 2.38 (or lld) and glibc 2.36 to load them. The build finds out
//! by linking and running a small program with them, and links without them when that fails (an
//! older system, or a cross build whose programs cannot run here).

use std::path::Path;
use std::process::{Command, Stdio};

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let native = var("HOST") == var("TARGET");
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" && native {
        let out = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from).unwrap_or_default();
        if links_and_runs(&out) {
            println!("cargo:rustc-link-arg-bins={FLAG}");
        }
    }
}

/// Whether a program linked with [`FLAG`] by the C compiler Rust links with (`cc`) runs here.
fn links_and_runs(out: &Path) -> bool {
    let source = out.join("relr.c");
    let program = out.join("relr");
    if std::fs::write(&source, "static int x; int *p = &x; int main(void) { return *p; }\n").is_err() {
        return false;
    }
    let linked = Command::new("cc")
        .args(["-fPIE", "-pie", FLAG, "-o"])
        .arg(&program)
        .arg(&source)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    linked && Command::new(&program).status().is_ok_and(|status| status.success())
}
