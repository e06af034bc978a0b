//! In-process tests of the bridge data path: several engines in one process.

#![cfg(test)]

mod common;

use common::mpi;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use isthmus_bridge::*;

const T: Duration = Duration::from_secs(30);

fn start(config: EngineConfig) -> isthmus_bridge::Result<Arc<Engine>> {
    mpi();
    Engine::start(config)
}

fn engine() -> Arc<Engine> {
    start(EngineConfig::new("testhost")).expect("engine starts")
}

/// Two groups of engines and the intercomms between them: a[i] talks to group b and vice versa.
type Groups = (
    Vec<Arc<Engine>>,
    Vec<Arc<Engine>>,
    Vec<InterComm>,
    Vec<InterComm>,
);

fn groups(na: usize, nb: usize, context: u64) -> Groups {
    let ea: Vec<_> = (0..na).map(|_| engine()).collect();
    let eb: Vec<_> = (0..nb).map(|_| engine()).collect();
    let epa: Vec<_> = ea.iter().map(|e| e.endpoint()).collect();
    let epb: Vec<_> = eb.iter().map(|e| e.endpoint()).collect();
    let ca = ea
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.intercomm(context, i as u32, na as u32, epb.clone())
                .unwrap()
        })
        .collect();
    let cb = eb
        .iter()
        .enumerate()
        .map(|(i, e)| {
            e.intercomm(context, i as u32, nb as u32, epa.clone())
                .unwrap()
        })
        .collect();
    (ea, eb, ca, cb)
}

fn pair(context: u64) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm) {
    let (mut ea, mut eb, mut ca, mut cb) = groups(1, 1, context);
    (ea.remove(0), eb.remove(0), ca.remove(0), cb.remove(0))
}

/// 64-bit FNV-1a of the bytes.
fn checksum(v: &[u8]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[test]
fn endpoint_roundtrip_and_garbage() {
    let e = engine();
    let ep = e.endpoint();
    assert_eq!(Endpoint::decode(&ep.encode()).unwrap(), ep);
    assert!(ep.unix.is_some() && !ep.tcp.is_empty());
    assert!(ep.locality.is_some());
    // Several TCP addresses and an unknown locality survive the record.
    let mut many = ep.clone();
    many.locality = None;
    many.tcp = vec![
        "10.77.1.1:4000".parse().unwrap(),
        "[fd00::1]:4001".parse().unwrap(),
    ];
    assert_eq!(Endpoint::decode(&many.encode()).unwrap(), many);
    // Other versions are refused, saying which.
    for (version, says) in [(2u8, "older Isthmus build"), (9, "unknown to this build")] {
        let mut other = ep.encode();
        other[4] = version;
        match Endpoint::decode(&other) {
            Err(BridgeError::BadEndpoint(m)) => {
                assert!(
                    m.contains(&format!("version {version}")) && m.contains(says),
                    "{m}"
                )
            }
            r => panic!("version {version} decoded: {r:?}"),
        }
    }
    assert_eq!(ep.process, process_id(&ep.public_key));
    // A record that binds this process's id to another key is refused, and
    // so is an intercomm with such an endpoint.
    let mut forged = ep.clone();
    forged.public_key = engine().endpoint().public_key;
    assert!(matches!(
        Endpoint::decode(&forged.encode()),
        Err(BridgeError::BadEndpoint(_))
    ));
    assert!(matches!(
        e.intercomm(99, 0, 1, vec![forged]),
        Err(BridgeError::BadEndpoint(_))
    ));
    // Version-1 records (no key) cannot authenticate a connection.
    let mut v1 = ep.encode();
    v1[4] = 1;
    assert!(matches!(
        Endpoint::decode(&v1),
        Err(BridgeError::BadEndpoint(_))
    ));
    assert!(matches!(
        Endpoint::decode(b"nope"),
        Err(BridgeError::BadEndpoint(_))
    ));
    let mut enc = ep.encode();
    enc.truncate(enc.len() - 3);
    assert!(Endpoint::decode(&enc).is_err());
}

#[test]
fn all_pairs_exchange_with_checksums() {
    let (_ea, _eb, ca, cb) = groups(2, 3, 7);
    let all: Vec<(bool, InterComm)> = ca
        .into_iter()
        .map(|c| (true, c))
        .chain(cb.into_iter().map(|c| (false, c)))
        .collect();
    std::thread::scope(|s| {
        for (is_a, c) in &all {
            s.spawn(move || {
                let me = c.rank();
                let side = if *is_a { 0u8 } else { 1u8 };
                for d in 0..c.remote_size() {
                    let len = 1000 + 37 * (me as usize) + 1013 * d as usize;
                    let data: Vec<u8> = (0..len)
                        .map(|i| (i as u8).wrapping_mul(side + 3).wrapping_add(me as u8))
                        .collect();
                    c.send(d, 5, &[checksum(&data)]).unwrap();
                    c.send(d, 6, &data).unwrap();
                }
                for src in 0..c.remote_size() {
                    let mut sum = [0u64];
                    c.recv_timeout(Source::Rank(src), Tag::Value(5), &mut sum, T)
                        .unwrap();
                    let mut buf = vec![0u8; 1 << 16];
                    let st = c
                        .recv_timeout(Source::Rank(src), Tag::Value(6), &mut buf, T)
                        .unwrap();
                    assert_eq!(st.source, src);
                    assert_eq!(checksum(&buf[..st.count as usize]), sum[0]);
                    let other = if *is_a { 1u8 } else { 0u8 };
                    let expected_len = 1000 + 37 * src as usize + 1013 * me as usize;
                    assert_eq!(st.count as usize, expected_len);
                    assert_eq!(buf[1], 1u8.wrapping_mul(other + 3).wrapping_add(src as u8));
                }
            });
        }
    });
}

#[test]
fn wildcards_and_status() {
    let (_ea, _eb, ca, cb) = groups(2, 1, 9);
    ca[0].send(0, 11, &[1i32, 2, 3]).unwrap();
    ca[1].send(0, 22, &[4i32, 5]).unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        let mut buf = [0i32; 8];
        let st = cb[0]
            .recv_timeout(Source::Any, Tag::Any, &mut buf, T)
            .unwrap();
        got.push((
            st.source,
            st.tag,
            st.count,
            buf[..st.count as usize].to_vec(),
        ));
    }
    got.sort();
    assert_eq!(got, vec![(0, 11, 3, vec![1, 2, 3]), (1, 22, 2, vec![4, 5])]);
    // Specific tag, any source; any tag, specific source.
    ca[1].send(0, 1, &[10u16]).unwrap();
    ca[0].send(0, 2, &[20u16]).unwrap();
    let mut b = [0u16];
    let st = cb[0]
        .recv_timeout(Source::Any, Tag::Value(2), &mut b, T)
        .unwrap();
    assert_eq!((st.source, st.tag, b[0]), (0, 2, 20));
    let st = cb[0]
        .recv_timeout(Source::Rank(1), Tag::Any, &mut b, T)
        .unwrap();
    assert_eq!((st.source, st.tag, st.count, b[0]), (1, 1, 1, 10));
    // Probe does not consume.
    ca[0].send(0, 3, &[1.5f64, 2.5]).unwrap();
    let p = cb[0].probe_timeout(Source::Any, Tag::Any, T).unwrap();
    assert_eq!((p.source, p.tag, p.count, p.bytes), (0, 3, 2, 16));
    assert_eq!(
        cb[0].iprobe(Source::Rank(0), Tag::Value(3)).unwrap(),
        Some(p)
    );
    assert_eq!(cb[0].iprobe(Source::Rank(0), Tag::Value(4)).unwrap(), None);
    let mut f = [0f64; 2];
    cb[0]
        .recv_timeout(Source::Rank(0), Tag::Value(3), &mut f, T)
        .unwrap();
    assert_eq!(f, [1.5, 2.5]);
}

#[test]
fn ordering_under_thousands_of_messages() {
    let (_ea, _eb, a, b) = pair(11);
    const N: u32 = 5000;
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut reqs = Vec::new();
            for i in 0..N {
                // Mix of blocking and non-blocking sends, two tags, varying sizes.
                let payload = vec![i; (i % 7) as usize + 1];
                if i % 3 == 0 {
                    reqs.push(a.isend(0, (i % 2) as i32, &payload).unwrap());
                } else {
                    a.send(0, (i % 2) as i32, &payload).unwrap();
                }
            }
            for r in wait_all(reqs) {
                r.unwrap();
            }
        });
        // Receive with ANY tag: must see exact send order.
        let mut buf = [0u32; 8];
        for i in 0..N {
            let st = b
                .recv_timeout(Source::Rank(0), Tag::Any, &mut buf, T)
                .unwrap();
            assert_eq!(buf[0], i, "message overtaken");
            assert_eq!(st.tag, (i % 2) as i32);
            assert_eq!(st.count, (i % 7) as u64 + 1);
        }
    });
    // Per-tag order when receiving by tag out of arrival order.
    for i in 0..200u32 {
        a.send(0, (i % 2) as i32, &[i]).unwrap();
    }
    let mut b1 = [0u32];
    for want in (1..200).step_by(2) {
        b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut b1, T)
            .unwrap();
        assert_eq!(b1[0], want);
    }
    for want in (0..200).step_by(2) {
        b.recv_timeout(Source::Rank(0), Tag::Value(0), &mut b1, T)
            .unwrap();
        assert_eq!(b1[0], want);
    }
}

#[test]
fn ssend_completes_only_after_match() {
    let (_ea, _eb, a, b) = pair(13);
    let events = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    let ev = Arc::clone(&events);
    std::thread::scope(|s| {
        s.spawn(|| {
            a.ssend_timeout(0, 1, &[42u64], T).unwrap();
            ev.lock().unwrap().push("ssend returned");
        });
        // The message is there (probe sees it) but nobody matched it yet.
        b.probe_timeout(Source::Rank(0), Tag::Value(1), T).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        events.lock().unwrap().push("recv posted");
        let mut x = [0u64];
        b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut x, T)
            .unwrap();
        assert_eq!(x[0], 42);
    });
    assert_eq!(
        *events.lock().unwrap(),
        vec!["recv posted", "ssend returned"]
    );

    // issend: not complete before the match, complete after (receive posted first → zero-copy path).
    let r = a.issend(0, 2, &[7u8; 100]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!r.test(), "issend completed before any receive was posted");
    let mut buf = [0u8; 100];
    b.recv_timeout(Source::Any, Tag::Value(2), &mut buf, T)
        .unwrap();
    r.wait_timeout(T).unwrap();

    // ssend times out when nobody receives.
    assert!(matches!(
        a.ssend_timeout(0, 3, &[1u8], Duration::from_millis(100)),
        Err(BridgeError::Timeout(_))
    ));
}

#[test]
fn zero_byte_messages() {
    let (_ea, _eb, a, b) = pair(15);
    a.send::<u8>(0, 0, &[]).unwrap();
    let mut empty: [u8; 0] = [];
    let st = b
        .recv_timeout(Source::Rank(0), Tag::Value(0), &mut empty, T)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((st.count, st.bytes), (0, 0));
    let r = a.issend::<i32>(0, 2, &[]).unwrap();
    let (v, st) = b
        .recv_bytes_timeout(Source::Any, Tag::Value(2), None, 0, T)
        .unwrap();
    assert!(v.is_empty());
    assert_eq!(st.count, 0);
    r.wait_timeout(T).unwrap();
}

#[test]
fn huge_256mib_message_both_paths() {
    let (_ea, _eb, a, b) = pair(17);
    let n = 256usize << 20;
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let sum = checksum(&data);
    // Receive posted first (zero-copy into the buffer).
    std::thread::scope(|s| {
        let mut buf = vec![0u8; n];
        let b = &b;
        let h = s.spawn(move || {
            let st = b
                .recv_timeout(Source::Rank(0), Tag::Value(1), &mut buf, T)
                .unwrap();
            (st, checksum(&buf))
        });
        std::thread::sleep(Duration::from_millis(50));
        a.send(0, 1, &data).unwrap();
        let (st, got) = h.join().unwrap();
        assert_eq!(st.bytes as usize, n);
        assert_eq!(got, sum);
    });
    // Unexpected path: isend, then receive later (a rendezvous message: its
    // request completes only once the receive matched it).
    let r = a
        .isend_bytes(0, 2, &u8::type_sig().unwrap(), n as u64, data)
        .unwrap();
    assert!(!r.test(), "a large isend completes only once matched");
    let (v, st) = b
        .recv_bytes_timeout(
            Source::Rank(0),
            Tag::Value(2),
            Some(u8::type_sig().unwrap().signature),
            n,
            T,
        )
        .unwrap();
    assert_eq!(st.count as usize, n);
    assert_eq!(checksum(&v), sum);
    r.wait_timeout(T).unwrap();
}

#[test]
fn type_mismatch_consumes_message_only() {
    let (_ea, _eb, a, b) = pair(19);
    a.send(0, 1, &[1.0f32, 2.0]).unwrap();
    a.send(0, 1, &[3i32]).unwrap();
    let mut ints = [0i32; 4];
    match b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut ints, T) {
        Err(BridgeError::TypeMismatch {
            expected,
            actual,
            from_rank: 0,
            tag: 1,
        }) => {
            assert_eq!(expected, i32::type_sig().unwrap().signature);
            assert_eq!(actual, f32::type_sig().unwrap().signature);
        }
        other => panic!("expected TypeMismatch, got {other:?}"),
    }
    let st = b
        .recv_timeout(Source::Rank(0), Tag::Value(1), &mut ints, T)
        .unwrap();
    assert_eq!((st.count, ints[0]), (1, 3));
    // Mismatch on the posted (zero-copy) path too.
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut x = [0u64; 1];
            b.recv_timeout(Source::Rank(0), Tag::Value(2), &mut x, T)
        });
        std::thread::sleep(Duration::from_millis(50));
        a.send(0, 2, &[1u32, 2]).unwrap();
        assert!(matches!(
            h.join().unwrap(),
            Err(BridgeError::TypeMismatch { .. })
        ));
    });
}

#[test]
fn truncation_then_next_message_received() {
    let (_ea, _eb, a, b) = pair(21);
    a.send(0, 1, &[9u8; 100]).unwrap();
    a.send(0, 1, &[8u8; 10]).unwrap();
    let mut small = [0u8; 50];
    match b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut small, T) {
        Err(BridgeError::Truncated {
            message_bytes: 100,
            buffer_bytes: 50,
        }) => {}
        other => panic!("expected Truncated, got {other:?}"),
    }
    let st = b
        .recv_timeout(Source::Rank(0), Tag::Value(1), &mut small, T)
        .unwrap();
    assert_eq!((st.count, small[0]), (10, 8));
    // Posted path.
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut tiny = [0u8; 4];
            b.recv_timeout(Source::Rank(0), Tag::Value(2), &mut tiny, T)
        });
        std::thread::sleep(Duration::from_millis(50));
        a.send(0, 2, &[1u8; 5]).unwrap();
        a.send(0, 2, &[2u8; 3]).unwrap();
        assert!(matches!(
            h.join().unwrap(),
            Err(BridgeError::Truncated {
                message_bytes: 5,
                buffer_bytes: 4
            })
        ));
    });
    let mut buf = [0u8; 4];
    let st = b
        .recv_timeout(Source::Rank(0), Tag::Value(2), &mut buf, T)
        .unwrap();
    assert_eq!((st.count, buf[0]), (3, 2));
}

#[test]
fn intercomms_with_same_tags_do_not_mix() {
    let ea = engine();
    let eb = engine();
    let a1 = ea.intercomm(100, 0, 1, vec![eb.endpoint()]).unwrap();
    let a2 = ea.intercomm(200, 0, 1, vec![eb.endpoint()]).unwrap();
    let b1 = eb.intercomm(100, 0, 1, vec![ea.endpoint()]).unwrap();
    let b2 = eb.intercomm(200, 0, 1, vec![ea.endpoint()]).unwrap();
    assert!(matches!(
        ea.intercomm(100, 0, 1, vec![eb.endpoint()]),
        Err(BridgeError::ContextInUse(100))
    ));
    for i in 0..50u32 {
        a1.send(0, 5, &[i]).unwrap();
        a2.send(0, 5, &[1000 + i]).unwrap();
    }
    let mut x = [0u32];
    for i in 0..50u32 {
        b2.recv_timeout(Source::Any, Tag::Any, &mut x, T).unwrap();
        assert_eq!(x[0], 1000 + i);
    }
    for i in 0..50u32 {
        b1.recv_timeout(Source::Any, Tag::Value(5), &mut x, T)
            .unwrap();
        assert_eq!(x[0], i);
    }
    // Messages sent before the receiver registers its context are kept.
    let a3 = ea.intercomm(300, 0, 1, vec![eb.endpoint()]).unwrap();
    a3.send(0, 1, &[77u8]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let b3 = eb.intercomm(300, 0, 1, vec![ea.endpoint()]).unwrap();
    let mut y = [0u8];
    b3.recv_timeout(Source::Rank(0), Tag::Value(1), &mut y, T)
        .unwrap();
    assert_eq!(y[0], 77);
    // Dropping a context: late messages are discarded, other contexts unaffected.
    drop(b2);
    a2.send(0, 5, &[1u32]).unwrap();
    a1.send(0, 5, &[2u32]).unwrap();
    b1.recv_timeout(Source::Any, Tag::Any, &mut x, T).unwrap();
    assert_eq!(x[0], 2);
}

#[test]
fn peer_failure_fails_pending_and_future_operations() {
    let (ea, _eb, a, b) = pair(23);
    a.send(0, 1, &[5u8]).unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut x = [0u8];
            // The message sent before the failure is still delivered.
            b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut x, T)
                .unwrap();
            assert_eq!(x[0], 5);
            b.recv_timeout(Source::Rank(0), Tag::Value(2), &mut x, T)
        });
        let irq = b.irecv_bytes(Source::Any, Tag::Value(3), None, 10).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        ea.abort_for_test();
        match h.join().unwrap() {
            Err(BridgeError::PeerFailed { rank: 0, reason }) => {
                assert!(reason.contains("without BYE"), "{reason}")
            }
            other => panic!("expected PeerFailed, got {other:?}"),
        }
        assert!(matches!(
            irq.wait_timeout(T),
            Err(BridgeError::PeerFailed { .. })
        ));
    });
    // A rank that failed (no BYE) is reported by a nonblocking probe too.
    assert!(matches!(
        b.iprobe(Source::Rank(0), Tag::Any),
        Err(BridgeError::PeerFailed { .. })
    ));
    assert!(matches!(
        b.iprobe(Source::Any, Tag::Any),
        Err(BridgeError::PeerFailed { .. })
    ));
    let mut x = [0u8];
    assert!(matches!(
        b.recv_timeout(Source::Any, Tag::Any, &mut x, T),
        Err(BridgeError::PeerFailed { .. })
    ));
    assert!(matches!(
        b.send(0, 1, &[1u8]),
        Err(BridgeError::PeerFailed { rank: 0, .. })
    ));
    assert!(matches!(
        b.probe_timeout(Source::Rank(0), Tag::Any, T),
        Err(BridgeError::PeerFailed { .. })
    ));
}

#[test]
fn reported_peer_failure_fails_ssend_and_recv() {
    let (_ea, eb, a, b) = pair(25);
    // A blocked ssend and a blocked recv, then the group service reports the peer dead.
    std::thread::scope(|s| {
        let h1 = s.spawn(|| a.ssend_timeout(0, 1, &[1u8], T));
        let h2 = s.spawn(|| {
            let mut x = [0u8];
            a.recv_timeout(Source::Rank(0), Tag::Value(9), &mut x, T)
        });
        b.probe_timeout(Source::Rank(0), Tag::Value(1), T).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        a.engine()
            .peer_failed(eb.endpoint().process, "vmd says it died");
        assert!(
            matches!(h1.join().unwrap(), Err(BridgeError::PeerFailed { rank: 0, ref reason }) if reason == "vmd says it died")
        );
        assert!(matches!(
            h2.join().unwrap(),
            Err(BridgeError::PeerFailed { rank: 0, .. })
        ));
    });
}

#[test]
fn tcp_path_works_between_hosts() {
    let ea = start(EngineConfig::new("host-a")).unwrap();
    let eb = start(EngineConfig::new("host-b")).unwrap();
    let a = ea.intercomm(1, 0, 1, vec![eb.endpoint()]).unwrap();
    let b = eb.intercomm(1, 0, 1, vec![ea.endpoint()]).unwrap();
    let data: Vec<u64> = (0..100_000).collect();
    // 800 KB: above the eager limit, so unless the receiver's credit covers
    // it a blocking send would wait for the receive this same thread posts
    // next; isend it.
    let r0 = a.isend(0, 3, &data).unwrap();
    let mut out = vec![0u64; 100_000];
    b.recv_timeout(Source::Rank(0), Tag::Value(3), &mut out, T)
        .unwrap();
    assert_eq!(out, data);
    r0.wait_timeout(T).unwrap();
    let r = b.issend(0, 4, &[1i8]).unwrap();
    let mut y = [0i8];
    a.recv_timeout(Source::Rank(0), Tag::Value(4), &mut y, T)
        .unwrap();
    r.wait_timeout(T).unwrap();
}

/// Two engines on two "hosts" (TCP between them); the receiver `b` grants
/// a window of `window` bytes.
fn tcp_pair(context: u64, window: u64) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm) {
    let mut cb = EngineConfig::new("host-b");
    cb.eager_window = window;
    tcp_pair_with(context, cb)
}

/// An engine on "host-a" and one configured by `cb`, and their intercomms.
fn tcp_pair_with(
    context: u64,
    cb: EngineConfig,
) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm) {
    let ea = start(EngineConfig::new("host-a")).unwrap();
    let eb = start(cb).unwrap();
    let a = ea.intercomm(context, 0, 1, vec![eb.endpoint()]).unwrap();
    let b = eb.intercomm(context, 0, 1, vec![ea.endpoint()]).unwrap();
    (ea, eb, a, b)
}

/// Two engines on two host names (TCP), b taking DUPLEX offers or not.
fn hosts_pair(context: u64, b_duplex: bool) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm) {
    let mut cb = EngineConfig::new("host-b");
    cb.tcp_duplex = b_duplex;
    tcp_pair_with(context, cb)
}

/// Over TCP the connector offers its connection for the acceptor's frames
/// (`transport::duplex`): b's replies to a go back on the connection a
/// opened (b's route to a is a's route to b, ends swapped), in order and
/// intact, and the other way again after; with `tcp_duplex` off on b it
/// opens its own connection.
#[test]
fn replies_over_tcp_go_back_on_the_connection_that_brought_the_message() {
    for duplex in [true, false] {
        let (ea, eb, a, b) = hosts_pair(44, duplex);
        let mut got = vec![0u64; 1024];
        for i in 0..200 {
            let len = [1, 64, 1024][i as usize % 3];
            a.send(0, 3, &numbered(i, len)).unwrap();
            let st = b
                .recv_timeout(Source::Rank(0), Tag::Value(3), &mut got, T)
                .unwrap();
            assert_eq!(st.count, len as u64);
            assert!(got[..len] == numbered(i, len)[..], "a -> b message {i}");
            b.send(0, 4, &numbered(i + 1000, len)).unwrap();
            let st = a
                .recv_timeout(Source::Rank(0), Tag::Value(4), &mut got, T)
                .unwrap();
            assert_eq!(st.count, len as u64);
            assert!(
                got[..len] == numbered(i + 1000, len)[..],
                "b -> a message {i}"
            );
        }
        let a_to_b = ea.route_to(eb.endpoint().process).unwrap();
        let b_to_a = eb.route_to(ea.endpoint().process).unwrap();
        assert_eq!(a_to_b.transport, Transport::Tcp);
        assert_eq!(b_to_a.transport, Transport::Tcp);
        let same = b_to_a.local == a_to_b.remote && b_to_a.remote == a_to_b.local;
        assert_eq!(
            same, duplex,
            "duplex {duplex}: a -> b {a_to_b:?}, b -> a {b_to_a:?}"
        );
    }
}

/// A connection offered for the peer's frames that the peer never writes
/// on ends quietly when the peer closes it: b (which takes no offer) only
/// receives from a, then shuts down, closing a's connection without a
/// BYE on it (b has no connection to a to say BYE on). As before
/// connections were offered both ways, a does not take that for b's
/// failure: a receive from b times out instead of failing.
#[test]
fn an_offered_connection_the_peer_never_wrote_on_ends_without_a_failure() {
    let (_ea, eb, a, b) = hosts_pair(45, false);
    let mut got = vec![0u64; 8];
    a.send(0, 1, &numbered(1, 8)).unwrap();
    b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut got, T)
        .unwrap();
    drop(b);
    eb.shutdown();
    let err = a
        .recv_timeout(
            Source::Rank(0),
            Tag::Value(2),
            &mut got,
            Duration::from_millis(500),
        )
        .unwrap_err();
    assert!(matches!(err, BridgeError::Timeout(_)), "a saw: {err}");
}

/// Both send to each other as their first act, so both connect at once
/// and offer DUPLEX: the one with the larger process id ends its own
/// connection with MOVED and carries on on the other's (or, if it read
/// the other's DUPLEX before it connected, writes there from the start).
/// Either way one connection carries both ways in the end (the routes
/// mirror each other, within the test's deadline: the move is the
/// writer thread's), and every message arrives intact and in order,
/// across the move and after it.
#[test]
fn both_connecting_at_once_end_on_one_connection_in_order() {
    const N: u64 = 300;
    for round in 0..5u64 {
        let (ea, eb, a, b) = hosts_pair(46 + round, true);
        std::thread::scope(|s| {
            for (side, tag) in [(&a, 1), (&b, 2)] {
                s.spawn(move || {
                    for i in 0..N {
                        side.send(0, tag, &numbered(i, 64)).unwrap();
                    }
                });
            }
            for (side, tag) in [(&a, 2), (&b, 1)] {
                s.spawn(move || {
                    let mut got = vec![0u64; 64];
                    for i in 0..N {
                        side.recv_timeout(Source::Rank(0), Tag::Value(tag), &mut got, T)
                            .unwrap();
                        assert!(
                            got == numbered(i, 64),
                            "round {round}: message {i} of tag {tag}"
                        );
                    }
                });
            }
        });
        // The move is the writer thread's, after the DUPLEX frame was read:
        // it may still be under way when the messages are all in.
        let deadline = std::time::Instant::now() + T;
        loop {
            let a_to_b = ea.route_to(eb.endpoint().process).unwrap();
            let b_to_a = eb.route_to(ea.endpoint().process).unwrap();
            if b_to_a.local == a_to_b.remote && b_to_a.remote == a_to_b.local {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: two connections: a -> b {a_to_b:?}, b -> a {b_to_a:?}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // And on, both ways, on the one connection.
        let mut got = vec![0u64; 64];
        for i in N..N + 20 {
            a.send(0, 1, &numbered(i, 64)).unwrap();
            b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut got, T)
                .unwrap();
            assert!(got == numbered(i, 64), "round {round}: a -> b after");
            b.send(0, 2, &numbered(i, 64)).unwrap();
            a.recv_timeout(Source::Rank(0), Tag::Value(2), &mut got, T)
                .unwrap();
            assert!(got == numbered(i, 64), "round {round}: b -> a after");
        }
    }
}

/// Over TCP, both ways at once: synchronous sends, whose SYNC_ACKs (and
/// the credit that comes back) are written by whichever thread read the
/// peer's frame, between the other direction's messages on the same
/// connection. Every message arrives intact and in order, every ssend
/// completes.
#[test]
fn ssends_both_ways_over_tcp_keep_order_and_complete() {
    const N: u64 = 2000;
    let (_ea, _eb, a, b) = tcp_pair(43, 64 << 10);
    std::thread::scope(|s| {
        for side in [&a, &b] {
            s.spawn(move || {
                for i in 0..N {
                    side.ssend_timeout(0, 7, &numbered(i, 64), T).unwrap();
                }
            });
            s.spawn(move || {
                let mut got = vec![0u64; 64];
                for i in 0..N {
                    side.recv_timeout(Source::Rank(0), Tag::Value(7), &mut got, T)
                        .unwrap();
                    assert!(
                        got == numbered(i, 64),
                        "message {i} corrupted or out of order"
                    );
                }
            });
        }
    });
}

/// Message `i` of a push test: `n` u64s, each naming the message and its place.
fn numbered(i: u64, n: usize) -> Vec<u64> {
    (0..n as u64).map(|j| (i << 32) | j).collect()
}

/// Nonblocking sends beyond the receiver's credit are announced; as the
/// receiver consumes earlier messages and returns credit, their DATA
/// follows without waiting for each CTS (`engine::push`). Every message
/// arrives intact and in order.
#[test]
fn isends_beyond_credit_push_their_data_as_credit_returns() {
    // 200 KiB messages, a 512 KiB window: two go eagerly, the rest are announced.
    const N: usize = 25_600;
    let (ea, _eb, a, b) = tcp_pair(41, 512 << 10);
    let reqs: Vec<_> = (0..32)
        .map(|i| a.isend(0, 5, &numbered(i, N)).unwrap())
        .collect();
    let mut out = vec![0u64; N];
    for i in 0..32 {
        let st = b
            .recv_timeout(Source::Rank(0), Tag::Value(5), &mut out, T)
            .unwrap();
        assert_eq!(st.count, N as u64);
        assert!(
            out == numbered(i, N),
            "message {i} corrupted or out of order"
        );
    }
    for r in wait_all(reqs) {
        r.unwrap();
    }
    // The credit returned for the first message preceded the CTS of every
    // later announcement on b's connection: some DATA went before its CTS.
    assert!(ea.push_stats().pushed > 0, "{:?}", ea.push_stats());
}

/// Pushed DATA that arrives before any receive matched its announcement is
/// held as an eager message (within the credit that carried it) and
/// received later, in order, after messages of another tag were taken.
#[test]
fn pushed_data_before_its_receive_is_held_and_received_in_order() {
    const N: usize = 25_600; // 200 KiB
    let (ea, eb, a, b) = tcp_pair(42, 512 << 10);
    // Two of tag 1 fill the window; three of tag 2 are announced.
    let mut reqs: Vec<_> = (0..2)
        .map(|i| a.isend(0, 1, &numbered(i, N)).unwrap())
        .collect();
    reqs.extend((2..5).map(|i| a.isend(0, 2, &numbered(i, N)).unwrap()));
    let deadline = std::time::Instant::now() + T;
    // The announcements are here (their DATA can only follow them).
    b.probe_timeout(Source::Rank(0), Tag::Value(2), T).unwrap();
    let mut out = vec![0u64; N];
    for i in 0..2 {
        b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut out, T)
            .unwrap();
        assert!(out == numbered(i, N), "tag 1 message {i}");
    }
    // That credit carries two of tag 2 here before any receive asks.
    while eb.push_stats().held < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "pushed payloads not held: receiver {:?}, sender {:?}",
            eb.push_stats(),
            ea.push_stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    for i in 2..5 {
        let st = b
            .recv_timeout(Source::Rank(0), Tag::Value(2), &mut out, T)
            .unwrap();
        assert_eq!(st.bytes, (N * 8) as u64);
        assert!(out == numbered(i, N), "tag 2 message {i}");
    }
    for r in wait_all(reqs) {
        r.unwrap();
    }
}

/// A window grows for a peer that streams, as it is received, and only
/// then (`ledger`): announcements sent for want of credit to a receiver
/// that does not receive leave its window as granted; once it receives
/// them, later messages go eagerly where they were announced before.
#[test]
fn a_streaming_peer_s_window_grows_as_it_is_received() {
    const N: usize = 16_384; // 128 KiB
    let ea = start(EngineConfig::new("host-a")).unwrap();
    let mut cb = EngineConfig::new("host-b");
    cb.eager_window = 256 << 10;
    cb.eager_window_max = 1 << 20;
    let eb = start(cb).unwrap();
    let a = ea.intercomm(43, 0, 1, vec![eb.endpoint()]).unwrap();
    let b = eb.intercomm(43, 0, 1, vec![ea.endpoint()]).unwrap();
    let mut out = vec![0u64; N];
    let mut next = 0u64;
    // Sends `count` messages while b does not receive; returns how many
    // completed (went eagerly) within `settle`, then receives them all.
    let mut round = |count: u64, settle: Duration| {
        let reqs: Vec<_> = (next..next + count)
            .map(|i| a.isend(0, 6, &numbered(i, N)).unwrap())
            .collect();
        std::thread::sleep(settle);
        let eager = reqs.iter().filter(|r| r.test()).count();
        for i in next..next + count {
            b.recv_timeout(Source::Rank(0), Tag::Value(6), &mut out, T)
                .unwrap();
            assert!(
                out == numbered(i, N),
                "message {i} corrupted or out of order"
            );
        }
        for r in wait_all(reqs) {
            r.unwrap();
        }
        next += count;
        eager
    };
    // A 256 KiB window holds one 128 KiB message (and its frame cost); the
    // other seven are announced, and stay so while b does not receive.
    assert_eq!(round(8, Duration::from_millis(300)), 1);
    // Received: the window doubled (512 KiB), and again in the next round.
    round(8, Duration::from_millis(50));
    round(8, Duration::from_millis(50));
    // Grown to 1 MiB: five 128 KiB messages fit beside what b has not yet
    // handed back (less than a quarter window), and go at once.
    let eager = round(5, Duration::from_millis(300));
    assert_eq!(
        eager, 5,
        "the window did not grow: {eager} of 5 sent eagerly"
    );
}

/// Sends one message a → b and one b → a over intercomms built from the
/// given endpoints; returns a's route to b.
fn route_between(ea: &Arc<Engine>, eb: &Arc<Engine>, b_as_a_sees_it: Endpoint, ctx: u64) -> Route {
    let a = ea.intercomm(ctx, 0, 1, vec![b_as_a_sees_it]).unwrap();
    let b = eb.intercomm(ctx, 0, 1, vec![ea.endpoint()]).unwrap();
    a.send(0, 1, &[7u32]).unwrap();
    let mut x = [0u32];
    b.recv_timeout(Source::Rank(0), Tag::Value(1), &mut x, T)
        .unwrap();
    assert_eq!(x, [7]);
    b.send(0, 2, &[8u32]).unwrap();
    a.recv_timeout(Source::Rank(0), Tag::Value(2), &mut x, T)
        .unwrap();
    assert_eq!(x, [8]);
    a.route(0).unwrap().expect("a has a connection to b")
}

#[test]
fn unix_socket_only_for_the_same_host_and_network_namespace() {
    let (ea, eb) = (engine(), engine());
    let r = route_between(&ea, &eb, eb.endpoint(), 41);
    assert_eq!(r.transport, Transport::Unix);
    assert_eq!(Some(&r.remote), eb.endpoint().unix.as_ref());

    // Same host name, another network namespace (or kernel): TCP.
    let (ea, eb) = (engine(), engine());
    let mut elsewhere = eb.endpoint();
    let mut l = elsewhere.locality.unwrap();
    l.netns ^= 1;
    elsewhere.locality = Some(l);
    let r = route_between(&ea, &eb, elsewhere, 42);
    assert_eq!(r.transport, Transport::Tcp);
    assert_eq!(r.remote, eb.endpoint().tcp[0].to_string());
    assert!(r.local.starts_with("127.0.0.1:"), "{r:?}");
}

#[test]
fn dialer_falls_back_from_unix_and_through_dead_or_foreign_addresses() {
    // The Unix socket is gone: TCP.
    let (ea, eb) = (engine(), engine());
    let mut no_unix = eb.endpoint();
    no_unix.unix = Some(format!("@isthmus-bridge-gone-{}", no_unix.process));
    let r = route_between(&ea, &eb, no_unix, 43);
    assert_eq!(r.transport, Transport::Tcp);

    // First a port nobody listens on, then another engine's listener (the
    // handshake shows it is not the peer), then the peer.
    let (ea, eb, stranger) = (engine(), engine(), engine());
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_addr = dead.local_addr().unwrap();
    drop(dead);
    let mut listed = eb.endpoint();
    listed.unix = None;
    listed.tcp = vec![dead_addr, stranger.endpoint().tcp[0], eb.endpoint().tcp[0]];
    let r = route_between(&ea, &eb, listed, 44);
    assert_eq!(r.transport, Transport::Tcp);
    assert_eq!(r.remote, eb.endpoint().tcp[0].to_string());

    // Nothing answers: one error naming every attempt.
    let ea = engine();
    let gone = engine().endpoint();
    let mut nowhere = gone.clone();
    nowhere.unix = None;
    nowhere.tcp = vec![dead_addr, dead_addr];
    let a = ea.intercomm(45, 0, 1, vec![nowhere]).unwrap();
    match a.send(0, 1, &[1u8]) {
        Err(BridgeError::Connect { reason, .. }) => {
            assert_eq!(
                reason.matches(&dead_addr.to_string()).count(),
                2,
                "{reason}"
            )
        }
        r => panic!("send to nowhere: {r:?}"),
    }
}

#[test]
fn advertised_addresses_replace_the_listen_address() {
    // (Listening on all addresses is covered by `address`'s unit tests and
    // the network-namespace test: this test stays on loopback.)
    let advertised = start(EngineConfig {
        listen: "127.0.0.1".parse().unwrap(),
        advertise: vec!["127.0.0.3".parse().unwrap(), "127.0.0.1".parse().unwrap()],
        ..EngineConfig::new("testhost")
    })
    .unwrap();
    let port = advertised.endpoint().tcp[0].port();
    assert_eq!(
        advertised.endpoint().tcp,
        vec![
            std::net::SocketAddr::from(([127, 0, 0, 3], port)),
            std::net::SocketAddr::from(([127, 0, 0, 1], port))
        ]
    );
    // Nothing listens at the first: the dialer moves on to the second.
    let peer = engine();
    let mut tcp_only = advertised.endpoint();
    tcp_only.unix = None;
    let r = route_between(&peer, &advertised, tcp_only, 46);
    assert_eq!(r.transport, Transport::Tcp);
    assert_eq!(r.remote, format!("127.0.0.1:{port}"));
}

#[test]
fn isend_progresses_without_receiver_calls() {
    let (_ea, _eb, a, b) = pair(27);
    // 64 MiB: far beyond socket buffers. The receive is posted first; then
    // the CTS, the DATA and its reading are moved by the writer thread and
    // the two pollers while neither application thread calls in.
    let big = vec![3u8; 64 << 20];
    let rr = b
        .irecv_bytes(Source::Rank(0), Tag::Value(1), None, 64 << 20)
        .unwrap();
    let r = a.isend(0, 1, &big).unwrap();
    r.wait_timeout(T).unwrap();
    let (buf, st) = rr.wait_timeout(T).unwrap();
    assert_eq!(st.bytes, 64 << 20);
    assert!(buf.iter().all(|&x| x == 3));
}

#[test]
fn intercomm_used_from_many_threads() {
    let (_ea, _eb, a, b) = pair(29);
    let a = Arc::new(a);
    let b = Arc::new(b);
    std::thread::scope(|s| {
        for t in 0..4i32 {
            let a = Arc::clone(&a);
            s.spawn(move || {
                for i in 0..500u32 {
                    a.send(0, t, &[t as u32, i]).unwrap();
                }
            });
            let b2 = Arc::clone(&b);
            s.spawn(move || {
                let mut x = [0u32; 2];
                for i in 0..500u32 {
                    let st = b2
                        .recv_timeout(Source::Rank(0), Tag::Value(t), &mut x, T)
                        .unwrap();
                    assert_eq!((st.tag, x[0], x[1]), (t, t as u32, i));
                }
            });
        }
    });
}

#[test]
fn requests_wait_any_and_test() {
    let (_ea, _eb, a, b) = pair(31);
    let mut bufs = vec![[0u32; 1]; 3];
    let mut it = bufs.iter_mut();
    let r0 = b
        .irecv(Source::Rank(0), Tag::Value(0), it.next().unwrap())
        .unwrap();
    let r1 = b
        .irecv(Source::Rank(0), Tag::Value(1), it.next().unwrap())
        .unwrap();
    let r2 = b
        .irecv(Source::Rank(0), Tag::Value(2), it.next().unwrap())
        .unwrap();
    let reqs = vec![r0, r1, r2];
    assert!(reqs.iter().all(|r| !r.test()));
    assert!(matches!(
        wait_any(&reqs, Some(Duration::from_millis(50))),
        Err(BridgeError::Timeout(_))
    ));
    a.send(0, 1, &[11u32]).unwrap();
    assert_eq!(wait_any(&reqs, Some(T)).unwrap(), 1);
    a.send(0, 0, &[10u32]).unwrap();
    a.send(0, 2, &[12u32]).unwrap();
    for (i, r) in wait_all(reqs).into_iter().enumerate() {
        assert_eq!(r.unwrap().tag, i as i32);
    }
    assert_eq!(bufs, vec![[10], [11], [12]]);
    // A timed-out receive is withdrawn: the next message goes to the next receive.
    let mut x = [0u8];
    assert!(matches!(
        b.recv_timeout(
            Source::Rank(0),
            Tag::Value(5),
            &mut x,
            Duration::from_millis(20)
        ),
        Err(BridgeError::Timeout(_))
    ));
    a.send(0, 5, &[1u8]).unwrap();
    b.recv_timeout(Source::Rank(0), Tag::Value(5), &mut x, T)
        .unwrap();
    assert_eq!(x[0], 1);
}

#[test]
fn invalid_arguments() {
    let (_ea, _eb, a, _b) = pair(33);
    assert!(matches!(
        a.send(5, 0, &[1u8]),
        Err(BridgeError::InvalidArgument(_))
    ));
    assert!(matches!(
        a.send(0, -3, &[1u8]),
        Err(BridgeError::InvalidArgument(_))
    ));
    let mut x = [0u8];
    assert!(matches!(
        a.recv_timeout(Source::Rank(9), Tag::Any, &mut x, T),
        Err(BridgeError::InvalidArgument(_))
    ));
    assert!(matches!(
        a.recv_timeout(Source::Any, Tag::Value(-2), &mut x, T),
        Err(BridgeError::InvalidArgument(_))
    ));
    assert!(matches!(
        a.send_bytes(0, 0, &u32::type_sig().unwrap(), 3, &[0u8; 5]),
        Err(BridgeError::InvalidArgument(_))
    ));
}

#[test]
fn orderly_shutdown_fails_peer_waiters() {
    let (ea, _eb, a, b) = pair(35);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let mut x = [0u8];
            let r = b.recv_timeout(Source::Rank(0), Tag::Any, &mut x, T);
            done.store(true, Ordering::SeqCst);
            r
        });
        a.send(0, 0, &[1u8]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        drop(a);
        ea.shutdown();
        h.join().unwrap().unwrap();
    });
    let mut x = [0u8];
    assert!(matches!(
        b.recv_timeout(Source::Rank(0), Tag::Any, &mut x, T),
        Err(BridgeError::PeerFailed { .. })
    ));
}

#[test]
fn a_rank_that_left_in_order_does_not_fail_any_source_receives() {
    let (ea, eb, mut ca, mut cb) = groups(1, 2, 36);
    let a = ca.remove(0);
    let b1 = cb.remove(1);
    let b0 = cb.remove(0);
    // b0 talks, then finishes in order (BYE) before b1 has sent anything.
    b0.send(0, 1, &[10u32]).unwrap();
    let mut x = [0u32];
    a.recv_timeout(Source::Any, Tag::Any, &mut x, T).unwrap();
    drop(b0);
    eb[0].shutdown();
    std::thread::sleep(Duration::from_millis(100));
    // An ANY_SOURCE receive still waits for b1, which is alive.
    b1.send(0, 2, &[20u32]).unwrap();
    let st = a.recv_timeout(Source::Any, Tag::Any, &mut x, T).unwrap();
    assert_eq!((st.source, x[0]), (1, 20));
    // A receive naming the departed rank fails: nothing more can come from it.
    assert!(matches!(
        a.recv_timeout(Source::Rank(0), Tag::Any, &mut x, T),
        Err(BridgeError::PeerFailed { .. })
    ));
    // A nonblocking probe of it finds no message, as MPI_Iprobe does for
    // a process that finalized: leaving in order is not a failure.
    assert_eq!(a.iprobe(Source::Rank(0), Tag::Any).unwrap(), None);
    // Once every remote rank has gone, ANY_SOURCE fails too instead of hanging.
    drop(b1);
    eb[1].shutdown();
    assert!(matches!(
        a.recv_timeout(Source::Any, Tag::Any, &mut x, T),
        Err(BridgeError::PeerFailed { .. })
    ));
    assert_eq!(a.iprobe(Source::Any, Tag::Any).unwrap(), None);
    drop(ea);
}
