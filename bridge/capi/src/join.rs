//! `MPI_Comm_join` across implementations: two processes holding the two
//! ends of a connected socket get an Isthmus intercommunicator, as if one
//! had accepted on a port (`ports`) and the other connected to it.
//!
//! Over the socket, symmetrically, each side writes a hello of fixed length
//! (`ISTHMUS-JOIN-1 <16 hex digits>\n`: a random number) and reads the
//! other's. The side with the larger number opens a port and writes it
//! (`isthmus-port:<32 hex>\n`, fixed length); the other reads it; then they
//! accept and connect on it (`ports::form`). Equal numbers draw again.
//!
//! The other end is a stranger until it said hello: every read is of a known
//! length, stops at the first byte that cannot be an Isthmus hello, and has
//! a deadline (`ISTHMUS_CONNECT_TIMEOUT`, else 300 s, for the whole join), so
//! a peer that speaks something else, says nothing or closes gives a precise
//! error instead of a hang. Each side reads exactly what the other wrote and
//! nothing more, and the descriptor is never closed: the socket is
//! quiescent and usable after the call, as MPI says.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use isthmus_bridge::BridgeError;

use crate::errors::{self, Class};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::ports::{default_timeout, form, Failure, PORT_PREFIX};

const CALL: &str = "MPI_Comm_join";
const MAGIC: &[u8] = b"ISTHMUS-JOIN-1 ";
/// The hello: the magic, 16 hex digits, a newline.
const HELLO_BYTES: usize = 15 + 16 + 1;
/// The port line: `isthmus-port:`, 32 hex digits, a newline.
const PORT_LINE_BYTES: usize = 13 + 32 + 1;
/// Draws before two equal numbers are taken for a peer that echoes.
const DRAWS: usize = 4;

/// Why a join failed before the port was formed: class and sentence.
struct Refusal(Class, String);

fn self_comm() -> MPI_Comm {
    // SAFETY: reading rsmpi's exported constant.
    unsafe { mpi::ffi::RSMPI_COMM_SELF }
}

/// # Safety
/// As `MPI_Comm_join`: `fd` is a connected stream socket, `intercomm` an
/// out-pointer.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut MPI_Comm) -> c_int {
    if intercomm.is_null() {
        let code = errors::code(
            Class::InvalidArgument,
            &format!("{CALL}: intercomm is NULL"),
        );
        return errors::raise(self_comm(), code);
    }
    // SAFETY: the program's out-pointer, checked non-null.
    unsafe { *intercomm = comm_null() };
    let seconds = default_timeout();
    let timeout = Duration::from_secs_f64(seconds.clamp(0.001, 1e7));
    let deadline = Instant::now() + timeout;
    let sock = Socket { fd, deadline };
    let (port, accepts) = match agree(&sock) {
        Ok(p) => p,
        Err(Refusal(class, why)) => {
            let code = errors::code(class, &format!("{CALL} on descriptor {fd}: {why}"));
            return errors::raise(self_comm(), code);
        }
    };
    let (mine, theirs) = match accepts {
        true => (format!("{port}/accept"), format!("{port}/connect")),
        false => (format!("{port}/connect"), format!("{port}/accept")),
    };
    let left = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    match form(self_comm(), &mine, &theirs, left) {
        Ok(c) => {
            // SAFETY: the program's out-pointer, checked non-null.
            unsafe { *intercomm = c };
            0
        }
        Err(Failure::Mpi(code)) => code,
        Err(Failure::Bridge(BridgeError::RemoteNotReady { waited, .. })) => {
            let code = errors::code(
                Class::RemoteNotReady,
                &format!(
                    "{CALL} on descriptor {fd}: the other process agreed on port {port} but did \
                     not meet there within {waited:?}"
                ),
            );
            errors::raise(self_comm(), code)
        }
        Err(Failure::Bridge(e)) => errors::fail(self_comm(), CALL, &e),
    }
}

/// The hello exchange: the port both sides meet on, and whether this side
/// accepts on it (it drew the larger number and opened it).
fn agree(sock: &Socket) -> Result<(String, bool), Refusal> {
    for _ in 0..DRAWS {
        let mine = uuid::Uuid::new_v4().as_u64_pair().0;
        sock.write(format!("ISTHMUS-JOIN-1 {mine:016x}\n").as_bytes())?;
        let hello = sock.read(HELLO_BYTES, "a hello", |got| {
            let n = got.len().min(MAGIC.len());
            got.get(..n) == MAGIC.get(..n)
        })?;
        let theirs = hello
            .get(MAGIC.len()..HELLO_BYTES - 1)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .filter(|_| hello.last() == Some(&b'\n'))
            .ok_or_else(|| {
                Refusal(
                    Class::Port,
                    format!(
                        "the other end's hello is malformed ({:?})",
                        String::from_utf8_lossy(&hello)
                    ),
                )
            })?;
        if mine == theirs {
            continue;
        }
        if mine > theirs {
            let port = format!("{PORT_PREFIX}{}", uuid::Uuid::new_v4().simple());
            sock.write(format!("{port}\n").as_bytes())?;
            return Ok((port, true));
        }
        let line = sock.read(PORT_LINE_BYTES, "the port", |got| {
            let n = got.len().min(PORT_PREFIX.len());
            got.get(..n) == PORT_PREFIX.as_bytes().get(..n)
        })?;
        let port = std::str::from_utf8(line.get(..PORT_LINE_BYTES - 1).unwrap_or_default())
            .ok()
            .filter(|p| {
                p.strip_prefix(PORT_PREFIX)
                    .is_some_and(|id| id.chars().all(|c| c.is_ascii_hexdigit()))
                    && line.last() == Some(&b'\n')
            })
            .ok_or_else(|| {
                Refusal(
                    Class::Port,
                    format!(
                        "the other end sent a malformed port ({:?})",
                        String::from_utf8_lossy(&line)
                    ),
                )
            })?;
        return Ok((port.to_string(), false));
    }
    Err(Refusal(
        Class::Port,
        format!(
            "the other end answered {DRAWS} hellos with this side's own random number: it echoes \
             what it reads instead of joining"
        ),
    ))
}

/// The program's socket, borrowed: never closed here.
struct Socket {
    fd: c_int,
    deadline: Instant,
}

impl Socket {
    /// Waits until `events` or the deadline; false at the deadline.
    fn ready(&self, events: libc::c_short, what: &str) -> Result<bool, Refusal> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let ms = c_int::try_from(left.as_millis().max(1)).unwrap_or(c_int::MAX);
            let mut p = libc::pollfd {
                fd: self.fd,
                events,
                revents: 0,
            };
            // SAFETY: one pollfd, ours.
            let n = unsafe { libc::poll(&mut p, 1, ms) };
            if n > 0 {
                if p.revents & libc::POLLNVAL != 0 {
                    return Err(Refusal(
                        Class::InvalidArgument,
                        "the descriptor is not open".into(),
                    ));
                }
                return Ok(true);
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::Interrupted {
                    return Err(Refusal(Class::Other, format!("waiting to {what}: {e}")));
                }
            }
        }
    }

    /// Writes all of `bytes` (no SIGPIPE: a closed peer is an error).
    fn write(&self, bytes: &[u8]) -> Result<(), Refusal> {
        let mut done = 0;
        while let Some(rest) = bytes.get(done..).filter(|r| !r.is_empty()) {
            if !self.ready(libc::POLLOUT, "write")? {
                return Err(Refusal(
                    Class::RemoteNotReady,
                    format!(
                        "the other end took no bytes within the deadline ({:.1} s, \
                         ISTHMUS_CONNECT_TIMEOUT)",
                        default_timeout()
                    ),
                ));
            }
            // SAFETY: `rest` is a live buffer of that length.
            let n = unsafe {
                libc::send(
                    self.fd,
                    rest.as_ptr().cast(),
                    rest.len(),
                    libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.kind() {
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => continue,
                    _ => {
                        return Err(Refusal(
                            Class::PeerFailed,
                            format!("cannot write to the socket: {e}"),
                        ))
                    }
                }
            }
            done += usize::try_from(n).unwrap_or(0);
        }
        Ok(())
    }

    /// Reads exactly `len` bytes (never more), failing at once when what
    /// came so far is not what `fits` accepts.
    fn read(
        &self,
        len: usize,
        what: &str,
        fits: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<u8>, Refusal> {
        let mut got = vec![0u8; len];
        let mut have = 0;
        let stranger = |got: &[u8]| {
            Refusal(
                Class::Port,
                format!(
                    "the other end is not joining through Isthmus: waiting for {what}, it sent \
                     {:?} (is its program run with libisthmus?)",
                    String::from_utf8_lossy(got)
                ),
            )
        };
        while have < len {
            if !self.ready(libc::POLLIN, "read")? {
                let said = match have {
                    0 => "said nothing".to_string(),
                    n => format!(
                        "sent only {n} of {len} bytes ({:?})",
                        String::from_utf8_lossy(got.get(..n).unwrap_or_default())
                    ),
                };
                return Err(Refusal(
                    Class::RemoteNotReady,
                    format!(
                        "waiting for {what}, the other end {said} within the deadline ({:.1} s, \
                         ISTHMUS_CONNECT_TIMEOUT)",
                        default_timeout()
                    ),
                ));
            }
            let Some(rest) = got.get_mut(have..) else {
                break;
            };
            // SAFETY: `rest` is a live buffer of that length.
            let n = unsafe {
                libc::recv(
                    self.fd,
                    rest.as_mut_ptr().cast(),
                    rest.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            match n {
                0 => {
                    return Err(Refusal(
                        Class::PeerFailed,
                        format!(
                            "waiting for {what}, the other end closed the socket after {have} \
                             bytes"
                        ),
                    ))
                }
                n if n < 0 => {
                    let e = std::io::Error::last_os_error();
                    match e.kind() {
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => {}
                        _ => {
                            return Err(Refusal(
                                Class::PeerFailed,
                                format!("cannot read the socket: {e}"),
                            ))
                        }
                    }
                }
                n => {
                    have += usize::try_from(n).unwrap_or(0);
                    let so_far = got.get(..have).unwrap_or_default();
                    if !fits(so_far) {
                        return Err(stranger(so_far));
                    }
                }
            }
        }
        Ok(got)
    }
}
