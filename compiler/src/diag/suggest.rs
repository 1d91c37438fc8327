//! "Did you mean ...?" suggestions by edit distance.

/// Levenshtein distance over bytes, with an early exit once the distance exceeds `limit`.
pub fn edit_distance(a: &str, b: &str, limit: usize) -> Option<usize> {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            row_min = row_min.min(cur[j + 1]);
        }
        if row_min > limit {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[b.len()];
    (d <= limit).then_some(d)
}

/// The candidate closest to `name`, if one is close enough to be a plausible typo:
/// within a third of the name's length (at least 1, at most 3 edits). Ties go to the
/// first candidate, so callers pass candidates in a meaningful order (innermost scope first).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (name.len() / 3).clamp(1, 3);
    let mut best: Option<(usize, &str)> = None;
    for cand in candidates {
        if cand == name {
            continue;
        }
        if let Some(d) = edit_distance(name, cand, limit) {
            if best.is_none_or(|(bd, _)| d < bd) {
                best = Some((d, cand));
            }
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting", 5), Some(3));
        assert_eq!(edit_distance("abc", "abc", 0), Some(0));
        assert_eq!(edit_distance("abc", "abcdef", 2), None);
    }

    #[test]
    fn suggests_programindex() {
        let c = ["programCount", "programIndex", "print"];
        assert_eq!(closest("progamIndex", c), Some("programIndex"));
        assert_eq!(closest("programIdx", c), Some("programIndex"));
        assert_eq!(closest("zzz", c), None);
    }
}
