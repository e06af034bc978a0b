//! The vmd inside a Slurm allocation of two nodes (network namespaces, a
//! real slurmctld and a slurmd in each, testkit's `slurm`): its hosts and
//! slots are the allocation's, and the other node's vmd is started by the
//! `--host-start` default, a job step on that node (`srun --overlap -w`).

#![cfg(test)]

use std::time::Duration;

use isthmus_testkit::etcd::EtcdServer;
use isthmus_testkit::netns::Hosts;
use isthmus_testkit::slurm::Slurm;
use isthmus_testkit::{bin, TempDir};

/// Hang guard of the job; never a measure of speed.
const GUARD: Duration = Duration::from_secs(180);

#[test]
fn under_slurm_the_vmd_takes_both_nodes_and_starts_the_other_by_srun() {
    let Some(hosts) = Hosts::for_test(2) else {
        return;
    };
    if Slurm::skipped() {
        return;
    }
    let slurm = Slurm::in_namespaces(&hosts, 2);
    let etcd = EtcdServer::start_in(hosts.host(0));
    let dir = TempDir::new("slurm-hosts");
    let d = dir.0.display();
    let (vmd, isthmus) = (bin("vmd"), bin("isthmus"));
    let script = dir.0.join("job.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/bash\n\
             echo \"job $SLURM_JOB_ID on $SLURMD_NODENAME, nodes $SLURM_JOB_NODELIST, cpus $SLURM_JOB_CPUS_PER_NODE\"\n\
             # The nodes share this file system: the started vmd's runtime directory.\n\
             export ISTHMUS_RUNTIME_DIR={d}/run-started\n\
             RUST_LOG=warn {vmd} --etcd {url} --etcd-prefix /isthmus/slurm --runtime-dir {d}/run-first \\\n\
               --addr-file {d}/addr --state-dir {d}/state 2>{d}/vmd.log &\n\
             V=$!\n\
             for i in $(seq 200); do [ -s {d}/addr ] && break; sleep 0.1; done\n\
             for i in $(seq 200); do {isthmus} --vmd $(cat {d}/addr) conf | grep -q '^h2 *up' && break; sleep 0.1; done\n\
             {isthmus} --vmd $(cat {d}/addr) conf\n\
             squeue -s -h -o 'step %i %j %N'\n\
             kill $V; wait $V\n\
             exit 0\n",
            vmd = vmd.display(),
            isthmus = isthmus.display(),
            url = etcd.client_url,
        ),
    )
    .expect("write the job script");
    let output = dir.0.join("job.out");
    let workdir = d.to_string();
    let code = slurm.sbatch_wait(
        &["-N", "2", "-n", "4", "-J", "isthmus-hosts", "-D", &workdir],
        &script,
        &output,
        GUARD,
    );
    let out = std::fs::read_to_string(&output).unwrap_or_default();
    println!("{out}");
    let all = format!(
        "exit {code}\n{out}\nvmd log:\n{}\n{}",
        std::fs::read_to_string(dir.0.join("vmd.log")).unwrap_or_default(),
        slurm.logs()
    );
    assert_eq!(code, 0, "{all}");
    assert!(out.contains("on h1, nodes h[1-2], cpus 2(x2)"), "{all}");
    let row = |name: &str| -> Vec<String> {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no row of {name}:\n{all}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // HOST STATE SLOTS USED ADDR: both nodes up, with the allocation's CPUs.
    let (h1, h2) = (row("h1*"), row("h2"));
    assert_eq!(&h1[1..3], ["up", "2"], "{all}");
    assert_eq!(&h2[1..3], ["up", "2"], "{all}");
    assert_eq!(h2[4], format!("unix:{d}/run-started/vmd.sock"), "{all}");
    // h2's vmd is the job's step 0, on h2, started by the first vmd.
    let job = out
        .lines()
        .find_map(|l| l.strip_prefix("job ")?.split(' ').next())
        .unwrap_or_else(|| panic!("no job line:\n{all}"))
        .to_string();
    assert!(out.contains(&format!("step {job}.0 vmd h2")), "{all}");
    drop(slurm);
    drop(etcd);
    drop(hosts);
}
