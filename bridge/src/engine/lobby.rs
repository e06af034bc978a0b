//! The lobby: one thread that takes every accepted data connection through
//! its handshake and admission, on non-blocking sockets, so that a
//! connection waiting there costs a descriptor and a few hundred bytes but
//! no thread — a stranger who connects and says nothing, or completes the
//! handshake under an id no table names, pins nothing but that.
//!
//! A connection's way: HELLO (read as it trickles in) → our signed challenge
//! → PROOF → if a table names the claimed process, the signature is checked
//! and the credit grant sent, and the connection goes to the poller
//! (`Shared::serve`); else "grant follows" is sent and the connection waits,
//! unwatched (what the connector sends meanwhile stays in the socket), until
//! a table names it or its deadline passes. Deadlines: the handshake's from
//! accept to PROOF, the admission timeout from then on. Every write here is
//! a few hundred bytes at most into a socket whose send buffer holds nothing
//! else, so a non-blocking write that does not take them whole means a
//! broken peer, which is refused.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use tracing::{debug, warn};

use super::shared::Shared;
use crate::admission::{Arrival, Source, WAKE};
use crate::frame::{FrameHeader, GRANT_FOLLOWS};
use crate::handshake::{self, Challenged, Claim, HELLO_LEN, PROOF_LEN};
use crate::transport::{self, Offer, Stream};

/// Where a connection is in the lobby.
enum Phase {
    /// Reading HELLO.
    Hello { buf: [u8; HELLO_LEN], got: usize },
    /// Challenge sent; reading PROOF.
    Proof {
        challenged: Challenged,
        buf: [u8; PROOF_LEN],
        got: usize,
    },
    /// "Grant follows" sent; waiting for a table that names the claimed process.
    Waiting(Claim),
}

struct Guest {
    stream: Stream,
    source: Source,
    via: String,
    deadline: Instant,
    phase: Phase,
    /// Registered with the poll (reading); false while waiting for a table.
    watched: bool,
    /// The shared-memory segment offered with our first CREDIT frame, if any.
    offer: Option<Offer>,
    /// Our first CREDIT frame went out.
    notified: bool,
}

/// What happens to a guest after it made progress.
enum Next {
    /// Nothing more to read now.
    Stay,
    /// The claimed process's key is known: check and admit.
    Admit,
    /// Refused (logged by the caller with the claimed id, if any).
    Refuse(String),
}

/// The lobby thread's body: runs until the admission is closed.
pub(crate) fn run(shared: Arc<Shared>, mut poll: Poll) {
    let mut guests: HashMap<Token, Guest> = HashMap::new();
    let mut next = 1usize;
    let mut events = Events::with_capacity(256);
    loop {
        let now = Instant::now();
        let timeout = guests
            .values()
            .map(|g| g.deadline)
            .min()
            .map(|d| d.saturating_duration_since(now) + Duration::from_millis(1));
        if let Err(e) = poll.poll(&mut events, timeout) {
            if e.kind() != io::ErrorKind::Interrupted {
                warn!(error = %e, "the admission poll failed; no more data connections are admitted");
                close_all(&shared, &mut guests);
                return;
            }
        }
        for ev in events.iter() {
            let token = ev.token();
            if token == WAKE {
                continue;
            }
            advance(&shared, &poll, &mut guests, token);
        }
        let work = shared.admission.work();
        if work.closed {
            close_all(&shared, &mut guests);
            return;
        }
        for a in work.arrivals {
            let token = Token(next);
            next = next.wrapping_add(1).max(1);
            if let Some(token) = enter(&shared, &poll, &mut guests, token, a) {
                // Bytes that came before registering are read now.
                advance(&shared, &poll, &mut guests, token);
            }
        }
        if work.learnt {
            let named: Vec<Token> = guests
                .iter()
                .filter(|(_, g)| match &g.phase {
                    Phase::Waiting(claim) => shared.admission.known(claim.peer).is_some(),
                    _ => false,
                })
                .map(|(t, _)| *t)
                .collect();
            for t in named {
                if let Some(g) = guests.remove(&t) {
                    admit(&shared, &poll, g);
                }
            }
        }
        let now = Instant::now();
        let late: Vec<Token> = guests
            .iter()
            .filter(|(_, g)| g.deadline <= now)
            .map(|(t, _)| *t)
            .collect();
        for t in late {
            if let Some(g) = guests.remove(&t) {
                let reason = match g.phase {
                    Phase::Waiting(_) => {
                        "no remote group we hold names this process (waited for its table until the deadline)"
                    }
                    _ => "handshake: no answer before the handshake deadline",
                };
                refuse(&shared, &poll, g, reason);
            }
        }
    }
}

/// Register a new connection; None if it was refused at once.
fn enter(
    shared: &Shared,
    poll: &Poll,
    guests: &mut HashMap<Token, Guest>,
    token: Token,
    a: Arrival,
) -> Option<Token> {
    let guest = Guest {
        stream: a.stream,
        source: a.source,
        via: a.via,
        deadline: a.at + shared.limits.handshake_timeout,
        phase: Phase::Hello {
            buf: [0; HELLO_LEN],
            got: 0,
        },
        watched: false,
        offer: None,
        notified: false,
    };
    let fd = guest.stream.as_raw_fd();
    let registered = guest.stream.set_nonblocking(true).and_then(|()| {
        poll.registry()
            .register(&mut SourceFd(&fd), token, Interest::READABLE)
    });
    if let Err(e) = registered {
        refuse(
            shared,
            poll,
            guest,
            &format!("cannot watch the socket: {e}"),
        );
        return None;
    }
    guests.insert(
        token,
        Guest {
            watched: true,
            ..guest
        },
    );
    Some(token)
}

/// Read what the guest sent and move it on.
fn advance(shared: &Arc<Shared>, poll: &Poll, guests: &mut HashMap<Token, Guest>, token: Token) {
    let Some(g) = guests.get_mut(&token) else {
        return;
    };
    match step(shared, g) {
        Next::Stay => {
            if let Phase::Waiting(_) = g.phase {
                // Nothing more is read until it is admitted.
                unwatch(poll, g);
            }
        }
        Next::Admit => {
            if let Some(g) = guests.remove(&token) {
                admit(shared, poll, g);
            }
        }
        Next::Refuse(reason) => {
            if let Some(g) = guests.remove(&token) {
                refuse(shared, poll, g, &reason);
            }
        }
    }
}

/// Read until the socket has nothing more or the phase needs no more.
fn step(shared: &Shared, g: &mut Guest) -> Next {
    loop {
        match &mut g.phase {
            Phase::Hello { buf, got } => match fill(&mut g.stream, buf, got) {
                Ok(false) => return Next::Stay,
                Ok(true) => {}
                Err(e) => return Next::Refuse(reason("reading the handshake", e)),
            },
            Phase::Proof { buf, got, .. } => match fill(&mut g.stream, buf, got) {
                Ok(false) => return Next::Stay,
                Ok(true) => {}
                Err(e) => return Next::Refuse(reason("reading the connector's proof", e)),
            },
            Phase::Waiting(_) => return Next::Stay,
        }
        // The phase's bytes are all here.
        let phase = std::mem::replace(
            &mut g.phase,
            Phase::Hello {
                buf: [0; HELLO_LEN],
                got: 0,
            },
        );
        match phase {
            Phase::Hello { buf, .. } => match handshake::answer_hello(&buf, &shared.identity) {
                Ok((reply, challenged)) => {
                    if let Err(e) = write_now(&mut g.stream, &reply) {
                        return Next::Refuse(reason("sending our challenge", e));
                    }
                    g.phase = Phase::Proof {
                        challenged,
                        buf: [0; PROOF_LEN],
                        got: 0,
                    };
                }
                Err(r) => {
                    let _ = write_now(&mut g.stream, &r.reply);
                    return Next::Refuse(r.reason);
                }
            },
            Phase::Proof {
                challenged, buf, ..
            } => {
                let claim = challenged.with_proof(buf);
                let named = shared.admission.known(claim.peer).is_some();
                g.phase = Phase::Waiting(claim);
                if named {
                    return Next::Admit;
                }
                let mut notice = FrameHeader::credit(0);
                notice.seq = GRANT_FOLLOWS;
                if let Err(e) = first_credit(shared, g, &notice) {
                    return Next::Refuse(reason("telling it that admission is pending", e));
                }
                // From now on the admission deadline.
                g.deadline = Instant::now() + shared.limits.admission_timeout;
                return Next::Stay;
            }
            waiting @ Phase::Waiting(_) => {
                g.phase = waiting;
                return Next::Stay;
            }
        }
    }
}

/// Read into `buf[*got..]` without blocking; true once it is full.
fn fill(stream: &mut Stream, buf: &mut [u8], got: &mut usize) -> io::Result<bool> {
    while let Some(rest) = buf.get_mut(*got..).filter(|r| !r.is_empty()) {
        match stream.read(rest) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => *got += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Write all of `bytes` at once on the non-blocking socket (see the module
/// comment: a socket that cannot take them is a broken peer's).
fn write_now(stream: &mut Stream, bytes: &[u8]) -> io::Result<()> {
    let mut done = 0;
    while let Some(rest) = bytes.get(done..).filter(|r| !r.is_empty()) {
        match stream.write(rest) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the peer does not read what we send",
                ))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn reason(step: &str, e: io::Error) -> String {
    match e.kind() {
        io::ErrorKind::UnexpectedEof => format!("{step}: connection closed"),
        _ => format!("{step}: {e}"),
    }
}

fn unwatch(poll: &Poll, g: &mut Guest) {
    if std::mem::take(&mut g.watched) {
        let fd = g.stream.as_raw_fd();
        let _ = poll.registry().deregister(&mut SourceFd(&fd));
    }
}

/// Check the claim of a guest whose process a table names; if it holds,
/// grant its window and hand it to the poller.
fn admit(shared: &Arc<Shared>, poll: &Poll, mut g: Guest) {
    let checked = match &g.phase {
        Phase::Waiting(claim) => match shared.admission.known(claim.peer) {
            Some(key) => claim.check(&key).map(|()| claim.peer),
            None => Err("no remote group we hold names this process".to_owned()),
        },
        _ => Err("internal: admitted before its proof".to_owned()),
    };
    let peer = match checked {
        Ok(peer) => peer,
        Err(r) => return refuse(shared, poll, g, &r),
    };
    unwatch(poll, &mut g);
    shared.admission.left(g.source);
    let grant = shared.ledger.open(peer);
    let credit = FrameHeader::credit(grant);
    let sent = match &g.phase {
        // The "grant follows" notice was our first CREDIT frame (with the offer).
        Phase::Waiting(_) if g.notified => write_now(&mut g.stream, &credit.encode()),
        _ => first_credit(shared, &mut g, &credit),
    }
    .and_then(|()| g.stream.set_nonblocking(false));
    if let Err(e) = sent {
        warn!(%peer, via = %g.via, error = %e, "dropping data connection: cannot send its credit grant");
        shared.ledger.close(peer);
        g.stream.shutdown();
        return;
    }
    debug!(%peer, via = %g.via, grant, shm_offered = g.offer.is_some(), "accepted data connection");
    shared.serve(peer, transport::accepted(g.stream, g.offer));
}

/// Our first CREDIT frame on a connection (the grant or the "grant
/// follows" notice), with a shared-memory segment offered if this
/// connection may use one (see `transport::shm`).
fn first_credit(shared: &Shared, g: &mut Guest, hdr: &FrameHeader) -> io::Result<()> {
    g.notified = true;
    let bytes = hdr.encode();
    g.offer = transport::offer(
        &g.stream,
        shared.limits.local_transport,
        shared.limits.single_copy.is_some(),
    );
    let sent = match &g.offer {
        Some(o) => match transport::send_offer(&g.stream, &bytes, o) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "the peer does not read what we send",
                ))
            }
            Err(e) => return Err(e),
        },
        None => 0,
    };
    write_now(&mut g.stream, bytes.get(sent..).unwrap_or_default())
}

/// Close a guest's connection (logged with the claimed id once known).
fn refuse(shared: &Shared, poll: &Poll, mut g: Guest, reason: &str) {
    unwatch(poll, &mut g);
    shared.admission.left(g.source);
    match &g.phase {
        Phase::Waiting(claim) => {
            warn!(via = %g.via, source = %g.source, claimed = %claim.peer, %reason, "refusing data connection")
        }
        _ => warn!(via = %g.via, source = %g.source, %reason, "refusing data connection"),
    }
    g.stream.shutdown();
}

/// Shutdown: close every connection still in the lobby.
fn close_all(shared: &Shared, guests: &mut HashMap<Token, Guest>) {
    for (_, g) in guests.drain() {
        shared.admission.left(g.source);
        g.stream.shutdown();
    }
}
