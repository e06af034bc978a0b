//! The C shells of the `bridge` calls that dispatch on their communicator:
//! `MPI_X` passes the call to `PMPI_X` unless its communicator is an
//! Isthmus one, and then calls the hand-written body
//! `crate::<module>::x(&bridge_comm, <the call's arguments>)`. Each module
//! includes its own shells (`$OUT_DIR/shells_<module>.rs`), so `MPI_X`
//! lives beside its body.

use std::fmt::Write as _;

use crate::table::Prototype;

/// The Rust type of a C parameter type of the calls with shells.
fn rust_type(name: &str, c: &str) -> &'static str {
    match c {
        "const void*" => "*const c_void",
        "void*" => "*mut c_void",
        "int" => "c_int",
        "int*" => "*mut c_int",
        "const int*" => "*const c_int",
        "MPI_Op" => "ffi::MPI_Op",
        "const MPI_Datatype*" => "*const MPI_Datatype",
        "MPI_Count" => "ffi::MPI_Count",
        "const MPI_Aint*" => "*const ffi::MPI_Aint",
        "MPI_Datatype" => "MPI_Datatype",
        "MPI_Comm" => "MPI_Comm",
        "MPI_Comm*" => "*mut MPI_Comm",
        "MPI_Info" => "ffi::MPI_Info",
        "MPI_Group" => "ffi::MPI_Group",
        "MPI_Group*" => "*mut ffi::MPI_Group",
        "MPI_Request*" => "*mut MPI_Request",
        "MPI_Status*" => "*mut MPI_Status",
        "MPI_Message*" => "*mut ffi::MPI_Message",
        other => panic!("{name}: no Rust type for the C type {other:?} (build/shells.rs)"),
    }
}

/// `p`'s parameter list in Rust and its argument list, for a typed shell.
pub fn typed(p: &Prototype) -> (String, String) {
    let params: Vec<String> = p
        .params
        .iter()
        .map(|(t, n)| format!("{n}: {}", rust_type(&p.name, t)))
        .collect();
    let args: Vec<&str> = p.params.iter().map(|(_, n)| n.as_str()).collect();
    (params.join(", "), args.join(", "))
}

/// On a communicator of `kind` (`merged` or `mixed`): its body
/// `crate::<kind>::x` if `body` (a `+<kind>` line names the call), else
/// that kind's refusal (`errors::refuse_<kind>`).
fn kind_branch(p: &Prototype, kind: &str, body: bool) -> String {
    let name = &p.name;
    let comm = one_comm(p);
    let (_, args) = typed(p);
    let short = p.short();
    if body {
        format!(
            "if let Some(c) = crate::state::{kind}_comm({comm}) {{\n        \
             // SAFETY: the program's arguments; the body's contract is the call's.\n        \
             return unsafe {{ crate::{kind}::{short}(&c, {args}) }};\n    }}\n    "
        )
    } else {
        format!(
            "if crate::state::{kind}_comm({comm}).is_some() {{\n        \
             return crate::errors::refuse_{kind}({comm}, \"{name}\");\n    }}\n    "
        )
    }
}

/// The shell of `p`, whose body is in `module`; on a merged communicator
/// it calls `crate::merged::x` if `merged` (a `+merged` line), else
/// refuses with the merged communicator's own message; on a mixed
/// intercommunicator likewise `crate::mixed::x` if `mixed`.
pub fn shell(out: &mut String, p: &Prototype, module: &str, merged: bool, mixed: bool) {
    let name = &p.name;
    let comm = one_comm(p);
    let (params, args) = typed(p);
    let short = p.short();
    let on_merged = kind_branch(p, "merged", merged) + &kind_branch(p, "mixed", mixed);
    let _ = writeln!(
        out,
        "/// `{name}`: `{module}::{short}` on an Isthmus communicator, `P{name}`\n\
         /// on any other (generated from mpi-functions.txt).\n\
         ///\n/// # Safety\n/// As `{name}`.\n\
         #[no_mangle]\n#[allow(clippy::too_many_arguments)] // MPI's own\n\
         pub unsafe extern \"C\" fn {name}({params}) -> c_int {{\n    \
         let Some(bc) = crate::state::bridge_comm({comm}) else {{\n    \
         {on_merged}    \
         // SAFETY: the program's arguments, passed on.\n        \
         return unsafe {{ mpi::ffi::P{name}({args}) }};\n    }};\n    \
         // SAFETY: the program's arguments; the body's contract is the call's.\n    \
         unsafe {{ {short}(&bc, {args}) }}\n}}\n"
    );
}

/// The shell of a `native` or `refused` call with a `+merged` or `+mixed`
/// line (in `shells_merged.rs`): `crate::merged::x` on a merged
/// communicator and `crate::mixed::x` on a mixed intercommunicator where
/// the lines say so; on any other Isthmus communicator the refusal
/// (`refused`); `P{name}` otherwise (a `native` call on an Isthmus
/// intercommunicator: on its local handle).
pub fn merged_shell(out: &mut String, p: &Prototype, refused: bool, merged: bool, mixed: bool) {
    let name = &p.name;
    let comm = one_comm(p);
    let (params, args) = typed(p);
    let mut branches = String::new();
    if merged {
        branches += &kind_branch(p, "merged", true);
    }
    if mixed {
        branches += &kind_branch(p, "mixed", true);
    } else if !refused {
        branches += &kind_branch(p, "mixed", false);
    }
    if refused {
        branches += &format!(
            "if crate::state::is_isthmus({comm}) {{\n        \
             return crate::errors::refuse({comm}, \"{name}\");\n    }}\n    "
        );
    }
    let _ = writeln!(
        out,
        "/// `{name}` on merged communicators and mixed intercommunicators\n\
         /// (generated from mpi-functions.txt).\n\
         ///\n/// # Safety\n/// As `{name}`.\n\
         #[no_mangle]\n#[allow(clippy::too_many_arguments)] // MPI's own\n\
         pub unsafe extern \"C\" fn {name}({params}) -> c_int {{\n    \
         {branches}\
         // SAFETY: the program's arguments, passed on.\n    \
         unsafe {{ mpi::ffi::P{name}({args}) }}\n}}\n"
    );
}

/// The one communicator a generated shell dispatches on.
fn one_comm(p: &Prototype) -> &str {
    let [c] = p.comms[..] else {
        panic!(
            "{}: a generated C shell needs exactly one communicator (or `own` in mpi-functions.txt)",
            p.name
        );
    };
    &p.params[c].1
}
