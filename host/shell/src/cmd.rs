//! cmd.exe command lines (`cmd /c "rd /s /q C:\Windows"`): just enough of its
//! grammar to find the commands it runs. Commands are split at `&`, `&&`, `||`,
//! `|`, newlines and parentheses; `"…"` quotes and `^` escapes are honoured;
//! backslashes are path separators, not escapes. Program names are lower-cased,
//! as cmd does not tell case apart.

/// The argument vectors of the commands a cmd line runs, in order.
pub fn commands(text: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut argv: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = text.chars();
    let end_word = |argv: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            argv.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '^' if !quoted => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    in_word = true;
                }
            }
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            '&' | '|' | '\n' | '(' | ')' if !quoted => {
                end_word(&mut argv, &mut word, &mut in_word);
                if !argv.is_empty() {
                    commands.push(finish(std::mem::take(&mut argv)));
                }
            }
            c if c.is_whitespace() && !quoted => end_word(&mut argv, &mut word, &mut in_word),
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    end_word(&mut argv, &mut word, &mut in_word);
    if !argv.is_empty() {
        commands.push(finish(argv));
    }
    commands
}

/// cmd's `@` (no echo) removed and the program's name lower-cased.
fn finish(mut argv: Vec<String>) -> Vec<String> {
    if let Some(first) = argv.first_mut() {
        *first = first.trim_start_matches('@').to_ascii_lowercase();
    }
    argv
}

/// The command line `cmd /c …` (or `/k`, `/r`) runs, from its arguments.
pub fn script(args: &[String]) -> Option<String> {
    let at = args
        .iter()
        // Git Bash users write `//c` (a lone `/c` would be made a path).
        .position(|a| {
            matches!(
                a.to_ascii_lowercase().as_str(),
                "/c" | "/k" | "/r" | "//c" | "//k"
            )
        })?;
    Some(args[at + 1..].join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_split_and_unquoted() {
        assert_eq!(
            commands(r#"cd C:\x && RD /s /q "C:\Program Files" & echo a^&b"#),
            vec![
                vec!["cd".to_owned(), r"C:\x".to_owned()],
                vec![
                    "rd".to_owned(),
                    "/s".to_owned(),
                    "/q".to_owned(),
                    r"C:\Program Files".to_owned()
                ],
                vec!["echo".to_owned(), "a&b".to_owned()],
            ]
        );
    }
}
