//! The `adforge` binary: a thin shell over [`adforge::cli`].
//!
//! The process allocates through mimalloc rather than glibc's malloc: a point read
//! (`GET /v1/brands/{id}`) spent 19 % of its samples in glibc's malloc and free (arena
//! locks, `malloc_consolidate`), the largest share after the kernel (`docs/performance.md`).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    adforge::cli::main()
}
