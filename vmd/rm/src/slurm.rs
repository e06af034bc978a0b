//! The hosts of a Slurm allocation, as a hostfile would declare them: a
//! vmd started inside `salloc`/`sbatch` (`SLURM_JOB_ID` and
//! `SLURM_JOB_NODELIST` set) takes its hosts from the allocation's node
//! list and their slots from `SLURM_JOB_CPUS_PER_NODE`, and its own host
//! name from `SLURMD_NODENAME`.
//!
//! Slurm writes both lists compressed: hosts as a hostlist
//! (`node[1-3,05],other`: a prefix, bracketed ranges whose zero padding is
//! kept, a suffix; brackets may repeat), counts as run lengths (`2(x3),1`:
//! three nodes of 2, one of 1). Small parsers here, bounded (the input is
//! an environment variable): at most [`MAX_HOSTS`] hosts.

use crate::hosts::validated;
use crate::{HostDecl, Refusal, Result};

/// The most hosts an allocation may expand to here.
pub const MAX_HOSTS: usize = 65_536;

/// The variable that says a process runs inside an allocation.
pub const JOB_ID: &str = "SLURM_JOB_ID";
/// The allocation's nodes (a hostlist).
pub const JOB_NODELIST: &str = "SLURM_JOB_NODELIST";
/// The CPUs of each node of the allocation (run lengths).
pub const JOB_CPUS_PER_NODE: &str = "SLURM_JOB_CPUS_PER_NODE";
/// The name of the node a batch script or job step runs on.
pub const NODENAME: &str = "SLURMD_NODENAME";

/// What a vmd takes from the allocation it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// `SLURM_JOB_ID`.
    pub job: String,
    /// Every node, in the allocation's order, with its CPUs as slots.
    pub hosts: Vec<HostDecl>,
    /// The node this process runs on (`SLURMD_NODENAME`), if Slurm said.
    pub this_node: Option<String>,
}

impl Allocation {
    /// The allocation of this process's environment: `None` outside one
    /// (no `SLURM_JOB_ID` or no node list), an error if its variables
    /// cannot be read.
    pub fn from_env() -> Option<Result<Allocation>> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Allocation::from_env`] over any source of variables.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<Result<Allocation>> {
        let job = var(JOB_ID).filter(|j| !j.is_empty())?;
        let nodes = var(JOB_NODELIST).filter(|n| !n.is_empty())?;
        Some(Self::read(
            job,
            &nodes,
            var(JOB_CPUS_PER_NODE).as_deref(),
            var(NODENAME).filter(|n| !n.is_empty()),
        ))
    }

    fn read(
        job: String,
        nodes: &str,
        cpus: Option<&str>,
        this_node: Option<String>,
    ) -> Result<Allocation> {
        let names = expand_hostlist(nodes)
            .map_err(|e| Refusal::invalid(format!("{JOB_NODELIST}={nodes:?}: {}", e.message)))?;
        let slots = match cpus {
            Some(c) => {
                let counts = expand_counts(c).map_err(|e| {
                    Refusal::invalid(format!("{JOB_CPUS_PER_NODE}={c:?}: {}", e.message))
                })?;
                if counts.len() != names.len() {
                    return Err(Refusal::invalid(format!(
                        "{JOB_CPUS_PER_NODE}={c:?} counts {} nodes, {JOB_NODELIST}={nodes:?} {}",
                        counts.len(),
                        names.len()
                    )));
                }
                counts
            }
            // Older Slurm or a hand-made environment: one slot per node.
            None => vec![1; names.len()],
        };
        let hosts = names
            .into_iter()
            .zip(slots)
            .map(|(name, slots)| {
                validated(HostDecl {
                    name,
                    slots,
                    offers: Vec::new(),
                    addr: String::new(),
                    peer_addr: String::new(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Allocation {
            job,
            hosts,
            this_node,
        })
    }

    /// This node's slots, if it is one of the allocation's.
    pub fn slots_of(&self, node: &str) -> Option<u32> {
        self.hosts.iter().find(|h| h.name == node).map(|h| h.slots)
    }
}

/// Expands a Slurm hostlist (`node[1-3,05],login`) into host names, in
/// order, duplicates kept.
pub fn expand_hostlist(list: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for item in split_top_level(list)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        expand_item(item, String::new(), &mut out)?;
    }
    if out.is_empty() {
        return Err(Refusal::invalid("no host in the list"));
    }
    Ok(out)
}

/// Splits at the commas outside brackets.
fn split_top_level(list: &str) -> Result<Vec<&str>> {
    let mut parts = Vec::new();
    let mut depth = 0u32;
    let mut start = 0;
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err(Refusal::invalid("nested '['")),
            ']' if depth == 1 => depth = 0,
            ']' => return Err(Refusal::invalid("']' without '['")),
            ',' if depth == 0 => {
                parts.push(list.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(Refusal::invalid("'[' without ']'"));
    }
    parts.push(list.get(start..).unwrap_or(""));
    Ok(parts)
}

/// Expands one item (`pre[ranges]rest`) after `done`, the part already
/// fixed, into `out`.
fn expand_item(item: &str, done: String, out: &mut Vec<String>) -> Result<()> {
    let Some((prefix, rest)) = item.split_once('[') else {
        push(out, done + item)?;
        return Ok(());
    };
    let (ranges, rest) = rest
        .split_once(']')
        .ok_or_else(|| Refusal::invalid("'[' without ']'"))?;
    for number in expand_ranges(ranges)? {
        expand_item(rest, format!("{done}{prefix}{number}"), out)?;
    }
    Ok(())
}

fn push(out: &mut Vec<String>, name: String) -> Result<()> {
    if out.len() >= MAX_HOSTS {
        return Err(Refusal::invalid(format!("more than {MAX_HOSTS} hosts")));
    }
    out.push(name);
    Ok(())
}

/// `1-3,05,7-8` → `1 2 3 05 7 8`, each number as wide as its range's
/// first bound was written (Slurm's zero padding).
fn expand_ranges(ranges: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for range in ranges.split(',') {
        let range = range.trim();
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let number = |s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Refusal::invalid(format!(
                    "{range:?} is not a number or a range"
                )));
            }
            s.parse::<u64>()
                .map_err(|_| Refusal::invalid(format!("{s:?} is too large")))
        };
        let (a, b) = (number(lo)?, number(hi)?);
        if b < a {
            return Err(Refusal::invalid(format!("range {range:?} goes down")));
        }
        if b - a >= MAX_HOSTS as u64 {
            return Err(Refusal::invalid(format!(
                "range {range:?} has more than {MAX_HOSTS} hosts"
            )));
        }
        let width = lo.len();
        for n in a..=b {
            if out.len() >= MAX_HOSTS {
                return Err(Refusal::invalid(format!("more than {MAX_HOSTS} hosts")));
            }
            out.push(format!("{n:0width$}"));
        }
    }
    Ok(out)
}

/// Expands Slurm's run-length counts (`2(x3),1` → `2 2 2 1`).
pub fn expand_counts(counts: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in counts.split(',') {
        let part = part.trim();
        let (value, times) = match part.split_once('(') {
            Some((value, times)) => {
                let times = times
                    .strip_prefix('x')
                    .and_then(|t| t.strip_suffix(')'))
                    .ok_or_else(|| Refusal::invalid(format!("{part:?} is not N or N(xM)")))?;
                let times: usize = times
                    .parse()
                    .map_err(|_| Refusal::invalid(format!("{part:?}: bad repeat count")))?;
                (value, times)
            }
            None => (part, 1),
        };
        let value: u32 = value
            .parse()
            .map_err(|_| Refusal::invalid(format!("{part:?}: {value:?} is not a count")))?;
        if times > MAX_HOSTS.saturating_sub(out.len()) {
            return Err(Refusal::invalid(format!("more than {MAX_HOSTS} counts")));
        }
        out.extend(std::iter::repeat_n(value, times));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(list: &str) -> Vec<String> {
        expand_hostlist(list).unwrap()
    }

    #[test]
    fn expands_hostlists() {
        assert_eq!(hosts("vm"), ["vm"]);
        assert_eq!(
            hosts("node[1-3,5],other"),
            ["node1", "node2", "node3", "node5", "other"]
        );
        assert_eq!(hosts("n[08-11]"), ["n08", "n09", "n10", "n11"]);
        assert_eq!(hosts("a[1-2]-ib"), ["a1-ib", "a2-ib"]);
        assert_eq!(
            hosts("r[1-2]n[1,3]"),
            ["r1n1", "r1n3", "r2n1", "r2n3"],
            "brackets repeat: every combination, in order"
        );
        assert_eq!(hosts("x,y[7]"), ["x", "y7"]);
        assert_eq!(hosts("h1,h1"), ["h1", "h1"]);
    }

    #[test]
    fn refuses_bad_hostlists_naming_the_problem() {
        for (bad, why) in [
            ("", "no host"),
            ("n[1-3", "without ']'"),
            ("n1-3]", "without '['"),
            ("n[[1]]", "nested"),
            ("n[3-1]", "goes down"),
            ("n[a-b]", "not a number"),
            ("n[1-]", "not a number"),
            ("n[0-99999999]", "more than"),
            ("n[0-60000],m[0-60000]", "more than"),
        ] {
            let err = expand_hostlist(bad).unwrap_err();
            assert!(err.message.contains(why), "{bad:?}: {}", err.message);
        }
    }

    #[test]
    fn expands_counts() {
        assert_eq!(expand_counts("2").unwrap(), [2]);
        assert_eq!(expand_counts("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(expand_counts("4,8(x2)").unwrap(), [4, 8, 8]);
        for bad in ["", "x", "2(3)", "2(x3", "2(xy)", "-1", "1(x99999999)"] {
            assert!(expand_counts(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reads_an_allocation_from_its_variables() {
        let vars = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(Allocation::from_vars(vars(&[])).is_none());
        assert!(Allocation::from_vars(vars(&[(JOB_ID, "7")])).is_none());
        let a = Allocation::from_vars(vars(&[
            (JOB_ID, "7"),
            (JOB_NODELIST, "n[1-3]"),
            (JOB_CPUS_PER_NODE, "4(x2),2"),
            (NODENAME, "n2"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(a.job, "7");
        let got: Vec<(&str, u32)> = a.hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect();
        assert_eq!(got, [("n1", 4), ("n2", 4), ("n3", 2)]);
        assert_eq!(a.this_node.as_deref(), Some("n2"));
        assert_eq!(a.slots_of("n3"), Some(2));
        assert_eq!(a.slots_of("n9"), None);
        let err = Allocation::from_vars(vars(&[
            (JOB_ID, "7"),
            (JOB_NODELIST, "n[1-3]"),
            (JOB_CPUS_PER_NODE, "4"),
        ]))
        .unwrap()
        .unwrap_err();
        assert!(err.message.contains("counts 1 nodes"), "{}", err.message);
        let err = Allocation::from_vars(vars(&[(JOB_ID, "7"), (JOB_NODELIST, "bad name[1]")]))
            .unwrap()
            .unwrap_err();
        assert!(err.message.contains("not valid"), "{}", err.message);
    }
}
