//! The `adforge` binary for the end-to-end tests of this package: the same `main` as
//! `api/server/src/main.rs`, so cargo builds it (and names it in `CARGO_BIN_EXE_adforge-e2e`)
//! whenever these tests are built.

fn main() -> std::process::ExitCode {
    adforge::cli::main()
}
