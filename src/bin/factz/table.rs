//! Aligned text tables, as the benches print them.

use std::fmt::Write as _;

/// `header` and `cells` as columns two spaces apart, a rule under the
/// header; column k is left-aligned when `left(k)` (text), else right-aligned
/// (numbers).
pub fn aligned(header: &[&str], cells: &[Vec<String>], left: impl Fn(usize) -> bool) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in cells {
        for (w, c) in width.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut s = String::new();
    let line = |s: &mut String, row: &[String]| {
        for (k, (c, w)) in row.iter().zip(&width).enumerate() {
            if left(k) {
                let _ = write!(s, "{c:<w$}");
            } else {
                let _ = write!(s, "{c:>w$}");
            }
            s.push_str(if k + 1 < row.len() { "  " } else { "\n" });
        }
    };
    line(
        &mut s,
        &header.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
    );
    let total: usize = width.iter().sum::<usize>() + 2 * (width.len() - 1);
    s.push_str(&"-".repeat(total));
    s.push('\n');
    for row in cells {
        line(&mut s, row);
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align_text_left_and_numbers_right() {
        let cells = vec![vec!["ab".to_string(), "1.5".to_string()]];
        let t = super::aligned(&["name", "x"], &cells, |k| k == 0);
        assert_eq!(t, "name    x\n---------\nab    1.5\n");
    }
}
