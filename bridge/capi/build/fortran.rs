//! The Fortran entry points (included by `src/fortran/mod.rs`, whose
//! helpers they call).
//!
//! Each implementation's Fortran names of a call `MPI_X`:
//! - Open MPI: `ompi_x_f` (what `use mpi_f08` calls), `mpi_x_` (what
//!   `mpif.h` and `use mpi` call) and `pmpi_x_` (the profiling name, and
//!   what `use mpi_f08` calls for a `LOGICAL` argument); they all call
//!   `PMPI_X` directly, past libisthmus's C `MPI_X`.
//! - MPICH: `mpi_x_` and `pmpi_x_` (which call the C `MPI_X`, interposed in
//!   C) and `mpi_x_f08_` (`use mpi_f08`; which calls `PMPI_X` directly for
//!   the calls without a buffer).
//!
//! Both builds define the same names, told apart at run time (see
//! `open_mpi`): a name of the other implementation, or one whose call
//! reaches libisthmus's C entry point anyway, passes the call on to the MPI
//! library's own definition (`dlsym(RTLD_NEXT)`).

use std::fmt::Write as _;

use crate::table::{Fortran, Prototype};

/// Words a refusal passes on beyond `ierror`: room for hidden string lengths.
const SPARE: usize = 4;

/// The statement passing a call on to the next definition of `f`.
fn pass_on(f: &str, types: &str, args: &str, ierror: &str) -> String {
    format!(
        "    static NEXT: OnceLock<usize> = OnceLock::new();\n    \
         match next(&NEXT, c\"{f}\") {{\n        \
         // SAFETY: the program's ierror (or null).\n        \
         0 => unsafe {{ put({ierror}, no_next(\"{f}\")) }},\n        \
         p => {{\n            \
         // SAFETY: the MPI library's own definition of this very Fortran\n            \
         // call, whose arguments are all references (ierror last) and are\n            \
         // passed on unchanged.\n            \
         let f: unsafe extern \"C\" fn({types}) = unsafe {{ std::mem::transmute(p) }};\n            \
         // SAFETY: as above.\n            \
         unsafe {{ f({args}) }}\n        }}\n    }}\n"
    )
}

/// A Fortran entry point's head.
fn head(out: &mut String, doc: &str, f: &str, params: &str) {
    let _ = write!(
        out,
        "/// {doc}\n///\n/// # Safety\n/// As the Fortran MPI call: every argument a reference (or null).\n\
         #[no_mangle]\npub unsafe extern \"C\" fn {f}({params}) {{\n"
    );
}

/// Every Fortran name of the refused call `p`: on an Isthmus communicator
/// Isthmus's error in `ierror` (on a merged one the body
/// `fortran::merged::x` instead if `merged_body`: a `+merged fortran`
/// line), otherwise passed on. Arguments are words (see build.rs),
/// `ierror` the one after the C parameters.
pub fn refusal(out: &mut String, p: &Prototype, merged_body: bool) {
    names(out, p, true, merged_body);
}

/// Every Fortran name of the `native` call `p` with a `+merged fortran`
/// line: the body `fortran::merged::x` on a merged communicator, passed on
/// otherwise (an Isthmus intercommunicator's local handle answers, as in C).
pub fn merged_only(out: &mut String, p: &Prototype) {
    names(out, p, false, true);
}

/// The Fortran names of `p` (see [`refusal`] and [`merged_only`]).
fn names(out: &mut String, p: &Prototype, refused: bool, merged_body: bool) {
    if p.comms.is_empty() {
        return;
    }
    let (name, lower, short) = (&p.name, p.lower(), p.short());
    let ierror = p.params.len();
    let words = ierror + 1 + SPARE;
    let params = (0..words)
        .map(|i| format!("a{i}: usize"))
        .collect::<Vec<_>>()
        .join(", ");
    let args = (0..words)
        .map(|i| format!("a{i}"))
        .collect::<Vec<_>>()
        .join(", ");
    let types = vec!["usize"; words].join(", ");
    let check = p
        .comms
        .iter()
        .map(|i| format!("bridge_comm_word(a{i})"))
        .collect::<Vec<_>>()
        .join(".or_else(|| ")
        + &")".repeat(p.comms.len() - 1);
    let body_args = (0..p.params.len())
        .map(|i| format!("a{i} as _"))
        .collect::<Vec<_>>()
        .join(", ");
    let ierror = format!("a{ierror} as *mut Fint");
    // On an Isthmus communicator: the merged body, then the refusal.
    let on_isthmus = |indent: &str| {
        let mut s = String::new();
        if merged_body {
            let _ = write!(
                s,
                "{indent}if crate::state::merged_comm(c).is_some() {{\n\
                 {indent}    // SAFETY: the program's arguments (references), the body's contract.\n\
                 {indent}    let rc = unsafe {{ merged::{short}({body_args}) }};\n\
                 {indent}    // SAFETY: the program's ierror (or null).\n\
                 {indent}    unsafe {{ put({ierror}, rc) }};\n\
                 {indent}    return;\n{indent}}}\n"
            );
        }
        if refused {
            let _ = write!(
                s,
                "{indent}// SAFETY: the program's ierror (or null).\n\
                 {indent}unsafe {{ put({ierror}, errors::refuse(c, \"{name}\")) }};\n{indent}return;\n"
            );
        }
        s
    };
    let what = match (refused, merged_body) {
        (true, false) => "refused on an Isthmus communicator",
        (true, true) => "carried on a merged communicator, refused on any other Isthmus one",
        (false, _) => "carried on a merged communicator",
    };
    // Fortran 77 and `use mpi` have no large-count calls.
    if !name.ends_with("_c") {
        let ompi = format!("ompi_{short}_f");
        head(
            out,
            &format!("Open MPI's Fortran `{name}`, {what}."),
            &ompi,
            &params,
        );
        let _ = write!(
            out,
            "    // SAFETY: Fortran passes every argument by reference.\n    \
             if let Some(c) = unsafe {{ {check} }} {{\n{}    }}\n{}}}\n",
            on_isthmus("        "),
            pass_on(&ompi, &types, &args, &ierror)
        );
        for f in [format!("{lower}_"), format!("p{lower}_")] {
            gfortran_name(out, name, &f, &ompi, &params, &types, &args, &ierror);
        }
    }
    let f08 = format!("{lower}_f08_");
    head(
        out,
        &format!("MPICH's `use mpi_f08` `{name}`, {what}."),
        &f08,
        &params,
    );
    let _ = write!(
        out,
        "    if !open_mpi() {{\n        \
         // SAFETY: Fortran passes every argument by reference.\n        \
         if let Some(c) = unsafe {{ {check} }} {{\n{}        }}\n    }}\n{}}}\n",
        on_isthmus("            "),
        pass_on(&f08, &types, &args, &ierror)
    );
}

/// `f` (`mpi_x_` or `pmpi_x_`): Open MPI's goes to `ompi` (this library's
/// `ompi_x_f`), MPICH's is passed on (it calls the C `MPI_X`).
#[allow(clippy::too_many_arguments)]
fn gfortran_name(
    out: &mut String,
    name: &str,
    f: &str,
    ompi: &str,
    params: &str,
    types: &str,
    args: &str,
    ierror: &str,
) {
    head(
        out,
        &format!("gfortran's name `{f}` of `{name}`."),
        f,
        params,
    );
    let _ = write!(
        out,
        "    if open_mpi() {{\n        \
         // SAFETY: the same arguments, same contract.\n        \
         return unsafe {{ {ompi}({args}) }};\n    }}\n{}}}\n",
        pass_on(f, types, args, ierror)
    );
}

/// The Fortran entry points of the bridge call `p` that its line lists:
/// shells around the hand-written bodies `ompi::x` (Fortran handles and
/// statuses) and `mpich_f08::x` (MPICH's `use mpi_f08`: C statuses), each
/// an `unsafe fn` of the call's parameters, by reference, returning the
/// MPI code that goes to `ierror`.
pub fn bridge(out: &mut String, p: &Prototype, fortran: &Fortran) {
    if fortran.refused {
        refusal(out, p, false);
    }
    let (name, lower, short) = (&p.name, p.lower(), p.short());
    let n = p.params.len();
    let mut params: Vec<String> = (0..n).map(|i| format!("a{i}: P")).collect();
    params.push("ierror: *mut Fint".into());
    let mut args: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    let body_args = args
        .iter()
        .map(|a| format!("{a} as _"))
        .collect::<Vec<_>>()
        .join(", ");
    args.push("ierror".into());
    let mut types = vec!["P"; n];
    types.push("*mut Fint");
    let (params, args, types) = (params.join(", "), args.join(", "), types.join(", "));
    if fortran.ompi {
        let ompi = format!("ompi_{short}_f");
        head(
            out,
            &format!("Open MPI's Fortran `{name}`, interposed: `ompi::{short}`."),
            &ompi,
            &params,
        );
        let _ = write!(
            out,
            "    // SAFETY: the program's arguments, by reference (the body's contract).\n    \
             let rc = unsafe {{ ompi::{short}({body_args}) }};\n    \
             // SAFETY: the program's ierror (or null).\n    \
             unsafe {{ put(ierror, rc) }};\n}}\n"
        );
        let mut names = vec![format!("{lower}_")];
        if fortran.pmpi {
            names.push(format!("p{lower}_"));
        }
        for f in names {
            gfortran_name(out, name, &f, &ompi, &params, &types, &args, "ierror");
        }
    }
    if fortran.pass {
        // Fortran 77 and `use mpi` have no large-count calls.
        let legacy = !name.ends_with("_c");
        let pmpi_defined = fortran.ompi && fortran.pmpi;
        let mut names = Vec::new();
        if legacy && !fortran.ompi {
            names.push(format!("ompi_{short}_f"));
            names.push(format!("{lower}_"));
        }
        if legacy && !pmpi_defined {
            names.push(format!("p{lower}_"));
        }
        if !fortran.f08 {
            names.push(format!("{lower}_f08_"));
        }
        for f in names {
            head(
                out,
                &format!(
                    "A Fortran name of `{name}` whose call reaches the C entry point: passed on."
                ),
                &f,
                &params,
            );
            out.push_str(&pass_on(&f, &types, &args, "ierror"));
            out.push_str("}\n");
        }
    }
    if fortran.f08 {
        let f08 = format!("{lower}_f08_");
        head(
            out,
            &format!("MPICH's `use mpi_f08` `{name}`, interposed: `mpich_f08::{short}`."),
            &f08,
            &params,
        );
        let _ = write!(
            out,
            "    if !open_mpi() {{\n        \
             // SAFETY: the program's arguments, by reference (the body's contract).\n        \
             let rc = unsafe {{ mpich_f08::{short}({body_args}) }};\n        \
             // SAFETY: the program's ierror, or null when absent.\n        \
             unsafe {{ put(ierror, rc) }};\n        return;\n    }}\n{}}}\n",
            pass_on(&f08, &types, &args, "ierror")
        );
    }
}
