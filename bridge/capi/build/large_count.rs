//! The large-count shells (`MPI_Send_c`, …, MPI 4; MPICH 4 has them, Open
//! MPI 4.1 does not): on an Isthmus communicator (or a message Isthmus
//! probed) the count goes to the body of the ordinary form as an `int`;
//! elsewhere the call goes to `PMPI_*_c`.

use std::fmt::Write as _;

use crate::shells::typed;
use crate::table::Prototype;

/// The shell of `p` (`MPI_X_c`), calling the body `crate::<body>::x` of
/// `small` (`MPI_X`), or `MPI_X` itself where that is the module's `own`.
pub fn shell(
    out: &mut String,
    p: &Prototype,
    body: &str,
    (small, own): (&str, bool),
    merged: bool,
    mixed: bool,
) {
    let name = &p.name;
    let (params, args) = typed(p);
    let counts = counts(p);
    let short = small.to_lowercase();
    let short = short.trim_start_matches("mpi_");
    // How the call is told to be Isthmus's (`let` or `if` head), how its
    // counts become ints, and what it calls then.
    // On a merged communicator: the merged body of the ordinary form if
    // its `+merged` line names this `_c` form, else the merged refusal.
    let mut on_merged = String::new();
    let (dispatch, convert, call) = if let Some(&c) = p.comms.first() {
        let comm = &p.params[c].1;
        on_merged = [("merged", merged), ("mixed", mixed)]
            .iter()
            .map(|&(kind, named)| {
                if named {
                    kind_block(p, small, kind)
                } else {
                    format!(
                        "if crate::state::{kind}_comm({comm}).is_some() {{\n        \
                         return crate::errors::refuse_{kind}({comm}, \"{name}\");\n    }}\n    "
                    )
                }
            })
            .collect();
        let convert = counts_as_ints(&counts, comm, name, "    ");
        let call = if own {
            format!("crate::{body}::{small}({args})")
        } else {
            format!("crate::{body}::{short}(&bc, {args})")
        };
        (
            format!("let Some(bc) = bridge_comm({comm}) else"),
            convert,
            call,
        )
    } else if p
        .params
        .iter()
        .any(|(t, n)| t == "MPI_Message*" && n == "message")
    {
        // The count was checked against int when the message was probed on
        // a bridge communicator; a larger one cannot be received whole anyway.
        let convert: String = counts
            .iter()
            .map(|n| format!("    let {n} = c_int::try_from({n}).unwrap_or(c_int::MAX);\n"))
            .collect();
        (
            format!(
                "if message.is_null() || {{\n        \
                 // SAFETY: the program's message handle.\n        \
                 !crate::{body}::is_taken(unsafe {{ *message }})\n    }}"
            ),
            convert,
            format!("crate::{body}::{small}({args})"),
        )
    } else {
        panic!("{name}: a large-count bridge call needs a communicator or a message");
    };
    let end = if dispatch.starts_with("let") { ";" } else { "" };
    let _ = writeln!(
        out,
        "/// `{name}`: `{small}` with a count that fits an `int` on an Isthmus\n\
         /// communicator, `P{name}` elsewhere (generated from mpi-functions.txt).\n\
         ///\n/// # Safety\n/// As `{name}`.\n\
         #[no_mangle]\n#[allow(clippy::too_many_arguments)] // MPI's own\n\
         pub unsafe extern \"C\" fn {name}({params}) -> c_int {{\n    \
         {on_merged}{dispatch} {{\n        \
         // SAFETY: the program's arguments, passed on.\n        \
         return unsafe {{ ffi::P{name}({args}) }};\n    }}{end}\n\
         {convert}    \
         // SAFETY: the program's arguments, the counts as ints.\n    \
         unsafe {{ {call} }}\n}}\n"
    );
}

/// The names of `p`'s `MPI_Count` parameters.
fn counts(p: &Prototype) -> Vec<&str> {
    p.params
        .iter()
        .filter(|(t, _)| t == "MPI_Count")
        .map(|(_, n)| n.as_str())
        .collect()
}

/// The statements that make each of `counts` an int (`small`) or return
/// its error code from `name`'s shell, indented by `indent`.
fn counts_as_ints(counts: &[&str], comm: &str, name: &str, indent: &str) -> String {
    counts
        .iter()
        .map(|n| {
            format!(
                "{indent}let {n} = match small({n}, {comm}, \"{name}\") {{\n\
                 {indent}    Ok(n) => n,\n\
                 {indent}    Err(code) => return code,\n\
                 {indent}}};\n"
            )
        })
        .collect()
}

/// On a communicator of `kind` (`merged`, `mixed`): the counts as ints,
/// then that kind's body of `small` (`MPI_X` of `MPI_X_c`).
fn kind_block(p: &Prototype, small: &str, kind: &str) -> String {
    let name = &p.name;
    let [c, ..] = p.comms[..] else {
        panic!("{name}: a {kind} large-count call needs a communicator");
    };
    let comm = &p.params[c].1;
    let (_, args) = typed(p);
    let short = small.to_lowercase();
    let short = short.trim_start_matches("mpi_");
    let convert = counts_as_ints(&counts(p), comm, name, "        ");
    format!(
        "if let Some(c) = crate::state::{kind}_comm({comm}) {{\n\
         {convert}        \
         // SAFETY: the program's arguments, the counts as ints.\n        \
         return unsafe {{ crate::{kind}::{short}(&c, {args}) }};\n    }}\n    "
    )
}

/// The shell of a `refused` large-count call with a `+merged` or `+mixed`
/// line: that kind's body of `small` where a line names it, the refusal on
/// any other Isthmus communicator, `P{name}` elsewhere.
pub fn merged_shell(out: &mut String, p: &Prototype, small: &str, merged: bool, mixed: bool) {
    let name = &p.name;
    let [c, ..] = p.comms[..] else {
        panic!("{name}: a merged large-count call needs a communicator");
    };
    let comm = &p.params[c].1;
    let (params, args) = typed(p);
    let mut block = String::new();
    if merged {
        block += &kind_block(p, small, "merged");
    }
    if mixed {
        block += &kind_block(p, small, "mixed");
    }
    let _ = writeln!(
        out,
        "/// `{name}`: `{small}` with a count that fits an `int` where a\n\
         /// `+merged`/`+mixed` line says, refused on any other Isthmus\n\
         /// communicator, `P{name}` elsewhere (generated from mpi-functions.txt).\n\
         ///\n/// # Safety\n/// As `{name}`.\n\
         #[no_mangle]\n#[allow(clippy::too_many_arguments)] // MPI's own\n\
         pub unsafe extern \"C\" fn {name}({params}) -> c_int {{\n    \
         {block}if crate::state::is_isthmus({comm}) {{\n        \
         return errors::refuse({comm}, \"{name}\");\n    }}\n    \
         // SAFETY: the program's arguments, passed on.\n    \
         unsafe {{ ffi::P{name}({args}) }}\n}}\n"
    );
}
