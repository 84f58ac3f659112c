//! Whether a path is root's alone: what managed mode asks of every policy file,
//! and of every program it runs by name. Ownership, not watching: a file only
//! root can change needs no check of how it was changed.

use std::path::{Path, PathBuf};

/// Why `path` could be changed by someone other than root, if it could: it, or a
/// directory on the way to it, or a symbolic link on the way (or the way to
/// where it leads), is owned by another user or writable by group or others.
/// A directory on the way that is root's and sticky (`/tmp`) is fine: nobody
/// else can rename what root made inside it. A path that does not exist is
/// judged by its directory, since whoever can write there can create it.
///
/// The path is walked as written, one step at a time, so a link through a
/// directory another user owns is caught even when it leads back to root's
/// files: that user could point it elsewhere at any moment.
pub fn not_root_owned(path: &Path) -> Option<String> {
    let absolute = match std::path::absolute(path) {
        Ok(p) => p,
        Err(e) => return Some(format!("{}: {e}", path.display())),
    };
    let mut links_followed = 0;
    not_root_owned_walk(&absolute, &mut links_followed)
}

/// The most symbolic links followed on one path, as the kernel allows.
const MAX_LINKS: u32 = 40;

fn not_root_owned_walk(path: &Path, links_followed: &mut u32) -> Option<String> {
    use std::path::Component;
    let steps: Vec<Component> = path.components().collect();
    let mut at = PathBuf::from("/");
    if let Some(why) = step_not_root_owned(&at, false) {
        return Some(why);
    }
    for (i, step) in steps.iter().enumerate() {
        match step {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => continue,
            Component::ParentDir => {
                at.pop();
                continue;
            }
            Component::Normal(name) => at.push(name),
        }
        let last = i + 1 == steps.len();
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            // Not there: whoever can write its directory can make it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return at.parent().and_then(|dir| step_not_root_owned(dir, true));
            }
            Err(e) => return Some(format!("{}: {e}", at.display())),
        };
        if meta.file_type().is_symlink() {
            if let Some(why) = owner_not_root(&at, &meta) {
                return Some(why);
            }
            *links_followed += 1;
            if *links_followed > MAX_LINKS {
                return Some(format!("{}: too many symbolic links", path.display()));
            }
            let target = match std::fs::read_link(&at) {
                Ok(target) => target,
                Err(e) => return Some(format!("{}: {e}", at.display())),
            };
            let dir = at.parent().map(Path::to_path_buf).unwrap_or_default();
            let mut next = dir.join(target);
            for rest in &steps[i + 1..] {
                next.push(rest);
            }
            return not_root_owned_walk(&next, links_followed);
        }
        if let Some(why) = step_not_root_owned(&at, last) {
            return Some(why);
        }
    }
    None
}

/// Why the step at `at` could be changed by someone other than root: `holds`
/// when it is the file itself or the directory it would be made in, which
/// must be writable by nobody else even when sticky.
fn step_not_root_owned(at: &Path, holds: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(at) {
        Ok(meta) => meta,
        Err(e) => return Some(format!("{}: {e}", at.display())),
    };
    if let Some(why) = owner_not_root(at, &meta) {
        return Some(why);
    }
    let mode = meta.mode();
    let sticky = meta.is_dir() && mode & 0o1000 != 0;
    if mode & 0o022 != 0 && (holds || !sticky) {
        return Some(format!(
            "{} can be written by {} (mode {:o})",
            at.display(),
            if mode & 0o002 != 0 {
                "any user"
            } else {
                "its group"
            },
            mode & 0o7777
        ));
    }
    None
}

fn owner_not_root(at: &Path, meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    (meta.uid() != 0).then(|| format!("{} is owned by uid {}, not root", at.display(), meta.uid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_judged_by_every_directory_on_the_way() {
        // Running as root, a fresh directory is root's; as anyone else it is not.
        let me_root = std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            .unwrap_or(false);
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("sandrail.toml");
        std::fs::write(&file, "").expect("write");
        if !me_root {
            assert!(not_root_owned(&file).is_some());
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        assert_eq!(not_root_owned(&file), None);
        // Absent: judged by its directory.
        assert_eq!(not_root_owned(&dir.path().join("sandrail.lock")), None);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert!(
            not_root_owned(&file)
                .expect("open file")
                .contains("any user")
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777))
            .expect("chmod");
        // A sticky directory still lets anyone create the lock that is not there.
        assert!(not_root_owned(&dir.path().join("sandrail.lock")).is_some());
        // What root made in it nobody else can replace.
        assert_eq!(not_root_owned(&file), None);

        // A link through a directory another user owns, even one leading back
        // to root's file: that user can point it elsewhere at any moment.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).expect("dir");
        std::os::unix::fs::chown(&theirs, Some(54_321), Some(54_321)).expect("chown");
        std::os::unix::fs::symlink(&file, theirs.join("link.toml")).expect("link");
        let config = dir.path().join("policy.toml");
        std::os::unix::fs::symlink(theirs.join("link.toml"), &config).expect("link");
        assert!(
            not_root_owned(&config)
                .expect("a link in their directory")
                .contains("uid 54321")
        );
        // A link that stays within root's directories is fine.
        let direct = dir.path().join("direct.toml");
        std::os::unix::fs::symlink("sandrail.toml", &direct).expect("link");
        assert_eq!(not_root_owned(&direct), None);
    }
}
