//! The ABI table (`mpi-functions.txt`) and the prototypes of `mpi.h`, as
//! the generators read them.

use std::collections::BTreeMap;

/// What libisthmus does with a call on an Isthmus communicator.
pub enum Class {
    /// Works on the local handle as it is; nothing generated.
    Native,
    /// Carried by the bridge: the C body is `crate::<body>::<name>`.
    Bridge { body: String },
    /// Isthmus's error through the error handler; generated in C and Fortran.
    Refused,
}

/// The Fortran entry points of a `bridge` call (see `mpi-functions.txt`).
#[derive(Default)]
pub struct Fortran {
    /// Open MPI's `ompi_x_f` with the body `fortran::ompi::x`, and `mpi_x_`.
    pub ompi: bool,
    /// `pmpi_x_` too.
    pub pmpi: bool,
    /// MPICH's `mpi_x_f08_` with the body `fortran::mpich_f08::x`.
    pub f08: bool,
    /// Every Fortran name refuses (the C call is carried, Fortran's is not).
    pub refused: bool,
    /// Every Fortran name the others do not define passes the call on (the
    /// names the call once refused, kept for programs linked to them).
    pub pass: bool,
}

pub struct Line {
    pub class: Class,
    /// A `bridge` call whose module defines `MPI_X` itself (its own
    /// dispatch: requests, messages, ports, ...); otherwise build.rs
    /// generates `MPI_X` around the body `x`.
    pub own: bool,
    pub fortran: Fortran,
    /// A `+merged` line names it: `crate::merged::x` is its body on a
    /// merged communicator (`MPI_Intercomm_merge`'s).
    pub merged: bool,
    /// `+merged fortran`: a `native` or `refused` call whose Fortran names
    /// get the body `fortran::merged::x` on a merged communicator (Open
    /// MPI's bindings and MPICH's `use mpi_f08` call `PMPI_X`, past the C
    /// entry point that would dispatch it).
    pub merged_fortran: bool,
    /// A `+mixed` line names it: `crate::mixed::x` is its body on a mixed
    /// intercommunicator (one whose groups span both jobs).
    pub mixed: bool,
}

/// The table's lines by MPI name.
pub fn parse(text: &str) -> Result<BTreeMap<String, Line>, String> {
    let mut lines = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(name), Some(class)) = (words.next(), words.next()) else {
            return Err(format!("line {}: a name and a class expected", n + 1));
        };
        if class == "+merged" || class == "+mixed" {
            let line: &mut Line = lines
                .get_mut(name)
                .ok_or(format!("{name}: {class} before the call's own line"))?;
            let flag = if class == "+merged" {
                &mut line.merged
            } else {
                &mut line.mixed
            };
            if line.own || *flag {
                return Err(format!(
                    "{name}: {class} once, and not for an `own` call (it dispatches itself)"
                ));
            }
            *flag = true;
            match words.next() {
                None => {}
                Some("fortran")
                    if class == "+merged"
                        && !matches!(line.class, Class::Bridge { .. })
                        && words.next().is_none() =>
                {
                    line.merged_fortran = true
                }
                Some(w) => {
                    return Err(format!(
                        "{name}: {class} {w}: only `+merged fortran`, for a native or refused \
                         call (a bridge call's Fortran bodies reach its C entry point)"
                    ))
                }
            }
            continue;
        }
        let class = match class {
            "native" => Class::Native,
            "refused" => Class::Refused,
            "bridge" => Class::Bridge {
                body: words
                    .next()
                    .ok_or(format!("{name}: bridge without the module of its body"))?
                    .to_string(),
            },
            other => return Err(format!("{name}: unknown class {other:?}")),
        };
        let mut fortran = Fortran::default();
        let mut own = false;
        for w in words {
            match w {
                "own" => own = true,
                "ompi" => fortran.ompi = true,
                "pmpi" => fortran.pmpi = true,
                "f08" => fortran.f08 = true,
                "refused" => fortran.refused = true,
                "pass" => fortran.pass = true,
                other => return Err(format!("{name}: unknown Fortran name family {other:?}")),
            }
        }
        if !matches!(class, Class::Bridge { .. })
            && (own
                || fortran.ompi
                || fortran.pmpi
                || fortran.f08
                || fortran.refused
                || fortran.pass)
        {
            return Err(format!(
                "{name}: only bridge calls list `own` or Fortran names"
            ));
        }
        let line = Line {
            class,
            own,
            fortran,
            merged: false,
            merged_fortran: false,
            mixed: false,
        };
        if lines.insert(name.to_string(), line).is_some() {
            return Err(format!("{name} is listed twice"));
        }
    }
    Ok(lines)
}

/// One C prototype of `mpi.h`.
pub struct Prototype {
    pub name: String,
    /// Each parameter's C type (without its name and array suffix) and name.
    pub params: Vec<(String, String)>,
    /// The positions of the communicators passed by value (what the call
    /// acts on).
    pub comms: Vec<usize>,
}

impl Prototype {
    pub fn parse(name: &str, params: &str) -> Prototype {
        let mut out = Vec::new();
        if params != "void" {
            for p in params.split(',') {
                let p = p.trim();
                let array = p.contains('[');
                // The parameter's name: its last identifier, past any array suffix.
                let bare = p.split('[').next().unwrap_or(p).trim_end();
                let len = bare
                    .chars()
                    .rev()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .count();
                let ident = &bare[bare.len() - len..];
                assert!(
                    !ident.is_empty() && ident != "void",
                    "{name}: cannot name parameter {p:?}"
                );
                let mut ty = bare[..bare.len() - len]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                if array {
                    ty.push_str(" *");
                }
                out.push((ty.replace(" *", "*").replace("* ", "*"), ident.to_string()));
            }
        }
        let comms = out
            .iter()
            .enumerate()
            .filter(|(_, (t, _))| t == "MPI_Comm")
            .map(|(i, _)| i)
            .collect();
        Prototype {
            name: name.to_string(),
            params: out,
            comms,
        }
    }

    /// `mpi_x`: the lower-case name Fortran entry points are made of.
    pub fn lower(&self) -> String {
        self.name.to_lowercase()
    }

    /// `x`: the name of the Fortran bodies.
    pub fn short(&self) -> String {
        self.lower().trim_start_matches("mpi_").to_string()
    }
}
