//! Hands back the pages of the binary's relocation table once it has served. `reins` is
//! position-independent, so before `main` the dynamic loader reads some 60,000 relocations
//! (`.rela.dyn`, 1.4 MB) to fix up its pointers; nothing reads that table again, yet its pages
//! would stay resident for as long as the process lives — a sixth of an idle `reins lsp`. They
//! are clean pages of the read-only part of the file, so dropping them loses nothing: were they
//! read again, they would be read from the file.

/// A `PT_*` program header type, `DT_*` dynamic tag and `PF_W` flag (from `<elf.h>`).
const PT_PHDR: u32 = 6;
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PF_W: u32 = 2;
const DT_NULL: i64 = 0;
const DT_RELA: i64 = 7;
const DT_RELASZ: i64 = 8;

/// An ELF64 program header.
#[repr(C)]
struct ProgramHeader {
    kind: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    file_size: u64,
    memory_size: u64,
    align: u64,
}

/// An ELF64 dynamic entry.
#[repr(C)]
struct Dynamic {
    tag: i64,
    value: u64,
}

/// Drops this process's pages of the relocation table; answers the bytes dropped (0 where
/// there is nothing to drop or the table cannot be found).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub fn release_relocation_table() -> usize {
    let Some(pages) = relocation_pages() else { return 0 };
    // SAFETY: the range lies inside a read-only mapping of the program's file, whose pages are
    // never written: dropping them only makes a later read fetch them from the file again.
    let dropped = unsafe { nix::libc::madvise(pages.start as *mut _, pages.len(), nix::libc::MADV_DONTNEED) };
    if dropped == 0 { pages.len() } else { 0 }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub fn release_relocation_table() -> usize {
    0
}

/// The whole pages of the program's relocation table (`DT_RELA`, `DT_RELASZ`) in memory, when
/// they lie in a read-only segment (a writable one may hold the only copy of its data).
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn relocation_pages() -> Option<std::ops::Range<usize>> {
    use nix::libc::{_SC_PAGESIZE, AT_PHDR, AT_PHNUM, getauxval, sysconf};

    // SAFETY: getauxval only reads the auxiliary vector the kernel gave the process.
    let (phdr, count) = unsafe { (getauxval(AT_PHDR) as usize, getauxval(AT_PHNUM) as usize) };
    if phdr == 0 || count == 0 {
        return None;
    }
    // SAFETY: AT_PHDR and AT_PHNUM point at the program's headers, mapped for its whole life.
    let headers = unsafe { std::slice::from_raw_parts(phdr as *const ProgramHeader, count) };
    // Where the program was loaded: its headers' address in memory less their address in the file.
    let bias = phdr - headers.iter().find(|header| header.kind == PT_PHDR)?.vaddr as usize;
    let dynamic = headers.iter().find(|header| header.kind == PT_DYNAMIC)?;
    let (mut table, mut size) = (0usize, 0usize);
    let mut entry = (bias + dynamic.vaddr as usize) as *const Dynamic;
    loop {
        // SAFETY: the dynamic section is mapped and ends with a DT_NULL entry.
        let Dynamic { tag, value } = unsafe { entry.read() };
        match tag {
            DT_NULL => break,
            DT_RELA => table = value as usize,
            DT_RELASZ => size = value as usize,
            _ => {}
        }
        // SAFETY: not past the DT_NULL entry, which ends the section.
        entry = unsafe { entry.add(1) };
    }
    if table == 0 {
        return None;
    }
    // The loader may have turned the table's address into one in memory.
    let start = if table >= bias { table } else { bias + table };
    let read_only = headers.iter().any(|header| {
        let segment = bias + header.vaddr as usize;
        header.kind == PT_LOAD
            && header.flags & PF_W == 0
            && start >= segment
            && start + size <= segment + header.memory_size as usize
    });
    // SAFETY: sysconf only reads a constant of the system.
    let page = usize::try_from(unsafe { sysconf(_SC_PAGESIZE) }).unwrap_or(4096).max(1);
    let pages = start.div_ceil(page) * page..(start + size) / page * page;
    (read_only && !pages.is_empty()).then_some(pages)
}

#[cfg(all(test, target_os = "linux", target_pointer_width = "64"))]
mod tests {
    use super::*;

    /// How many of the pages of `range` this process has mapped (`/proc/self/pagemap`: bit 63).
    fn present(range: &std::ops::Range<usize>) -> usize {
        use std::os::unix::fs::FileExt;
        let pagemap = std::fs::File::open("/proc/self/pagemap").unwrap();
        (range.start..range.end)
            .step_by(4096)
            .filter(|address| {
                let mut entry = [0u8; 8];
                pagemap.read_exact_at(&mut entry, (address / 4096 * 8) as u64).unwrap();
                u64::from_le_bytes(entry) >> 63 == 1
            })
            .count()
    }

    #[test]
    fn the_relocation_table_is_handed_back_and_the_program_goes_on() {
        // A test binary is position-independent too, with a table of many pages, which the
        // loader has read.
        let pages = relocation_pages().expect("a relocation table in a read-only segment");
        assert!(pages.len() >= 64 << 10, "{} bytes", pages.len());
        assert!(present(&pages) > 0, "the loader read the table");
        assert_eq!(release_relocation_table(), pages.len());
        assert_eq!(present(&pages), 0, "pages of the table are still mapped");
        // Pointers the loader fixed up still work (a formatted panic location, a vtable call).
        let boxed: Box<dyn Fn(u32) -> String> = Box::new(|n| format!("{n} at {}", std::panic::Location::caller()));
        assert!(boxed(7).starts_with("7 at "));
    }
}
