//! The `adforge` binary: a thin shell over [`adforge::cli`].

fn main() -> std::process::ExitCode {
    adforge::cli::main()
}
