//! VTK XML files for ParaView, VisIt and TTK: a 2D field as ImageData
//! (`.vti`), its critical points and particle positions as PolyData (`.vtp`).
//!
//! Field vertex (i, j) is the point (i, j, 0) (origin 0, spacing 1, x
//! fastest, as the field's own layout), so critical-point positions, which are
//! in grid units, overlay the field as they are. Bulk arrays are appended raw
//! (little endian, a UInt64 byte count before each array): VTK reads them
//! directly, with no base64 pass and no copy beyond the file. The critical
//! points are few and written as ASCII, with shortest round-trip decimals.

use crate::field::topology::{CpType, CriticalPoint};
use crate::real::Real;

/// Critical-point type codes of the `type` point array, in this order.
pub const CP_TYPES: [CpType; 6] = [
    CpType::Saddle,
    CpType::Source,
    CpType::Sink,
    CpType::RepellingFocus,
    CpType::AttractingFocus,
    CpType::Center,
];

/// The `type` code of a critical-point type (its index in [`CP_TYPES`]).
pub fn type_code(t: CpType) -> i32 {
    CP_TYPES.iter().position(|&c| c == t).unwrap_or(0) as i32
}

/// Appended raw arrays and their offsets.
struct Appended {
    bytes: Vec<u8>,
}

impl Appended {
    /// Appends one array (byte count, then data); returns its offset.
    fn push(&mut self, data: impl Iterator<Item = u8>, len: usize) -> usize {
        let offset = self.bytes.len();
        self.bytes.reserve(8 + len);
        self.bytes.extend_from_slice(&(len as u64).to_le_bytes());
        self.bytes.extend(data);
        offset
    }
}

fn header(kind: &str) -> String {
    format!(
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"{kind}\" version=\"1.0\" \
         byte_order=\"LittleEndian\" header_type=\"UInt64\">\n"
    )
}

fn finish(mut xml: String, appended: Appended) -> Vec<u8> {
    xml.push_str("  <AppendedData encoding=\"raw\">\n   _");
    let mut out = xml.into_bytes();
    out.extend_from_slice(&appended.bytes);
    out.extend_from_slice(b"\n  </AppendedData>\n</VTKFile>\n");
    out
}

/// A field of `ny` rows by `nx` columns (components `u`, `v`, row-major, x
/// fastest) as ImageData with one 3-component point array `vector` =
/// (u, v, 0), the form ParaView's glyph and stream tracer filters take.
pub fn field_vti<T: Real>(u: &[T], v: &[T], ny: usize, nx: usize) -> Vec<u8> {
    assert!(u.len() == ny * nx && v.len() == ny * nx, "field size");
    let ext = format!("0 {} 0 {} 0 0", nx.saturating_sub(1), ny.saturating_sub(1));
    let mut app = Appended { bytes: Vec::new() };
    let mut data = Vec::with_capacity(3 * T::BYTES * u.len());
    for (a, b) in u.iter().zip(v) {
        for x in [*a, *b, T::from_f64(0.0)] {
            x.write_le(&mut data);
        }
    }
    let off = app.push(data.into_iter(), 3 * T::BYTES * u.len());
    let float = if T::BYTES == 8 { "Float64" } else { "Float32" };
    let mut xml = header("ImageData");
    xml.push_str(&format!(
        "  <ImageData WholeExtent=\"{ext}\" Origin=\"0 0 0\" Spacing=\"1 1 1\">\n    \
         <Piece Extent=\"{ext}\">\n      <PointData Vectors=\"vector\">\n        \
         <DataArray type=\"{float}\" Name=\"vector\" NumberOfComponents=\"3\" \
         format=\"appended\" offset=\"{off}\"/>\n      </PointData>\n    </Piece>\n  \
         </ImageData>\n"
    ));
    finish(xml, app)
}

/// Particle positions (`3 n` values, x, y, z per particle) as PolyData: the
/// points (Float32 or Float64, the positions' own type) and one vertex cell
/// each, so every ParaView representation shows them.
pub fn particles_vtp<T: Real>(pos: &[T]) -> Vec<u8> {
    assert!(pos.len() % 3 == 0, "positions come in triples");
    let n = pos.len() / 3;
    let mut app = Appended { bytes: Vec::new() };
    let mut data = Vec::with_capacity(T::BYTES * pos.len());
    for x in pos {
        x.write_le(&mut data);
    }
    let points = app.push(data.into_iter(), T::BYTES * pos.len());
    let float = if T::BYTES == 8 { "Float64" } else { "Float32" };
    let conn = app.push((0..n as i64).flat_map(i64::to_le_bytes), 8 * n);
    let offs = app.push((1..=n as i64).flat_map(i64::to_le_bytes), 8 * n);
    let mut xml = header("PolyData");
    xml.push_str(&format!(
        "  <PolyData>\n    <Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"{n}\" \
         NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n      <Points>\n        \
         <DataArray type=\"{float}\" NumberOfComponents=\"3\" format=\"appended\" \
         offset=\"{points}\"/>\n      </Points>\n      <Verts>\n        \
         <DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"{conn}\"/>\n        \
         <DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"{offs}\"/>\n      \
         </Verts>\n    </Piece>\n  </PolyData>\n"
    ));
    finish(xml, app)
}

/// Critical points as PolyData: position (x, y, 0) in grid units, point
/// arrays `type` (a [`CP_TYPES`] code) and `cell` (the triangle id, see
/// `field::topology`), one vertex cell each.
pub fn critical_points_vtp(cps: &[CriticalPoint]) -> Vec<u8> {
    let n = cps.len();
    let list = |f: &dyn Fn(usize, &CriticalPoint) -> String| -> String {
        cps.iter()
            .enumerate()
            .map(|(k, c)| f(k, c))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let legend = CP_TYPES
        .iter()
        .enumerate()
        .map(|(k, t)| format!("{k} {}", t.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut xml = header("PolyData");
    xml.push_str(&format!("  <!-- type: {legend} -->\n"));
    xml.push_str(&format!(
        "  <PolyData>\n    <Piece NumberOfPoints=\"{n}\" NumberOfVerts=\"{n}\" \
         NumberOfLines=\"0\" NumberOfStrips=\"0\" NumberOfPolys=\"0\">\n      \
         <PointData Scalars=\"type\">\n        \
         <DataArray type=\"Int32\" Name=\"type\" format=\"ascii\">{}</DataArray>\n        \
         <DataArray type=\"Int64\" Name=\"cell\" format=\"ascii\">{}</DataArray>\n      \
         </PointData>\n      <Points>\n        \
         <DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">{}</DataArray>\n      \
         </Points>\n      <Verts>\n        \
         <DataArray type=\"Int64\" Name=\"connectivity\" format=\"ascii\">{}</DataArray>\n        \
         <DataArray type=\"Int64\" Name=\"offsets\" format=\"ascii\">{}</DataArray>\n      \
         </Verts>\n    </Piece>\n  </PolyData>\n</VTKFile>\n",
        list(&|_, c| type_code(c.kind).to_string()),
        list(&|_, c| c.tri.to_string()),
        list(&|_, c| format!("{:?} {:?} 0", c.x, c.y)),
        list(&|k, _| k.to_string()),
        list(&|k, _| (k + 1).to_string()),
    ));
    xml.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::topology::extract;

    #[test]
    fn type_codes_are_distinct_and_cover_every_type() {
        let codes: Vec<i32> = CP_TYPES.iter().map(|&t| type_code(t)).collect();
        assert_eq!(codes, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn appended_arrays_hold_their_byte_counts() {
        let (ny, nx) = (3, 4);
        let u: Vec<f32> = (0..12).map(|k| k as f32).collect();
        let v: Vec<f32> = (0..12).map(|k| -(k as f32)).collect();
        let f = field_vti(&u, &v, ny, nx);
        let mark = b"encoding=\"raw\">\n   _";
        let at = f.windows(mark.len()).position(|w| w == mark).unwrap() + mark.len();
        let len = u64::from_le_bytes(f[at..at + 8].try_into().unwrap());
        assert_eq!(len, 12 * 12);
        let first: Vec<f32> = f[at + 8..at + 8 + 24]
            .chunks(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(first, [0.0, -0.0, 0.0, 1.0, -1.0, 0.0]);
        assert!(String::from_utf8_lossy(&f).contains("WholeExtent=\"0 3 0 2 0 0\""));
    }

    #[test]
    fn critical_points_list_every_point() {
        // A source at (1.5, 1.5) and whatever else the grid makes.
        let (ny, nx) = (4, 4);
        let mut u = vec![0f32; 16];
        let mut v = vec![0f32; 16];
        for j in 0..ny {
            for i in 0..nx {
                u[j * nx + i] = i as f32 - 1.3;
                v[j * nx + i] = j as f32 - 1.6;
            }
        }
        let cps = extract(&u, &v, ny, nx);
        assert!(!cps.is_empty());
        let text = String::from_utf8(critical_points_vtp(&cps)).unwrap();
        assert!(text.contains(&format!("NumberOfPoints=\"{}\"", cps.len())));
        assert!(text.contains(&format!("{:?} {:?} 0", cps[0].x, cps[0].y)));
    }
}
