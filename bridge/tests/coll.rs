//! In-process tests of the collectives on an intercommunicator: two
//! engines in one process, each side's "job" a one-rank communicator of
//! its own (a duplicate of the singleton MPI world), so that the bridge
//! part of each algorithm (leaders' messages, the collective context) runs
//! for real. The cross-implementation test (`examples/tests/cross_impl.rs`,
//! scenario `coll`) runs the same operations between Open MPI and MPICH jobs
//! of several ranks.

#![cfg(test)]

mod common;

use common::mpi;
use std::sync::Arc;
use std::time::{Duration, Instant};

use isthmus_bridge::*;
use mpi::topology::{Communicator, SimpleCommunicator};

/// A communicator handed to the one thread that uses it.
struct Local(SimpleCommunicator);
// SAFETY: MPI runs with MPI_THREAD_MULTIPLE, and each `Local` is used by
// exactly one thread at a time (moved into it), as MPI requires of a
// communicator's collective calls.
unsafe impl Send for Local {}

impl Local {
    /// The communicator (a method, so that a closure moves the whole `Local`).
    fn comm(&self) -> &SimpleCommunicator {
        &self.0
    }
}

/// Two engines, the intercomms between them (one rank each side), and each
/// side's local communicator.
fn pair(context: u64) -> (Arc<Engine>, Arc<Engine>, InterComm, InterComm, Local, Local) {
    mpi();
    let ea = Engine::start(EngineConfig::new("testhost")).unwrap();
    let eb = Engine::start(EngineConfig::new("testhost")).unwrap();
    let a = ea.intercomm(context, 0, 1, vec![eb.endpoint()]).unwrap();
    let b = eb.intercomm(context, 0, 1, vec![ea.endpoint()]).unwrap();
    let world = SimpleCommunicator::world();
    let (la, lb) = (Local(world.duplicate()), Local(world.duplicate()));
    (ea, eb, a, b, la, lb)
}

#[test]
fn barrier_returns_only_once_the_other_side_entered() {
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0001);
    let late = Duration::from_millis(600);
    let sleeper = std::thread::spawn(move || {
        std::thread::sleep(late);
        a.barrier(la.comm())
    });
    let entered = Instant::now();
    b.barrier(lb.comm()).unwrap();
    let waited = entered.elapsed();
    sleeper.join().unwrap().unwrap();
    assert!(
        waited >= late - Duration::from_millis(100),
        "left the barrier after {waited:?}, before the other side entered"
    );
}

#[test]
fn bcast_arrives_and_user_messages_with_its_tag_and_type_stay_apart() {
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0002);
    // A user message of the broadcast's type and length, with every small
    // tag, sent first: a broadcast sharing the user's context would take it.
    let decoy = [7777u64; 4];
    for tag in 0..4 {
        a.send(0, tag, &decoy).unwrap();
    }
    let values: Vec<u64> = (0..4).map(|i| 1_000 + i).collect();
    let mut sent = values.clone();
    let root =
        std::thread::spawn(move || a.bcast(la.comm(), BcastRole::Root, &mut sent).map(|()| a));
    let mut got = [0u64; 4];
    b.bcast(lb.comm(), BcastRole::From { root: 0 }, &mut got)
        .unwrap();
    assert_eq!(got[..], values[..]);
    let _a = root.join().unwrap().unwrap();
    for tag in 0..4 {
        let mut user = [0u64; 4];
        let st = b.recv(Source::Any, Tag::Any, &mut user).unwrap();
        assert_eq!((user, st.tag), (decoy, tag));
    }
    assert!(b.iprobe(Source::Any, Tag::Any).unwrap().is_none());
}

#[test]
fn bcast_of_a_rendezvous_sized_buffer_arrives_intact() {
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0003);
    let values: Vec<u64> = (0..400_000u64)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut sent = values.clone();
    let root = std::thread::spawn(move || a.bcast(la.comm(), BcastRole::Root, &mut sent));
    let mut got = vec![0u64; values.len()];
    b.bcast(lb.comm(), BcastRole::From { root: 0 }, &mut got)
        .unwrap();
    root.join().unwrap().unwrap();
    assert!(got == values, "the broadcast buffer differs");
}

#[test]
fn bcast_with_a_shorter_root_buffer_is_an_error_at_the_receivers() {
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0004);
    let root = std::thread::spawn(move || a.bcast(la.comm(), BcastRole::Root, &mut [1u32, 2, 3]));
    let mut got = [0u32; 4];
    match b.bcast(lb.comm(), BcastRole::From { root: 0 }, &mut got) {
        Err(BridgeError::InvalidArgument(m)) => assert!(m.contains("3 elements"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    root.join().unwrap().unwrap();
}

#[test]
fn collectives_check_their_arguments() {
    let (ea, eb, a, _b, la, _lb) = pair(0xc011_0005);
    // The root is not a rank of the remote group.
    match a.bcast(la.comm(), BcastRole::From { root: 1 }, &mut [0u8; 1]) {
        Err(BridgeError::InvalidArgument(m)) => assert!(m.contains("root 1"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A local communicator that is not the intercomm's local group.
    let two = ea
        .intercomm(0xc011_0006, 1, 2, vec![eb.endpoint()])
        .unwrap();
    match two.barrier(la.comm()) {
        Err(BridgeError::InvalidArgument(m)) => assert!(m.contains("local group"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    // A bystander of the root's group takes no part: it returns at once.
    a.bcast(la.comm(), BcastRole::Idle, &mut [0u8; 1]).unwrap();
}

#[test]
fn untyped_bcast_carries_the_bytes_and_the_senders_signature() {
    let (_ea, _eb, a, b, _la, lb) = pair(0xc011_0007);
    let values: Vec<u32> = (0..100_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let sig = u32::type_sig().unwrap();
    let payload = u32::encode(&values).unwrap().into_owned();
    let root = std::thread::spawn(move || a.bcast_send_bytes(&sig, 100_000, &payload));
    let (bytes, st) = b.bcast_recv_bytes(lb.comm(), 0, 400_000).unwrap();
    root.join().unwrap().unwrap();
    assert_eq!(
        (st.count, st.bytes, st.signature),
        (100_000, 400_000, sig.signature)
    );
    let mut got = vec![0u32; values.len()];
    u32::decode_into(st.format, &bytes, &mut got).unwrap();
    assert!(got == values, "the broadcast bytes differ");
}

#[test]
fn untyped_bcast_larger_than_the_receivers_room_is_a_truncation() {
    let (_ea, _eb, a, b, _la, lb) = pair(0xc011_0008);
    let sig = u8::type_sig().unwrap();
    let root = std::thread::spawn(move || a.bcast_send_bytes(&sig, 64, &[9u8; 64]));
    match b.bcast_recv_bytes(lb.comm(), 0, 16) {
        Err(BridgeError::Truncated {
            message_bytes,
            buffer_bytes,
        }) => {
            assert_eq!((message_bytes, buffer_bytes), (64, 16))
        }
        other => panic!("expected Truncated, got {other:?}"),
    }
    root.join().unwrap().unwrap();
    // A root that is no rank of the remote group: refused before any message.
    match b.bcast_recv_bytes(lb.comm(), 1, 16) {
        Err(BridgeError::InvalidArgument(m)) => assert!(m.contains("root 1"), "{m}"),
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// `values` as the message of a collective (u32 elements).
fn msg(values: &[u32]) -> CollMessage<'static> {
    CollMessage {
        sig: u32::type_sig().unwrap(),
        count: values.len() as u64,
        bytes: u32::encode(values).unwrap().into_owned().into(),
    }
}

/// The u32 elements of a received collective message.
fn values(got: &(Vec<u8>, Status)) -> Vec<u32> {
    let mut out = vec![0u32; got.1.count as usize];
    u32::decode_into(got.1.format, &got.0, &mut out).unwrap();
    out
}

#[test]
fn allreduce_leaders_exchange_rendezvous_sized_results_both_ways() {
    // Both leaders send before they receive: large messages (rendezvous)
    // must not wait for each other.
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0010);
    let big = |k: u32| (0..300_000u32).map(|i| i ^ k).collect::<Vec<u32>>();
    let (va, vb) = (big(0xa5a5), big(0x5a5a));
    let ma = msg(&va);
    let other = std::thread::spawn(move || a.allreduce_bytes(la.comm(), Some(Ok(ma)), 1_200_000));
    let got_b = b
        .allreduce_bytes(lb.comm(), Some(Ok(msg(&vb))), 1_200_000)
        .unwrap();
    let got_a = other.join().unwrap().unwrap();
    assert!(values(&got_b) == va, "b did not get a's result");
    assert!(values(&got_a) == vb, "a did not get b's result");
}

#[test]
fn a_failed_part_is_an_error_at_the_receiver_and_the_next_collective_works() {
    let (_ea, _eb, a, b, la, _lb) = pair(0xc011_0011);
    // The gathering leader could not make its message (say its native step
    // failed): the root gets an error naming the sender, not a wait.
    let failed = Err(BridgeError::InvalidArgument("native gather failed".into()));
    let sender = std::thread::spawn(move || (a.gather_send(la.comm(), 0, Some(failed)), a, la));
    match b.gather_recv(64) {
        Err(BridgeError::Protocol(m)) => assert!(m.contains("remote rank 0"), "{m}"),
        other => panic!("expected Protocol, got {other:?}"),
    }
    let (sent, a, la) = sender.join().unwrap();
    assert!(
        matches!(sent, Err(BridgeError::InvalidArgument(_))),
        "{sent:?}"
    );
    // Nothing stale is left: the next collective carries its own data.
    let sender = std::thread::spawn(move || a.reduce_send(la.comm(), 0, Some(Ok(msg(&[1, 2, 3])))));
    assert_eq!(values(&b.reduce_recv(64).unwrap()), [1, 2, 3]);
    sender.join().unwrap().unwrap();
}

#[test]
fn collectives_called_in_different_orders_are_an_error_not_a_wrong_value() {
    let (_ea, _eb, a, b, la, _lb) = pair(0xc011_0012);
    let sender = std::thread::spawn(move || a.reduce_send(la.comm(), 0, Some(Ok(msg(&[5])))));
    match b.gather_recv(64) {
        Err(BridgeError::Protocol(m)) => assert!(m.contains("same order"), "{m}"),
        other => panic!("expected Protocol, got {other:?}"),
    }
    sender.join().unwrap().unwrap();
}

#[test]
fn scatter_shares_the_roots_message_and_reduce_scatter_checks_the_split() {
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0013);
    // One receiving rank: its share is the whole message, with its status.
    let root = std::thread::spawn(move || (a.scatter_send(Ok(msg(&[4, 5, 6]))), a));
    let got = b.scatter_recv(lb.comm(), 0, 64).unwrap();
    assert_eq!(
        (values(&got), got.1.count, got.1.bytes),
        (vec![4, 5, 6], 3, 12)
    );
    let (sent, a) = root.join().unwrap();
    sent.unwrap();
    // Counts that do not add up to the other group's result: an error
    // naming both numbers, not a short or shifted share.
    let other = std::thread::spawn(move || {
        a.reduce_scatter_bytes(la.comm(), Some(Ok(msg(&[1, 2]))), None, 64)
            .map(|got| values(&got))
    });
    match b.reduce_scatter_bytes(lb.comm(), Some(Ok(msg(&[7, 8]))), Some(&[3]), 64) {
        Err(BridgeError::InvalidArgument(m)) => {
            assert!(m.contains("2 elements") && m.contains("add up to 3"), "{m}")
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
    assert_eq!(other.join().unwrap().unwrap(), [7, 8]);
}

#[test]
fn personalized_blocks_cross_once_each_way() {
    let (_ea, _eb, a, b, la, lb) = pair(0xc011_0014);
    let side = |ic: InterComm, local: Local, mine: u32| {
        move || {
            let mut got = Vec::new();
            ic.alltoall_bytes(
                |_| Ok(msg(&[mine, mine + 1])),
                |j, r| {
                    // Into a vector, and (the same bytes) into memory of our own.
                    assert_eq!(r.source(), j);
                    let (bytes, st) = r.into_vec(8)?;
                    got.push((j, values(&(bytes, st))));
                    Ok(())
                },
            )
            .unwrap();
            let (mut room, mut st) = ([0u8; 8], None);
            ic.alltoall_bytes(
                |_| Ok(msg(&[mine + 2, mine + 3])),
                |_, r| {
                    st = Some(r.into_slice(&mut room)?);
                    Ok(())
                },
            )
            .unwrap();
            got.push((9, values(&(room.to_vec(), st.unwrap()))));
            // A block the caller does not take is received all the same:
            // the next collective finds its own message.
            ic.alltoall_bytes(|_| Ok(msg(&[0])), |_, _| Ok(())).unwrap();
            let all = ic
                .allgatherv_bytes(local.comm(), Ok(msg(&[mine; 3])), |_| Ok(12))
                .unwrap();
            (got, all.iter().map(values).collect::<Vec<_>>())
        }
    };
    let other = std::thread::spawn(side(a, la, 10));
    let (got_b, all_b) = side(b, lb, 20)();
    let (got_a, all_a) = other.join().unwrap();
    assert_eq!(got_a, [(0, vec![20, 21]), (9, vec![22, 23])]);
    assert_eq!(got_b, [(0, vec![10, 11]), (9, vec![12, 13])]);
    assert_eq!((all_a, all_b), (vec![vec![20; 3]], vec![vec![10; 3]]));
}

#[test]
fn nonblocking_collectives_messages_go_to_their_own_operation_never_to_a_blocking_one() {
    let (_ea, _eb, a, b, la, _lb) = pair(0xc011_0020);
    // b posts the receives of operations 7 and 8 (two outstanding on one
    // communicator); a sends 8's message first, then a blocking
    // collective's, then 7's: each receive gets its own operation's.
    let r7 = b.nbc_irecv(0, 7, 64).unwrap();
    let r8 = b.nbc_irecv(0, 8, 64).unwrap();
    a.nbc_isend(0, 8, Ok(msg(&[8, 8]))).unwrap().wait().unwrap();
    let sender = std::thread::spawn(move || {
        a.reduce_send(la.comm(), 0, Some(Ok(msg(&[1, 2, 3]))))
            .unwrap();
        a.nbc_isend(0, 7, Ok(msg(&[7]))).unwrap().wait().unwrap();
        // A part that failed: the notice goes in its place, the error back.
        let failed = Err(BridgeError::InvalidArgument("native step failed".into()));
        assert!(matches!(
            a.nbc_isend(0, 9, failed),
            Err(BridgeError::InvalidArgument(_))
        ));
    });
    assert_eq!(values(&b.reduce_recv(64).unwrap()), [1, 2, 3]);
    sender.join().unwrap();
    let got7 = b.nbc_received(0, r7.wait()).unwrap();
    let got8 = b.nbc_received(0, r8.wait()).unwrap();
    assert_eq!((values(&got7), values(&got8)), (vec![7], vec![8, 8]));
    match b.nbc_received(0, b.nbc_irecv(0, 9, 64).unwrap().wait()) {
        Err(BridgeError::Protocol(m)) => assert!(m.contains("remote rank 0"), "{m}"),
        other => panic!("expected Protocol, got {other:?}"),
    }
}
