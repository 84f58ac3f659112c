//! Where a path a command deletes lies — the project, a temporary or cache
//! directory, the repository's own records, the home directory, a system
//! directory, or elsewhere — and which of those a deletion may reach.
//!
//! Users of hook guards expect a recursive or forced delete inside the project
//! and the temporary directories to pass (build outputs, caches) and one
//! anywhere else to be refused. The repository (`.git`), the home directory's
//! dot-directories (keys, credentials, every tool's settings) and the system
//! are never in reach; `[facts] deletion_scope` widens the rest (`home`:
//! anywhere under the home directory; `system`: everything but those).
//!
//! Paths are resolved lexically (`~`, `$HOME`, `..`, the directory the line
//! `cd`'d to), never on the disk: a hook must not follow links the agent made,
//! and the rule must read the same whether or not the path exists yet.

use std::path::Path;

use serde::Deserialize;

/// How far a recursive or forced delete may reach besides the project and the
/// temporary and cache directories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeletionScope {
    /// The project and the temporary and cache directories only (the default).
    #[default]
    Project,
    /// Also anywhere under the home directory but its dot-directories.
    Home,
    /// Anywhere but the system, the home directory itself, its dot-directories
    /// and repositories.
    System,
}

/// Where a deleted path lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Inside the project (not the project itself).
    Project,
    /// Under a temporary directory.
    Temp,
    /// Under a cache directory of the user's (`~/.cache`, `~/Library/Caches`, …).
    Cache,
    /// A repository's records: `.git`, its objects, refs or logs, or the project
    /// directory itself.
    Repository,
    /// The root, the home directory itself, or a system directory or anything
    /// under one.
    System,
    /// A dot-directory of the home directory (`~/.ssh`, `~/.aws`, `~/.config`),
    /// or anything under one.
    HomeDot,
    /// Under the home directory, outside the project.
    Home,
    /// Anywhere else outside the project.
    Elsewhere,
    /// Not known before the line runs (a variable the line does not set).
    Unknown,
}

impl Place {
    /// Whether a recursive or forced delete may reach this place under `scope`.
    pub fn deletable(self, scope: DeletionScope) -> bool {
        match self {
            Place::Project | Place::Temp | Place::Cache | Place::Unknown => true,
            Place::Repository | Place::System | Place::HomeDot => false,
            Place::Home => scope != DeletionScope::Project,
            Place::Elsewhere => scope == DeletionScope::System,
        }
    }
}

/// What a line's paths are judged against: the project, the home directory and
/// the scope the config sets.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    /// The project's directory, absolute, without a trailing slash.
    pub project: Option<String>,
    /// Other spellings of the project's directory: a symbolic link to it that
    /// the harness named (`cwd`, `CLAUDE_PROJECT_DIR`).
    pub project_aliases: Vec<String>,
    /// The home directory of the user the hook runs as.
    pub home: Option<String>,
    pub scope: DeletionScope,
}

impl Reach {
    pub fn new(project: Option<&Path>, scope: DeletionScope) -> Reach {
        Reach {
            project: project
                .and_then(Path::to_str)
                .map(|p| p.trim_end_matches('/').to_owned())
                .filter(|p| !p.is_empty()),
            home: std::env::var("HOME")
                .ok()
                .filter(|h| h.starts_with('/') && h.len() > 1)
                .map(|h| h.trim_end_matches('/').to_owned()),
            scope,
            project_aliases: Vec::new(),
        }
    }

    /// The same reach, with `alias` known as another spelling of the project
    /// when it leads there.
    pub fn with_alias(mut self, alias: Option<&Path>) -> Reach {
        if let (Some(alias), Some(project)) = (alias, &self.project)
            && let Some(text) = alias.to_str().map(|a| a.trim_end_matches('/'))
            && text != project
            && std::fs::canonicalize(alias).is_ok_and(|real| real == Path::new(project))
        {
            self.project_aliases.push(text.to_owned());
        }
        self
    }

    /// Where `word` (a path operand as the shell passes it, resolved from `cwd`)
    /// lies.
    pub fn place(&self, word: &str, cwd: Option<&Path>) -> Place {
        let word = word.trim().trim_matches('"').trim_matches('\'');
        if word.is_empty() {
            return Place::Unknown;
        }
        if let Some(windows) = windows_path(word) {
            return self.windows_place(&windows);
        }
        // PowerShell's separators (`..\other`, `$HOME\AppData`).
        let slashed;
        let word = if word.contains('\\') {
            slashed = word.replace('\\', "/");
            slashed.as_str()
        } else {
            word
        };
        let Some(path) = self.absolute(word, cwd) else {
            return Place::Unknown;
        };
        self.place_of_absolute(&path)
    }

    /// `word` made absolute and normalised, with a glob's components cut off at
    /// the first that has a wildcard (`/usr/*/share` is under `/usr`), or None
    /// when a variable the line does not set decides it.
    fn absolute(&self, word: &str, cwd: Option<&Path>) -> Option<String> {
        let word = expand_known_variables(word, self.home.as_deref())?;
        let joined = if word == "~" || word.starts_with("~/") {
            format!("{}{}", self.home.as_deref()?, &word[1..])
        } else if let Some(rest) = word.strip_prefix("~root") {
            format!("/root{rest}")
        } else if let Some(user) = word.strip_prefix('~') {
            // Another user's home.
            format!("/home/{user}")
        } else if word.starts_with('/') {
            word
        } else {
            // After `cd` somewhere not known, a relative path is not known.
            let cwd = cwd.and_then(Path::to_str)?;
            format!("{}/{word}", cwd.trim_end_matches('/'))
        };
        let mut parts: Vec<&str> = Vec::new();
        for part in joined.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    parts.pop();
                }
                // `.g?t`, `.[g]it`: a pattern that names the repository's
                // records is them.
                glob if glob.contains(['*', '?', '['])
                    && globset::Glob::new(glob).is_ok_and(|g| {
                        // A pattern aimed at it, not one matching any name.
                        let g = g.compile_matcher();
                        g.is_match(".git") && !g.is_match("a") && !g.is_match(".a")
                    }) =>
                {
                    parts.push(".git");
                }
                glob if glob.contains(['*', '?', '[']) => {
                    // The directory the glob lists; `name*` in a directory is
                    // still under it, so the directory itself is not the target.
                    let parent = format!("/{}", parts.join("/"));
                    return Some(if parts.is_empty() {
                        "/*".to_owned()
                    } else {
                        format!("{parent}/*")
                    });
                }
                other => parts.push(other),
            }
        }
        Some(format!("/{}", parts.join("/")))
    }

    fn place_of_absolute(&self, path: &str) -> Place {
        // `/x/*` (a glob's listing) is everything under `/x`: judged as `/x`'s
        // contents, which for the root or the home directory is the whole of it.
        let (path, listing) = match path.strip_suffix("/*") {
            Some(dir) => (if dir.is_empty() { "/" } else { dir }, true),
            None => (path, false),
        };
        if is_repository_record(path) {
            return Place::Repository;
        }
        let aliased;
        let path = match self.project_aliases.iter().find_map(|alias| {
            path.strip_prefix(alias.as_str())
                .filter(|r| r.is_empty() || r.starts_with('/'))
        }) {
            Some(rest) => {
                aliased = format!("{}{rest}", self.project.as_deref().unwrap_or_default());
                aliased.as_str()
            }
            None => path,
        };
        if let Some(project) = &self.project {
            if path == project {
                return if listing {
                    Place::Project
                } else {
                    Place::Repository
                };
            }
            if under(path, project) {
                return Place::Project;
            }
        }
        if let Some(home) = &self.home {
            if path == home {
                return Place::System;
            }
            if let Some(rest) = path
                .strip_prefix(home.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                return home_place(rest);
            }
        }
        if TEMP_ROOTS
            .iter()
            .any(|temp| under(path, temp) || (listing && path == *temp))
        {
            return Place::Temp;
        }
        // `/home/alice`, `/Users/alice`: another user's home, whole.
        if let Some(rest) = path
            .strip_prefix("/home/")
            .or_else(|| path.strip_prefix("/Users/"))
        {
            return match rest.split_once('/') {
                None => Place::System,
                Some((_, inner)) => match home_place(inner) {
                    Place::Cache => Place::Cache,
                    Place::HomeDot => Place::HomeDot,
                    _ => Place::Elsewhere,
                },
            };
        }
        if path == "/" || SYSTEM_ROOTS.iter().any(|s| path == *s || under(path, s)) {
            return Place::System;
        }
        Place::Elsewhere
    }

    /// A Windows path (`c:/windows`, lower-cased, forward slashes).
    fn windows_place(&self, path: &str) -> Place {
        let trimmed = path.trim_end_matches(['/', '*']).trim_end_matches('/');
        let Some((drive, rest)) = trimmed.split_once(':') else {
            return Place::Elsewhere;
        };
        let rest = rest.trim_start_matches('/');
        if rest.is_empty() {
            // A drive's root.
            return if drive.len() == 1 {
                Place::System
            } else {
                Place::Elsewhere
            };
        }
        let mut parts = rest.split('/');
        let top = parts.next().unwrap_or_default();
        if WINDOWS_SYSTEM
            .iter()
            .any(|s| top == *s || top.starts_with("program files"))
        {
            return Place::System;
        }
        if top == "users" {
            return match (parts.next(), parts.next()) {
                (None, _) | (Some(_), None) => Place::System,
                (Some(_), Some(inner)) => {
                    let rest: Vec<&str> = parts.collect();
                    let under = |path: &[&str]| rest.len() > path.len() && rest.starts_with(path);
                    match inner {
                        "appdata" if under(&["local", "temp"]) => Place::Temp,
                        "appdata"
                            if under(&["local", "npm-cache"])
                                || under(&["roaming", "npm-cache"])
                                || under(&["local", "yarn", "cache"])
                                || under(&["local", "pip", "cache"]) =>
                        {
                            Place::Cache
                        }
                        ".nuget" if under(&["packages"]) => Place::Cache,
                        "appdata" => Place::HomeDot,
                        dot if dot.starts_with('.') => Place::HomeDot,
                        _ => Place::Elsewhere,
                    }
                }
            };
        }
        if matches!(top, "temp" | "tmp") {
            return Place::Temp;
        }
        Place::Elsewhere
    }
}

/// Whether `path` is strictly under `dir`.
fn under(path: &str, dir: &str) -> bool {
    dir == "/"
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/') && rest.len() > 1)
}

/// A path inside the home directory (`rest` is what follows `~/`).
fn home_place(rest: &str) -> Place {
    let top = rest.split('/').next().unwrap_or_default();
    if HOME_CACHES.iter().any(|cache| {
        rest == *cache
            || rest
                .strip_prefix(cache)
                .is_some_and(|inner| inner.starts_with('/'))
    }) {
        return Place::Cache;
    }
    if top.starts_with('.') {
        return Place::HomeDot;
    }
    if top == "Library" {
        return Place::HomeDot;
    }
    Place::Home
}

/// A repository's own records: losing one loses its history or its refs.
/// (`.git/index.lock`, `.git/rebase-merge` and the like are a stuck operation's
/// leftovers, which are deleted to recover.)
fn is_repository_record(path: &str) -> bool {
    let mut parts = path.split('/');
    while let Some(part) = parts.next() {
        // `.GIT` is `.git` where names are compared without case (macOS,
        // Windows).
        if part.eq_ignore_ascii_case(".git") {
            return match parts.next() {
                None => true,
                Some(inner) => matches!(
                    inner,
                    "objects" | "refs" | "logs" | "HEAD" | "packed-refs" | "config" | "*"
                ),
            };
        }
    }
    false
}

/// `$HOME`, `$TMPDIR` and their kin replaced by what they are; None when a
/// variable the analysis does not know decides the path (`$BUILD_DIR/x`).
fn expand_known_variables(word: &str, home: Option<&str>) -> Option<String> {
    if !word.contains('$') {
        return Some(word.to_owned());
    }
    let temp = "/tmp";
    for (names, value) in [
        (&["HOME"][..], home),
        (&["TMPDIR", "TMP", "TEMP", "RUNNER_TEMP"][..], Some(temp)),
    ] {
        for name in names {
            for spelling in [format!("${{{name}}}"), format!("${name}")] {
                if let Some(rest) = word.strip_prefix(spelling.as_str())
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    let value = value?;
                    // `$TMPDIR` alone is the temporary directory's root; under it
                    // is temporary.
                    return Some(if rest.is_empty() && value == temp {
                        "/tmp/*".to_owned()
                    } else {
                        format!("{value}{rest}")
                    });
                }
            }
        }
    }
    None
}

/// A Windows path, lower-cased with forward slashes: `C:\Windows`, `C:/x`,
/// `C:Windows` (bash removed the backslash), Git Bash's `/c/…`, WSL's
/// `/mnt/c/…`, or one of the environment's names for a place (`$env:windir`,
/// `%USERPROFILE%`).
fn windows_path(word: &str) -> Option<String> {
    let lowered = word.to_ascii_lowercase().replace('\\', "/");
    let bytes = lowered.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        let rest = &lowered[2..];
        return Some(if rest.starts_with('/') || rest.is_empty() {
            lowered
        } else {
            format!("{}:/{rest}", &lowered[..1])
        });
    }
    for prefix in ["/mnt/", "/"] {
        if let Some(rest) = lowered.strip_prefix(prefix) {
            let mut chars = rest.chars();
            if let (Some(drive), next) = (chars.next(), chars.next())
                && drive.is_ascii_alphabetic()
                && matches!(next, None | Some('/'))
            {
                return Some(format!("{drive}:/{}", rest[1..].trim_start_matches('/')));
            }
        }
    }
    for (names, place) in WINDOWS_VARIABLES {
        for name in *names {
            for spelling in [format!("$env:{name}"), format!("%{name}%")] {
                if let Some(rest) = lowered.strip_prefix(spelling.as_str()) {
                    return Some(format!("{place}{rest}"));
                }
            }
        }
    }
    None
}

/// The environment's names for Windows places, and where they point.
const WINDOWS_VARIABLES: &[(&[&str], &str)] = &[
    (&["windir", "systemroot"], "c:/windows"),
    (&["systemdrive", "homedrive"], "c:"),
    (
        &["programfiles", "programfiles(x86)", "programw6432"],
        "c:/program files",
    ),
    (&["programdata", "allusersprofile"], "c:/programdata"),
    (&["userprofile"], "c:/users/me"),
    (&["appdata"], "c:/users/me/appdata/roaming"),
    (&["localappdata"], "c:/users/me/appdata/local"),
    (&["temp", "tmp"], "c:/users/me/appdata/local/temp"),
];

/// Top-level directories of a Windows drive that hold the system.
const WINDOWS_SYSTEM: &[&str] = &[
    "windows",
    "programdata",
    "program files",
    "program files (x86)",
    "boot",
    "recovery",
    "system volume information",
    "$recycle.bin",
];

/// Temporary directories: what is deleted under them is scratch.
const TEMP_ROOTS: &[&str] = &[
    "/tmp",
    "/var/tmp",
    "/private/tmp",
    "/dev/shm",
    "/private/var/folders",
    "/var/folders",
];

/// Directories of the system: their contents belong to the machine, not the
/// project.
const SYSTEM_ROOTS: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/var",
    "/opt",
    "/root",
    "/sys",
    "/proc",
    "/dev",
    "/srv",
    "/snap",
    "/run",
    "/mnt",
    "/media",
    "/nix",
    "/System",
    "/Library",
    "/Applications",
    "/private",
    "/Volumes",
    "/cores",
    "/home",
    "/Users",
];

/// The caches under the home directory, whose contents are rebuilt on demand.
const HOME_CACHES: &[&str] = &[
    ".cache",
    "Library/Caches",
    "Library/Developer/Xcode/DerivedData",
    ".conda/pkgs",
    ".ivy2/cache",
    ".sbt/boot",
    ".pub-cache",
    ".composer/cache",
    ".npm/_cacache",
    ".npm/_npx",
    ".cargo/registry/cache",
    ".cargo/registry/src",
    ".cargo/git/checkouts",
    ".gradle/caches",
    ".m2/repository",
    ".pnpm-store",
    ".local/share/pnpm/store",
    ".yarn/berry/cache",
    ".bun/install/cache",
    ".nuget/packages",
    ".deno",
    "go/pkg/mod/cache",
    ".rustup/tmp",
    ".rustup/downloads",
];

#[cfg(test)]
mod tests {
    use super::*;

    fn reach() -> Reach {
        Reach {
            project: Some("/home/dev/app".into()),
            home: Some("/home/dev".into()),
            scope: DeletionScope::Project,
            project_aliases: Vec::new(),
        }
    }

    #[test]
    fn places_of_paths() {
        let r = reach();
        let cwd = Some(Path::new("/home/dev/app"));
        for (word, place) in [
            ("dist", Place::Project),
            ("./node_modules", Place::Project),
            ("*", Place::Project),
            (".", Place::Repository),
            (".git", Place::Repository),
            ("./.git/", Place::Repository),
            ("sub/.git/objects", Place::Repository),
            (".git/index.lock", Place::Project),
            (".git/rebase-merge", Place::Project),
            ("..", Place::System),
            ("../other", Place::Home),
            ("~", Place::System),
            ("~/", Place::System),
            ("~/*", Place::System),
            ("$HOME", Place::System),
            ("~/projects", Place::Home),
            ("~/.ssh", Place::HomeDot),
            ("${HOME}/.aws/credentials", Place::HomeDot),
            ("~/.cache/pip", Place::Cache),
            ("~/Library/Caches/x", Place::Cache),
            ("/tmp/x", Place::Temp),
            ("/tmp/*", Place::Temp),
            ("/tmp", Place::Elsewhere),
            ("$TMPDIR/x", Place::Temp),
            ("${TMPDIR}/x", Place::Temp),
            ("/", Place::System),
            ("/*", Place::System),
            ("/usr/share", Place::System),
            ("/var/tmp/x", Place::Temp),
            ("/some/path", Place::Elsewhere),
            ("/data/backups", Place::Elsewhere),
            ("/home/alice", Place::System),
            ("/home/alice/repo", Place::Elsewhere),
            ("$BUILD_DIR/out", Place::Unknown),
            ("C:\\Windows", Place::System),
            ("C:\\", Place::System),
            ("C:/ProgramData", Place::System),
            ("C:Windows", Place::System),
            ("/c/Windows", Place::System),
            ("D:\\work\\x", Place::Elsewhere),
            ("C:\\Users\\me\\Documents", Place::Elsewhere),
            ("C:\\Users\\me\\.ssh", Place::HomeDot),
            ("$env:TEMP\\x", Place::Temp),
            ("%USERPROFILE%\\.aws", Place::HomeDot),
            ("$env:windir", Place::System),
        ] {
            assert_eq!(r.place(word, cwd), place, "{word}");
        }
    }

    #[test]
    fn the_scope_widens_only_what_it_names() {
        for (place, project, home, system) in [
            (Place::Home, false, true, true),
            (Place::Elsewhere, false, false, true),
            (Place::HomeDot, false, false, false),
            (Place::Repository, false, false, false),
            (Place::System, false, false, false),
            (Place::Project, true, true, true),
        ] {
            assert_eq!(
                place.deletable(DeletionScope::Project),
                project,
                "{place:?}"
            );
            assert_eq!(place.deletable(DeletionScope::Home), home, "{place:?}");
            assert_eq!(place.deletable(DeletionScope::System), system, "{place:?}");
        }
    }
}
