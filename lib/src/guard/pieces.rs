//! Seeded random lines made of tricky pieces, for the tests that check a
//! fast reading of text against a plain one (the same answer on every
//! line). One generator, so each such test says only which pieces matter.

/// Lines of pieces chosen by a seeded linear congruential generator: the
/// same seed gives the same lines on every machine.
pub struct Pieces<'a> {
    state: u64,
    pieces: &'a [&'a str],
}

impl<'a> Pieces<'a> {
    /// Lines of `pieces`, from `seed`.
    pub fn new(seed: u64, pieces: &'a [&'a str]) -> Pieces<'a> {
        Pieces { state: seed, pieces }
    }

    /// The next number (its high bits are the random ones).
    pub fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.state
    }

    /// A line of 0 to `most` pieces.
    pub fn line(&mut self, most: u64) -> String {
        let count = (self.next() >> 33) % (most + 1);
        (0..count).map(|_| self.pieces[(self.next() >> 33) as usize % self.pieces.len()]).collect()
    }
}
