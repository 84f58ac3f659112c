//! Deletions: what a command deletes or empties, how (recursively, without
//! asking), and whether that reaches a place the line may not delete in (see
//! [`super::super::places`]).
//!
//! The deleters read: `rm`, `unlink`, `rimraf`, `truncate` to nothing, `shred`,
//! `find … -delete` and `find … -exec rm`, cmd's `rd /s` and `del /s /q` (also
//! as typed into Git Bash or PowerShell), PowerShell's `Remove-Item` (translated
//! to `rm` by the PowerShell reader, or typed into a POSIX shell), and the
//! deleters of interpreter code (Python's `shutil.rmtree` and `os.remove`, Perl's
//! `rmtree` and `unlink`, Node's `fs.rmSync`, Ruby's `FileUtils.rm_rf`), in a
//! one-liner or in a script file the line runs.

use std::path::Path;

use super::super::places::{Place, Reach};
use sandrail_shell as shell;

/// A recursive or forced delete of a place outside the project and the
/// temporary and cache directories.
pub const DELETE_OUTSIDE_PROJECT: &str = "delete-outside-project";
/// Deleting a repository's records (`.git`) or the project itself.
pub const REPOSITORY_DELETE: &str = "repository-delete";
/// Overwriting a file's contents so they cannot be recovered.
pub const FILE_SHRED: &str = "file-shred";

/// What a command deletes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Deletion {
    pub targets: Vec<String>,
    /// Whole trees go.
    pub recursive: bool,
    /// Nothing is asked first (`-f`, `/q`, an interpreter's call).
    pub forced: bool,
    /// The command's words hold substitutions, so an absolute path may have
    /// lost its start (`"$(pwd)/dist"` reads `/dist`).
    pub substituted: bool,
}

/// The deletion a command (its program lower-cased, `.exe` removed) makes.
pub fn of_command(program: &str, argv: &[String], cwd: Option<&Path>) -> Option<Deletion> {
    let args = argv.get(1..).unwrap_or_default();
    match program {
        "rm" | "rd" | "rmdir" | "del" | "erase" | "unlink" => Some(of_rm(program, args)),
        "rimraf" | "del-cli" => Some(Deletion {
            targets: super::operands(args).map(str::to_owned).collect(),
            recursive: true,
            forced: true,
            substituted: false,
        }),
        // Typed into a POSIX shell (Git Bash, or escaped: `R\emove-Item`).
        "remove-item" | "ri" => Some(of_remove_item(args)),
        "truncate" => of_truncate(args),
        // `rsync --delete SRC DEST` deletes what DEST has that SRC lacks;
        // `--remove-source-files` deletes the sources.
        "rsync" => {
            let operands: Vec<&str> = super::operands(args).collect();
            let (sources, destination) = operands.split_last().map(|(d, s)| (s, *d))?;
            let mut targets = Vec::new();
            if args.iter().any(|a| a.starts_with("--del")) {
                targets.push(destination.to_owned());
            }
            if args.iter().any(|a| a == "--remove-source-files") {
                targets.extend(sources.iter().map(|s| (*s).to_owned()));
            }
            (!targets.is_empty()).then_some(Deletion {
                targets,
                recursive: true,
                forced: true,
                substituted: false,
            })
        }
        // `mv .git /tmp/g`: the repository moved away is gone from the project.
        "mv" | "move-item" => {
            let operands: Vec<&str> = super::operands(args).collect();
            let (_, sources) = operands.split_last()?;
            let repositories: Vec<String> = sources
                .iter()
                .filter(|s| {
                    s.trim_end_matches('/')
                        .rsplit('/')
                        .next()
                        .is_some_and(|n| n.eq_ignore_ascii_case(".git"))
                })
                .map(|s| (*s).to_owned())
                .collect();
            (!repositories.is_empty()).then_some(Deletion {
                targets: repositories,
                recursive: true,
                forced: true,
                substituted: false,
            })
        }
        // `npx rimraf DIR`: a package's program, fetched and run.
        "npx" | "pnpx" | "bunx" => {
            let at = args.iter().position(|a| !a.starts_with('-'))?;
            let inner = &args[at..];
            of_command(&shell::program(&inner[0]).to_ascii_lowercase(), inner, cwd)
        }
        "find" => of_find(args),
        "python" | "python2" | "python3" | "perl" | "ruby" | "node" | "nodejs" | "bun" | "deno" => {
            of_interpreter(program, args, cwd)
        }
        // `python3.11`, `pypy3`: a Python all the same.
        versioned if shell::interpreter_family(versioned).is_some() => {
            of_interpreter(shell::interpreter_family(versioned)?, args, cwd)
        }
        _ => None,
    }
}

/// Whether `deletion` reaches somewhere it may not, and why.
pub fn judge(deletion: &Deletion, reach: &Reach, cwd: Option<&Path>) -> Option<&'static str> {
    let mut found = None;
    for target in &deletion.targets {
        let place = match reach.place(target, cwd) {
            Place::Elsewhere if deletion.substituted && target.starts_with('/') => Place::Unknown,
            place => place,
        };
        let reason = match place {
            Place::System if deletion.recursive => Some(super::RECURSIVE_DELETE),
            Place::Repository => Some(REPOSITORY_DELETE),
            place if (deletion.recursive || deletion.forced) && !place.deletable(reach.scope) => {
                Some(DELETE_OUTSIDE_PROJECT)
            }
            _ => None,
        };
        // The gravest reason found names the command.
        match (found, reason) {
            (_, Some(super::RECURSIVE_DELETE)) => return reason,
            (None, Some(_)) => found = reason,
            _ => {}
        }
    }
    found
}

/// cmd's switches (`/s`, `/q`, `/f`, `/a:h`), which PowerShell and Git Bash
/// users type to its deleters too.
fn is_cmd_switch(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('/') else {
        return false;
    };
    let name = rest.split(':').next().unwrap_or_default();
    name.len() == 1 && name.chars().all(|c| c.is_ascii_alphabetic())
}

fn of_rm(program: &str, args: &[String]) -> Deletion {
    // `rm` takes cmd's switches only as PowerShell users type them to `rd`,
    // several together (`rd /s /q X` read as `rm -- /s /q X`); a lone `/a` is a
    // path.
    let cmd_program = matches!(program, "rd" | "rmdir" | "del" | "erase")
        || args
            .iter()
            .filter(|a| is_cmd_switch(a) && a.len() == 2)
            .count()
            >= 2;
    let is_switch = |a: &str| cmd_program && is_cmd_switch(a);
    let has_cmd = |switch: char| {
        args.iter()
            .any(|a| is_switch(a) && a[1..].starts_with([switch, switch.to_ascii_uppercase()]))
    };
    let short = |flag: char| {
        args.iter()
            .take_while(|a| *a != "--")
            .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(flag))
    };
    // GNU takes any unambiguous prefix of a long option (`--recu`, `--forc`).
    let long = |name: &str| {
        args.iter()
            .take_while(|a| *a != "--")
            .any(|a| a.len() >= 3 && name.starts_with(a.as_str()))
    };
    let posix_rmdir = matches!(program, "rmdir" | "rd") && !has_cmd('s');
    let recursive =
        !posix_rmdir && (short('r') || short('R') || long("--recursive") || has_cmd('s'));
    let forced = program == "unlink"
        || short('f')
        || long("--force")
        || has_cmd('q')
        || (matches!(program, "del" | "erase") && has_cmd('f'));
    let targets = super::operands(args)
        .filter(|a| !is_switch(a))
        .map(str::to_owned)
        .collect();
    Deletion {
        // An empty directory's removal loses nothing.
        targets: if posix_rmdir { Vec::new() } else { targets },
        recursive,
        forced,
        substituted: false,
    }
}

/// PowerShell's `Remove-Item`: `-Recurse` (or any prefix, `-r`), `-Force`
/// (`-fo`), and its paths, named (`-Path`, `-LiteralPath`) or not.
fn of_remove_item(args: &[String]) -> Deletion {
    let mut deletion = Deletion::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let Some(parameter) = word.strip_prefix('-').filter(|p| !p.is_empty()) else {
            deletion.targets.extend(word.split(',').map(str::to_owned));
            continue;
        };
        let parameter = parameter
            .split(':')
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if "recurse".starts_with(&parameter) {
            deletion.recursive = true;
        } else if parameter.len() >= 2 && "force".starts_with(&parameter) {
            deletion.forced = true;
        } else if ["path", "literalpath", "lp"]
            .iter()
            .any(|p| p.starts_with(&parameter))
        {
            deletion.targets.extend(words.next().cloned());
        } else if parameter == "whatif" || parameter == "wi" {
            return Deletion::default();
        }
    }
    deletion
}

/// `truncate -s 0 FILE`, `--size=0`, `-s0`: the files are emptied.
fn of_truncate(args: &[String]) -> Option<Deletion> {
    let mut empties = false;
    let mut targets = Vec::new();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let size = match word.as_str() {
            "-s" | "--size" => words.next().map(String::as_str),
            w if w.starts_with("--size=") => w.strip_prefix("--size="),
            w if w.starts_with("-s") && w.len() > 2 => w.strip_prefix("-s"),
            "-r" | "--reference" => {
                words.next();
                continue;
            }
            w if w.starts_with('-') => continue,
            w => {
                targets.push(w.to_owned());
                continue;
            }
        };
        empties |= size.is_some_and(|s| s == "0" || s.starts_with("0") || s.starts_with('<'));
    }
    empties.then_some(Deletion {
        targets,
        recursive: false,
        forced: true,
        substituted: false,
    })
}

/// find's primaries that take values, and how many.
fn find_values(primary: &str) -> usize {
    match primary {
        "-fprintf" => 2,
        "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" | "-regex"
        | "-iregex" | "-type" | "-xtype" | "-user" | "-group" | "-uid" | "-gid" | "-perm"
        | "-size" | "-mtime" | "-mmin" | "-atime" | "-amin" | "-ctime" | "-cmin" | "-newer"
        | "-anewer" | "-cnewer" | "-maxdepth" | "-mindepth" | "-links" | "-inum" | "-samefile"
        | "-printf" | "-fprint" | "-fprint0" | "-fls" | "-context" | "-fstype" | "-used"
        | "-lname" | "-ilname" | "-regextype" | "-newermt" | "-files0-from" => 1,
        _ => 0,
    }
}

/// Whether `find ARGS` deletes what it finds (its primaries' values read as
/// values: `-fprintf out -delete` prints the word `-delete`).
pub fn find_deletes(args: &[String]) -> bool {
    of_find(args).is_some()
}

/// `find START… EXPRESSION` that deletes what it finds (`-delete`, `-exec rm`):
/// a recursive deletion of its starting points, or of the repositories it
/// finds by name (`-name .git`).
fn of_find(args: &[String]) -> Option<Deletion> {
    let starts: Vec<&str> = args
        .iter()
        .take_while(|a| !a.starts_with('-') && !matches!(a.as_str(), "(" | "!" | ","))
        .map(String::as_str)
        .collect();
    let mut deletes = false;
    let mut finds_repositories = false;
    let mut i = starts.len();
    while let Some(word) = args.get(i) {
        match word.as_str() {
            "-delete" => deletes = true,
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                if args.get(i + 1).is_some_and(|p| {
                    matches!(shell::program(p), "rm" | "shred" | "rimraf" | "unlink")
                }) {
                    deletes = true;
                }
                // Past the command, to its `;` or `+`.
                while let Some(w) = args.get(i + 1) {
                    i += 1;
                    if w == ";" || w == "+" || w == "\\;" {
                        break;
                    }
                }
            }
            primary => {
                if matches!(
                    primary,
                    "-name" | "-iname" | "-path" | "-ipath" | "-wholename"
                ) && args.get(i + 1).is_some_and(|pattern| {
                    let pattern = pattern.trim_matches(['"', '\'']);
                    pattern == ".git" || pattern.ends_with("/.git") || pattern == "*.git"
                }) {
                    finds_repositories = true;
                }
                i += find_values(primary);
            }
        }
        i += 1;
    }
    if !deletes {
        return None;
    }
    let starts: Vec<String> = if starts.is_empty() {
        vec![".".to_owned()]
    } else {
        starts.iter().map(|s| (*s).to_owned()).collect()
    };
    let mut targets: Vec<String> = Vec::new();
    for start in &starts {
        if finds_repositories {
            targets.push(format!("{}/.git", start.trim_end_matches('/')));
        }
        // What it deletes lies under where it starts; the start itself too.
        targets.push(format!("{}/*", start.trim_end_matches('/')));
    }
    Some(Deletion {
        targets,
        recursive: true,
        forced: true,
        substituted: false,
    })
}

/// The largest script file of an interpreter's that is read for its deleters.
const MAX_SCRIPT_BYTES: u64 = 256 << 10;

/// The deletions an interpreter's code makes: a one-liner (`-c`, `-e`) or the
/// script file it runs.
fn of_interpreter(program: &str, args: &[String], cwd: Option<&Path>) -> Option<Deletion> {
    let language = match program {
        "python" | "python2" | "python3" => Language::Python,
        "perl" => Language::Perl,
        "ruby" => Language::Ruby,
        _ => Language::JavaScript,
    };
    let code = match shell::interpreter_code(program, args) {
        Some(code) => code,
        None => {
            // `python3 cleanup.py`: the script it runs, when it can be read.
            let script = args.iter().find(|a| !a.starts_with('-'))?;
            let path = match cwd {
                Some(cwd) => cwd.join(script),
                None => Path::new(script).to_path_buf(),
            };
            let bytes = sandrail_files::read_regular(&path, MAX_SCRIPT_BYTES).ok()?;
            String::from_utf8_lossy(&bytes).into_owned()
        }
    };
    let deletion = deleters_in(language, &code);
    (!deletion.targets.is_empty()).then_some(deletion)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Language {
    Python,
    Perl,
    Ruby,
    JavaScript,
}

/// The standard deleters of each language: the call up to its first argument,
/// and whether it deletes whole trees.
const DELETERS: &[(Language, &str, bool)] = &[
    (Language::Python, r"\b(?:shutil\.)?rmtree\s*\(", true),
    (
        Language::Python,
        r"\bos\.(?:remove|unlink|removedirs)\s*\(",
        false,
    ),
    (Language::Python, r"\.unlink\s*\(", false),
    (
        Language::Perl,
        r"\b(?:File::Path::)?(?:rmtree|remove_tree)\b\s*\(?",
        true,
    ),
    (Language::Perl, r"\bunlink\b\s*\(?", false),
    (
        Language::Ruby,
        r"\bFileUtils\.(?:rm_rf|rm_r|remove_dir|remove_entry(?:_secure)?|rmtree)\b\s*\(?",
        true,
    ),
    (
        Language::Ruby,
        r"\b(?:FileUtils\.(?:rm|rm_f|remove_file)|File\.(?:delete|unlink))\b\s*\(?",
        false,
    ),
    (
        Language::JavaScript,
        r"\b(?:rimraf(?:\.sync)?|(?:fs|fse|fsExtra)\.(?:remove|removeSync|emptyDir|emptyDirSync))\s*\(",
        true,
    ),
    (
        Language::JavaScript,
        r"\b(?:fs\.(?:promises\.)?)?(?:rmSync|rmdirSync|rm|rmdir)\s*\(",
        true,
    ),
    (
        Language::JavaScript,
        r"\b(?:fs\.(?:promises\.)?)?unlink(?:Sync)?\s*\(",
        false,
    ),
];

/// The paths interpreter code deletes through its standard deleters, as
/// literals (or the home directory, as `Path.home()` and `$ENV{HOME}` name it).
fn deleters_in(language: Language, code: &str) -> Deletion {
    static COMPILED: std::sync::OnceLock<Vec<(Language, regex::Regex, bool)>> =
        std::sync::OnceLock::new();
    let compiled = COMPILED.get_or_init(|| {
        DELETERS
            .iter()
            .filter_map(|(language, pattern, recursive)| {
                Some((*language, regex::Regex::new(pattern).ok()?, *recursive))
            })
            .collect()
    });
    let mut deletion = Deletion {
        forced: true,
        ..Deletion::default()
    };
    // `Path('/x').unlink()`: the path is the receiver's.
    if language == Language::Python {
        static RECEIVER: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
        if let Some(receiver) = RECEIVER.get_or_init(|| {
            regex::Regex::new(
                r#"\bPath\s*\(\s*(?:r?)(['"])([^'"]+)['"]\s*\)\s*\.\s*(unlink|rmdir)\s*\("#,
            )
            .ok()
        }) {
            for found in receiver.captures_iter(code) {
                if let Some(path) = found.get(2) {
                    deletion.targets.push(path.as_str().to_owned());
                }
            }
        }
    }
    for (_, pattern, recursive) in compiled.iter().filter(|(l, _, _)| *l == language) {
        for found in pattern.find_iter(code) {
            // The call's first argument, up to its `,` or closing `)`.
            if let Some(path) = literal_path(first_argument(&code[found.end()..])) {
                deletion.recursive |= *recursive;
                deletion.targets.push(path);
            }
        }
    }
    deletion
}

/// The text of a call's first argument.
fn first_argument(rest: &str) -> &str {
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    for (at, c) in rest.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') if depth == 0 => return &rest[..at],
            (None, ')' | ']' | '}') => depth -= 1,
            (None, ',' | ';' | '\n') if depth == 0 => return &rest[..at],
            _ => {}
        }
        if at > 512 {
            return &rest[..at];
        }
    }
    rest
}

/// The path an argument names: its first string literal, the home directory
/// where the code asks for it (`Path.home()`, `os.path.expanduser("~")`,
/// `$ENV{HOME}`, `os.homedir()`) with what is joined to it, or None for a
/// value the code computes.
fn literal_path(argument: &str) -> Option<String> {
    let literal = argument.find(['\'', '"', '`']).and_then(|start| {
        let quote = argument[start..].chars().next()?;
        let inner = &argument[start + 1..];
        inner.find(quote).map(|end| inner[..end].to_owned())
    });
    let names_home = [
        "home()",
        "homedir()",
        "ENV{HOME}",
        "ENV['HOME']",
        "ENV[\"HOME\"]",
        "environ['HOME']",
        "environ[\"HOME\"]",
        "getenv(\"HOME\")",
        "getenv('HOME')",
        "Dir.home",
    ]
    .iter()
    .any(|h| argument.contains(h));
    match (names_home, literal) {
        (true, Some(rest)) => Some(format!("~/{}", rest.trim_start_matches('/'))),
        (true, None) => Some("~".to_owned()),
        (false, literal) => literal.filter(|l| !l.is_empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn deleters_are_read() {
        let rm = of_command("rm", &words("rm -R -f /a b"), None).expect("rm");
        assert_eq!(rm.targets, ["/a", "b"]);
        assert!(rm.recursive && rm.forced);
        let rd = of_command("rd", &words("rd /s /q C:\\Windows"), None).expect("rd");
        assert_eq!(rd.targets, ["C:\\Windows"]);
        assert!(rd.recursive && rd.forced);
        let rmdir = of_command("rmdir", &words("rmdir empty"), None).expect("rmdir");
        assert!(rmdir.targets.is_empty());
        let t = of_command("truncate", &words("truncate -s 0 /var/log/x"), None).expect("t");
        assert_eq!(t.targets, ["/var/log/x"]);
        assert!(of_command("truncate", &words("truncate -s 10M disk.img"), None).is_none());
        let f =
            of_command("find", &words("find . -name .git -exec rm -rf {} +"), None).expect("find");
        assert_eq!(f.targets, ["./.git", "./*"]);
        assert!(of_command("find", &words("find . -fprintf out -delete"), None).is_none());
    }

    #[test]
    fn interpreter_deleters_are_read() {
        let cases = [
            (
                Language::Python,
                "import shutil; shutil.rmtree('/home/dev')",
                Some("/home/dev"),
            ),
            (
                Language::Python,
                "from pathlib import Path; import shutil; shutil.rmtree(Path.home())",
                Some("~"),
            ),
            (
                Language::Python,
                "import os; os.remove(\"/etc/hosts\")",
                Some("/etc/hosts"),
            ),
            (Language::Perl, "use File::Path; rmtree(\"/\")", Some("/")),
            (Language::Perl, "unlink '/etc/passwd'", Some("/etc/passwd")),
            (
                Language::JavaScript,
                "require('fs').rmSync('/srv', {recursive: true})",
                Some("/srv"),
            ),
            (
                Language::Ruby,
                "require 'fileutils'; FileUtils.rm_rf('/opt')",
                Some("/opt"),
            ),
            (Language::Python, "print('rmtree is a function')", None),
            (Language::Python, "shutil.rmtree(build_dir)", None),
        ];
        for (language, code, want) in cases {
            let found = deleters_in(language, code);
            assert_eq!(found.targets.first().map(String::as_str), want, "{code}");
        }
    }
}
