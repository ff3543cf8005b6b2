//! The conventions a command-line user expects: usage errors exit 1 (2 is "model server
//! unreachable"), an example in every `--help`, completions and a man page, and colour only
//! where it is wanted (`NO_COLOR`, `CLICOLOR=0`, `TERM=dumb`, `--color`).

use super::*;

#[test]
fn usage_errors_exit_1_and_help_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let no_manifest = runner(dir.path()).arg("exec").output().expect("runs");
    assert_eq!(no_manifest.status.code(), Some(1), "{}", stderr_of(&no_manifest));
    assert!(stderr_of(&no_manifest).contains("<MANIFEST>"), "{}", stderr_of(&no_manifest));
    for args in [&["--no-such-flag"][..], &["exec", "m.toml", "--progress=sometimes"], &[]] {
        assert_eq!(runner(dir.path()).args(args).output().expect("runs").status.code(), Some(1), "{args:?}");
    }
    let help = runner(dir.path()).args(["exec", "--help"]).output().expect("runs");
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout_of(&help).contains("Example:\n  runner exec experiments/quickstart.toml"), "{}", stdout_of(&help));
}

#[test]
fn completions_for_four_shells_and_a_man_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (shell, mark) in
        [("bash", "complete -F _runner"), ("zsh", "#compdef runner"), ("fish", "complete -c runner"), ("powershell", "Register-ArgumentCompleter")]
    {
        let out = runner(dir.path()).args(["completions", shell]).output().expect("runs");
        assert!(out.status.success(), "{shell}: {}", stderr_of(&out));
        let script = stdout_of(&out);
        assert!(script.contains(mark) && script.contains("exec") && script.contains("init"), "{shell}: {script}");
    }
    let man = runner(dir.path()).arg("man").output().expect("runs");
    assert!(man.status.success());
    let page = stdout_of(&man);
    assert!(page.contains(".TH runner") && page.contains("runner\\-init"), "{page}");
}

#[test]
fn no_color_clicolor_0_and_dumb_terminals_turn_colour_off_in_diagnostics() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write_manifest(dir.path(), "bad.toml", "version = 1\n[experiment]\nname = \"x\"\nbogus = 1\n");
    let validate = |env: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = runner(dir.path());
        cmd.env_remove("NO_COLOR").env_remove("CLICOLOR").env_remove("CLICOLOR_FORCE").env_remove("TERM");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.args(extra).arg("validate").arg(&bad).output().expect("runs");
        assert_eq!(out.status.code(), Some(1));
        stderr_of(&out)
    };
    // Forced on (stderr is a pipe here), the diagnostics are coloured...
    assert!(validate(&[("CLICOLOR_FORCE", "1")], &[]).contains("\u{1b}["));
    assert!(validate(&[], &["--color=always"]).contains("\u{1b}["));
    // ...and each convention turns it off.
    for (env, flags) in [
        (&[("NO_COLOR", "1"), ("CLICOLOR_FORCE", "1")][..], &[][..]),
        (&[("CLICOLOR_FORCE", "1")], &["--color=never"]),
        (&[("CLICOLOR", "0")], &[]),
        (&[("TERM", "dumb")], &[]),
    ] {
        let text = validate(env, flags);
        assert!(!text.contains('\u{1b}') && text.contains("unknown key"), "{env:?} {flags:?}: {text}");
    }
    // clap's own errors too.
    let mut cmd = runner(dir.path());
    let out = cmd.env("CLICOLOR_FORCE", "1").env("NO_COLOR", "1").arg("--no-such-flag").output().expect("runs");
    assert!(!stderr_of(&out).contains('\u{1b}') && stderr_of(&out).contains("--no-such-flag"), "{}", stderr_of(&out));
}
