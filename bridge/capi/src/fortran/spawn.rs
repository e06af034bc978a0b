//! Fortran's side of `MPI_Comm_spawn` through the virtual machine: the
//! parents' `MPI_Comm_spawn` and `MPI_Comm_spawn_multiple`, and the
//! children's `MPI_Init`, `MPI_Init_thread` and `MPI_Comm_get_parent`; and
//! the other dynamic-process call whose bindings go past the C entry
//! point, `MPI_Comm_join` (`crate::join`).
//!
//! Open MPI's Fortran bindings (`ompi_comm_spawn_f`, which `use mpi_f08`
//! calls, and `mpi_comm_spawn_`, which `mpif.h` and `use mpi` call) and
//! MPICH's `use mpi_f08` ones (`mpi_comm_spawn_f08_`) call
//! `PMPI_Comm_spawn`, `PMPI_Init`, … directly, past this library's C entry
//! points (`crate::spawn`, `crate::parent`); MPICH's `mpif.h`/`use mpi` ones
//! reach the C calls themselves and are passed on. These entry points are
//! written by hand rather than generated from `mpi-functions.txt`: the
//! string arguments bring hidden lengths after `ierror` (gfortran: `size_t`;
//! Open MPI's `use mpi_f08` glue: `int` by value; only the low 32 bits are
//! read), which the generated shells do not carry.
//!
//! The conversions follow the implementations' own bindings: a string
//! loses its leading and trailing blanks (and anything from a NUL on); an
//! `argv` is a `character` array ended by a blank entry, or `MPI_ARGV_NULL`;
//! `spawn_multiple`'s `array_of_argv` is `(count, *)`, column-major, each
//! command's row ended by a blank entry, or `MPI_ARGVS_NULL`;
//! `array_of_errcodes` is passed on as C ints (a Fortran `INTEGER` is a C
//! `int` in both) unless it is `MPI_ERRCODES_IGNORE`. The sentinels are the
//! implementations' own symbols, found at run time.

use std::ffi::{c_char, c_int, CString};
use std::sync::OnceLock;

use mpi::ffi;

use super::convert::{
    comm_c2f, comm_f2c, get, info_f2c, next, no_next, open_mpi, put, symbol, Fint,
};
use crate::mpi_glue::{comm_null, MPI_Comm};
use crate::{join, parent, spawn};

/// Entries read at most from one Fortran `argv` that has no blank entry.
const MAX_ARGS: usize = 4096;

/// Addresses of the Fortran sentinels of spawn (0 where this MPI has none).
struct Sentinels {
    argv_null: [usize; 2],
    argvs_null: [usize; 2],
    errcodes_ignore: [usize; 2],
}

fn sentinels() -> &'static Sentinels {
    static S: OnceLock<Sentinels> = OnceLock::new();
    // Open MPI's common blocks (mpif.h, use mpi, use mpi_f08), MPICH's
    // `use mpi_f08` module variables.
    S.get_or_init(|| Sentinels {
        argv_null: [
            symbol(c"mpi_fortran_argv_null_"),
            symbol(c"__mpi_f08_link_constants_MOD_mpi_argv_null"),
        ],
        argvs_null: [
            symbol(c"mpi_fortran_argvs_null_"),
            symbol(c"__mpi_f08_link_constants_MOD_mpi_argvs_null"),
        ],
        errcodes_ignore: [
            symbol(c"mpi_fortran_errcodes_ignore_"),
            symbol(c"__mpi_f08_link_constants_MOD_mpi_errcodes_ignore"),
        ],
    })
}

fn is(p: usize, sentinels: &[usize; 2]) -> bool {
    p == 0 || sentinels.contains(&p)
}

/// A hidden length as passed: gfortran's `size_t`, or Open MPI's `int`
/// (whose upper half of the register is not defined).
fn length(len: usize) -> usize {
    len & 0xffff_ffff
}

/// `len` bytes at `s` as a string: up to the first NUL, without leading
/// and trailing blanks.
///
/// # Safety
/// `s` is null or points to `len` readable bytes.
unsafe fn fortran_text(s: *const c_char, len: usize) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts(s.cast::<u8>(), len) };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(len);
    String::from_utf8_lossy(bytes.get(..end).unwrap_or_default())
        .trim_matches(' ')
        .to_string()
}

fn c_string(s: String) -> CString {
    // No NUL is left in `s` (fortran_text stops at the first).
    CString::new(s).unwrap_or_default()
}

/// The entries of a blank-terminated Fortran `argv` found `stride` entries
/// apart from `first` (1 for `MPI_Comm_spawn`, `count` for a row of
/// `spawn_multiple`'s `array_of_argv`).
///
/// # Safety
/// `first` starts an array of entries of `len` bytes, every `stride`-th of
/// which up to a blank one is readable.
unsafe fn argv_entries(first: *const c_char, len: usize, stride: usize) -> Vec<CString> {
    let mut args = Vec::new();
    if len == 0 {
        return args;
    }
    for i in 0..MAX_ARGS {
        // SAFETY: the caller's contract: entry i is readable until a blank
        // one ended the array.
        let a = unsafe { fortran_text(first.add(i * stride * len), len) };
        if a.is_empty() {
            break;
        }
        args.push(c_string(a));
    }
    args
}

/// C's NULL-terminated `char *argv[]` over `args` (which must outlive it).
fn c_argv(args: &[CString]) -> Vec<*mut c_char> {
    args.iter()
        .map(|a| a.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}

fn errcodes(array: *mut Fint) -> *mut c_int {
    if is(array as usize, &sentinels().errcodes_ignore) {
        std::ptr::null_mut()
    } else {
        array
    }
}

// ------------------------------------------------------------ the bodies

/// `MPI_Comm_spawn` from Fortran: strings, argv and handles converted, then
/// this library's C `MPI_Comm_spawn`; `intercomm` written back as a Fortran
/// handle (`MPI_COMM_NULL` on failure, as in C).
///
/// # Safety
/// As the Fortran call: every argument a reference (or null), the two
/// strings of the given lengths.
#[allow(clippy::too_many_arguments)]
unsafe fn comm_spawn(
    command: *const c_char,
    argv: *const c_char,
    maxprocs: *const Fint,
    info: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    intercomm: *mut Fint,
    array_of_errcodes: *mut Fint,
    command_len: usize,
    argv_len: usize,
) -> c_int {
    // SAFETY: the program's string of its length.
    let command = c_string(unsafe { fortran_text(command, length(command_len)) });
    let args = if is(argv as usize, &sentinels().argv_null) {
        Vec::new()
    } else {
        // SAFETY: a blank-terminated Fortran argv of entries of its length.
        unsafe { argv_entries(argv, length(argv_len), 1) }
    };
    let mut c_args = c_argv(&args);
    let mut c: MPI_Comm = comm_null();
    // SAFETY: C strings and arrays that live across the call, converted
    // handles, the program's errcodes (or NULL for MPI_ERRCODES_IGNORE).
    let rc = unsafe {
        spawn::MPI_Comm_spawn(
            command.as_ptr(),
            c_args.as_mut_ptr(),
            int!(maxprocs),
            info_f2c(int!(info)),
            int!(root),
            comm_f2c(int!(comm)),
            &mut c,
            errcodes(array_of_errcodes),
        )
    };
    // SAFETY: the program's integer.
    unsafe { put(intercomm, comm_c2f(c)) };
    rc
}

/// `MPI_Comm_spawn_multiple` from Fortran, as [`comm_spawn`]; the arrays
/// are read at the root only (they are significant there only).
///
/// # Safety
/// As the Fortran call: `count` commands of `commands_len` bytes, an
/// `(count, *)` array of arguments of `argv_len` bytes (or
/// `MPI_ARGVS_NULL`), `count` maxprocs and infos.
#[allow(clippy::too_many_arguments)]
unsafe fn comm_spawn_multiple(
    count: *const Fint,
    commands: *const c_char,
    argvs: *const c_char,
    maxprocs: *const Fint,
    infos: *const Fint,
    root: *const Fint,
    comm: *const Fint,
    intercomm: *mut Fint,
    array_of_errcodes: *mut Fint,
    commands_len: usize,
    argv_len: usize,
) -> c_int {
    // SAFETY: Fortran integers, by reference (the caller's contract).
    let (c_comm, root_rank, n_given) = unsafe { (comm_f2c(int!(comm)), int!(root), int!(count)) };
    let mut rank: c_int = -1;
    // SAFETY: a converted handle and our integer; an invalid communicator
    // leaves rank at -1 and the C call reports it.
    unsafe { ffi::PMPI_Comm_rank(c_comm, &mut rank) };
    let n = if rank == root_rank {
        usize::try_from(n_given).unwrap_or(0)
    } else {
        0
    };
    let (commands_len, argv_len) = (length(commands_len), length(argv_len));
    let no_argvs = is(argvs as usize, &sentinels().argvs_null);
    let mut names = Vec::with_capacity(n);
    let mut rows = Vec::with_capacity(n);
    let mut np = Vec::with_capacity(n);
    let mut info = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: the root's arrays of `count` entries (the caller's
        // contract); row i of array_of_argv starts at entry i.
        unsafe {
            names.push(c_string(fortran_text(
                commands.add(i * commands_len),
                commands_len,
            )));
            rows.push(if no_argvs {
                Vec::new()
            } else {
                argv_entries(argvs.add(i * argv_len), argv_len, n)
            });
            np.push(get(maxprocs.add(i)).unwrap_or(0));
            info.push(info_f2c(get(infos.add(i)).unwrap_or(0)));
        }
    }
    let mut c_rows: Vec<Vec<*mut c_char>> = rows.iter().map(|r| c_argv(r)).collect();
    let mut c_names: Vec<*mut c_char> = names.iter().map(|s| s.as_ptr().cast_mut()).collect();
    let mut c_argvs: Vec<*mut *mut c_char> = c_rows.iter_mut().map(|r| r.as_mut_ptr()).collect();
    let mut c: MPI_Comm = comm_null();
    // SAFETY: arrays of `count` entries at the root (empty elsewhere, where
    // MPI ignores them), all living across the call; converted handles.
    let rc = unsafe {
        spawn::MPI_Comm_spawn_multiple(
            n_given,
            c_names.as_mut_ptr(),
            c_argvs.as_mut_ptr(),
            np.as_ptr(),
            info.as_ptr(),
            root_rank,
            c_comm,
            &mut c,
            errcodes(array_of_errcodes),
        )
    };
    // SAFETY: the program's integer.
    unsafe { put(intercomm, comm_c2f(c)) };
    rc
}

/// `MPI_Init` for a binding that calls `PMPI_Init` itself: this library's
/// C `MPI_Init` (a spawned child meets its parents there).
fn init() -> c_int {
    let mut argc: c_int = 0;
    let mut argv: *mut *mut c_char = std::ptr::null_mut();
    // SAFETY: an empty argument list, as the bindings pass.
    unsafe { parent::MPI_Init(&mut argc, &mut argv) }
}

/// `MPI_Init_thread`, as [`init`].
///
/// # Safety
/// `required` and `provided` are Fortran integers (or null).
unsafe fn init_thread(required: *const Fint, provided: *mut Fint) -> c_int {
    let mut argc: c_int = 0;
    let mut argv: *mut *mut c_char = std::ptr::null_mut();
    let mut got: c_int = 0;
    // SAFETY: an empty argument list, our out-integer.
    let rc = unsafe { parent::MPI_Init_thread(&mut argc, &mut argv, int!(required), &mut got) };
    // SAFETY: the program's integer.
    unsafe { put(provided, got) };
    rc
}

/// `MPI_Comm_get_parent`: the Isthmus intercommunicator of a spawned child.
///
/// # Safety
/// `parent` is a Fortran integer (or null).
unsafe fn get_parent(parent_comm: *mut Fint) -> c_int {
    let mut c: MPI_Comm = comm_null();
    // SAFETY: our out-handle.
    let rc = unsafe { parent::MPI_Comm_get_parent(&mut c) };
    if rc == 0 {
        // SAFETY: the program's integer.
        unsafe { put(parent_comm, comm_c2f(c)) };
    }
    rc
}

/// `MPI_Comm_join` from Fortran: the descriptor is a Fortran `INTEGER`;
/// this library's C `MPI_Comm_join` (an Isthmus intercommunicator across
/// implementations), `intercomm` written back as a Fortran handle
/// (`MPI_COMM_NULL` on failure, as in C).
///
/// # Safety
/// As the Fortran call: `fd` and `intercomm` Fortran integers (or null).
unsafe fn comm_join(fd: *const Fint, intercomm: *mut Fint) -> c_int {
    let mut c: MPI_Comm = comm_null();
    // SAFETY: the program's integer; our out-handle.
    let rc = unsafe { join::MPI_Comm_join(int!(fd), &mut c) };
    // SAFETY: the program's integer.
    unsafe { put(intercomm, comm_c2f(c)) };
    rc
}

// ------------------------------------------------------------ entry points

/// Defines the Fortran names of one call: `$ompi` (Open MPI's own body),
/// `$gfortran` names (Open MPI: the same body; MPICH: passed on, they call
/// the C entry point) and `$f08` (MPICH's `use mpi_f08`: the same body,
/// its handles being C's; Open MPI: passed on, it calls `$ompi`).
macro_rules! fortran_names {
    (
        $doc:literal, $body:ident,
        ompi: $ompi:ident, gfortran: [$g:ident: $gs:literal, $pg:ident: $pgs:literal], f08: $f08:ident: $f08s:literal,
        ($($a:ident: $t:ty),*), $ierror:ident
    ) => {
        #[doc = concat!("Open MPI's Fortran ", $doc, ".")]
        ///
        /// # Safety
        /// As the Fortran call: every argument a reference (or null), hidden
        /// string lengths last.
        #[no_mangle]
        pub unsafe extern "C" fn $ompi($($a: $t),*) {
            // SAFETY: the program's arguments (this function's contract).
            #[allow(unused_unsafe)]
            let rc = unsafe { $body!($($a),*) };
            // SAFETY: the program's ierror (or null).
            unsafe { put($ierror, rc) };
        }
        #[doc = concat!("gfortran's name of ", $doc, " (`mpif.h`, `use mpi`).")]
        ///
        /// # Safety
        /// As the Fortran call.
        #[no_mangle]
        pub unsafe extern "C" fn $g($($a: $t),*) {
            if open_mpi() {
                // SAFETY: the same arguments, same contract.
                return unsafe { $ompi($($a),*) };
            }
            pass_on!($gs, $ierror, ($($a: $t),*))
        }
        #[doc = concat!("gfortran's profiling name of ", $doc, ".")]
        ///
        /// # Safety
        /// As the Fortran call.
        #[no_mangle]
        pub unsafe extern "C" fn $pg($($a: $t),*) {
            if open_mpi() {
                // SAFETY: the same arguments, same contract.
                return unsafe { $ompi($($a),*) };
            }
            pass_on!($pgs, $ierror, ($($a: $t),*))
        }
        #[doc = concat!("MPICH's `use mpi_f08` ", $doc, ".")]
        ///
        /// # Safety
        /// As the Fortran call.
        #[no_mangle]
        pub unsafe extern "C" fn $f08($($a: $t),*) {
            if !open_mpi() {
                // SAFETY: the same arguments, same contract.
                return unsafe { $ompi($($a),*) };
            }
            pass_on!($f08s, $ierror, ($($a: $t),*))
        }
    };
}

macro_rules! spawn_body {
    ($command:ident, $argv:ident, $maxprocs:ident, $info:ident, $root:ident, $comm:ident,
     $intercomm:ident, $errcodes:ident, $ierror:ident, $command_len:ident, $argv_len:ident) => {
        comm_spawn(
            $command,
            $argv,
            $maxprocs,
            $info,
            $root,
            $comm,
            $intercomm,
            $errcodes,
            $command_len,
            $argv_len,
        )
    };
}

fortran_names!(
    "`MPI_Comm_spawn`", spawn_body,
    ompi: ompi_comm_spawn_f,
    gfortran: [mpi_comm_spawn_: c"mpi_comm_spawn_", pmpi_comm_spawn_: c"pmpi_comm_spawn_"],
    f08: mpi_comm_spawn_f08_: c"mpi_comm_spawn_f08_",
    (command: *const c_char, argv: *const c_char, maxprocs: *const Fint, info: *const Fint,
     root: *const Fint, comm: *const Fint, intercomm: *mut Fint, errcodes: *mut Fint,
     ierror: *mut Fint, command_len: usize, argv_len: usize),
    ierror
);

macro_rules! spawn_multiple_body {
    ($count:ident, $commands:ident, $argvs:ident, $maxprocs:ident, $infos:ident, $root:ident,
     $comm:ident, $intercomm:ident, $errcodes:ident, $ierror:ident, $commands_len:ident,
     $argv_len:ident) => {
        comm_spawn_multiple(
            $count,
            $commands,
            $argvs,
            $maxprocs,
            $infos,
            $root,
            $comm,
            $intercomm,
            $errcodes,
            $commands_len,
            $argv_len,
        )
    };
}

fortran_names!(
    "`MPI_Comm_spawn_multiple`", spawn_multiple_body,
    ompi: ompi_comm_spawn_multiple_f,
    gfortran: [
        mpi_comm_spawn_multiple_: c"mpi_comm_spawn_multiple_",
        pmpi_comm_spawn_multiple_: c"pmpi_comm_spawn_multiple_"
    ],
    f08: mpi_comm_spawn_multiple_f08_: c"mpi_comm_spawn_multiple_f08_",
    (count: *const Fint, commands: *const c_char, argvs: *const c_char, maxprocs: *const Fint,
     infos: *const Fint, root: *const Fint, comm: *const Fint, intercomm: *mut Fint,
     errcodes: *mut Fint, ierror: *mut Fint, commands_len: usize, argv_len: usize),
    ierror
);

macro_rules! init_body {
    ($ierror:ident) => {
        init()
    };
}

fortran_names!(
    "`MPI_Init` (a spawned child meets its parents)", init_body,
    ompi: ompi_init_f,
    gfortran: [mpi_init_: c"mpi_init_", pmpi_init_: c"pmpi_init_"],
    f08: mpi_init_f08_: c"mpi_init_f08_",
    (ierror: *mut Fint),
    ierror
);

macro_rules! init_thread_body {
    ($required:ident, $provided:ident, $ierror:ident) => {
        init_thread($required, $provided)
    };
}

fortran_names!(
    "`MPI_Init_thread` (a spawned child meets its parents)", init_thread_body,
    ompi: ompi_init_thread_f,
    gfortran: [mpi_init_thread_: c"mpi_init_thread_", pmpi_init_thread_: c"pmpi_init_thread_"],
    f08: mpi_init_thread_f08_: c"mpi_init_thread_f08_",
    (required: *const Fint, provided: *mut Fint, ierror: *mut Fint),
    ierror
);

macro_rules! get_parent_body {
    ($parent:ident, $ierror:ident) => {
        get_parent($parent)
    };
}

fortran_names!(
    "`MPI_Comm_get_parent` (a spawned child's intercommunicator)", get_parent_body,
    ompi: ompi_comm_get_parent_f,
    gfortran: [
        mpi_comm_get_parent_: c"mpi_comm_get_parent_",
        pmpi_comm_get_parent_: c"pmpi_comm_get_parent_"
    ],
    f08: mpi_comm_get_parent_f08_: c"mpi_comm_get_parent_f08_",
    (parent_comm: *mut Fint, ierror: *mut Fint),
    ierror
);

macro_rules! join_body {
    ($fd:ident, $intercomm:ident, $ierror:ident) => {
        comm_join($fd, $intercomm)
    };
}

fortran_names!(
    "`MPI_Comm_join` (an Isthmus intercommunicator over a connected socket)", join_body,
    ompi: ompi_comm_join_f,
    gfortran: [mpi_comm_join_: c"mpi_comm_join_", pmpi_comm_join_: c"pmpi_comm_join_"],
    f08: mpi_comm_join_f08_: c"mpi_comm_join_f08_",
    (fd: *const Fint, intercomm: *mut Fint, ierror: *mut Fint),
    ierror
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_strings_lose_their_blanks_and_stop_at_a_nul() {
        let s = b"  ./worker   ";
        // SAFETY: the array and its length.
        let t = unsafe { fortran_text(s.as_ptr().cast(), s.len()) };
        assert_eq!(t, "./worker");
        let s = b"a b\0junk";
        // SAFETY: as above.
        assert_eq!(unsafe { fortran_text(s.as_ptr().cast(), s.len()) }, "a b");
        // SAFETY: null is allowed.
        assert_eq!(unsafe { fortran_text(std::ptr::null(), 4) }, "");
        assert_eq!(length(0xdead_beef_0000_0007), 7);
    }

    #[test]
    fn argv_ends_at_its_blank_entry_and_rows_are_read_by_stride() {
        // character(len=4) :: argv(3) = ['one ', 'two ', '    ']
        let argv = b"one two     ";
        // SAFETY: three entries of 4 bytes, the last blank.
        let args = unsafe { argv_entries(argv.as_ptr().cast(), 4, 1) };
        assert_eq!(args, [c"one".to_owned(), c"two".to_owned()]);
        // character(len=2) :: argvs(2, 3): column-major, row 2 is
        // argvs(2, :) = ['b1', 'b2', '  '].
        let argvs = b"a1b1a2b2    ";
        // SAFETY: six entries of 2 bytes; row 2 starts at entry 1.
        let row = unsafe { argv_entries(argvs.as_ptr().add(2).cast(), 2, 2) };
        assert_eq!(row, [c"b1".to_owned(), c"b2".to_owned()]);
        // A blank-only (or zero-filled) first entry: no arguments.
        let none = [0u8; 8];
        // SAFETY: two entries of 4 bytes.
        assert!(unsafe { argv_entries(none.as_ptr().cast(), 4, 1) }.is_empty());
        let c = c_argv(&args);
        assert_eq!(c.len(), 3);
        assert!(c.last().is_some_and(|p| p.is_null()));
    }
}
