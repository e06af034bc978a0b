//! The tests' Unix users (`isthmus-u1`, …): created once on a machine,
//! whichever test asks first.

use std::process::Command;

/// Creates user `name` (no home, no login shell) unless it exists. The
/// check and the creation run under one lock that every test process takes
/// (`flock`): two tests that both saw the user missing ran `useradd` at
/// once, and one of them read a uid that then belonged to nobody.
pub fn create(name: &str) {
    let st = Command::new("flock")
        .args([
            "/tmp/isthmus-test-users.lock",
            "sh",
            "-c",
            "id -u \"$0\" >/dev/null 2>&1 || useradd --no-create-home --shell /usr/sbin/nologin \"$0\"",
            name,
        ])
        .status()
        .expect("flock useradd");
    assert!(st.success(), "useradd {name}");
}
