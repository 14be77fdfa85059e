//! Writes what a release ships beside the binary, from the same clap command the binary parses
//! with (`wait_for_idp::command()`, built from the settings table): the shell completions and the
//! man page. `cargo run --example gen-docs -- DIR` writes
//!
//! - `DIR/completions/wait-for-idp.bash`, `DIR/completions/_wait-for-idp` (zsh) and
//!   `DIR/completions/wait-for-idp.fish`;
//! - `DIR/man/wait-for-idp.1`.
//!
//! An example rather than part of the binary: clap_complete and clap_mangen would cost the
//! static binary's size budget for files that are generated once per release.

use clap_complete::Shell;
use std::path::{Path, PathBuf};

fn main() {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: cargo run --example gen-docs -- OUT_DIR");
        std::process::exit(2);
    };
    match write_all(Path::new(&dir)) {
        Ok(files) => files.iter().for_each(|f| println!("{}", f.display())),
        Err(e) => {
            eprintln!("gen-docs: {e}");
            std::process::exit(1);
        }
    }
}

/// Writes the completions and the man page under `dir`; returns the files written.
pub fn write_all(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let completions = dir.join("completions");
    std::fs::create_dir_all(&completions)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = wait_for_idp::command();
        written.push(clap_complete::generate_to(shell, &mut cmd, "wait-for-idp", &completions)?);
    }
    let man = dir.join("man");
    std::fs::create_dir_all(&man)?;
    let page = man.join("wait-for-idp.1");
    let mut out = Vec::new();
    clap_mangen::Man::new(wait_for_idp::command()).render(&mut out)?;
    std::fs::write(&page, out)?;
    written.push(page);
    Ok(written)
}
