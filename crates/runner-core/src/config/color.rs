//! Whether runner colours what it prints: `--color` first, then the environment's conventions
//! (`NO_COLOR`, `CLICOLOR_FORCE`, `CLICOLOR=0`, `TERM=dumb`), then whether the stream is a
//! terminal. The same rule decides clap's help and errors and runner's own diagnostics.

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ColorChoice {
    #[default]
    Auto,
    Always,
    Never,
}

/// What the flag and the environment leave to decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Always,
    Never,
    /// Colour a stream only when it is a terminal.
    IfTerminal,
}

/// The decision for `choice` in the environment `var` reads: `--color=always|never` wins; then
/// `NO_COLOR` (set and not empty) turns colour off, `CLICOLOR_FORCE` (not `0`) on, and
/// `CLICOLOR=0` or `TERM=dumb` off.
pub fn decide(choice: ColorChoice, var: impl Fn(&str) -> Option<String>) -> Decision {
    let set = |name: &str| var(name).is_some_and(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => Decision::Always,
        ColorChoice::Never => Decision::Never,
        ColorChoice::Auto if set("NO_COLOR") => Decision::Never,
        ColorChoice::Auto if set("CLICOLOR_FORCE") && var("CLICOLOR_FORCE").as_deref() != Some("0") => Decision::Always,
        ColorChoice::Auto if var("CLICOLOR").as_deref() == Some("0") || var("TERM").as_deref() == Some("dumb") => Decision::Never,
        ColorChoice::Auto => Decision::IfTerminal,
    }
}

/// Whether a stream that is (or is not) a `terminal` is coloured, in the process's environment.
pub fn enabled(choice: ColorChoice, terminal: bool) -> bool {
    match decide(choice, |name| std::env::var(name).ok()) {
        Decision::Always => true,
        Decision::Never => false,
        Decision::IfTerminal => terminal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| vars.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
    }

    #[test]
    fn the_flag_wins_then_no_color_then_force_then_clicolor_and_dumb_terminals() {
        use ColorChoice::*;
        assert_eq!(decide(Auto, with(&[])), Decision::IfTerminal);
        assert_eq!(decide(Auto, with(&[("NO_COLOR", "1")])), Decision::Never);
        assert_eq!(decide(Auto, with(&[("NO_COLOR", "")])), Decision::IfTerminal, "an empty NO_COLOR is unset");
        assert_eq!(decide(Auto, with(&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")])), Decision::Never);
        assert_eq!(decide(Auto, with(&[("CLICOLOR_FORCE", "1"), ("TERM", "dumb")])), Decision::Always);
        assert_eq!(decide(Auto, with(&[("CLICOLOR_FORCE", "0")])), Decision::IfTerminal);
        assert_eq!(decide(Auto, with(&[("CLICOLOR", "0")])), Decision::Never);
        assert_eq!(decide(Auto, with(&[("CLICOLOR", "1")])), Decision::IfTerminal);
        assert_eq!(decide(Auto, with(&[("TERM", "dumb")])), Decision::Never);
        assert_eq!(decide(Always, with(&[("NO_COLOR", "1")])), Decision::Always);
        assert_eq!(decide(Never, with(&[("CLICOLOR_FORCE", "1")])), Decision::Never);
    }
}
