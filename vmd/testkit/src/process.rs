//! Whether a process runs: what the harness and the network-namespace
//! hosts ask before and after stopping one.

/// Whether process `pid` runs (a zombie counts as dead).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}
