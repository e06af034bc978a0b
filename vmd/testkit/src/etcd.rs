//! Real etcd servers for the tests: one member or a cluster of several, on
//! free loopback ports, each stopped by its PID when its handle drops; and
//! one shared server per test process ([`shared`]) for suites that only
//! need *an* etcd and keep apart by key prefix.

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{Proc, TempDir, T};

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("its address").port()
}

/// Where members keep their data: tmpfs when there is one, since every
/// etcd transaction is an fsync and the tests measure behaviour, not disks.
fn data_root() -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// How one member is started.
struct MemberSpec {
    name: String,
    client: String,
    peer: String,
}

/// One etcd member.
pub struct EtcdServer {
    pub name: String,
    /// Its client URL (`http://127.0.0.1:PORT`).
    pub client_url: String,
    pub proc: Option<Proc>,
    _dir: TempDir,
}

impl EtcdServer {
    /// A single-member cluster.
    pub fn start() -> EtcdServer {
        Self::cluster(1).pop().expect("one member")
    }

    /// A cluster of `n` members; returns once every member is healthy.
    pub fn cluster(n: usize) -> Vec<EtcdServer> {
        let token = format!("isthmus-test-{}", uuid::Uuid::new_v4());
        let specs: Vec<MemberSpec> = (0..n)
            .map(|i| MemberSpec {
                name: format!("m{i}"),
                client: format!("http://127.0.0.1:{}", free_port()),
                peer: format!("http://127.0.0.1:{}", free_port()),
            })
            .collect();
        let initial: Vec<String> = specs
            .iter()
            .map(|s| format!("{}={}", s.name, s.peer))
            .collect();
        let initial = initial.join(",");
        let members: Vec<EtcdServer> = specs
            .into_iter()
            .map(|s| {
                let dir = TempDir::in_dir(&data_root(), "etcd");
                let child = Command::new("etcd")
                    .args(["--name", &s.name])
                    .arg("--data-dir")
                    .arg(dir.0.join("data"))
                    .args(["--listen-client-urls", &s.client])
                    .args(["--advertise-client-urls", &s.client])
                    .args(["--listen-peer-urls", &s.peer])
                    .args(["--initial-advertise-peer-urls", &s.peer])
                    .args(["--initial-cluster", &initial])
                    .args(["--initial-cluster-token", &token])
                    .args(["--initial-cluster-state", "new"])
                    .args(["--logger", "zap", "--log-level", "error"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("start etcd (installed by scripts/install-deps.sh)");
                EtcdServer {
                    name: s.name,
                    client_url: s.client,
                    proc: Some(Proc(child)),
                    _dir: dir,
                }
            })
            .collect();
        for m in &members {
            m.wait_healthy();
        }
        members
    }

    /// A single-member cluster inside the network namespace `host`,
    /// listening on its address (ports 2379 and 2380: the namespace is the
    /// test's own).
    pub fn start_in(host: &crate::netns::Host) -> EtcdServer {
        let client = format!("http://{}:2379", host.addr);
        let peer = format!("http://{}:2380", host.addr);
        let member = single_member(host.command("etcd"), client, &peer, None);
        let end = Instant::now() + T;
        while !etcdctl_health(host.command("etcdctl"), &member.client_url) {
            assert!(
                Instant::now() < end,
                "etcd in {} not healthy within {T:?}",
                host.netns
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        member
    }

    /// A single-member cluster on loopback that speaks only TLS and lets in
    /// only clients with a certificate of the CA in `certs` (etcd's
    /// `--client-cert-auth`). `certs` holds `ca.pem`, `host.pem` and
    /// `host.key` for `127.0.0.1` (e.g. from `isthmus cert issue`); etcd
    /// shows that certificate and checks clients against that CA.
    pub fn start_tls(certs: &std::path::Path) -> EtcdServer {
        let client = format!("https://127.0.0.1:{}", free_port());
        let peer = format!("http://127.0.0.1:{}", free_port());
        let member = single_member(Command::new("etcd"), client, &peer, Some(certs));
        let end = Instant::now() + T;
        loop {
            let mut etcdctl = Command::new("etcdctl");
            etcdctl
                .arg("--cacert")
                .arg(certs.join("ca.pem"))
                .arg("--cert")
                .arg(certs.join("host.pem"))
                .arg("--key")
                .arg(certs.join("host.key"));
            if etcdctl_health(etcdctl, &member.client_url) {
                return member;
            }
            assert!(
                Instant::now() < end,
                "etcd with TLS not healthy within {T:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the member answers `endpoint health`.
    pub fn wait_healthy(&self) {
        let end = Instant::now() + T;
        while Instant::now() < end {
            if health(&self.client_url) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "etcd member {} at {} not healthy within {T:?}",
            self.name, self.client_url
        );
    }

    /// Kills the member (SIGKILL) and reaps it.
    pub fn kill(&mut self) {
        self.proc.take();
    }
}

/// Starts the member `m0` of a one-member cluster with `etcd` (a command
/// that may run it inside a namespace), serving TLS with client
/// certificates from `certs` if given (see [`EtcdServer::start_tls`]).
fn single_member(
    mut etcd: Command,
    client: String,
    peer: &str,
    certs: Option<&std::path::Path>,
) -> EtcdServer {
    let dir = TempDir::in_dir(&data_root(), "etcd");
    etcd.args(["--name", "m0"])
        .arg("--data-dir")
        .arg(dir.0.join("data"))
        .args(["--listen-client-urls", &client])
        .args(["--advertise-client-urls", &client])
        .args(["--listen-peer-urls", peer])
        .args(["--initial-advertise-peer-urls", peer])
        .args(["--initial-cluster", &format!("m0={peer}")])
        .args(["--logger", "zap", "--log-level", "error"]);
    if let Some(certs) = certs {
        etcd.arg("--cert-file")
            .arg(certs.join("host.pem"))
            .arg("--key-file")
            .arg(certs.join("host.key"))
            .arg("--trusted-ca-file")
            .arg(certs.join("ca.pem"))
            .arg("--client-cert-auth");
    }
    let child = etcd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start etcd (installed by scripts/install-deps.sh)");
    EtcdServer {
        name: "m0".into(),
        client_url: client,
        proc: Some(Proc(child)),
        _dir: dir,
    }
}

/// Whether `etcdctl endpoint health` says the member at `url` is healthy.
pub fn health(url: &str) -> bool {
    let port_open = url
        .strip_prefix("http://")
        .is_some_and(|a| TcpStream::connect(a).is_ok());
    port_open && etcdctl_health(Command::new("etcdctl"), url)
}

fn etcdctl_health(mut etcdctl: Command, url: &str) -> bool {
    etcdctl
        .env("ETCDCTL_API", "3")
        .args([
            "--endpoints",
            url,
            "--command-timeout=2s",
            "endpoint",
            "health",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The client URL of one etcd shared by the whole test process, started on
/// first use. A watchdog shell stops it once this process is gone (test
/// binaries do not run destructors of statics).
pub fn shared() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let client = format!("http://127.0.0.1:{}", free_port());
        let peer = format!("http://127.0.0.1:{}", free_port());
        let dir = data_root().join(format!(
            "isthmus-etcd-shared-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4()
        ));
        let script = format!(
            "etcd --name shared --data-dir '{dir}/data' --listen-client-urls {client} \
             --advertise-client-urls {client} --listen-peer-urls {peer} \
             --initial-advertise-peer-urls {peer} --initial-cluster shared={peer} \
             --logger zap --log-level error >/dev/null 2>&1 & e=$!; \
             while kill -0 {pid} 2>/dev/null && kill -0 $e 2>/dev/null; do sleep 0.5; done; \
             kill $e 2>/dev/null; wait $e; rm -rf '{dir}'",
            dir = dir.display(),
            pid = std::process::id(),
        );
        // The watchdog is not a Proc: it must outlive this handle, and it
        // stops etcd itself. Its status is never needed, so it is not
        // waited for; it is reaped as an orphan when this process ends.
        let watchdog = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("start the shared etcd");
        std::mem::forget(watchdog);
        let end = Instant::now() + T;
        while !health(&client) {
            assert!(
                Instant::now() < end,
                "shared etcd at {client} not healthy within {T:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        client
    })
}
