//! Which language servers there are: `[lsp_servers.NAME]` (`command`, `args`, `file_patterns`,
//! `root_markers`) laid over ready-made entries for the servers found on `PATH`, and where in
//! the workspace each file's server runs (its root).

use std::path::{Path, PathBuf};

/// One language server: how to start it, the files it is for, and what marks a project's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Globs of file names (`*.py`) or of paths relative to the workspace root (`src/**/*.ts`).
    pub file_patterns: Vec<String>,
    /// Files whose directory is a project's root (`pyproject.toml`, `go.mod`): the nearest one
    /// above a file, inside the workspace, is where its server runs; else the workspace root.
    pub root_markers: Vec<String>,
}

/// A ready-made entry: name, command, args, file patterns, root markers.
type ReadyMade =
    (&'static str, &'static str, &'static [&'static str], &'static [&'static str], &'static [&'static str]);

/// The servers reins knows how to run.
const READY_MADE: [ReadyMade; 5] = [
    (
        "pyright",
        "pyright-langserver",
        &["--stdio"],
        &["*.py", "*.pyi"],
        &["pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg", "requirements.txt"],
    ),
    (
        "typescript-language-server",
        "typescript-language-server",
        &["--stdio"],
        &["*.ts", "*.tsx", "*.js", "*.jsx", "*.mjs", "*.cjs", "*.mts", "*.cts"],
        &["tsconfig.json", "jsconfig.json", "package.json"],
    ),
    ("gopls", "gopls", &[], &["*.go"], &["go.work", "go.mod"]),
    (
        "clangd",
        "clangd",
        &[],
        &["*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hh", "*.hpp", "*.hxx"],
        &["compile_commands.json", "compile_flags.txt", ".clangd"],
    ),
    ("rust-analyzer", "rust-analyzer", &[], &["*.rs"], &["Cargo.toml"]),
];

/// The ready-made entries whose command `on_path` finds.
pub fn ready_made(on_path: impl Fn(&str) -> bool) -> Vec<ServerConfig> {
    READY_MADE
        .iter()
        .filter(|(_, command, ..)| on_path(command))
        .map(|(name, command, args, patterns, markers)| ServerConfig {
            name: name.to_string(),
            command: command.to_string(),
            args: args.iter().map(|arg| arg.to_string()).collect(),
            file_patterns: patterns.iter().map(|pattern| pattern.to_string()).collect(),
            root_markers: markers.iter().map(|marker| marker.to_string()).collect(),
        })
        .collect()
}

/// Whether `command` is an executable file on the `PATH` given. rustup puts a proxy named
/// `rust-analyzer` on `PATH` whether or not the component is installed: such a proxy counts only
/// when a toolchain under `rustup_home` has the command.
pub fn on_path(path_var: Option<&std::ffi::OsStr>, rustup_home: &Path, command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Some(path_var) = path_var else { return false };
    let executable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    std::env::split_paths(path_var).map(|dir| dir.join(command)).filter(|path| executable(path)).any(|path| {
        let real = std::fs::canonicalize(&path).unwrap_or(path);
        if real.file_name().is_none_or(|name| name != "rustup") {
            return true;
        }
        let toolchains = std::fs::read_dir(rustup_home.join("toolchains")).into_iter().flatten().flatten();
        toolchains.into_iter().any(|toolchain| executable(&toolchain.path().join("bin").join(command)))
    })
}

/// The language id `textDocument/didOpen` names for `path`, by its extension.
pub fn language_id(path: &Path) -> &'static str {
    match path.extension().and_then(|ext| ext.to_str()).unwrap_or("") {
        "py" | "pyi" => "python",
        "ts" | "mts" | "cts" => "typescript",
        "tsx" => "typescriptreact",
        "js" | "mjs" | "cjs" => "javascript",
        "jsx" => "javascriptreact",
        "go" => "go",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hh" | "hpp" | "hxx" => "cpp",
        "rs" => "rust",
        _ => "plaintext",
    }
}

/// The root `file`'s server runs in: the nearest directory from the file's up to `workspace`
/// holding one of `markers`, else `workspace`.
pub fn root_of(file: &Path, workspace: &Path, markers: &[String]) -> PathBuf {
    let mut dir = file.parent();
    while let Some(current) = dir {
        if !current.starts_with(workspace) {
            break;
        }
        if markers.iter().any(|marker| current.join(marker).exists()) {
            return current.to_path_buf();
        }
        if current == workspace {
            break;
        }
        dir = current.parent();
    }
    workspace.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_made_entries_are_those_on_path() {
        let found = ready_made(|command| command == "clangd" || command == "pyright-langserver");
        let names: Vec<&str> = found.iter().map(|server| server.name.as_str()).collect();
        assert_eq!(names, ["pyright", "clangd"]);
        assert_eq!(found[0].args, ["--stdio"]);
    }

    #[test]
    fn a_rustup_proxy_counts_only_with_its_component() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        let rustup_home = dir.path().join("rustup");
        std::fs::create_dir_all(&bin).unwrap();
        let rustup = bin.join("rustup");
        std::fs::write(&rustup, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&rustup, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("rustup", bin.join("rust-analyzer")).unwrap();
        let path = bin.clone().into_os_string();
        assert!(!on_path(Some(&path), &rustup_home, "rust-analyzer"));
        assert!(!on_path(Some(&path), &rustup_home, "clangd"));
        let toolchain = rustup_home.join("toolchains/stable/bin");
        std::fs::create_dir_all(&toolchain).unwrap();
        std::fs::copy(&rustup, toolchain.join("rust-analyzer")).unwrap();
        assert!(on_path(Some(&path), &rustup_home, "rust-analyzer"));
    }

    #[test]
    fn a_file_runs_in_its_nearest_marked_directory_inside_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("w");
        std::fs::create_dir_all(workspace.join("app/src")).unwrap();
        std::fs::write(workspace.join("app/pyproject.toml"), "").unwrap();
        std::fs::write(dir.path().join("pyproject.toml"), "").unwrap();
        let markers = ["pyproject.toml".to_string()];
        assert_eq!(root_of(&workspace.join("app/src/a.py"), &workspace, &markers), workspace.join("app"));
        assert_eq!(root_of(&workspace.join("b.py"), &workspace, &markers), workspace, "never above the workspace");
    }
}
