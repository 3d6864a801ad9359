//! `cargo run -p adforge-renderer --example render -- TREE.json OUT.png [WIDTH] [REPORT.json]`
//! — the same code path as `adforge render`, for working on the renderer alone.

use std::path::PathBuf;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: render TREE.json OUT.png [WIDTH] [REPORT.json]");
        std::process::exit(2);
    }
    let cmd = adforge_renderer::cli::RenderCommand {
        tree: PathBuf::from(&args[0]),
        output: PathBuf::from(&args[1]),
        width: args.get(2).and_then(|w| w.parse().ok()),
        report: args.get(3).map(PathBuf::from),
        allow_private_urls: true,
    };
    match adforge_renderer::cli::run(&cmd) {
        Ok(s) => println!("{s:?}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
