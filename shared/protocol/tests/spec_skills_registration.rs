//! Skills extension (SEP-2640), "Skill Format" (delegating to the Agent Skills specification)
//! and "Resource Mapping": "Every skill **MUST** contain a `SKILL.md` file at its root";
//! "`SKILL.md` **MUST** begin with YAML frontmatter containing at minimum the `name` and
//! `description` fields"; "The final segment of `<skill-path>` **MUST** equal the skill's
//! `name`" and "**MUST** satisfy the Agent Skills specification's naming rules" (1–64 of
//! `[a-z0-9-]`, no leading, trailing or doubled hyphen). Checked at registration: `App::skill`
//! refuses (panics, as axum refuses a conflicting route) with a message naming the skill and the
//! rule, and a skill registered twice is refused rather than replacing the first.

mod skills_common;

use relevo_protocol::{App, Skill};
use skills_common::*;

fn refusal(build: impl FnOnce() -> App + std::panic::UnwindSafe) -> String {
    let Err(panic) = std::panic::catch_unwind(build) else {
        panic!("the registration was accepted");
    };
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

fn skill_md(path: &str, text: &'static str) -> Skill {
    Skill::new(path).file("SKILL.md", text.as_bytes())
}

#[test]
fn names_outside_the_agent_skills_rules_are_refused() {
    for bad in [
        "Refunds",
        "-refunds",
        "refunds-",
        "re--funds",
        "re_funds",
        "r".repeat(65).leak(),
    ] {
        let text: &'static str = format!("---\nname: {bad}\ndescription: d\n---\n").leak();
        let message = refusal(|| App::new("s", "1").skill(skill_md(bad, text)));
        assert!(
            message.contains(bad) && message.contains("Agent Skills"),
            "{message}"
        );
    }
    let ok = App::new("s", "1").skill(skill_md("a-1", "---\nname: a-1\ndescription: d\n---\n"));
    assert_eq!(ok.skills().count(), 1);
}

#[test]
fn a_missing_skill_md_frontmatter_name_or_description_is_refused() {
    let cases: [(Skill, &str); 5] = [
        (Skill::new("a").file("README.md", b"x"), "no SKILL.md"),
        (skill_md("a", "# no frontmatter\n"), "YAML frontmatter"),
        (skill_md("a", "---\ndescription: d\n---\n"), "\"name\""),
        (skill_md("a", "---\nname: a\n---\n"), "\"description\""),
        (
            skill_md("a", "---\nname: a\ndescription: ''\n---\n"),
            "\"description\"",
        ),
    ];
    for (skill, rule) in cases {
        let message = refusal(move || App::new("s", "1").skill(skill));
        assert!(
            message.contains("skill \"a\"") && message.contains(rule),
            "{message}"
        );
    }
}

#[test]
fn the_paths_final_segment_must_be_the_name() {
    let message = refusal(|| {
        App::new("s", "1").skill(skill_md(
            "acme/other",
            "---\nname: a\ndescription: d\n---\n",
        ))
    });
    assert!(
        message.contains("\"other\"") && message.contains("\"a\""),
        "{message}"
    );
}

#[test]
fn bad_file_paths_and_duplicates_are_refused() {
    for path in ["../x.md", "/x.md", "a//b.md", "./x.md"] {
        let skill = pdf_skill().file(path, b"x");
        let message = refusal(move || App::new("s", "1").skill(skill));
        assert!(message.contains(path), "{message}");
    }
    let twice = pdf_skill().file("references/FORMS.md", b"again");
    let message = refusal(move || App::new("s", "1").skill(twice));
    assert!(message.contains("given twice"), "{message}");
    let message = refusal(|| App::new("s", "1").skill(pdf_skill()).skill(pdf_skill()));
    assert!(
        message.contains("skill \"skill://pdf-processing/SKILL.md\" is registered twice"),
        "{message}"
    );
}
