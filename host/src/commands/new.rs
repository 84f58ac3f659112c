//! `sandrail new`: writes a guardrail project that builds as it is — the source,
//! a cases file that passes under `sandrail test`, and a README with the build
//! and test commands.
//!
//! A Rust project takes the SDK by path when the sandrail checkout this binary was
//! built from is still there (relative when the project lies inside it), else from
//! the repository by git.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};

/// The kind of guardrail to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// Judges events and may refuse them.
    Gate,
    /// Records a mode of the session for Stop gates to read.
    Context,
}

/// The language to write it in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

/// The repository the SDK comes from when no checkout is at hand.
const SDK_GIT: &str = "https://github.com/sandrail/sandrail";

/// One file of a template: where it goes, and its text with `{{…}}` to fill.
type TemplateFile = (&'static str, &'static str);

const RUST_GATE: &[TemplateFile] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/rust/src/lib.rs"),
    ),
    (
        "cases.toml",
        include_str!("../../templates/rust/cases.toml"),
    ),
    ("README.md", include_str!("../../templates/rust/README.md")),
    (".gitignore", "/target\n"),
];

const RUST_CONTEXT: &[TemplateFile] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/rust-context/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/rust-context/src/lib.rs"),
    ),
    (
        "cases.toml",
        include_str!("../../templates/rust-context/cases.toml"),
    ),
    (
        "README.md",
        include_str!("../../templates/rust-context/README.md"),
    ),
    (".gitignore", "/target\n"),
];

pub fn run(name: &str, kind: Kind, path: Option<PathBuf>, lang: Lang) -> anyhow::Result<ExitCode> {
    check_name(name)?;
    let dir = path.unwrap_or_else(|| PathBuf::from(name));
    if dir.exists()
        && std::fs::read_dir(&dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!(
            "{} already exists and is not empty; give another NAME or --path",
            dir.display()
        );
    }
    let template = match (lang, kind) {
        (Lang::Rust, Kind::Gate) => RUST_GATE,
        (Lang::Rust, Kind::Context) => RUST_CONTEXT,
        (Lang::Python | Lang::Js, Kind::Context) => bail!(
            "a context in Python or JavaScript is not scaffolded yet: use --lang rust for a context"
        ),
        (Lang::Python, Kind::Gate) => PYTHON_GATE,
        (Lang::Js, Kind::Gate) => JS_GATE,
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let sdk = if lang == Lang::Rust {
        sdk_dependency(&dir)
    } else {
        String::new()
    };
    // Inside a checkout the build reads its wit/; elsewhere a copy beside the
    // project (this binary carries the contract it serves).
    let wit = match (lang, relative_to_checkout(&dir, "wit")) {
        (Lang::Rust, _) => None,
        (_, Some(inside)) => Some((inside, false)),
        (_, None) => Some(("wit".to_owned(), true)),
    };
    let fill = |text: &str| {
        text.replace("{{name}}", name)
            .replace("{{crate}}", &name.replace('-', "_"))
            .replace("{{sdk}}", &sdk)
            .replace("{{wit}}", wit.as_ref().map_or("", |(path, _)| path))
            .replace("{{contract}}", contract_version())
    };
    for (file, text) in template {
        let to = dir.join(file);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&to, fill(text)).with_context(|| format!("writing {}", to.display()))?;
    }
    let wit_copy = wit.as_ref().is_some_and(|(_, copy)| *copy);
    if wit_copy {
        let to = dir.join("wit");
        std::fs::create_dir_all(&to)?;
        std::fs::write(to.join("guardrail.wit"), sandrail::runtime::CONTRACT_WIT)?;
    }
    println!("wrote {} ({} {:?}):", dir.display(), lang_name(lang), kind);
    for (file, _) in template {
        println!("  {file}");
    }
    if wit_copy {
        println!("  wit/guardrail.wit");
    }
    println!("\nnext:");
    println!("  cd {}", dir.display());
    for step in next_steps(lang, wit.as_ref().map_or("", |(path, _)| path)) {
        println!("  {step}");
    }
    Ok(ExitCode::SUCCESS)
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust",
        Lang::Python => "Python",
        Lang::Js => "JavaScript",
    }
}

fn next_steps(lang: Lang, wit: &str) -> Vec<String> {
    match lang {
        Lang::Rust => vec![
            "cargo test                                     # native unit tests".into(),
            "cargo build --release --target wasm32-wasip2   # the component".into(),
            "sandrail test                                  # cases.toml in the real sandbox"
                .into(),
        ],
        Lang::Python => vec![
            "pip install componentize-py==0.25.1 pytest".into(),
            "pytest                                         # logic.py, natively".into(),
            format!("componentize-py -d {wit} -w guardrail componentize app -o guardrail.wasm"),
            "sandrail test                                  # cases.toml in the real sandbox"
                .into(),
        ],
        Lang::Js => vec![
            "npm install".into(),
            "npm run build                                  # guardrail.wasm".into(),
            "sandrail test".into(),
        ],
    }
}

/// A name cargo, npm and sandrail.toml all take: lower-case letters, digits and
/// dashes, starting with a letter.
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-');
    if !ok {
        bail!(
            "`{name}` cannot name a guardrail: use lower-case letters, digits and dashes, starting with a letter (e.g. no-aws-keys)"
        );
    }
    Ok(())
}

/// The checkout this binary was built from, when it is still there.
fn checkout() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    root.join("guest-sdk/Cargo.toml")
        .is_file()
        .then(|| root.to_path_buf())
}

/// `item` of the checkout as a path relative to `dir`, when `dir` lies inside
/// the checkout this binary was built from.
fn relative_to_checkout(dir: &Path, item: &str) -> Option<String> {
    let root = checkout()?;
    let dir = std::path::absolute(dir).ok()?;
    let inside = dir.strip_prefix(&root).ok()?;
    let mut rel = PathBuf::new();
    for _ in inside.components() {
        rel.push("..");
    }
    Some(rel.join(item).display().to_string())
}

/// The `sandrail-guest` dependency line for a project in `dir`: relative inside
/// the checkout (so the checkout can move), absolute to it from elsewhere, and
/// from the repository by git when there is no checkout.
fn sdk_dependency(dir: &Path) -> String {
    let path = match (relative_to_checkout(dir, "guest-sdk"), checkout()) {
        (Some(inside), _) => inside,
        (None, Some(root)) => root.join("guest-sdk").display().to_string(),
        (None, None) => return format!("sandrail-guest = {{ git = \"{SDK_GIT}\" }}"),
    };
    format!("sandrail-guest = {{ path = {path:?} }}")
}

/// The contract's version, from its package line (`package sandrail:guardrail@0.1.4;`).
fn contract_version() -> &'static str {
    sandrail::runtime::CONTRACT_WIT
        .lines()
        .find_map(|l| l.strip_prefix("package sandrail:guardrail@"))
        .and_then(|rest| rest.strip_suffix(';'))
        .unwrap_or("0.1.0")
}

const PYTHON_GATE: &[TemplateFile] = &[
    ("logic.py", include_str!("../../templates/python/logic.py")),
    (
        "test_logic.py",
        include_str!("../../templates/python/test_logic.py"),
    ),
    ("app.py", include_str!("../../templates/python/app.py")),
    (
        "cases.toml",
        include_str!("../../templates/python/cases.toml"),
    ),
    (
        "README.md",
        include_str!("../../templates/python/README.md"),
    ),
    (
        ".gitignore",
        "/guardrail.wasm\n__pycache__/\n.pytest_cache/\n",
    ),
];

const JS_GATE: &[TemplateFile] = &[
    ("app.js", include_str!("../../templates/js/app.js")),
    (
        "package.json",
        include_str!("../../templates/js/package.json"),
    ),
    ("cases.toml", include_str!("../../templates/js/cases.toml")),
    ("README.md", include_str!("../../templates/js/README.md")),
    (".gitignore", "/guardrail.wasm\n/node_modules/\n"),
];
