//! What a printing command (`echo`, `printf`) writes, when a line uses it as data
//! for another: a script a shell then runs (`echo 'rm -rf /' | bash`,
//! `bash < <(printf …)`), the words of a substitution (`$(echo --force)`), or the
//! arguments `xargs` reads (`xargs rm -rf <<< /`).

use super::{Command, feeder, program};

/// The text `argv` prints, when it is `echo` or `printf` with arguments known.
pub fn text(argv: &[String]) -> Option<String> {
    let (first, args) = argv.split_first()?;
    match program(first) {
        "echo" => {
            // Only leading `-n`/`-e`/`-E` (and clusters of them) are echo's own.
            let start = args
                .iter()
                .position(|a| {
                    !(a.len() > 1
                        && a.starts_with('-')
                        && a[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E')))
                })
                .unwrap_or(args.len());
            Some(unescape(&args[start..].join(" ")))
        }
        // Path names computed from a literal (`dirname "$0"` in a script whose
        // `$0` is known).
        "dirname" | "basename"
            if !args.is_empty() && !args.iter().any(|a| a.contains('$') || a.is_empty()) =>
        {
            let path = args.iter().find(|a| !a.starts_with('-'))?;
            let path = std::path::Path::new(path);
            let name = if program(first) == "dirname" {
                match path.parent().map(|p| p.to_string_lossy().into_owned()) {
                    Some(parent) if parent.is_empty() => ".".to_owned(),
                    Some(parent) => parent,
                    None => "/".to_owned(),
                }
            } else {
                path.file_name()
                    .map_or("/".to_owned(), |n| n.to_string_lossy().into_owned())
            };
            Some(name)
        }
        "printf" => {
            let args = match args.first().map(String::as_str) {
                Some("--") => &args[1..],
                // `printf -v NAME …` assigns instead of printing.
                Some("-v") => return None,
                _ => args,
            };
            let (format, values) = args.split_first()?;
            Some(format_printf(format, values))
        }
        _ => None,
    }
}

/// The words a printing command writes, split as the shell splits a
/// substitution's output.
pub fn words(argv: &[String]) -> Option<Vec<String>> {
    Some(text(argv)?.split_whitespace().map(str::to_owned).collect())
}

/// The script a shell reading what it is fed would run: the text printed by the
/// commands feeding it, when they print.
pub fn fed_script(command: &Command) -> Option<String> {
    if !runs_what_it_is_fed(&command.argv) {
        return None;
    }
    let texts: Vec<String> = command
        .fed_by
        .iter()
        .filter_map(|f| text(&feeder(f)))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The words a command's empty operands (what a substitution made) stand for,
/// when a substitution feeding it only prints (`git push $(echo --force)`).
pub fn substituted_words(command: &Command) -> Option<Vec<String>> {
    if !command.argv.iter().skip(1).any(String::is_empty) {
        return None;
    }
    with_printed(command)
}

/// The argv `xargs` runs, with what printers feed it appended
/// (`echo sandrail.toml | xargs cp evil`).
pub fn xargs_words(command: &Command) -> Option<Vec<String>> {
    if !command.args_from_stdin {
        return None;
    }
    with_printed(command)
}

/// The command's argv with the words the printers feeding it print appended,
/// when any does.
fn with_printed(command: &Command) -> Option<Vec<String>> {
    let printed: Vec<String> = command
        .fed_by
        .iter()
        .filter_map(|f| words(&feeder(f)))
        .flatten()
        .collect();
    if printed.is_empty() {
        return None;
    }
    let mut argv = command.argv.clone();
    argv.extend(printed);
    Some(argv)
}

/// Whether `argv` is a shell running the text fed to it: on its standard input
/// (`| bash`, `bash < <(…)`, `sh -s`), or as a script file a process
/// substitution made (`bash <(…)`, an empty operand).
fn runs_what_it_is_fed(argv: &[String]) -> bool {
    let Some((first, args)) = argv.split_first() else {
        return false;
    };
    match program(first) {
        shell if super::SHELLS.contains(&shell) || shell == "busybox" => {
            let mut words = args.iter();
            while let Some(word) = words.next() {
                match word.as_str() {
                    "-c" | "-n" => return false,
                    "" | "-" | "-s" | "/dev/stdin" | "/proc/self/fd/0" => return true,
                    "-o" | "+o" | "-O" | "+O" => {
                        words.next();
                    }
                    w if w.starts_with('-') || w.starts_with('+') => {}
                    // `busybox sh`.
                    "sh" | "ash" if program(first) == "busybox" => {}
                    w => return w.starts_with("/dev/fd/"),
                }
            }
            true
        }
        "source" | "." => args
            .first()
            .is_none_or(|f| matches!(f.as_str(), "" | "/dev/stdin" | "-" | "/proc/self/fd/0")),
        _ => super::runs_stdin(argv),
    }
}

/// `printf`'s output: each `%…` conversion takes the next value; the format is
/// reused while values remain, as printf does.
fn format_printf(format: &str, values: &[String]) -> String {
    let mut out = String::new();
    let mut values = values.iter();
    loop {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                out.push('%');
                continue;
            }
            // Flags, width and precision, then the conversion letter.
            while chars
                .peek()
                .is_some_and(|c| !c.is_ascii_alphabetic() && *c != '%')
            {
                chars.next();
            }
            chars.next();
            if let Some(value) = values.next() {
                used = true;
                out.push_str(value);
            }
        }
        if !used || values.len() == 0 {
            break;
        }
    }
    unescape(&out)
}

/// The backslash escapes both printers may interpret: `\n` and `\t` become
/// whitespace, so the commands they separate are separate.
fn unescape(text: &str) -> String {
    text.replace("\\n", "\n").replace("\\t", "\t")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn echo_keeps_the_options_of_what_it_prints() {
        assert_eq!(
            text(&argv(&["echo", "-n", "rm", "-rf", "/"])).as_deref(),
            Some("rm -rf /")
        );
    }

    #[test]
    fn printf_fills_and_reuses_its_format() {
        assert_eq!(
            text(&argv(&["printf", "rm -rf %s\\n", "/a", "/b"])).as_deref(),
            Some("rm -rf /a\nrm -rf /b\n")
        );
        assert_eq!(text(&argv(&["printf", "-v", "x", "y"])), None);
    }
}
