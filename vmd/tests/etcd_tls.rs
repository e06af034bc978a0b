//! vmds and etcd over mutual TLS: etcd lets in only the virtual machine's
//! hosts (certificates of its CA, issued by `isthmus cert issue`), and a
//! vmd checks it talks to the real etcd. Real etcd, real vmd processes.

#![cfg(test)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use isthmus_client::{Console, Session};
use isthmus_testkit::etcd::EtcdServer;
use isthmus_testkit::{bin, TempDir, Vmd, T};

/// `isthmus cert issue` from the CA in `ca` (created on first use).
fn issue(ca: &Path, host: &str, names: &[&str], out: &Path) {
    let mut cmd = Command::new(bin("isthmus"));
    cmd.args(["cert", "issue", "--host", host, "--out"])
        .arg(out)
        .arg("--state-dir")
        .arg(ca);
    for n in names {
        cmd.args(["--name", n]);
    }
    let status = cmd.stdout(Stdio::null()).status().expect("isthmus cert");
    assert!(status.success(), "isthmus cert issue {host}");
}

fn tls_args(url: &str, prefix: &str, certs: &Path) -> Vec<String> {
    let file = |f: &str| certs.join(f).display().to_string();
    vec![
        "--etcd".into(),
        url.into(),
        "--etcd-prefix".into(),
        prefix.into(),
        "--etcd-ca".into(),
        file("ca.pem"),
        "--etcd-cert".into(),
        file("host.pem"),
        "--etcd-key".into(),
        file("host.key"),
    ]
}

/// Runs a vmd that must fail to start; returns what it said.
fn refused_start(args: &[String]) -> String {
    let dir = TempDir::new("vmd-refused");
    let mut child = Command::new(bin("vmd"))
        .arg("--runtime-dir")
        .arg(dir.0.join("run"))
        .args(["--host-name", "stranger"])
        .args(args)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn vmd");
    let end = Instant::now() + T * 2;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(
                !status.success(),
                "a vmd that cannot reach etcd must not run"
            );
            let out = child.wait_with_output().expect("output");
            return String::from_utf8_lossy(&out.stderr).to_string();
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("the vmd neither failed nor ran");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vmds_reach_etcd_only_with_the_virtual_machines_certificates() {
    let pki = TempDir::new("pki");
    let ca = pki.0.join("ca");
    let (etcd_certs, a_certs, b_certs) = (pki.0.join("etcd"), pki.0.join("a"), pki.0.join("b"));
    issue(&ca, "etcd", &["127.0.0.1"], &etcd_certs);
    issue(&ca, "host-a", &[], &a_certs);
    issue(&ca, "host-b", &[], &b_certs);
    let etcd = EtcdServer::start_tls(&etcd_certs);
    let prefix = format!("/isthmus-test/{}", uuid::Uuid::new_v4());

    let a_args = tls_args(&etcd.client_url, &prefix, &a_certs);
    let b_args = tls_args(&etcd.client_url, &prefix, &b_certs);
    let a = Vmd::start(
        "host-a",
        &a_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let b = Vmd::start(
        "host-b",
        &b_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let s = Session::connect(&a.addr, "t").await.expect("session on a");
    s.join("tls-group", None, b"ep".to_vec())
        .await
        .expect("join");
    let on_b = Console::connect(&b.addr).await.expect("console on b");
    let table = on_b
        .group("tls-group")
        .await
        .expect("b sees a's group through etcd");
    assert_eq!(table.members.len(), 1);
    assert_eq!(table.members[0].host, "host-a");

    // A certificate of another CA is not the virtual machine's.
    let stranger = pki.0.join("stranger");
    issue(&pki.0.join("other-ca"), "host-a", &[], &stranger);
    let err = refused_start(&tls_args(&etcd.client_url, &prefix, &stranger));
    assert!(err.contains("etcd"), "{err}");
    // No certificate at all: https needs one, and plain http gets nowhere.
    let no_cert = vec!["--etcd".to_string(), etcd.client_url.clone()];
    let err = refused_start(&no_cert);
    assert!(err.contains("--etcd-cert"), "{err}");
    let plain = vec![
        "--etcd".to_string(),
        etcd.client_url.replace("https://", "http://"),
    ];
    let err = refused_start(&plain);
    assert!(err.contains("etcd"), "{err}");
    drop((s, a, b, etcd));
}
