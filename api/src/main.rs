//! The `adforge` binary: a thin shell over [`adforge_api::cli`].

fn main() -> std::process::ExitCode {
    adforge_api::cli::main()
}
