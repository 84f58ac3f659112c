//! Just enough of the shell's grammar to find every command a command line runs.
//!
//! A line is split into simple commands at `;`, `&&`, `||`, `|`, `&`, newlines and
//! parentheses; quotes and escapes are honoured, so a destructive word inside a
//! quoted string or a heredoc body is data, not a command. Command substitutions
//! (`$(…)`, backticks, `<(…)`) are returned as nested command lines, and so are the
//! scripts of `sh -c`, `bash -c` and `eval`, so callers see through them.

/// Most nested command lines followed, against pathological input.
const MAX_DEPTH: usize = 8;

/// Every simple command a command line would run, as argument vectors, with the
/// wrappers (`env`, `sudo`, `timeout`, `xargs`, …) and variable assignments in front
/// of them removed.
pub fn commands(line: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    collect(line, 0, &mut out);
    out
}

fn collect(line: &str, depth: usize, out: &mut Vec<Vec<String>>) {
    if depth > MAX_DEPTH {
        return;
    }
    let lexed = lex(line);
    for nested in &lexed.nested {
        collect(nested, depth + 1, out);
    }
    for argv in lexed.commands {
        let argv = unwrap(argv);
        if argv.is_empty() {
            continue;
        }
        if let Some(script) = inline_script(&argv) {
            collect(&script, depth + 1, out);
        } else {
            out.push(argv);
        }
    }
}

struct Lexed {
    commands: Vec<Vec<String>>,
    nested: Vec<String>,
}

/// Splits a command line into simple commands of unquoted words.
// The word/command macros reset their flags even where the loop ends right after.
#[allow(unused_assignments)]
fn lex(line: &str) -> Lexed {
    let chars: Vec<char> = line.chars().collect();
    let mut commands = Vec::new();
    let mut nested = Vec::new();
    let mut argv: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut skip_next_word = false;
    let mut pending_heredocs: Vec<(String, bool)> = Vec::new();
    let mut expect_heredoc_delim: Option<bool> = None;
    let mut i = 0;

    macro_rules! end_word {
        () => {
            if in_word {
                let w = std::mem::take(&mut word);
                if let Some(strip_tabs) = expect_heredoc_delim.take() {
                    pending_heredocs.push((w, strip_tabs));
                } else if skip_next_word {
                    skip_next_word = false;
                } else {
                    argv.push(w);
                }
                in_word = false;
            }
        };
    }
    macro_rules! end_command {
        () => {
            end_word!();
            if !argv.is_empty() {
                commands.push(std::mem::take(&mut argv));
            }
        };
    }

    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                end_word!();
                i += 1;
            }
            '\n' => {
                end_command!();
                i += 1;
                // Heredoc bodies start on the next line and are data.
                for (delim, strip_tabs) in pending_heredocs.drain(..) {
                    while i < chars.len() {
                        let start = i;
                        while i < chars.len() && chars[i] != '\n' {
                            i += 1;
                        }
                        let text: String = chars[start..i].iter().collect();
                        i += 1;
                        let text = if strip_tabs {
                            text.trim_start_matches('\t')
                        } else {
                            &text
                        };
                        if text == delim {
                            break;
                        }
                    }
                }
            }
            ';' | '&' | '|' | '(' | ')' => {
                if c == '&' && chars.get(i + 1) == Some(&'>') {
                    // `&>file`: a redirection, not a separator.
                    end_word!();
                    i += 2;
                    if chars.get(i) == Some(&'>') {
                        i += 1;
                    }
                    skip_next_word = true;
                    continue;
                }
                end_command!();
                i += 1;
            }
            '<' | '>' => {
                if chars.get(i + 1) == Some(&'(') {
                    // Process substitution: its contents run as a command.
                    end_word!();
                    let (inner, next) = balanced(&chars, i + 2);
                    nested.push(inner);
                    i = next;
                    continue;
                }
                // A file descriptor number written against the operator belongs to it.
                if in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                end_word!();
                if c == '<' && chars.get(i + 1) == Some(&'<') && chars.get(i + 2) != Some(&'<') {
                    let strip_tabs = chars.get(i + 2) == Some(&'-');
                    i += if strip_tabs { 3 } else { 2 };
                    expect_heredoc_delim = Some(strip_tabs);
                    continue;
                }
                i += 1;
                while i < chars.len() && matches!(chars[i], '>' | '<' | '&' | '|') {
                    i += 1;
                }
                skip_next_word = true;
            }
            '#' if !in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => {
                in_word = true;
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(&next) => word.push(next),
                    None => {}
                }
                i += 2;
            }
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    match chars[i] {
                        '\\' if matches!(chars.get(i + 1), Some('"' | '\\' | '$' | '`')) => {
                            word.push(chars[i + 1]);
                            i += 2;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            let (inner, next) = balanced(&chars, i + 2);
                            nested.push(inner);
                            i = next;
                        }
                        '`' => {
                            let (inner, next) = backticks(&chars, i + 1);
                            nested.push(inner);
                            i = next;
                        }
                        other => {
                            word.push(other);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                in_word = true;
                let (inner, next) = balanced(&chars, i + 2);
                nested.push(inner);
                i = next;
            }
            '`' => {
                in_word = true;
                let (inner, next) = backticks(&chars, i + 1);
                nested.push(inner);
                i = next;
            }
            other => {
                in_word = true;
                word.push(other);
                i += 1;
            }
        }
    }
    end_command!();
    Lexed { commands, nested }
}

/// The text up to the `)` that closes a `(` opened just before `start`, and the index
/// after it. Quotes inside are skipped over.
fn balanced(chars: &[char], start: usize) -> (String, usize) {
    let mut depth = 1;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return (chars[start..i].iter().collect(), i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    (
        chars[start.min(chars.len())..].iter().collect(),
        chars.len(),
    )
}

fn backticks(chars: &[char], start: usize) -> (String, usize) {
    let mut i = start;
    let mut inner = String::new();
    while i < chars.len() && chars[i] != '`' {
        if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
        }
        inner.push(chars[i]);
        i += 1;
    }
    (inner, i + 1)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Removes variable assignments and command wrappers from the front of a command.
fn unwrap(mut argv: Vec<String>) -> Vec<String> {
    loop {
        let skip = match argv.first() {
            None => return argv,
            Some(first) if is_assignment(first) => 1,
            Some(first) => match program(first) {
                "env" => {
                    1 + options_then(&argv[1..], &["-u", "--unset", "-C", "--chdir", "-S"], true)
                }
                "sudo" | "doas" => {
                    1 + options_then(
                        &argv[1..],
                        &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
                        false,
                    )
                }
                "nohup" | "command" | "builtin" | "exec" | "time" | "unbuffer" => {
                    1 + options_then(&argv[1..], &["-a"], false)
                }
                "nice" | "ionice" => 1 + options_then(&argv[1..], &["-n", "-c", "-p"], false),
                "stdbuf" => 1 + options_then(&argv[1..], &["-i", "-o", "-e"], false),
                "timeout" => {
                    let opts =
                        options_then(&argv[1..], &["-s", "--signal", "-k", "--kill-after"], false);
                    // The duration comes before the command.
                    1 + opts + usize::from(argv.len() > 1 + opts)
                }
                "xargs" => {
                    1 + options_then(
                        &argv[1..],
                        &[
                            "-I",
                            "-L",
                            "-n",
                            "-P",
                            "-s",
                            "-d",
                            "-E",
                            "-a",
                            "--delimiter",
                            "--max-args",
                            "--max-procs",
                        ],
                        false,
                    )
                }
                _ => return argv,
            },
        };
        argv.drain(..skip.min(argv.len()));
    }
}

/// How many leading words are options (with `takes_value` ones consuming the next
/// word), stopping at `--` (consumed) or the first non-option. `assignments` also
/// skips `NAME=value` words, as `env` takes them.
fn options_then(words: &[String], takes_value: &[&str], assignments: bool) -> usize {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if w == "--" {
            return i + 1;
        }
        if assignments && is_assignment(w) {
            i += 1;
        } else if w.starts_with('-') && w.len() > 1 {
            i += if takes_value.contains(&w) { 2 } else { 1 };
        } else {
            break;
        }
    }
    i
}

/// The script a shell is told to run with `-c`, or `eval`'s arguments.
fn inline_script(argv: &[String]) -> Option<String> {
    let name = program(&argv[0]);
    if name == "eval" {
        return Some(argv[1..].join(" "));
    }
    if !matches!(name, "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish") {
        return None;
    }
    let mut words = argv[1..].iter();
    while let Some(w) = words.next() {
        if w.starts_with('-') && !w.starts_with("--") && w.contains('c') {
            return words.next().cloned();
        }
        if !w.starts_with('-') {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        commands(line).into_iter().map(|c| c.join(" ")).collect()
    }

    #[test]
    fn splits_on_operators_with_or_without_spaces() {
        assert_eq!(argv("cd x&&git push -f"), ["cd x", "git push -f"]);
        assert_eq!(argv("a; b || c | d & e"), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn strips_assignments_and_wrappers() {
        assert_eq!(argv("FOO=1 BAR=2 git status"), ["git status"]);
        assert_eq!(
            argv("sudo -u me env -i A=b timeout 5 git push"),
            ["git push"]
        );
        assert_eq!(argv("xargs -n 1 git branch -D"), ["git branch -D"]);
    }

    #[test]
    fn sees_into_shells_and_substitutions() {
        assert_eq!(argv("bash -c \"git reset --hard\""), ["git reset --hard"]);
        assert_eq!(
            argv("sh -lc 'cd a && git clean -fd'"),
            ["cd a", "git clean -fd"]
        );
        assert_eq!(
            argv("echo $(git push --force)"),
            ["git push --force", "echo "]
        );
        assert_eq!(argv("eval git reset --hard"), ["git reset --hard"]);
    }

    #[test]
    fn quoted_text_and_heredocs_are_data() {
        assert_eq!(argv("echo 'git push --force'"), ["echo git push --force"]);
        assert_eq!(
            argv("cat <<EOF > notes.md\ngit reset --hard\nEOF\ngit status"),
            ["cat", "git status"]
        );
        assert_eq!(argv("git log 2>&1 >out.txt # git push -f"), ["git log"]);
    }
}
