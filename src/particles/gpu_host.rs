//! What the GPU backend's particle kernels (`kernels/particles.cu`) take and
//! must reproduce: the cell grid's geometry and internals exactly as
//! [`Grid::build`] makes them, and the vulnerable-pair window. Tests compare the
//! kernels (on a device, or on the host through `kernels/shim`) with these.
#![doc(hidden)]

use super::geometry::{bounding_box, Space};
use super::grid::Grid;
use super::vulnerable;

/// The grid's geometry as the kernels take it (`FzpGrid` in
/// kernels/particles.cu, same layout): cells per axis, origin, cells per unit
/// length, and the periodic box's side (0 for an open box).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GridGeometry {
    pub dims: [u64; 3],
    pub lo: [f64; 3],
    pub scale: [f64; 3],
    pub period: f64,
}

/// A grid's contents: finite particles by cell (ascending index within a
/// cell), occupied cell keys ascending, and where each cell starts in `order`
/// (`start[ncell] = order.len()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bins {
    pub order: Vec<u32>,
    pub keys: Vec<u64>,
    pub start: Vec<u64>,
}

fn geometry_of(g: &Grid, space: Space) -> GridGeometry {
    GridGeometry {
        dims: g.dims.map(|d| d as u64),
        lo: g.lo,
        scale: g.scale,
        period: match space.period {
            Some(l) => {
                assert!(
                    l > 0.0,
                    "a periodic box has a side > 0 (checked by the API)"
                );
                l
            }
            None => 0.0,
        },
    }
}

/// The geometry [`Grid::build`] gives `pos` for radius `r`, without binning
/// the particles: it depends on the finite particles' bounding box only (open
/// box) or on nothing of them (periodic), so a grid over the box's two corners
/// has it. A device backend reduces the bounding box on the device (min and
/// max are exact in any order) and derives the rest here.
pub fn grid_geometry(bbox: Option<([f32; 3], [f32; 3])>, space: Space, r: f64) -> GridGeometry {
    let corners: Vec<f32> = match (space.period, bbox) {
        (None, Some((lo, hi))) => lo.into_iter().chain(hi).collect(),
        _ => Vec::new(),
    };
    geometry_of(&Grid::build(&corners, space, r), space)
}

/// The finite particles' bounding box as f32 corners (every finite coordinate
/// is an f32, so this is [`bounding_box`] exactly).
pub fn bbox_f32(pos: &[f32]) -> Option<([f32; 3], [f32; 3])> {
    bounding_box(pos).map(|(lo, hi)| (lo.map(|x| x as f32), hi.map(|x| x as f32)))
}

/// [`Grid::build`]'s geometry and contents for `pos` and radius `r`.
pub fn bins(pos: &[f32], space: Space, r: f64) -> (GridGeometry, Bins) {
    let g = Grid::build(pos, space, r);
    let bins = Bins {
        order: g.order.clone(),
        keys: g.keys.clone(),
        start: g.start.iter().map(|&s| s as u64).collect(),
    };
    (geometry_of(&g, space), bins)
}

/// What [`vulnerable::pairs`] searches with: the grid radius and the window
/// `[lo2, hi2]` of squared distances, and `b2` (linked iff `d2 <= b2`).
pub fn vulnerable_search(b: f64, xi: f64) -> (f64, f64, f64, f64) {
    let (lo2, hi2) = vulnerable::window(b, xi);
    (hi2.sqrt(), lo2, hi2, b * b)
}
