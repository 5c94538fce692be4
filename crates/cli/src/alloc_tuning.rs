//! glibc's allocator, set up for a process that builds large tables one after another.
//!
//! By default glibc serves each allocation of 128 KiB or more (a threshold it raises as
//! such blocks are freed) from a mapping of its own, and unmaps it when it is freed; it
//! also gives the top of its heap back to the kernel whenever 128 KiB of it are free. A
//! compilation builds its large tables in sequence — the parser's raw kernel, the IR,
//! the machine IR, regalloc2's live ranges and maps, the PTX text — and frees most of
//! each before the next is built, so every table lands on fresh pages, which the kernel
//! faults in one at a time. Page faults are not cheap: on the 2-core virtual machines the
//! project measures on, the plain compilation of branchy code of 10k IR instructions
//! takes about as much system time (3,400 faults, about 3 µs each) as user time.
//!
//! With blocks up to 32 MiB served from the heap and up to 256 MiB of free heap kept, a
//! table's freed memory serves the next one: 2,710 faults instead of 3,390 on that
//! kernel, and 5-10% less CPU time for the whole process on kernels of 10k and 100k
//! instructions (`docs/performance.md`, "Page faults"). Larger blocks (the emulator's
//! buffers of a big launch) keep their own mappings, so a run's peak memory is what it
//! was. Only the command-line tool does this: a program that embeds the library keeps
//! its own allocator settings.

/// Sets the allocator's thresholds; called first thing in `main`, before any thread.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub fn tune() {
    /// Blocks up to this size come from the heap, whose freed memory is reused.
    const MMAP_THRESHOLD: libc::c_int = 32 << 20;
    /// Free memory kept at the top of the heap before it is given back.
    const TRIM_THRESHOLD: libc::c_int = 256 << 20;
    // SAFETY: `mallopt` only changes parameters of glibc's allocator, under its own lock;
    // it reads and writes no memory of ours, and any value is valid for these two (an
    // out-of-range one is refused with a zero return, which leaves the defaults: then
    // the tool is only as fast as before, so the result is not checked).
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        libc::mallopt(libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD);
    }
}

/// Other C libraries' allocators are left as they are.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn tune() {}
