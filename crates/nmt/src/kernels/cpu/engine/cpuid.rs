//! What CPUID says about the processor, beyond the feature flags `is_x86_feature_detected!`
//! reads: its vendor, family and model (which decide whether bf16 products are faster than f32
//! here, `products::choose`), and whether AMX tiles are there and enabled by the OS (issue 70).
//!
//! The decoders of the raw registers are pure functions, tested on the ids of CPUs this
//! project has measured (Intel Emerald Rapids, AMD Zen 4) without needing one at hand.

/// The CPU's maker, from CPUID leaf 0's vendor string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// Any other string (Hygon, Zhaoxin, a hypervisor's own), or no CPUID (not x86-64).
    Other,
}

/// The facts the kernels' choices read, read once per process ([`cpu`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuId {
    pub vendor: Vendor,
    /// The display family: base family, plus the extended family when the base is 0xF
    /// (AMD Zen 4 is 0x19, Intel's server cores 6).
    pub family: u32,
    /// The display model: base model, with the extended model as its high nibble when the
    /// family is 6 or 0xF and above (Emerald Rapids is 0xCF, 207; Genoa 0x11).
    pub model: u32,
    /// AMX-TILE and AMX-BF16 in CPUID, a tile palette, and the OS saving tile state (XCR0):
    /// the tiles can be asked for (`amx::enable`); whether the kernel grants them is not known
    /// yet.
    pub amx_bf16: bool,
    /// The same with AMX-INT8.
    pub amx_int8: bool,
}

/// The vendor named by leaf 0's `ebx`, `edx`, `ecx` (in that order, 12 ASCII bytes).
pub fn vendor_from(ebx: u32, edx: u32, ecx: u32) -> Vendor {
    let mut s = [0u8; 12];
    s[..4].copy_from_slice(&ebx.to_le_bytes());
    s[4..8].copy_from_slice(&edx.to_le_bytes());
    s[8..].copy_from_slice(&ecx.to_le_bytes());
    match &s {
        b"GenuineIntel" => Vendor::Intel,
        b"AuthenticAMD" => Vendor::Amd,
        _ => Vendor::Other,
    }
}

/// The display family and model from leaf 1's `eax` (Intel SDM vol. 2A, CPUID, "Version
/// Information"; AMD's manual reads it the same way).
pub fn family_model(eax: u32) -> (u32, u32) {
    let base_family = (eax >> 8) & 0xF;
    let base_model = (eax >> 4) & 0xF;
    let ext_family = (eax >> 20) & 0xFF;
    let ext_model = (eax >> 16) & 0xF;
    let family = if base_family == 0xF { base_family + ext_family } else { base_family };
    let model = if base_family == 0x6 || base_family == 0xF { (ext_model << 4) | base_model } else { base_model };
    (family, model)
}

/// Leaf 7's `edx` bits: AMX-BF16 (22), AMX-TILE (24), AMX-INT8 (25).
const AMX_BF16: u32 = 1 << 22;
const AMX_TILE: u32 = 1 << 24;
const AMX_INT8: u32 = 1 << 25;
/// XCR0 bits 17 (XTILECFG) and 18 (XTILEDATA): the OS saves and restores tile state.
const XCR0_TILES: u64 = (1 << 17) | (1 << 18);

/// Whether AMX is usable as far as the hardware and the OS's XSAVE set-up say, as
/// `(bf16, int8)`: `leaf7_edx` is leaf 7 sub-leaf 0's `edx`, `palettes` leaf 0x1D sub-leaf 0's
/// `eax` (the highest palette; 0 when the leaf is absent), `xcr0` the XCR0 register (0 when
/// the OS did not enable XSAVE).
pub fn amx_from(leaf7_edx: u32, palettes: u32, xcr0: u64) -> (bool, bool) {
    let tiles = leaf7_edx & AMX_TILE != 0 && palettes >= 1 && xcr0 & XCR0_TILES == XCR0_TILES;
    (tiles && leaf7_edx & AMX_BF16 != 0, tiles && leaf7_edx & AMX_INT8 != 0)
}

/// This CPU's facts, read at the first call and kept.
pub fn cpu() -> CpuId {
    static CPU: std::sync::OnceLock<CpuId> = std::sync::OnceLock::new();
    *CPU.get_or_init(read)
}

#[cfg(target_arch = "x86_64")]
fn read() -> CpuId {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    // SAFETY (for the toolchains where these are `unsafe`): CPUID exists on every x86-64 CPU,
    // and the leaves above 0 are asked for only up to the highest leaf that leaf 0 reports.
    #[allow(unused_unsafe)]
    let (l0, l1) = unsafe { (__cpuid(0), __cpuid(1)) };
    let max_leaf = l0.eax;
    let (family, model) = if max_leaf >= 1 { family_model(l1.eax) } else { (0, 0) };
    #[allow(unused_unsafe)]
    let leaf7_edx = if max_leaf >= 7 { unsafe { __cpuid_count(7, 0) }.edx } else { 0 };
    #[allow(unused_unsafe)]
    let palettes = if max_leaf >= 0x1D { unsafe { __cpuid_count(0x1D, 0) }.eax } else { 0 };
    // XGETBV needs OSXSAVE (leaf 1 `ecx` bit 27): the OS enabled XSAVE and XCR0 exists.
    let xcr0 = if max_leaf >= 1 && l1.ecx & (1 << 27) != 0 { xcr0() } else { 0 };
    let (amx_bf16, amx_int8) = amx_from(leaf7_edx, palettes, xcr0);
    CpuId { vendor: vendor_from(l0.ebx, l0.edx, l0.ecx), family, model, amx_bf16, amx_int8 }
}

/// XCR0, the OS's XSAVE feature mask.
#[cfg(target_arch = "x86_64")]
fn xcr0() -> u64 {
    #[target_feature(enable = "xsave")]
    unsafe fn get() -> u64 {
        std::arch::x86_64::_xgetbv(0)
    }
    // SAFETY: called only when CPUID reports OSXSAVE, so XGETBV exists and XCR0 is readable.
    unsafe { get() }
}

#[cfg(not(target_arch = "x86_64"))]
fn read() -> CpuId {
    CpuId { vendor: Vendor::Other, family: 0, model: 0, amx_bf16: false, amx_int8: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vendor string's three registers, as CPUID returns them.
    fn regs(s: &[u8; 12]) -> (u32, u32, u32) {
        let w = |i: usize| u32::from_le_bytes([s[i], s[i + 1], s[i + 2], s[i + 3]]);
        (w(0), w(4), w(8))
    }

    #[test]
    fn vendors_family_and_model_of_measured_cpus() {
        let (b, d, c) = regs(b"GenuineIntel");
        assert_eq!(vendor_from(b, d, c), Vendor::Intel);
        let (b, d, c) = regs(b"AuthenticAMD");
        assert_eq!(vendor_from(b, d, c), Vendor::Amd);
        let (b, d, c) = regs(b"HygonGenuine");
        assert_eq!(vendor_from(b, d, c), Vendor::Other);
        // Emerald Rapids (issue 70: family 6, model 207), Sapphire Rapids, AMD Genoa (Zen 4) and
        // Zen 5 (family 0x1A).
        assert_eq!(family_model(0x000C_06F2), (6, 0xCF));
        assert_eq!(family_model(0x0008_06F8), (6, 0x8F));
        assert_eq!(family_model(0x00A1_0F11), (0x19, 0x11));
        assert_eq!(family_model(0x00B0_0F21), (0x1A, 0x02));
    }

    #[test]
    fn amx_needs_the_tiles_a_palette_and_the_os() {
        let all = AMX_TILE | AMX_BF16 | AMX_INT8;
        assert_eq!(amx_from(all, 1, 0x6_02E7), (true, true));
        assert_eq!(amx_from(AMX_TILE | AMX_BF16, 1, 0x6_02E7), (true, false));
        // No palette, the OS not saving tile data, or no tile unit: nothing.
        assert_eq!(amx_from(all, 0, 0x6_02E7), (false, false));
        assert_eq!(amx_from(all, 1, 0x2_02E7), (false, false));
        assert_eq!(amx_from(AMX_BF16 | AMX_INT8, 1, 0x6_02E7), (false, false));
        // A Zen 4 (AVX512_BF16, no AMX) and an AVX2-only CPU.
        assert_eq!(amx_from(0, 0, 0x2E7), (false, false));
        assert_eq!(amx_from(0, 0, 0x7), (false, false));
    }

    /// This CPU's facts agree with the flags the standard library reads.
    #[test]
    fn this_cpu_reads_consistently() {
        let c = cpu();
        eprintln!("this CPU: {c:?}");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512bf16") {
            assert!(c.vendor != Vendor::Other || c.family > 0, "{c:?}");
        }
        assert_eq!(c, cpu());
    }
}
