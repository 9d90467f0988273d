//! The project's own test-data generators (`factz::synth`, `factz synth`): the
//! same bits for the same parameters whatever the thread count, pinned bits so
//! that a change of output cannot pass unnoticed (bump `synth::VERSION`, which
//! keys the test-data cache, and the digests below together), and data with the
//! features the guarantee tests need, counted by the independent oracles.

mod common;

use common::oracle;
use common::particles::{brute_links, groups};
use factz::synth::{Order, Particles, Turbulence};

/// FNV-1a over the little-endian bytes.
fn digest(xs: &[f32]) -> u64 {
    xs.iter()
        .flat_map(|x| x.to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        })
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn small_turbulence() -> Turbulence {
    let mut t = Turbulence::new(48, 7);
    t.k0 = 6.0;
    t.t_end = 2.0;
    t
}

fn small_particles() -> Particles {
    let mut p = Particles::new(12, 3, 10.0);
    p.order = Order::Shuffle;
    p
}

#[test]
fn same_bits_on_one_thread_and_many() {
    let t = small_turbulence();
    let one = in_pool(1, || t.generate(&mut |_, _| {}).unwrap());
    let three = in_pool(3, || t.generate(&mut |_, _| {}).unwrap());
    assert!(one == three, "turbulence depends on the thread count");
    let p = small_particles();
    let one = in_pool(1, || p.generate(&mut |_| {}).unwrap().pos);
    let three = in_pool(3, || p.generate(&mut |_| {}).unwrap().pos);
    assert!(one == three, "particles depend on the thread count");
}

/// The generators use no libm, so these digests hold on every platform. When a
/// generator changes on purpose, bump `factz::synth::VERSION` and update them.
#[test]
fn pinned_output() {
    let (u, v) = small_turbulence().generate(&mut |_, _| {}).unwrap();
    let pos = small_particles().generate(&mut |_| {}).unwrap().pos;
    let got = (digest(&u), digest(&v), digest(&pos));
    assert_eq!(
        factz::synth::VERSION,
        1,
        "the version changed: update the digests below with it"
    );
    assert_eq!(
        got,
        (
            14544398260267686041,
            6718078225536479864,
            18112804181120612606
        ),
        "generator output changed: bump factz::synth::VERSION and pin the new digests"
    );
}

#[test]
fn turbulence_has_many_critical_points_of_every_kind() {
    // What the guarantee tests use: 64^2 and 128^2 at k0 8..32, t = 3.
    for (n, seed, k0, at_least) in [(64, 1, 8.0, 120), (128, 2, 32.0, 900)] {
        let (u, v) =
            common::fields::synth_turbulence(n, seed, &["--k0", &k0.to_string(), "--t-end", "3"]);
        let cps = oracle::extract(&u, &v, n, n);
        assert!(
            cps.len() >= at_least,
            "{n}^2 k0 {k0}: {} critical points",
            cps.len()
        );
        let kinds: std::collections::BTreeSet<String> =
            cps.iter().map(|c| format!("{:?}", c.kind)).collect();
        assert!(kinds.len() >= 3, "{n}^2: only {kinds:?}");
        assert!(u.iter().chain(&v).all(|x| x.is_finite()));
    }
}

#[test]
fn particles_have_halos_and_near_links() {
    for (order, label) in [(Order::Lattice, "lattice"), (Order::Shuffle, "shuffled")] {
        let mut p = Particles::new(16, 1, 100.0);
        p.order = order;
        let set = p.generate(&mut |_| {}).unwrap();
        let n = set.pos.len() / 3;
        assert_eq!(n, 4096);
        assert!(set
            .pos
            .iter()
            .all(|&x| x.is_finite() && (0.0..100.0).contains(&x)));
        let b = p.fof_b();
        let links = brute_links(&set.pos, Some(100.0), b);
        let g = groups(n, &links);
        let mut size = std::collections::HashMap::new();
        for r in g {
            *size.entry(r).or_insert(0usize) += 1;
        }
        let halos = size.values().filter(|&&s| s >= 20).count();
        assert!(set.halos > 0 && halos >= 3, "{label}: {halos} FoF halos");
        // pairs within 10% of b either side: what makes a compressor's job hard
        let near = links_between(&set.pos, 0.9 * b, 1.1 * b);
        assert!(near >= 200, "{label}: {near} pairs near b");
    }
}

fn links_between(pos: &[f32], lo: f64, hi: f64) -> usize {
    let inner = brute_links(pos, Some(100.0), lo).len();
    brute_links(pos, Some(100.0), hi).len() - inner
}
