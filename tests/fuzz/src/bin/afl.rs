//! The AFL++ driver: `reins-fuzz-afl TARGET` runs one target of [`reins_fuzz::TARGETS`] on the
//! inputs AFL++ feeds it (in persistent mode). Built and run by `scripts/fuzz`.

fn main() {
    let name = std::env::args().nth(1).unwrap_or_default();
    let Some(target) = reins_fuzz::target(&name) else {
        let names: Vec<&str> = reins_fuzz::TARGETS.iter().map(|target| target.name).collect();
        eprintln!("usage: reins-fuzz-afl TARGET, one of: {}", names.join(", "));
        std::process::exit(2);
    };
    afl::fuzz!(|data: &[u8]| (target.run)(data));
}
