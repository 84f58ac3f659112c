//! The guest SDK's turn stamps, through the real binary: evidence counts only in the
//! turn that recorded it, and an unknown turn is "unknown", never "no".

use serde_json::json;

use crate::support::*;

fn user_line(uuid: &str, text: &str) -> String {
    format!(
        "{}\n",
        json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}})
    )
}

fn stamp_answer(project: &Project, transcript: Option<&std::path::Path>) -> String {
    match transcript {
        Some(path) => project
            .hook(&bash_in_turn("sess-stamp", "ls", path))
            .context(),
        // A session reads the transcript its first event named: one without any
        // is another session.
        None => project.hook(&bash("sess-stamp-none", "ls")).context(),
    }
}

#[test]
fn stamps_belong_to_the_turn_that_made_them() {
    let project = Project::new();
    project.reconfigure(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"stamp\"\nkey = \"wrote:report\"\n",
    )]));
    let transcript = project.dir().join("t.jsonl");
    std::fs::write(&transcript, user_line("u-1", "write the report")).expect("transcript");
    assert_eq!(
        stamp_answer(&project, Some(&transcript)),
        "[probe] stamped=true now=ThisTurn"
    );
    assert_eq!(
        project.state("sess-stamp", "probe"),
        [("wrote:report".to_owned(), "\"1:u-1\"".to_owned())]
    );

    // The same uuid again is a new turn (a re-injected message): the stamp is stale.
    let mut text = user_line("u-1", "write the report");
    text.push_str(&user_line("u-1", "write the report"));
    std::fs::write(&transcript, text).expect("transcript");
    project.reconfigure(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"check-stamp\"\nkey = \"wrote:report\"\n",
    )]));
    assert_eq!(
        stamp_answer(&project, Some(&transcript)),
        "[probe] now=EarlierTurn"
    );
    project.reconfigure(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"check-stamp\"\nkey = \"never\"\n",
    )]));
    assert_eq!(
        stamp_answer(&project, Some(&transcript)),
        "[probe] now=Never"
    );

    // Without a transcript nothing is stamped and the answer is Unknown.
    project.reconfigure(&probe_config(&[(
        "probe",
        "[guardrail.config]\naction = \"stamp\"\nkey = \"other\"\n",
    )]));
    assert_eq!(
        stamp_answer(&project, None),
        "[probe] stamped=false now=Unknown"
    );
}
