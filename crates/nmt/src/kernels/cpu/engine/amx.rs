//! Intel AMX tiles from stable Rust (issue 70): the process's permission to use them, and the
//! tile instructions as `asm!` (their intrinsics are nightly-only in Rust 1.94): `ldtilecfg`,
//! `tileloadd`, `tilezero`, `tdpbf16ps`, `tdpbssd`, `tdpbusd`, `tilestored`.
//!
//! **Enabling.** CPUID and XCR0 say whether the CPU and the OS support the tiles
//! (`cpuid::amx_from`); Linux then wants one `arch_prctl(ARCH_REQ_XCOMP_PERM,
//! XFEATURE_XTILEDATA)` per process before the first tile instruction, or the instruction
//! faults (SIGILL). [`enable`] makes that call once; a refusal (an old kernel, a seccomp filter)
//! is logged once and the kernels fall back to the next level (`isa::level`).
//!
//! **The tiles.** [`TileOps`] is the few operations the tiling driver (`amx_gemm.rs`) needs,
//! on 8 tiles configured alike as 16 rows × 64 bytes, named by their role in a 2 × 2 block of
//! the product: `A0`, `A1` (tiles 0, 1: 16 rows of A × 16 pairs of `k`), `B0`, `B1` (2, 3:
//! 16 pairs of `k` × 16 columns of B, a pair per 32-bit lane) and `C00`, `C01`, `C10`, `C11`
//! (4–7: 16 × 16 sums). [`AmxTiles`] runs them on the hardware; `amx_model::ModelTiles`
//! computes the same in plain Rust, so the driver, its packing and its tails are tested on any
//! CPU (llama.cpp's `ggml-cpu/amx` uses the same 2 × 2 blocks and one fixed configuration).
use std::marker::PhantomData;
use std::sync::OnceLock;

/// Rows of every tile.
pub const ROWS: usize = 16;
/// Bytes of each tile row: 16 f32 or i32 lanes, 16 bf16 pairs, or 64 int8 values.
pub const ROW_BYTES: usize = 64;

/// Whether this process may run tile instructions: the CPU and OS support them
/// (`cpuid::CpuId::amx_bf16`) and the kernel granted the permission, asked for at the first call.
/// A refusal is logged once, here.
pub fn enable() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| {
        if !super::cpuid::cpu().amx_bf16 {
            return false;
        }
        match request() {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("AMX: the kernel refused tile data to this process ({e}); the bf16 products fall back to the next level");
                REFUSED.store(true, std::sync::atomic::Ordering::Relaxed);
                false
            }
        }
    })
}

static REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether [`enable`] asked for the tiles and was refused.
pub fn refused() -> bool {
    REFUSED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Linux's per-process permission for tile data (`arch/x86/include/uapi/asm/prctl.h`).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn request() -> Result<(), std::io::Error> {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: `arch_prctl` with these arguments only changes this process's XSAVE permissions.
    let r = unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn request() -> Result<(), std::io::Error> {
    Err(std::io::Error::other("nmt asks for AMX tile data on Linux only"))
}

/// The tile operations of the tiling driver. `i` is a row of the 2 × 2 block (`A_i`), `j` a
/// column (`B_j`), `C_ij` their product's tile (module doc). Strides are in bytes.
pub trait TileOps {
    /// `tilezero C_ij`.
    fn zero_c(&mut self, i: usize, j: usize);
    /// `tileloadd C_ij`: row `r` (16 f32 or i32) from the bytes at `src + r·stride`.
    ///
    /// # Safety
    /// `src + r·stride .. + 64` is readable for every `r < 16`.
    unsafe fn load_c(&mut self, i: usize, j: usize, src: *const u8, stride: usize);
    /// `tilestored C_ij` to `dst + r·stride`.
    ///
    /// # Safety
    /// `dst + r·stride .. + 64` is writable for every `r < 16`, and no other thread uses it.
    unsafe fn store_c(&mut self, i: usize, j: usize, dst: *mut u8, stride: usize);
    /// `tileloadd A_i` (16 rows of 16 bf16 pairs, or 64 int8) from `src + r·stride`.
    ///
    /// # Safety
    /// As [`TileOps::load_c`].
    unsafe fn load_a(&mut self, i: usize, src: *const u32, stride: usize);
    /// `tileloadd B_j` (16 pair rows of 16 lanes) from `src + r·stride`.
    ///
    /// # Safety
    /// As [`TileOps::load_c`].
    unsafe fn load_b(&mut self, j: usize, src: *const u32, stride: usize);
    /// `tdpbf16ps C_ij, A_i, B_j`: `C[m][n] += Σ_p A[m].pair(p) · B[p].pair(n)`, in f32.
    fn dot_bf16(&mut self, i: usize, j: usize);
    /// `tdpbssd C_ij, A_i, B_j`: the same on signed bytes, four per lane, into i32.
    fn dot_i8(&mut self, i: usize, j: usize);
    /// `tdpbusd C_ij, A_i, B_j`: unsigned bytes of A times signed bytes of B, into i32.
    fn dot_u8i8(&mut self, i: usize, j: usize);
}

/// The hardware's tiles, configured (`ldtilecfg`) on this thread. Tile state belongs to a
/// thread, so this is neither `Send` nor `Sync`: each task of the driver makes its own.
///
/// **One configuration per thread** (llama.cpp's `ggml-cpu/amx`, issue 76): a thread loads the
/// configuration at its first product and keeps it, and later products compare and load
/// nothing. Every product here uses the one configuration ([`TileConfig::all_full`]), and
/// nothing releases it (no `tilerelease`): until the thread exits, the kernel saves its 8 KB
/// of tile data at each context switch, as it does for llama.cpp's threads. (Configured per
/// task, a 128 × 1 024 × 3 072 product ran 384 `ldtilecfg` and `tilerelease`: issue 76's
/// count, by reading the code.)
pub struct AmxTiles {
    _thread_bound: PhantomData<*mut ()>,
}

thread_local! {
    /// Whether this thread's tiles hold [`TileConfig::all_full`].
    static CONFIGURED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The 64-byte `ldtilecfg` operand: palette 1, tiles 0–7 of 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

impl TileConfig {
    fn all_full() -> TileConfig {
        let mut c = [0u8; 64];
        c[0] = 1; // palette 1
        for t in 0..8 {
            c[16 + 2 * t..18 + 2 * t].copy_from_slice(&(ROW_BYTES as u16).to_le_bytes()); // colsb
            c[48 + t] = ROWS as u8; // rows
        }
        TileConfig(c)
    }
}

impl AmxTiles {
    /// This thread's tiles, configured at the first call on the thread; `None` when this
    /// process may not use them ([`enable`]).
    pub fn new() -> Option<AmxTiles> {
        if !enable() {
            return None;
        }
        if !CONFIGURED.get() {
            let cfg = TileConfig::all_full();
            // SAFETY: the CPU has AMX and the kernel granted tile data (`enable`); the operand
            // is 64 readable bytes describing palette 1, whose limits (8 tiles, 16 rows, 64
            // bytes) it keeps.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                std::arch::asm!("ldtilecfg [{}]", in(reg) cfg.0.as_ptr(), options(nostack, readonly));
            }
            CONFIGURED.set(true);
        }
        Some(AmxTiles { _thread_bound: PhantomData })
    }
}

/// Runs `$body` with the tile register named as a literal: the tile instructions encode their
/// registers, so each role needs its own instruction text.
#[cfg(target_arch = "x86_64")]
macro_rules! by_tile {
    ($t:expr, |$n:ident| $body:expr) => {
        match $t {
            0 => {
                macro_rules! $n {
                    () => {
                        "0"
                    };
                }
                $body
            }
            1 => {
                macro_rules! $n {
                    () => {
                        "1"
                    };
                }
                $body
            }
            2 => {
                macro_rules! $n {
                    () => {
                        "2"
                    };
                }
                $body
            }
            3 => {
                macro_rules! $n {
                    () => {
                        "3"
                    };
                }
                $body
            }
            4 => {
                macro_rules! $n {
                    () => {
                        "4"
                    };
                }
                $body
            }
            5 => {
                macro_rules! $n {
                    () => {
                        "5"
                    };
                }
                $body
            }
            6 => {
                macro_rules! $n {
                    () => {
                        "6"
                    };
                }
                $body
            }
            _ => {
                macro_rules! $n {
                    () => {
                        "7"
                    };
                }
                $body
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
impl TileOps for AmxTiles {
    fn zero_c(&mut self, i: usize, j: usize) {
        // SAFETY: the tiles are configured (`new`); tilezero touches no memory.
        by_tile!(4 + 2 * i + j, |t| unsafe { std::arch::asm!(concat!("tilezero tmm", t!()), options(nomem, nostack)) })
    }
    unsafe fn load_c(&mut self, i: usize, j: usize, src: *const u8, stride: usize) {
        by_tile!(
            4 + 2 * i + j,
            |t| std::arch::asm!(concat!("tileloadd tmm", t!(), ", [{p} + {s}*1]"), p = in(reg) src, s = in(reg) stride, options(nostack, readonly))
        )
    }
    unsafe fn store_c(&mut self, i: usize, j: usize, dst: *mut u8, stride: usize) {
        by_tile!(
            4 + 2 * i + j,
            |t| std::arch::asm!(concat!("tilestored [{p} + {s}*1], tmm", t!()), p = in(reg) dst, s = in(reg) stride, options(nostack))
        )
    }
    unsafe fn load_a(&mut self, i: usize, src: *const u32, stride: usize) {
        by_tile!(
            i,
            |t| std::arch::asm!(concat!("tileloadd tmm", t!(), ", [{p} + {s}*1]"), p = in(reg) src, s = in(reg) stride, options(nostack, readonly))
        )
    }
    unsafe fn load_b(&mut self, j: usize, src: *const u32, stride: usize) {
        by_tile!(
            2 + j,
            |t| std::arch::asm!(concat!("tileloadd tmm", t!(), ", [{p} + {s}*1]"), p = in(reg) src, s = in(reg) stride, options(nostack, readonly))
        )
    }
    fn dot_bf16(&mut self, i: usize, j: usize) {
        // SAFETY: the tiles are configured (`new`); the dot products touch no memory.
        unsafe {
            match (i, j) {
                (0, 0) => std::arch::asm!("tdpbf16ps tmm4, tmm0, tmm2", options(nomem, nostack)),
                (0, _) => std::arch::asm!("tdpbf16ps tmm5, tmm0, tmm3", options(nomem, nostack)),
                (_, 0) => std::arch::asm!("tdpbf16ps tmm6, tmm1, tmm2", options(nomem, nostack)),
                _ => std::arch::asm!("tdpbf16ps tmm7, tmm1, tmm3", options(nomem, nostack)),
            }
        }
    }
    fn dot_i8(&mut self, i: usize, j: usize) {
        // SAFETY: as `dot_bf16` (AMX-INT8 is checked by the caller, `cpuid::CpuId::amx_int8`).
        unsafe {
            match (i, j) {
                (0, 0) => std::arch::asm!("tdpbssd tmm4, tmm0, tmm2", options(nomem, nostack)),
                (0, _) => std::arch::asm!("tdpbssd tmm5, tmm0, tmm3", options(nomem, nostack)),
                (_, 0) => std::arch::asm!("tdpbssd tmm6, tmm1, tmm2", options(nomem, nostack)),
                _ => std::arch::asm!("tdpbssd tmm7, tmm1, tmm3", options(nomem, nostack)),
            }
        }
    }
    fn dot_u8i8(&mut self, i: usize, j: usize) {
        // SAFETY: as `dot_i8`.
        unsafe {
            match (i, j) {
                (0, 0) => std::arch::asm!("tdpbusd tmm4, tmm0, tmm2", options(nomem, nostack)),
                (0, _) => std::arch::asm!("tdpbusd tmm5, tmm0, tmm3", options(nomem, nostack)),
                (_, 0) => std::arch::asm!("tdpbusd tmm6, tmm1, tmm2", options(nomem, nostack)),
                _ => std::arch::asm!("tdpbusd tmm7, tmm1, tmm3", options(nomem, nostack)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_is_palette_one_with_eight_full_tiles() {
        let c = TileConfig::all_full().0;
        assert_eq!(c[0], 1);
        assert_eq!(&c[16..18], &64u16.to_le_bytes());
        assert_eq!(&c[30..32], &64u16.to_le_bytes());
        assert_eq!(&c[32..48], &[0u8; 16]);
        assert_eq!(&c[48..56], &[16u8; 8]);
        assert_eq!(&c[56..], &[0u8; 8]);
    }

    #[test]
    fn tiles_exist_only_where_cpuid_reports_them() {
        if !super::super::cpuid::cpu().amx_bf16 {
            assert!(!enable() && AmxTiles::new().is_none());
            println!("AMX TESTS NOT RUN (amx::tests): this CPU has no AMX");
            return;
        }
        assert_eq!(AmxTiles::new().is_some(), !refused());
    }
}
