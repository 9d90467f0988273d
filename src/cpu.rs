//! What the CPU offers beyond the target's baseline, checked at run time.

/// Whether this CPU runs AVX2 code: the vector rANS coder (`codec::rans_simd`)
/// and the loops compiled twice, for AVX2 and for any CPU (`bound`,
/// `field::safe_bound`, `field::speculative`, `field::diagonals`), and the
/// particle pair walk's lanes (`particles::grid::lanes`,
/// `particles::safe::live`).
#[inline]
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}
