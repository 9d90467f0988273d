//! Typed kernel launches. Every kernel of `kernels/*.cu` is declared once, in
//! the module that drives it, with `kernels!`: its name and its parameter
//! types, as a [`Kernel`]`<(T1, T2, ..)>`. A launch goes through the
//! declaration ([`Kernel::launch`] and friends) and takes the arguments as
//! that tuple, so a wrong argument count or type does not compile; only the
//! buffers' lengths are left to the caller.
//!
//! The declarations are checked against the kernels' C++ parameter lists in
//! the host build of the kernels: there `fzshim_sig_<kernel>`
//! (kernels/shim/cuda_host.hpp) gives the real parameters' [`Sig::text`],
//! which tests/common/shim_exec.rs compares at every launch and
//! tests/gpu_kernels.rs for every kernel of [`all`].

use super::exec::{Arg, Exec, Plain, View};
use crate::error::{Error, Result};
use std::marker::PhantomData;

/// What a pointer parameter points to, or a scalar parameter's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    U8,
    U16,
    U32,
    U64,
    I32,
    I64,
    F32,
    F64,
    /// A struct of this many bytes.
    Struct(usize),
}

impl Elem {
    /// The shim's code: u, i or f and the width in bits; s and the size in bytes.
    pub fn code(self) -> String {
        match self {
            Elem::U8 => "u8".into(),
            Elem::U16 => "u16".into(),
            Elem::U32 => "u32".into(),
            Elem::U64 => "u64".into(),
            Elem::I32 => "i32".into(),
            Elem::I64 => "i64".into(),
            Elem::F32 => "f32".into(),
            Elem::F64 => "f64".into(),
            Elem::Struct(bytes) => format!("s{bytes}"),
        }
    }
}

/// One kernel parameter's type (const-ness is not part of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Scalar(Elem),
    Ptr(Elem),
}

impl Ty {
    /// [`Elem::code`], after `*` for a pointer.
    pub fn code(self) -> String {
        match self {
            Ty::Scalar(e) => e.code(),
            Ty::Ptr(e) => format!("*{}", e.code()),
        }
    }
}

/// A kernel as the executor sees it: its name and parameter types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sig {
    pub name: &'static str,
    pub params: &'static [Ty],
}

impl Sig {
    /// The parameters' codes joined by commas, e.g. `*f32,*f32,u64,*f32`:
    /// what `fzshim_sig_<kernel>` returns for the kernel's C++ parameters.
    pub fn text(&self) -> String {
        let codes: Vec<String> = self.params.iter().map(|t| t.code()).collect();
        codes.join(",")
    }

    /// Err unless `args` are one per parameter, each of its parameter's kind
    /// (a pointer as U64): what an executor's raw launch relies on.
    pub fn check(&self, args: &[Arg]) -> Result<()> {
        let fits = |t: &Ty, a: &Arg| {
            matches!(
                (t, a),
                (Ty::Ptr(_) | Ty::Scalar(Elem::U64), Arg::U64(_))
                    | (Ty::Scalar(Elem::I64), Arg::I64(_))
                    | (Ty::Scalar(Elem::U32), Arg::U32(_))
                    | (Ty::Scalar(Elem::I32), Arg::I32(_))
                    | (Ty::Scalar(Elem::F64), Arg::F64(_))
                    | (Ty::Scalar(Elem::F32), Arg::F32(_))
            )
        };
        if args.len() != self.params.len() || !self.params.iter().zip(args).all(|(t, a)| fits(t, a))
        {
            return Err(Error::internal(format!(
                "{} ({}) launched with {args:?}",
                self.name,
                self.text()
            )));
        }
        Ok(())
    }
}

/// A type a kernel parameter can have: a device pointer ([`View`]) or a
/// number passed by value.
pub trait Param: Copy {
    const TY: Ty;
    fn arg(self) -> Arg;
}

macro_rules! scalar_params {
    ($($t:ty => $elem:ident;)*) => {
        $(
            impl Param for $t {
                const TY: Ty = Ty::Scalar(Elem::$elem);
                fn arg(self) -> Arg {
                    Arg::$elem(self)
                }
            }
        )*
    };
}

// `unsigned int`, `int`, `unsigned long long` (the kernels' fz*_u64), `long
// long`, `float`, `double`.
scalar_params! {
    u32 => U32;
    i32 => I32;
    u64 => U64;
    i64 => I64;
    f32 => F32;
    f64 => F64;
}

/// `T*` (or `const T*`): the view's address.
impl<T: Plain> Param for View<T> {
    const TY: Ty = Ty::Ptr(T::ELEM);
    fn arg(self) -> Arg {
        Arg::U64(self.addr())
    }
}

/// A kernel's parameter list: a tuple of [`Param`]s.
pub trait Params {
    const TYS: &'static [Ty];
    /// One [`Arg`] per parameter.
    type Args: AsRef<[Arg]>;
    fn args(self) -> Self::Args;
}

macro_rules! tuple_params {
    ($n:literal: $($p:ident)+) => {
        impl<$($p: Param),+> Params for ($($p,)+) {
            const TYS: &'static [Ty] = &[$($p::TY),+];
            type Args = [Arg; $n];
            #[allow(non_snake_case)]
            fn args(self) -> [Arg; $n] {
                let ($($p,)+) = self;
                [$($p.arg()),+]
            }
        }
    };
}

// Up to the longest parameter list (factz_p_pair_fill's 16).
tuple_params!(1: A);
tuple_params!(2: A B);
tuple_params!(3: A B C);
tuple_params!(4: A B C D);
tuple_params!(5: A B C D F);
tuple_params!(6: A B C D F G);
tuple_params!(7: A B C D F G H);
tuple_params!(8: A B C D F G H I);
tuple_params!(9: A B C D F G H I J);
tuple_params!(10: A B C D F G H I J K);
tuple_params!(11: A B C D F G H I J K L);
tuple_params!(12: A B C D F G H I J K L M);
tuple_params!(13: A B C D F G H I J K L M N);
tuple_params!(14: A B C D F G H I J K L M N O);
tuple_params!(15: A B C D F G H I J K L M N O Q);
tuple_params!(16: A B C D F G H I J K L M N O Q R);

/// A kernel taking the parameters `P` (a tuple), declared with `kernels!`.
pub struct Kernel<P> {
    sig: Sig,
    _p: PhantomData<fn(P)>,
}

impl<P> Clone for Kernel<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for Kernel<P> {}

/// Most thread blocks along a row of [`Kernel::launch_rows`] (grid-stride),
/// and most rows of a grid (CUDA's gridDim.y limit).
const ROW_BLOCKS: usize = 64;
const MAX_GRID_Y: usize = 65_535;

impl<P: Params> Kernel<P> {
    /// The kernel `extern "C" __global__ void name(..)`, whose parameters are
    /// P; `kernels!` declares each once.
    pub const fn new(name: &'static str) -> Self {
        Kernel {
            sig: Sig {
                name,
                params: P::TYS,
            },
            _p: PhantomData,
        }
    }

    pub const fn sig(&self) -> Sig {
        self.sig
    }

    pub const fn name(&self) -> &'static str {
        self.sig.name
    }

    /// Launch over a `grid` of `block`s, each given as x, y, z.
    ///
    /// # Safety
    /// Every buffer must be as large as the kernel reads and writes (the
    /// arguments' types are the declaration's).
    pub unsafe fn launch_dims<E: Exec>(
        &self,
        e: &E,
        grid: [u32; 3],
        block: [u32; 3],
        args: P,
    ) -> Result<()> {
        // SAFETY: the caller's; the arguments follow the declaration.
        unsafe { e.launch_raw(&self.sig, grid, block, args.args().as_ref()) }
    }

    /// Launch over `blocks` x `threads` (a 1-D grid).
    ///
    /// # Safety
    /// As [`Self::launch_dims`].
    pub unsafe fn launch<E: Exec>(&self, e: &E, blocks: u32, threads: u32, args: P) -> Result<()> {
        // SAFETY: the caller's.
        unsafe { self.launch_dims(e, [blocks, 1, 1], [threads, 1, 1], args) }
    }

    /// Launch one thread per item in blocks of `threads`; nothing for no
    /// items (a GPU rejects an empty grid).
    ///
    /// # Safety
    /// As [`Self::launch_dims`].
    pub unsafe fn launch_items<E: Exec>(
        &self,
        e: &E,
        items: usize,
        threads: u32,
        args: P,
    ) -> Result<()> {
        if items == 0 {
            return Ok(());
        }
        let blocks = u32::try_from(items.div_ceil(threads as usize)).map_err(|_| {
            Error::unsupported(format!("{items} items are too many for one launch"))
        })?;
        // SAFETY: the caller's.
        unsafe { self.launch(e, blocks, threads, args) }
    }

    /// Launch a grid row per item (blockIdx.y) for `items` items of up to
    /// `longest` elements each, the row's blocks striding along them. More
    /// than a grid's rows go in several launches: `args(first)` gives a
    /// launch's arguments seen from item `first` (blockIdx.y is then relative
    /// to it).
    ///
    /// # Safety
    /// As [`Self::launch_dims`] for each launch.
    pub unsafe fn launch_rows<E: Exec>(
        &self,
        e: &E,
        items: usize,
        longest: usize,
        threads: u32,
        args: impl Fn(usize) -> P,
    ) -> Result<()> {
        let across = longest.div_ceil(threads as usize).clamp(1, ROW_BLOCKS) as u32;
        for first in (0..items).step_by(MAX_GRID_Y) {
            let rows = (items - first).min(MAX_GRID_Y) as u32;
            // SAFETY: the caller's.
            unsafe { self.launch_dims(e, [across, rows, 1], [threads, 1, 1], args(first))? };
        }
        Ok(())
    }
}

/// Declares kernels, each a `pub const` [`Kernel`], and `KERNELS`, their
/// [`Sig`]s (gathered by [`all`]), as
/// `NAME = factz_kernel(param: Type, ..);` with the kernel's parameter names
/// (documentation only) and types: [`View`]`<T>` for a `T*` or `const T*`;
/// u64 for `unsigned long long` (the kernels' `fz*_u64`), i64 for `long
/// long`, u32 for `unsigned int`, i32 for `int`, f64, f32.
macro_rules! kernels {
    ($($(#[$m:meta])* $id:ident = $k:ident($($p:ident: $t:ty),* $(,)?);)*) => {
        $(
            $(#[$m])*
            pub const $id: $crate::gpu::launch::Kernel<($($t,)*)> =
                $crate::gpu::launch::Kernel::new(stringify!($k));
        )*
        /// The kernels declared in this module.
        pub const KERNELS: &[$crate::gpu::launch::Sig] = &[$($id.sig()),*];
    };
}
pub(crate) use kernels;

/// Every declared kernel, module by module.
pub fn all() -> Vec<Sig> {
    [
        super::field_reduce::KERNELS,
        super::huffman::KERNELS,
        super::mode_b_bounds::KERNELS,
        super::mode_b_codec::KERNELS,
        super::mode_s::KERNELS,
        super::particles::KERNELS,
        super::descent::KERNELS,
        super::rans::KERNELS,
        super::scan::KERNELS,
        super::zero_runs::KERNELS,
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declaration_gives_the_shims_signature_text() {
        kernels! {
            PROBE = probe(u: View<f32>, n: u64, ny: i64, k: u32, s: i32, x: f64, y: f32, b: View<u8>);
        }
        assert_eq!(PROBE.name(), "probe");
        assert_eq!(KERNELS, &[PROBE.sig()]);
        assert_eq!(PROBE.sig().text(), "*f32,u64,i64,u32,i32,f64,f32,*u8");
        // SAFETY: never used with an executor.
        let (u, b) = unsafe { (View::<f32>::from_raw(64, 0), View::<u8>::from_raw(128, 0)) };
        let args = (u, 7u64, -3i64, 1u32, -1i32, 0.5f64, 2.0f32, b).args();
        assert_eq!(args.len(), 8);
        assert!(matches!(args[0], Arg::U64(64)));
        assert!(matches!(args[2], Arg::I64(-3)));
        assert!(matches!(args[7], Arg::U64(128)));
        assert!(PROBE.sig().check(&args).is_ok());
        let mut wrong = args;
        wrong[2] = Arg::U64(3);
        assert!(PROBE.sig().check(&wrong).is_err());
        assert!(PROBE.sig().check(&args[..7]).is_err());
    }

    #[test]
    fn every_kernel_is_declared_once() {
        let all = all();
        let mut names: Vec<&str> = all.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len(), "a kernel declared twice");
        assert!(names.iter().all(|n| n.starts_with("factz_")));
    }
}
